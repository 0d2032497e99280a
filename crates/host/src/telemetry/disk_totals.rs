//! What named devices did over a run's measured intervals (fio's `disk_util` is made of
//! it): [`DiskWatch`] reads /proc/diskstats when an interval starts and when it stops,
//! and [`DiskTotals`] adds up each device's growth over the intervals
//! ([`DeviceTotals`]: ios, merges, ticks, weighted and busy time) and their length.

use std::sync::Mutex;
use std::time::Instant;

use super::diskstats::{self, DiskStat, delta};
use crate::root::SysRoot;

/// One device's counters grown over the measured intervals so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceTotals {
    pub name: String,
    pub reads: u64,
    pub writes: u64,
    pub reads_merged: u64,
    pub writes_merged: u64,
    pub read_ms: u64,
    pub write_ms: u64,
    /// In-flight requests times time, summed (fio's in_queue).
    pub weighted_io_ms: u64,
    /// Time the device had I/O in flight (busy time: fio's util numerator).
    pub io_ms: u64,
}

/// What the devices did over the measured intervals so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskTotals {
    /// Per device, in the order first seen.
    pub devices: Vec<DeviceTotals>,
    /// Milliseconds the intervals lasted.
    pub elapsed_ms: f64,
}

impl DiskTotals {
    /// Adds one interval of `elapsed_ms`: each device of `after` grew by its counters
    /// less those of `before` (a device missing from `before` is left out).
    pub fn add(&mut self, before: &[DiskStat], after: &[DiskStat], elapsed_ms: f64) {
        self.elapsed_ms += elapsed_ms;
        for now in after {
            let Some(was) = before.iter().find(|b| b.name == now.name) else {
                continue;
            };
            let i = match self.devices.iter().position(|d| d.name == now.name) {
                Some(i) => i,
                None => {
                    self.devices.push(DeviceTotals {
                        name: now.name.clone(),
                        ..DeviceTotals::default()
                    });
                    self.devices.len() - 1
                }
            };
            let d = &mut self.devices[i];
            let grew = |f: fn(&DiskStat) -> u64| delta(f(was), f(now));
            d.reads += grew(|s| s.reads);
            d.writes += grew(|s| s.writes);
            d.reads_merged += grew(|s| s.reads_merged);
            d.writes_merged += grew(|s| s.writes_merged);
            d.read_ms += grew(|s| s.read_ms);
            d.write_ms += grew(|s| s.write_ms);
            d.weighted_io_ms += grew(|s| s.weighted_io_ms);
            d.io_ms += grew(|s| s.io_ms);
        }
    }
}

/// Reads the devices' counters when an interval starts and stops, and adds the
/// interval to `totals` (shared by the watches of a run's phases).
pub struct DiskWatch<'a> {
    root: SysRoot,
    devices: Vec<String>,
    totals: &'a Mutex<DiskTotals>,
    started: Mutex<Option<(Instant, Vec<DiskStat>)>>,
}

impl<'a> DiskWatch<'a> {
    /// Watches `devices` (kernel names, "vda"); with none it reads nothing.
    pub fn new(root: SysRoot, devices: Vec<String>, totals: &'a Mutex<DiskTotals>) -> Self {
        DiskWatch {
            root,
            devices,
            totals,
            started: Mutex::new(None),
        }
    }

    /// An interval starts: the counters now.
    pub fn start(&self) {
        *self.started.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((Instant::now(), self.read()));
    }

    /// The interval started last ends: its growth added to the totals (nothing when
    /// none started).
    pub fn stop(&self) {
        let started = self
            .started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some((at, before)) = started {
            let after = self.read();
            let ms = at.elapsed().as_secs_f64() * 1000.0;
            self.totals
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .add(&before, &after, ms);
        }
    }

