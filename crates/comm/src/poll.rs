//! How a rank polls a pending non-blocking collective: sleeping between tests, for a
//! pause that grows with the wait so far but stays a small share of it.

use std::time::Duration;

/// The shortest pause between two tests of a pending collective.
pub(crate) const MIN_PAUSE: Duration = Duration::from_micros(20);
/// The longest (a rank waiting for a slow peer tests 500 times a second).
pub(crate) const MAX_PAUSE: Duration = Duration::from_millis(2);

/// The pause before the next test after `waited`: an eighth of the wait so far, within
/// [`MIN_PAUSE`, `MAX_PAUSE`]. A collective that completes after a wait W is seen at
/// most W / 8 (or `MIN_PAUSE`) later. A pause that doubles from its start instead
/// (50 us, 100 us, ... 2 ms) sees it up to W later: on a training run of millisecond
/// steps (cosmoflow: 3.5 ms of compute, batch 1), that lag was added to every step.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn pause_after(waited: Duration) -> Duration {
    (waited / 8).clamp(MIN_PAUSE, MAX_PAUSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The virtual time at which a poller sleeping `pause_after` between tests first
    /// sees a collective that completes at `done` (the first test is at 0).
    fn seen_at(done: Duration) -> Duration {
        let mut now = Duration::ZERO;
        while now < done {
            now += pause_after(now);
        }
        now
    }

    #[test]
    fn a_completed_collective_is_seen_within_an_eighth_of_the_wait() {
        assert_eq!(pause_after(Duration::ZERO), MIN_PAUSE);
        assert_eq!(
            pause_after(Duration::from_millis(1)),
            Duration::from_micros(125)
        );
        assert_eq!(pause_after(Duration::from_secs(5)), MAX_PAUSE);
        for us in (1..200_000u64).step_by(997) {
            let done = Duration::from_micros(us);
            let late = seen_at(done) - done;
            assert!(
                late <= (done / 8).max(MIN_PAUSE),
                "completed at {done:?}, seen {late:?} later"
            );
        }
        // A wait of a few milliseconds (a short training step's barrier) is seen
        // within a fraction of a millisecond.
        let done = Duration::from_micros(1500);
        assert!(seen_at(done) - done <= Duration::from_micros(190));
    }
}
