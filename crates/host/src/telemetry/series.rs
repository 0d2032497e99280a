//! From snapshots to series, without threads or clocks: a [`Snapshot`] is one reading of
//! /proc/diskstats and /proc/stat at a moment; [`SeriesBuilder`] takes them in order and
//! appends one value per watched device and per CPU state for each interval, giving a
//! [`Telemetry`]. Tests drive it with fixture snapshots; the sampler thread with real ones.

use std::collections::BTreeMap;

use iolab_core::Nanos;
use iolab_core::telemetry::{DeviceSeries, Telemetry};

use super::cpustat::{CpuTimes, cpu_percent};
use super::diskstats::{DiskRates, DiskStat, disk_rates};

/// One reading of the kernel's counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// When it was taken, on a monotonic clock with any origin.
    pub at: Nanos,
    /// When it was taken, milliseconds since the Unix epoch.
    pub wall_ms: i64,
    pub disks: Vec<DiskStat>,
    /// `None` when /proc/stat could not be read.
    pub cpu: Option<CpuTimes>,
    /// What could not be read for this snapshot.
    pub notes: Vec<String>,
}

/// Builds the series of one sampling run. Each series gets a value for every interval
/// after the first snapshot; a device or the CPU missing from a snapshot gets 0 for that
/// interval (and a note), and its next rate spans the time since it was last seen.
pub struct SeriesBuilder {
    telemetry: Telemetry,
    first_at: Option<Nanos>,
    /// Last reading of each watched device: when, and what.
    last_disks: BTreeMap<String, (Nanos, DiskStat)>,
    last_cpu: Option<CpuTimes>,
}

impl SeriesBuilder {
    pub fn new(host: &str, devices: &[String], interval: Nanos) -> Self {
        SeriesBuilder {
            telemetry: Telemetry {
                interval,
                host: host.to_string(),
                devices: devices
                    .iter()
                    .map(|name| DeviceSeries {
                        name: name.clone(),
                        ..DeviceSeries::default()
                    })
                    .collect(),
                ..Telemetry::default()
            },
            first_at: None,
            last_disks: BTreeMap::new(),
            last_cpu: None,
        }
    }

    /// Adds a snapshot: the first one is the baseline, every later one closes an interval.
    pub fn push(&mut self, snapshot: Snapshot) {
        for note in snapshot.notes {
            self.note(note);
        }
        let Some(first_at) = self.first_at else {
            self.first_at = Some(snapshot.at);
            self.telemetry.started_at_ms = snapshot.wall_ms;
            self.remember(snapshot.at, snapshot.disks, snapshot.cpu);
            return;
        };
        let end_ms = snapshot.at.saturating_sub(first_at).0 / 1_000_000;
        self.telemetry.sample_ends_ms.push(end_ms);

        for index in 0..self.telemetry.devices.len() {
            let name = self.telemetry.devices[index].name.clone();
            let current = snapshot.disks.iter().find(|d| d.name == name);
            let rates = match (self.last_disks.get(&name), current) {
                (Some((then, previous)), Some(current)) => {
                    disk_rates(previous, current, snapshot.at.saturating_sub(*then))
                }
                (None, Some(_)) => DiskRates::default(),
                (_, None) => {
                    self.note(format!("{name}: not in /proc/diskstats"));
                    DiskRates::default()
                }
            };
            append(&mut self.telemetry.devices[index], &rates);
        }

        let percent = match (&self.last_cpu, &snapshot.cpu) {
            (Some(previous), Some(current)) => cpu_percent(previous, current),
            _ => Default::default(),
        };
        let cpu = &mut self.telemetry.cpu;
        cpu.user_percent.push(percent.user);
        cpu.nice_percent.push(percent.nice);
        cpu.system_percent.push(percent.system);
        cpu.iowait_percent.push(percent.iowait);
        cpu.steal_percent.push(percent.steal);
        cpu.idle_percent.push(percent.idle);

        self.remember(snapshot.at, snapshot.disks, snapshot.cpu);
    }

    fn remember(&mut self, at: Nanos, disks: Vec<DiskStat>, cpu: Option<CpuTimes>) {
        for disk in disks {
            if self.telemetry.devices.iter().any(|d| d.name == disk.name) {
                self.last_disks.insert(disk.name.clone(), (at, disk));
            }
        }
        if cpu.is_some() {
            self.last_cpu = cpu;
        }
    }

    /// Records a note once.
    pub fn note(&mut self, note: String) {
        if !self.telemetry.notes.contains(&note) {
            self.telemetry.notes.push(note);
        }
    }

    /// Number of intervals so far.
    pub fn samples(&self) -> usize {
        self.telemetry.sample_ends_ms.len()
    }

    pub fn finish(self) -> Telemetry {
        self.telemetry
    }
}

