//! [`PhaseControl`]: what a rank's workers and its coordinating thread share during a
//! phase. The start gate (all workers begin at the same instant), the stop flag, the
//! first-done flag, per-worker progress counters (one cache line each, written only by
//! their worker), the wear-out rendezvous, a worker's wait before it starts (fio's
//! startdelay and wait_for) and snapshots of its figures taken while it runs.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use iolab_core::live_latency::BUCKETS;
use iolab_core::result::OpKind;
use iolab_core::units::Nanos;

pub use crate::recorder::WorkerProgress;

pub use iolab_backend::process::{thread_context_switches, thread_cpu_times};

/// A thread's CPU times (user, system) and context switches.
type ThreadUsage = (Nanos, Nanos, u64);

fn thread_usage() -> ThreadUsage {
    let (user, system) = thread_cpu_times();
    (user, system, thread_context_switches())
}

std::thread_local! {
    /// This worker thread's CPU use when its measured time started.
    static CPU_AT_START: std::cell::Cell<Option<ThreadUsage>> =
        const { std::cell::Cell::new(None) };
}

const NOT_WAITING: u64 = u64::MAX;

#[derive(Default)]
struct Gate {
    ready: u32,
    failed: u32,
    start: Option<Nanos>,
    /// Wear-out: the number of I/Os every worker must reach, once known.
    wear_out_target: Option<u64>,
    released: bool,
}

pub struct PhaseControl {
    pub workers: Vec<WorkerProgress>,
    pub stop: AtomicBool,
    pub first_done: AtomicBool,
    finished: AtomicU32,
    /// Raised to ask every running worker for a snapshot of its figures.
    pub snapshot_request: AtomicU64,
    gate: Mutex<Gate>,
    changed: Condvar,
}

impl PhaseControl {
    pub fn new(workers: usize) -> Self {
        let w: Vec<WorkerProgress> = (0..workers).map(|_| WorkerProgress::default()).collect();
        for p in &w {
            p.waiting_with.store(NOT_WAITING, Ordering::Relaxed);
        }
        PhaseControl {
            workers: w,
            stop: AtomicBool::new(false),
            first_done: AtomicBool::new(false),
            finished: AtomicU32::new(0),
            snapshot_request: AtomicU64::new(0),
            gate: Mutex::new(Gate::default()),
            changed: Condvar::new(),
        }
    }

