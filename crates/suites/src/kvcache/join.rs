//! When a trial stops counting, as kv-cache.py decides it: at the end of `--duration` its
//! stop event is set, then each worker thread in turn is joined with a timeout
//! (`thread.join(timeout=2.0)`), and only then are the results added up. A request being
//! served at the stop finishes (its worker looks at the stop only between requests) and
//! counts if it ends before the last join does: each still-busy worker lengthens the
//! window by up to the timeout, so eight busy workers can add 16 s.
//! [`Cutoff`] is that moment: the deadline itself without `--join-window`, else the end
//! of the same joins, each worker waited for until it has exited, at most the window.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use iolab_core::units::Nanos;
use iolab_engine::Clock;

/// How often a join looks whether its worker has exited.
const POLL: Nanos = Nanos(1_000_000);
/// How often the wait for the deadline looks whether the run was stopped.
const HALT_POLL: Nanos = Nanos(100_000_000);

/// The moment requests being served stop counting, and the workers' exits it waits for.
pub struct Cutoff {
    at: AtomicU64,
    window: Nanos,
    exited: Vec<AtomicBool>,
}

impl Cutoff {
    /// The cutoff of a trial ending at `deadline` with `workers` workers: the deadline
    /// without a window, else not known until [`Cutoff::join_in_turn`] has ended.
    pub fn new(deadline: Nanos, window: Nanos, workers: u32) -> Cutoff {
        let at = if window.0 == 0 { deadline.0 } else { u64::MAX };
        Cutoff {
            at: AtomicU64::new(at),
            window,
            exited: (0..workers).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// True once `now` is at or after the cutoff.
    pub fn passed(&self, now: Nanos) -> bool {
        now.0 >= self.at.load(Ordering::Acquire)
    }

    /// The latest the cutoff can be: every worker waited for the whole window.
    pub fn latest(&self, deadline: Nanos) -> Nanos {
        deadline + Nanos(self.window.0.saturating_mul(self.exited.len() as u64))
    }

    /// Worker `w` has served its last request.
    pub fn exit(&self, w: u32) {
        if let Some(e) = self.exited.get(w as usize) {
            e.store(true, Ordering::Release);
        }
    }

    /// kv-cache.py's joins, run by the trial's own thread: from `deadline`, each worker
    /// in turn waited for until it has exited or the window has passed; the cutoff is
    /// set when the last wait ends (at once when `halt` says the run stopped). Returns it.
    pub fn join_in_turn(
        &self,
        clock: &dyn Clock,
        deadline: Nanos,
        halt: &dyn Fn() -> bool,
    ) -> Nanos {
        if self.window.0 == 0 {
            return deadline;
        }
        wait(clock, deadline, HALT_POLL, &|| halt());
        for e in &self.exited {
            let until = clock.now() + self.window;
            wait(clock, until, POLL, &|| halt() || e.load(Ordering::Acquire));
        }
        let at = clock.now();
        self.at.store(at.0, Ordering::Release);
        at
    }
}

/// Naps until `until` or until `done` says so, looking every `poll`.
fn wait(clock: &dyn Clock, until: Nanos, poll: Nanos, done: &dyn Fn() -> bool) {
    loop {
        let now = clock.now();
        if done() || now >= until {
            return;
        }
        clock.nap(until.saturating_sub(now).min(poll));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_engine::FakeClock;

    const SECOND: Nanos = Nanos(1_000_000_000);

    #[test]
    fn without_a_window_the_cutoff_is_the_deadline_and_nothing_waits() {
        let clock = FakeClock::new(Nanos(1));
        let c = Cutoff::new(SECOND, Nanos::ZERO, 4);
        assert!(!c.passed(Nanos(SECOND.0 - 1)));
        assert!(c.passed(SECOND));
        assert_eq!(c.join_in_turn(&clock, SECOND, &|| false), SECOND);
        assert!(clock.now() < Nanos(10), "it waited");
    }

    #[test]
    fn each_busy_worker_adds_up_to_one_window_in_turn() {
        // Workers 0 and 2 have exited at the deadline, 1 and 3 are still serving: the
        // joins wait a window for each of those two, one after the other.
        let clock = FakeClock::new(Nanos(1));
        let window = Nanos(2 * SECOND.0);
        let c = Cutoff::new(SECOND, window, 4);
        assert!(!c.passed(Nanos(u64::MAX - 1)), "no cutoff before the joins");
        assert_eq!(c.latest(SECOND), Nanos(9 * SECOND.0));
        c.exit(0);
        c.exit(2);
        let at = c.join_in_turn(&clock, SECOND, &|| false);
        let want = SECOND + window + window;
        assert!(
            at >= want && at < want + Nanos(1_000),
            "{at:?} against {want:?}"
        );
        assert!(c.passed(at) && !c.passed(Nanos(at.0 - 1)));
    }

    #[test]
    fn a_stopped_run_cuts_at_once() {
        let clock = FakeClock::new(Nanos(1));
        let c = Cutoff::new(SECOND, Nanos(2 * SECOND.0), 8);
        let at = c.join_in_turn(&clock, SECOND, &|| true);
        assert!(at < Nanos(1_000), "{at:?}");
        assert!(c.passed(at));
    }
}