    /// The watched devices' lines of /proc/diskstats; none when it cannot be read.
    fn read(&self) -> Vec<DiskStat> {
        if self.devices.is_empty() {
            return Vec::new();
        }
        let path = self.root.proc_path("diskstats");
        let text = std::fs::read_to_string(path).unwrap_or_default();
        diskstats::parse(&text)
            .0
            .into_iter()
            .filter(|s| self.devices.contains(&s.name))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Fixture;

    fn stat(reads: u64, io_ms: u64) -> DiskStat {
        DiskStat {
            name: "vda".into(),
            reads,
            reads_merged: reads / 10,
            read_ms: reads * 2,
            writes: 7,
            io_ms,
            weighted_io_ms: io_ms + 1,
            ..DiskStat::default()
        }
    }

    #[test]
    fn totals_add_up_the_intervals() {
        let mut t = DiskTotals::default();
        t.add(&[stat(100, 1000)], &[stat(300, 1500)], 1000.0);
        t.add(&[stat(300, 1500)], &[stat(400, 1700)], 1000.0);
        assert_eq!(
            t.devices,
            [DeviceTotals {
                name: "vda".into(),
                reads: 300,
                writes: 0,
                reads_merged: 30,
                writes_merged: 0,
                read_ms: 600,
                write_ms: 0,
                weighted_io_ms: 700,
                io_ms: 700,
            }]
        );
        assert_eq!(t.elapsed_ms, 2000.0);
    }

    #[test]
    fn a_device_missing_before_is_left_out_and_order_is_first_seen() {
        let named = |name: &str, reads| DiskStat {
            name: name.into(),
            reads,
            ..DiskStat::default()
        };
        let mut t = DiskTotals::default();
        t.add(
            &[named("sdb", 1)],
            &[named("sda", 5), named("sdb", 3)],
            10.0,
        );
        t.add(
            &[named("sda", 5), named("sdb", 3)],
            &[named("sda", 9), named("sdb", 4)],
            10.0,
        );
        let reads: Vec<(&str, u64)> = t
            .devices
            .iter()
            .map(|d| (d.name.as_str(), d.reads))
            .collect();
        assert_eq!(reads, [("sdb", 3), ("sda", 4)]);
    }

    /// Two readings of a fixed /proc/diskstats (kernel 6's 20 fields) around an
    /// interval: only the watched device, by exactly what its counters grew.
    #[test]
    fn a_watch_reads_the_watched_devices_around_an_interval() {
        let fx = Fixture::new();
        let before = "\
 254       0 vda 31014 5882 2627722 15633 30551 16478 4577008 11466 0 9548 29441 8893 20 795032 2281 4411 59
 254       1 vda1 30900 5882 2620000 15600 30551 16478 4577008 11466 0 9540 27100 8893 20 795032 2281 0 0
";
        let after = "\
 254       0 vda 31114 5890 2628522 15733 30751 16500 4579008 11666 1 9948 30041 8893 20 795032 2281 4420 60
 254       1 vda1 31050 5890 2620800 15700 30751 16500 4579008 11666 1 9940 27900 8893 20 795032 2281 0 0
";
        fx.file("proc/diskstats", before);
        let totals = Mutex::new(DiskTotals::default());
        let watch = DiskWatch::new(fx.root(), vec!["vda".into()], &totals);
        watch.start();
        fx.file("proc/diskstats", after);
        watch.stop();
        // A stop with no start adds nothing.
        watch.stop();
        let t = totals.into_inner().unwrap();
        assert_eq!(
            t.devices,
            [DeviceTotals {
                name: "vda".into(),
                reads: 100,
                writes: 200,
                reads_merged: 8,
                writes_merged: 22,
                read_ms: 100,
                write_ms: 200,
                weighted_io_ms: 600,
                io_ms: 400,
            }]
        );
    }

    #[test]
    fn no_devices_or_no_table_read_nothing() {
        let fx = Fixture::new();
        let totals = Mutex::new(DiskTotals::default());
        let none = DiskWatch::new(fx.root(), vec!["vda".into()], &totals);
        none.start();
        none.stop();
        fx.file("proc/diskstats", " 254 0 vda 1 0 0 0 0 0 0 0 0 0 0\n");
        let unwatched = DiskWatch::new(fx.root(), Vec::new(), &totals);
        unwatched.start();
        fx.file("proc/diskstats", " 254 0 vda 9 0 0 0 0 0 0 0 0 0 0\n");
        unwatched.stop();
        assert!(totals.into_inner().unwrap().devices.is_empty());
    }
}
