//! Time sources: [`Clock`] is what workers stamp I/Os with; [`MonotonicClock`] reads
//! CLOCK_MONOTONIC (a vDSO call, no system call), [`FakeClock`] advances a fixed step per
//! reading (and sleeps by moving on at once) so engine tests get exact latencies and
//! rates.

use std::sync::atomic::{AtomicU64, Ordering};

use iolab_core::units::Nanos;

pub trait Clock: Sync {
    /// Nanoseconds since an arbitrary fixed point.
    fn now(&self) -> Nanos;

    /// Sleeps for `span` (a paced worker's wait, a think time).
    fn sleep(&self, span: Nanos) {
        std::thread::sleep(span.to_duration());
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    #[inline]
    fn now(&self) -> Nanos {
        let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        Nanos(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }
}

/// Each reading returns the previous one plus `step`.
#[derive(Debug)]
pub struct FakeClock {
    t: AtomicU64,
    step: u64,
}

impl FakeClock {
    pub fn new(step: Nanos) -> Self {
        FakeClock {
            t: AtomicU64::new(0),
            step: step.0,
        }
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Nanos {
        Nanos(self.t.fetch_add(self.step, Ordering::Relaxed) + self.step)
    }

    /// Moves time on by `span` at once: a paced test takes no real time.
    fn sleep(&self, span: Nanos) {
        self.t.fetch_add(span.0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_never_goes_back() {
        let c = MonotonicClock;
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
    }

    #[test]
    fn fake_clock_steps() {
        let c = FakeClock::new(Nanos(10));
        assert_eq!(c.now(), Nanos(10));
        assert_eq!(c.now(), Nanos(20));
    }
}
