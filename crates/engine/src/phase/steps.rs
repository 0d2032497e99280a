//! A phase in steps: every worker meets the others after each step (DLIO's
//! `comm.barrier()` after a training step; its checkpoint_rank_sync before and after a
//! checkpoint). [`RankSteps`] is the meeting of a rank's workers with the rank's
//! coordinating thread, which calls the phase's [`StepHook`] (the cross-rank part: a
//! collective, every rank for the same step) and tells the workers whether the phase
//! ends. A worker that leaves the phase (done, failed, panicked) is no longer waited for.

use std::sync::{Condvar, Mutex, MutexGuard};

/// The meeting of all workers of the job after each step.
pub trait StepMeeting: Sync {
    /// Called by a worker once its step `step` (from 1) is done (or failed: `failed`);
    /// returns when every worker has met, true when the phase ends.
    fn meet(&self, step: u64, failed: bool) -> bool;
}

/// The cross-rank part of a step meeting.
pub trait StepHook: Sync {
    /// Called on the coordinating thread of every rank once all of its workers met after
    /// step `step` (from 1); `failed`: one of them failed (or every one has left).
    /// Collective. True ends the phase.
    fn after_step(&self, step: u64, failed: bool) -> bool;
}

#[derive(Default)]
struct Meeting {
    /// Workers still in the phase.
    active: usize,
    /// Workers at the current meeting.
    arrived: usize,
    failed: bool,
    /// Raised when a meeting ends.
    generation: u64,
    stop: bool,
}

/// The step meeting of one rank's workers and its coordinating thread.
pub struct RankSteps {
    state: Mutex<Meeting>,
    changed: Condvar,
}

impl RankSteps {
    pub(crate) fn new(workers: usize) -> RankSteps {
        RankSteps {
            state: Mutex::new(Meeting {
                active: workers,
                ..Meeting::default()
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Meeting> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A guard whose drop is [`RankSteps::leave`].
    pub(crate) fn leaving(&self) -> Leaving<'_> {
        Leaving(self)
    }

    /// A worker leaves the phase: the meetings no longer wait for it.
    pub(crate) fn leave(&self) {
        let mut m = self.lock();
        m.active = m.active.saturating_sub(1);
        self.changed.notify_all();
    }

    /// The coordinating thread's part: meets the workers after every step and calls
    /// `hook` until it ends the phase.
    pub(crate) fn coordinate(&self, hook: &dyn StepHook) {
        for step in 1.. {
            let failed = {
                let mut m = self.lock();
                while m.arrived < m.active {
                    m = self.changed.wait(m).unwrap_or_else(|p| p.into_inner());
                }
                // Nobody left to step: the phase cannot go on, as after a failure.
                m.failed || m.active == 0
            };
            let stop = hook.after_step(step, failed);
            let mut m = self.lock();
            m.stop = stop;
            m.arrived = 0;
            m.failed = false;
            m.generation += 1;
            self.changed.notify_all();
            if stop {
                break;
            }
        }
    }
}

/// Leaves the meeting when dropped (a worker's end, however it ends).
pub(crate) struct Leaving<'a>(&'a RankSteps);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

impl StepMeeting for RankSteps {
    fn meet(&self, _step: u64, failed: bool) -> bool {
        let mut m = self.lock();
        if m.stop {
            return true;
        }
        m.failed |= failed;
        m.arrived += 1;
        let generation = m.generation;
        self.changed.notify_all();
        while m.generation == generation {
            m = self.changed.wait(m).unwrap_or_else(|p| p.into_inner());
        }
        m.stop
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    struct Count {
        steps: u64,
        calls: AtomicU64,
        failed_at: AtomicU64,
    }

    impl StepHook for Count {
        fn after_step(&self, step: u64, failed: bool) -> bool {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if failed {
                self.failed_at.store(step, Ordering::SeqCst);
            }
            failed || step >= self.steps
        }
    }

    #[test]
    fn workers_meet_every_step_until_the_hook_ends_the_phase() {
        let steps = RankSteps::new(3);
        let hook = Count {
            steps: 4,
            calls: AtomicU64::new(0),
            failed_at: AtomicU64::new(0),
        };
        let met = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for step in 1.. {
                        met.fetch_add(1, Ordering::SeqCst);
                        if steps.meet(step, false) {
                            break;
                        }
                    }
                    steps.leave();
                });
            }
            steps.coordinate(&hook);
        });
        assert_eq!(hook.calls.load(Ordering::SeqCst), 4);
        assert_eq!(met.load(Ordering::SeqCst), 12);
        assert_eq!(hook.failed_at.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_worker_that_leaves_is_not_waited_for_and_a_failure_ends_the_phase() {
        let steps = RankSteps::new(2);
        let hook = Count {
            steps: 100,
            calls: AtomicU64::new(0),
            failed_at: AtomicU64::new(0),
        };
        std::thread::scope(|s| {
            // One worker leaves at once (a panic, a setup failure).
            s.spawn(|| steps.leave());
            s.spawn(|| {
                assert!(!steps.meet(1, false));
                assert!(steps.meet(2, true));
                steps.leave();
            });
            steps.coordinate(&hook);
        });
        assert_eq!(hook.calls.load(Ordering::SeqCst), 2);
        assert_eq!(hook.failed_at.load(Ordering::SeqCst), 2);
    }
}