    fn gate(&self) -> std::sync::MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A worker reports that its setup succeeded (or not), then waits for the start.
    /// Returns the phase start time, or None if the phase will not run.
    pub fn ready_and_wait(&self, ok: bool) -> Option<Nanos> {
        let mut g = self.gate();
        if ok {
            g.ready += 1;
        } else {
            g.failed += 1;
        }
        self.changed.notify_all();
        loop {
            if g.released {
                let start = if ok { g.start } else { None };
                if start.is_some() {
                    PhaseControl::restart_cpu_clock();
                }
                return start;
            }
            g = self.changed.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Coordinator: waits until every worker has reported; true if all set up fine.
    pub fn wait_all_ready(&self) -> bool {
        let mut g = self.gate();
        while (g.ready + g.failed) as usize != self.workers.len() {
            g = self.changed.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        g.failed == 0
    }

    /// Coordinator: starts all workers at `start`, or (None) releases them to exit.
    pub fn release(&self, start: Option<Nanos>) {
        let mut g = self.gate();
        g.start = start;
        g.released = true;
        if start.is_none() {
            self.stop.store(true, Ordering::Relaxed);
        }
        self.changed.notify_all();
    }

    /// A worker has finished; the first one also raises the first-done flag. Called on
    /// the worker's own thread, it also takes the CPU time that thread used since the
    /// start.
    pub fn finished(&self, worker: usize) {
        if let Some((u0, s0, c0)) = CPU_AT_START.with(|c| c.take()) {
            let (u1, s1, c1) = thread_usage();
            let w = &self.workers[worker];
            w.cpu_user.store(u1.saturating_sub(u0).0, Ordering::Relaxed);
            w.cpu_system
                .store(s1.saturating_sub(s0).0, Ordering::Relaxed);
            w.context_switches
                .store(c1.saturating_sub(c0), Ordering::Relaxed);
        }
        self.first_done.store(true, Ordering::Relaxed);
        self.workers[worker].done.store(true, Ordering::Release);
        self.finished.fetch_add(1, Ordering::AcqRel);
        let _g = self.gate();
        self.changed.notify_all();
    }

    /// Counts the calling worker thread's CPU time and context switches from now on
    /// (its measured time starts: at the phase start, after a start delay or a ramp).
    pub fn restart_cpu_clock() {
        CPU_AT_START.with(|c| c.set(Some(thread_usage())));
    }

    /// A worker waits before it starts: up to `pause`, then until every worker of
    /// `after` has finished. False when the phase was stopped meanwhile.
    pub fn hold(&self, worker: usize, pause: Duration, after: &[usize]) -> bool {
        let w = &self.workers[worker];
        w.holding.store(true, Ordering::Release);
        let until = std::time::Instant::now() + pause;
        let mut g = self.gate();
        let stopped = loop {
            if self.stop.load(Ordering::Relaxed) || w.halt.load(Ordering::Relaxed) {
                break true;
            }
            let now = std::time::Instant::now();
            let waited = now >= until
                && after
                    .iter()
                    .all(|a| self.workers[*a].done.load(Ordering::Acquire));
            if waited {
                break false;
            }
            // Woken when a worker finishes or the phase stops; the 100 ms bound only
            // guards against a missed wake-up.
            let left = until.saturating_duration_since(now);
            let wait = if left.is_zero() {
                Duration::from_millis(100)
            } else {
                left.min(Duration::from_millis(100))
            };
            g = self
                .changed
                .wait_timeout(g, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        };
        drop(g);
        w.holding.store(false, Ordering::Release);
        !stopped
    }

    /// A worker with fio's exitall ends (`failed`: with an error): the rule's workers
    /// stop as at the end of their runtime, those waiting to start never start (with
    /// `running_only`, fio's exit_what=stonewall, only those already started stop).
    pub fn exit(&self, rule: &crate::plan::ExitRule, failed: bool) {
        if rule.on_error_only && !failed {
            return;
        }
        for &i in &rule.workers {
            let w = &self.workers[i];
            if rule.running_only && !w.started.load(Ordering::Acquire) {
                continue;
            }
            w.halt.store(true, Ordering::Relaxed);
        }
        // Wakes the workers waiting to start.
        let _g = self.gate();
        self.changed.notify_all();
    }

    /// Asks every running worker to leave a snapshot of its figures in its slot
    /// ([`WorkerProgress::snapshot`]); it does so between two I/Os.
    pub fn request_snapshots(&self) {
        self.snapshot_request.fetch_add(1, Ordering::Relaxed);
    }

    pub fn all_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire) as usize == self.workers.len()
    }

    pub fn finished_count(&self) -> u32 {
        self.finished.load(Ordering::Acquire)
    }

    /// Coordinator: sleeps until a worker finishes or `timeout` passes.
    pub fn wait_for_change(&self, timeout: Duration) {
        let g = self.gate();
        if self.all_finished() {
            return;
        }
        let _ = self.changed.wait_timeout(g, timeout);
    }

    /// Stops every worker of this rank (Ctrl-C, a failure elsewhere).
    pub fn stop_all(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let mut g = self.gate();
        // Workers waiting at the wear-out rendezvous must wake up and leave.
        g.wear_out_target.get_or_insert(0);
        self.changed.notify_all();
    }

    /// Wear-out: a worker stopped by the stonewall (or done with its share) with `done`
    /// I/Os waits until the coordinator knows how many I/Os the busiest worker anywhere
    /// did. Returns that number (0 when stopped). A worker arriving here is done with its
    /// share or out of time, so it raises the first-done flag: the others freeze their
    /// first-done figures now, not when the rendezvous ends.
    pub fn wear_out_wait(&self, worker: usize, done: u64) -> u64 {
        self.first_done.store(true, Ordering::Relaxed);
        self.workers[worker]
            .waiting_with
            .store(done, Ordering::Release);
        let mut g = self.gate();
        self.changed.notify_all();
        loop {
            if let Some(t) = g.wear_out_target {
                return t;
            }
            g = self.changed.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Coordinator: the most I/Os any waiting worker did, once every worker of this rank
    /// is waiting at the rendezvous or finished; else None.
    pub fn wear_out_local_max(&self) -> Option<u64> {
        let mut max = 0;
        for w in &self.workers {
            let waiting = w.waiting_with.load(Ordering::Acquire);
            if waiting != NOT_WAITING {
                max = max.max(waiting);
            } else if w.done.load(Ordering::Acquire) {
                // Finished its whole share before the stonewall: that count sets the bar too.
                max = max.max(w.ops.load(Ordering::Relaxed));
            } else {
                return None;
            }
        }
        Some(max)
    }

    /// Whether `worker` waited at the wear-out rendezvous during this phase.
    pub fn waited_at_rendezvous(&self, worker: usize) -> bool {
        self.workers[worker].waiting_with.load(Ordering::Acquire) != NOT_WAITING
    }

    /// Coordinator: tells waiting workers how far to go.
    pub fn set_wear_out_target(&self, target: u64) {
        let mut g = self.gate();
        g.wear_out_target = Some(target);
        self.changed.notify_all();
    }

    /// CPU time (user, system) this rank's worker threads used, each from the start
    /// until it finished (time spent blocked at the wear-out rendezvous costs none).
    pub fn worker_cpu(&self) -> (Nanos, Nanos) {
        self.workers
            .iter()
            .fold((Nanos::ZERO, Nanos::ZERO), |(u, s), w| {
                (
                    u + Nanos(w.cpu_user.load(Ordering::Relaxed)),
                    s + Nanos(w.cpu_system.load(Ordering::Relaxed)),
                )
            })
    }

    /// Totals of the live counters: (ops, bytes).
    /// The workers' latency buckets added up (cumulative since the phase began).
    pub fn latency_counts(&self) -> Vec<u64> {
        let mut total = vec![0u64; BUCKETS];
        for w in &self.workers {
            for (t, c) in total.iter_mut().zip(w.latency.iter()) {
                *t += c.load(Ordering::Relaxed);
            }
        }
        total
    }

    /// The workers' counted operations by operation, then their bytes by operation
    /// (`OpKind::index` order; see [`WorkerProgress::counted`]).
    pub fn counted(&self) -> Vec<u64> {
        let n = OpKind::ALL.len();
        let mut total = vec![0u64; 2 * n];
        for w in &self.workers {
            for (i, [ops, bytes]) in w.counted.iter().enumerate() {
                total[i] += ops.load(Ordering::Relaxed);
                total[n + i] += bytes.load(Ordering::Relaxed);
            }
        }
        total
    }

    pub fn totals(&self) -> (u64, u64) {
        self.workers.iter().fold((0, 0), |(o, b), w| {
            (
                o + w.ops.load(Ordering::Relaxed),
                b + w.bytes.load(Ordering::Relaxed),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn workers_start_together_and_finish() {
        let c = Arc::new(PhaseControl::new(2));
        std::thread::scope(|s| {
            for w in 0..2 {
                let c = c.clone();
                s.spawn(move || {
                    let start = c.ready_and_wait(true);
                    assert_eq!(start, Some(Nanos(42)));
                    c.finished(w);
                });
            }
            assert!(c.wait_all_ready());
            c.release(Some(Nanos(42)));
        });
        assert!(c.all_finished());
        assert!(c.first_done.load(Ordering::Relaxed));
    }

    #[test]
    fn a_failed_setup_releases_everyone_without_starting() {
        let c = Arc::new(PhaseControl::new(2));
        std::thread::scope(|s| {
            let c1 = c.clone();
            s.spawn(move || assert_eq!(c1.ready_and_wait(false), None));
            let c2 = c.clone();
            s.spawn(move || assert_eq!(c2.ready_and_wait(true), None));
            assert!(!c.wait_all_ready());
            c.release(None);
        });
        assert!(c.stop.load(Ordering::Relaxed));
    }

    #[test]
    fn wear_out_rendezvous_finds_the_maximum() {
        let c = Arc::new(PhaseControl::new(3));
        c.finished(2);
        std::thread::scope(|s| {
            for (w, done) in [(0usize, 10u64), (1, 17)] {
                let c = c.clone();
                s.spawn(move || assert_eq!(c.wear_out_wait(w, done), 17));
            }
            let max = loop {
                if let Some(m) = c.wear_out_local_max() {
                    break m;
                }
                std::thread::sleep(Duration::from_millis(1));
            };
            c.set_wear_out_target(max);
        });
    }
}
