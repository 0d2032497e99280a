//! fio's disk statistics (`disk_util`): [`DiskProbe`] reads /proc/diskstats for the
//! devices under the jobs' files when each phase's timed part starts and ends (beside
//! the run's telemetry probe it wraps), and [`DiskTotals`] adds up what the devices did
//! during the measured phases: fio's ios, merges, ticks, in_queue and util.

use std::sync::Mutex;
use std::time::Instant;

use iolab_compat::fio::output::DiskUtil;
use iolab_core::telemetry::Telemetry;
use iolab_engine::PhaseProbe;
use iolab_host::telemetry::diskstats::{self, DiskStat, delta};

/// What the devices did over the measured phases so far.
#[derive(Default)]
pub struct DiskTotals {
    /// Per device, in the order first seen: its counts and busy milliseconds.
    devices: Vec<(DiskUtil, u64)>,
    /// Milliseconds the measured phases lasted.
    elapsed_ms: f64,
}

impl DiskTotals {
    fn add(&mut self, before: &[DiskStat], after: &[DiskStat], elapsed_ms: f64) {
        self.elapsed_ms += elapsed_ms;
        for now in after {
            let Some(was) = before.iter().find(|b| b.name == now.name) else {
                continue;
            };
            let i = match self.devices.iter().position(|(d, _)| d.name == now.name) {
                Some(i) => i,
                None => {
                    self.devices.push((
                        DiskUtil {
                            name: now.name.clone(),
                            ..DiskUtil::default()
                        },
                        0,
                    ));
                    self.devices.len() - 1
                }
            };
            let (d, busy) = &mut self.devices[i];
            let grew = |f: fn(&DiskStat) -> u64| delta(f(was), f(now));
            d.read_ios += grew(|s| s.reads);
            d.write_ios += grew(|s| s.writes);
            d.read_merges += grew(|s| s.reads_merged);
            d.write_merges += grew(|s| s.writes_merged);
            d.read_ticks += grew(|s| s.read_ms);
            d.write_ticks += grew(|s| s.write_ms);
            d.in_queue += grew(|s| s.weighted_io_ms);
            *busy += grew(|s| s.io_ms);
        }
    }

    /// fio's `disk_util` entries: util is the busy time over the phases' time, at most
    /// 100 % as fio caps it.
    pub fn fio(&self) -> Vec<DiskUtil> {
        self.devices
            .iter()
            .map(|(d, busy)| DiskUtil {
                util: if self.elapsed_ms > 0.0 {
                    (*busy as f64 * 100.0 / self.elapsed_ms).min(100.0)
                } else {
                    0.0
                },
                ..d.clone()
            })
            .collect()
    }
}

/// Reads the devices' counters around each phase, then hands on to `inner`.
pub struct DiskProbe<'a> {
    pub inner: Option<&'a dyn PhaseProbe>,
    pub devices: Vec<String>,
    pub totals: &'a Mutex<DiskTotals>,
    started: Mutex<Option<(Instant, Vec<DiskStat>)>>,
}

impl<'a> DiskProbe<'a> {
    pub fn new(
        inner: Option<&'a dyn PhaseProbe>,
        devices: Vec<String>,
        totals: &'a Mutex<DiskTotals>,
    ) -> Self {
        DiskProbe {
            inner,
            devices,
            totals,
            started: Mutex::new(None),
        }
    }

    fn read(&self) -> Vec<DiskStat> {
        if self.devices.is_empty() {
            return Vec::new();
        }
        let text = std::fs::read_to_string("/proc/diskstats").unwrap_or_default();
        diskstats::parse(&text)
            .0
            .into_iter()
            .filter(|s| self.devices.contains(&s.name))
            .collect()
    }
}

impl PhaseProbe for DiskProbe<'_> {
    fn start(&self) {
        *self.started.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((Instant::now(), self.read()));
        if let Some(p) = self.inner {
            p.start();
        }
    }

    fn stop(&self) -> Option<Telemetry> {
        let telemetry = self.inner.and_then(|p| p.stop());
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
        telemetry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn totals_add_up_the_phases_and_cap_util() {
        let mut t = DiskTotals::default();
        t.add(&[stat(100, 1000)], &[stat(300, 1500)], 1000.0);
        t.add(&[stat(300, 1500)], &[stat(400, 1700)], 1000.0);
        let d = &t.fio()[0];
        assert_eq!(
            (d.name.as_str(), d.read_ios, d.write_ios, d.read_merges),
            ("vda", 300, 0, 30)
        );
        assert_eq!((d.read_ticks, d.in_queue), (600, 700));
        // 700 ms busy in 2000 ms.
        assert_eq!(d.util, 35.0);
        t.add(&[stat(0, 0)], &[stat(0, 9000)], 1000.0);
        assert_eq!(t.fio()[0].util, 100.0);
    }
}
