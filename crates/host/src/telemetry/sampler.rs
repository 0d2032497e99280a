//! The sampling thread: [`Sampler::start`] takes a [`Snapshot`] from a
//! [`SnapshotSource`] ([`ProcSource`] reads /proc; tests pass scripted ones) once per
//! interval on a fixed schedule until [`Sampler::stop`], which returns the
//! [`Telemetry`]. The rates themselves come from `SeriesBuilder`; this file only keeps time.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use iolab_core::Nanos;
use iolab_core::telemetry::Telemetry;

use super::cpustat::CpuTimes;
use super::diskstats;
use super::series::{SeriesBuilder, Snapshot};
use crate::root::{SysRoot, read_text};

/// Anything that can read the counters now.
pub trait SnapshotSource: Send + 'static {
    fn snapshot(&mut self) -> Snapshot;
}

/// Reads /proc/diskstats and /proc/stat under a [`SysRoot`].
pub struct ProcSource {
    root: SysRoot,
    origin: Instant,
}

impl ProcSource {
    pub fn new(root: SysRoot) -> Self {
        ProcSource {
            root,
            origin: Instant::now(),
        }
    }
}

impl SnapshotSource for ProcSource {
    fn snapshot(&mut self) -> Snapshot {
        let at = Nanos::from_duration(self.origin.elapsed());
        let mut notes = Vec::new();
        let disks = match read_text(&self.root.proc_path("diskstats")) {
            Ok(text) => {
                let (disks, errors) = diskstats::parse(&text);
                notes.extend(errors.iter().map(|e| e.to_string()));
                disks
            }
            Err(why) => {
                notes.push(why);
                Vec::new()
            }
        };
        let cpu = match read_text(&self.root.proc_path("stat")).map(|t| CpuTimes::parse(&t)) {
            Ok(Ok(cpu)) => Some(cpu),
            Ok(Err(e)) => {
                notes.push(e.to_string());
                None
            }
            Err(why) => {
                notes.push(why);
                None
            }
        };
        Snapshot {
            at,
            wall_ms: iolab_core::civil::now_ms(),
            disks,
            cpu,
            notes,
        }
    }
}

/// Samples in the background from `start` until `stop` (or drop).
pub struct Sampler {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<Telemetry>>,
    /// What to return if the thread could not be started or died.
    fallback: Telemetry,
}

/// Intervals shorter than this are raised to it: sampling is not meant to load the host.
const MIN_INTERVAL: Nanos = Nanos::from_millis(1);

impl Sampler {
    /// Samples `devices` (kernel names, as in the inventory's block devices) and the CPU
    /// from /proc under `root` every `interval`.
    pub fn start(root: &SysRoot, host: &str, devices: &[String], interval: Nanos) -> Sampler {
        Self::start_with(ProcSource::new(root.clone()), host, devices, interval)
    }

    /// Samples from any source. The first snapshot (the baseline) is taken before this
    /// returns, so the thread's start is over before the caller's timed work; then
    /// one at each multiple of `interval` after it; missed ticks are skipped, not
    /// bunched. On stop, an interval that is at least half over is closed with a final
    /// snapshot (its rates use its true length); a shorter one is dropped.
    pub fn start_with(
        mut source: impl SnapshotSource,
        host: &str,
        devices: &[String],
        interval: Nanos,
    ) -> Sampler {
        let interval = interval.max(MIN_INTERVAL);
        let builder = SeriesBuilder::new(host, devices, interval);
        let fallback = SeriesBuilder::new(host, devices, interval).finish();
        let (stop, stopped) = mpsc::channel::<()>();
        let (ready, baseline_taken) = mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("iolab-telemetry".to_string())
            .spawn(move || sample_until_stopped(&mut source, builder, interval, stopped, ready));
        match spawned {
            Ok(thread) => {
                // Back only once the baseline is read: the thread's start and its first
                // readings are over before the caller lets the measured work begin.
                // (An error here is a thread that died first; `stop` says so.)
                let _ = baseline_taken.recv();
                Sampler {
                    stop: Some(stop),
                    thread: Some(thread),
                    fallback,
                }
            }
            Err(e) => {
                let mut fallback = fallback;
                fallback
                    .notes
                    .push(format!("telemetry not sampled: cannot start a thread: {e}"));
                Sampler {
                    stop: None,
                    thread: None,
                    fallback,
                }
            }
        }
    }

    /// Stops sampling and returns the series.
    pub fn stop(mut self) -> Telemetry {
        self.finish()
    }

    fn finish(&mut self) -> Telemetry {
        if let Some(stop) = self.stop.take() {
            // The thread may have ended already; then there is no one to tell.
            let _ = stop.send(());
        }
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(telemetry)) => telemetry,
            Some(Err(_)) => {
                let mut t = std::mem::take(&mut self.fallback);
                t.notes
                    .push("telemetry lost: the sampling thread panicked".to_string());
                t
            }
            None => std::mem::take(&mut self.fallback),
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.finish();
        }
    }
}

