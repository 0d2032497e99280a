//! `iolab kvcache --serve`: a trial's figures second by second. [`watched`] runs the
//! trials with a [`KvLive`] the workers of rank 0 count into, and a thread that once a
//! second turns its counts into [`KvCacheLive`] (tokens/s, the storage tier's read and
//! write bandwidth, its device p95s) and into the live page's progress of the trial's
//! phase (its entries and bytes so far, which `/metrics` counts as any phase's).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use iolab_core::result::OpKind;
use iolab_core::units::Nanos;
use iolab_suites::kvcache::live::{KvLive, KvLiveCounts, KvSecond};
use iolab_suites::kvcache::outcome::trial_name;
use serde::Serialize;

use super::Live;

/// The running trial's last second, as the live page and `/metrics` show it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KvCacheLive {
    /// The trial's phase, named as it is stored.
    pub phase: String,
    pub users: u32,
    #[serde(flatten)]
    pub second: KvSecond,
}

/// Runs `f` with a [`KvLive`] fed to the live page every second, when this process
/// serves one (rank 0 with --serve); else `f(None)`.
pub fn watched<T>(
    root: bool,
    (autoscale, workers): (bool, u32),
    f: impl FnOnce(Option<&KvLive>) -> T,
) -> T {
    let Some(page) = super::current().filter(|_| root) else {
        return f(None);
    };
    let live = KvLive::default();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| feed(page, &live, &done, (autoscale, workers)));
        let r = f(Some(&live));
        done.store(true, Relaxed);
        r
    })
}

/// Once a second until `done`: the running trial's last second on the page.
fn feed(page: &Live, live: &KvLive, done: &AtomicBool, (autoscale, workers): (bool, u32)) {
    let mut before = KvLiveCounts::default();
    let (mut last, mut elapsed) = (Instant::now(), Duration::ZERO);
    while !done.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if last.elapsed() < Duration::from_secs(1) {
            continue;
        }
        let now = live.snapshot();
        let dt = last.elapsed();
        last = Instant::now();
        if now.trial == 0 {
            continue;
        }
        if now.trial != before.trial {
            // A new trial: its counts began from zero since the last second.
            before = KvLiveCounts {
                trial: now.trial,
                ..KvLiveCounts::default()
            };
            elapsed = Duration::ZERO;
        }
        elapsed += dt;
        let phase = trial_name(autoscale, now.trial as usize, now.users);
        let second = now.per_second(&before, dt.as_secs_f64());
        page.update(|s| {
            s.kvcache = Some(KvCacheLive {
                phase: phase.clone(),
                users: now.users,
                second,
            })
        });
        progress(page, &phase, elapsed, (&before, &now), workers);
        before = now;
    }
}

/// The trial's phase on the page: its storage tier's entries and bytes so far (by
/// operation, as its stored phase counts them) and the device spans of the last second.
fn progress(
    page: &Live,
    phase: &str,
    elapsed: Duration,
    (before, now): (&KvLiveCounts, &KvLiveCounts),
    workers: u32,
) {
    let n = OpKind::ALL.len();
    let mut counted = vec![0; 2 * n];
    counted[OpKind::Read.index()] = now.reads;
    counted[OpKind::Write.index()] = now.writes;
    counted[n + OpKind::Read.index()] = now.bytes_read;
    counted[n + OpKind::Write.index()] = now.bytes_written;
    let latency = now.device_spans_since(before);
    page.progress(&iolab_engine::Progress {
        phase,
        elapsed: Nanos(elapsed.as_nanos() as u64),
        ops: now.reads + now.writes,
        bytes: now.bytes_read + now.bytes_written,
        workers_done: 0,
        workers,
        latency: &latency,
        per_rank: &[],
        per_unit: &[],
        counted: &counted,
    });
}