fn append(series: &mut DeviceSeries, r: &DiskRates) {
    series.read_iops.push(r.read_iops);
    series.write_iops.push(r.write_iops);
    series.read_bytes_per_sec.push(r.read_bytes_per_sec);
    series.write_bytes_per_sec.push(r.write_bytes_per_sec);
    series.queue_size.push(r.queue_size);
    series.read_await_ms.push(r.read_await_ms);
    series.write_await_ms.push(r.write_await_ms);
    series.util_percent.push(r.util_percent);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(
        name: &str,
        reads: u64,
        sectors: u64,
        read_ms: u64,
        io_ms: u64,
        weighted: u64,
    ) -> DiskStat {
        let line =
            format!("259 0 {name} {reads} 0 {sectors} {read_ms} 0 0 0 0 0 {io_ms} {weighted}");
        DiskStat::parse_line(&line).unwrap()
    }

    fn cpu(user: u64, system: u64, idle: u64, iowait: u64) -> Option<CpuTimes> {
        CpuTimes::parse(&format!("cpu {user} 0 {system} {idle} {iowait} 0 0 0 0 0")).ok()
    }

    fn snap(secs: u64, disks: Vec<DiskStat>, cpu: Option<CpuTimes>) -> Snapshot {
        Snapshot {
            at: Nanos::from_secs(100 + secs),
            wall_ms: 1_700_000_000_000 + secs as i64 * 1000,
            disks,
            cpu,
            notes: Vec::new(),
        }
    }

    #[test]
    fn one_value_per_interval() {
        let mut b = SeriesBuilder::new("node01", &["nvme0n1".into()], Nanos::SECOND);
        b.push(snap(
            0,
            vec![disk("nvme0n1", 0, 0, 0, 0, 0), disk("sda", 0, 0, 0, 0, 0)],
            cpu(0, 0, 0, 0),
        ));
        // 1 s: 1000 reads of 4 KiB, 500 ms reading, busy 500 ms, weighted 800 ms.
        b.push(snap(
            1,
            vec![disk("nvme0n1", 1000, 8000, 500, 500, 800)],
            cpu(50, 25, 100, 25),
        ));
        // 2 s: idle.
        b.push(snap(
            2,
            vec![disk("nvme0n1", 1000, 8000, 500, 500, 800)],
            cpu(50, 25, 300, 25),
        ));
        assert_eq!(b.samples(), 2);
        let t = b.finish();
        assert_eq!(t.host, "node01");
        assert_eq!(t.interval, Nanos::SECOND);
        assert_eq!(t.started_at_ms, 1_700_000_000_000);
        assert_eq!(t.sample_ends_ms, [1000, 2000]);
        assert_eq!(t.devices.len(), 1, "only the watched device");
        let d = &t.devices[0];
        assert_eq!(d.read_iops, [1000.0, 0.0]);
        assert_eq!(d.read_bytes_per_sec, [4_096_000.0, 0.0]);
        assert_eq!(d.read_await_ms, [0.5, 0.0]);
        assert_eq!(d.queue_size, [0.8, 0.0]);
        assert_eq!(d.util_percent, [50.0, 0.0]);
        assert_eq!(d.write_iops, [0.0, 0.0]);
        assert_eq!(t.cpu.user_percent, [25.0, 0.0]);
        assert_eq!(t.cpu.system_percent, [12.5, 0.0]);
        assert_eq!(t.cpu.iowait_percent, [12.5, 0.0]);
        assert_eq!(t.cpu.idle_percent, [50.0, 100.0]);
        assert!(t.notes.is_empty(), "{:?}", t.notes);
    }

    #[test]
    fn a_device_missing_for_a_while_gets_zeros_then_a_rate_over_the_gap() {
        let mut b = SeriesBuilder::new("h", &["sdb".into()], Nanos::SECOND);
        b.push(snap(0, vec![disk("sdb", 0, 0, 0, 0, 0)], None));
        b.push(Snapshot {
            notes: vec!["/proc/diskstats: Permission denied".into()],
            ..snap(1, vec![], None)
        });
        b.push(snap(2, vec![disk("sdb", 400, 0, 0, 0, 0)], None));
        let t = b.finish();
        assert_eq!(
            t.devices[0].read_iops,
            [0.0, 200.0],
            "400 reads over the 2 s since last seen"
        );
        assert_eq!(
            t.cpu.user_percent,
            [0.0, 0.0],
            "no CPU readings: zeros, same length"
        );
        assert_eq!(
            t.notes,
            [
                "/proc/diskstats: Permission denied",
                "sdb: not in /proc/diskstats"
            ]
        );
    }

    #[test]
    fn a_device_never_seen_is_noted_once() {
        let mut b = SeriesBuilder::new("h", &["nvme9n1".into()], Nanos::SECOND);
        for s in 0..4 {
            b.push(snap(s, vec![], cpu(s, 0, 0, 0)));
        }
        let t = b.finish();
        assert_eq!(t.devices[0].read_iops, [0.0; 3]);
        assert_eq!(t.notes.len(), 1);
    }

    #[test]
    fn no_snapshots_no_samples() {
        let t = SeriesBuilder::new("h", &["sda".into()], Nanos::SECOND).finish();
        assert!(t.sample_ends_ms.is_empty() && t.devices[0].read_iops.is_empty());
    }
}