/// The thread's loop: a baseline snapshot, then one per tick until told to stop.
fn sample_until_stopped(
    source: &mut impl SnapshotSource,
    mut builder: SeriesBuilder,
    interval: Nanos,
    stopped: Receiver<()>,
    ready: Sender<()>,
) -> Telemetry {
    let period = interval.to_duration();
    builder.push(source.snapshot());
    let start = Instant::now();
    // The caller may have gone (it never waits long); nothing to tell then.
    let _ = ready.send(());
    let mut last = start;
    let mut tick: u32 = 1;
    loop {
        let deadline = start + period * tick;
        match stopped.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Err(RecvTimeoutError::Timeout) => {
                builder.push(source.snapshot());
                last = Instant::now();
                tick = next_tick(start, last, period);
            }
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                if last.elapsed() >= period / 2 {
                    builder.push(source.snapshot());
                }
                return builder.finish();
            }
        }
    }
}

/// The next tick after `now`: the first multiple of `period` after `start` still ahead.
fn next_tick(start: Instant, now: Instant, period: Duration) -> u32 {
    let elapsed = now.duration_since(start).as_nanos();
    let period = period.as_nanos().max(1);
    u32::try_from(elapsed / period + 1).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::diskstats::DiskStat;
    use crate::testing::Fixture;

    /// A device doing exactly 100 reads and taking 1 s of fake time per snapshot.
    struct Scripted {
        n: u64,
    }

    impl SnapshotSource for Scripted {
        fn snapshot(&mut self) -> Snapshot {
            let line = format!(
                "8 0 sda {} 0 {} 0 0 0 0 0 0 {} {}",
                self.n * 100,
                self.n * 800,
                self.n * 250,
                self.n * 500
            );
            let snapshot = Snapshot {
                at: Nanos::from_secs(self.n),
                wall_ms: 1000 * self.n as i64,
                disks: vec![DiskStat::parse_line(&line).unwrap()],
                cpu: CpuTimes::parse(&format!("cpu {} 0 0 {} 0", self.n * 10, self.n * 30)).ok(),
                notes: Vec::new(),
            };
            self.n += 1;
            snapshot
        }
    }

    #[test]
    fn samples_until_stopped_with_rates_from_the_snapshots() {
        let sampler = Sampler::start_with(
            Scripted { n: 0 },
            "h",
            &["sda".into()],
            Nanos::from_millis(5),
        );
        std::thread::sleep(Duration::from_millis(60));
        let t = sampler.stop();
        let n = t.sample_ends_ms.len();
        assert!(n >= 3, "expected several samples, got {n}");
        let d = &t.devices[0];
        assert_eq!(d.read_iops, vec![100.0; n]);
        assert_eq!(d.read_bytes_per_sec, vec![409_600.0; n]);
        assert_eq!(d.util_percent, vec![25.0; n]);
        assert_eq!(d.queue_size, vec![0.5; n]);
        assert_eq!(t.cpu.user_percent, vec![25.0; n]);
        assert_eq!(t.cpu.idle_percent, vec![75.0; n]);
        assert_eq!(t.sample_ends_ms[0], 1000, "times come from the snapshots");
        assert_eq!(t.interval, Nanos::from_millis(5));
    }

    #[test]
    fn stopping_at_once_gives_no_samples() {
        let sampler = Sampler::start_with(
            Scripted { n: 0 },
            "h",
            &["sda".into()],
            Nanos::from_secs(60),
        );
        let t = sampler.stop();
        assert!(t.sample_ends_ms.is_empty());
        assert_eq!(t.devices[0].name, "sda");
        assert_eq!(t.host, "h");
    }

    #[test]
    fn dropping_stops_the_thread() {
        let sampler = Sampler::start_with(Scripted { n: 0 }, "h", &[], Nanos::from_millis(1));
        drop(sampler);
    }

    #[test]
    fn proc_source_reads_a_fixture_tree_and_notes_what_is_missing() {
        let fx = Fixture::new();
        fx.file(
            "proc/diskstats",
            include_str!("../../tests/fixtures/diskstats-20"),
        );
        let mut source = ProcSource::new(fx.root());
        let s = source.snapshot();
        assert_eq!(s.disks.len(), 4);
        assert_eq!(s.cpu, None);
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
        assert!(s.notes[0].contains("stat"), "{:?}", s.notes);
    }

    #[test]
    fn tick_schedule_skips_missed_ticks() {
        let start = Instant::now();
        let p = Duration::from_millis(10);
        assert_eq!(next_tick(start, start + Duration::from_millis(10), p), 2);
        assert_eq!(next_tick(start, start + Duration::from_millis(35), p), 4);
    }
}
