//! Time sources: [`Clock`] is what workers stamp I/Os with; [`MonotonicClock`] reads
//! CLOCK_MONOTONIC's time (through the CPU's time-stamp counter where Linux keeps time by
//! it, else a vDSO call: never a system call), [`FakeClock`] advances a fixed step per
//! reading (and sleeps by moving on at once) so engine tests get exact latencies and
//! rates.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use iolab_backend::time::{TscClock, monotonic_ns};
use iolab_core::units::Nanos;

pub trait Clock: Sync {
    /// Nanoseconds since an arbitrary fixed point.
    fn now(&self) -> Nanos;

    /// Sleeps for `span` (a paced worker's wait, a think time).
    fn sleep(&self, span: Nanos) {
        std::thread::sleep(span.to_duration());
    }
}

/// CLOCK_MONOTONIC's time. Decided once per process, at the first reading: the TSC,
/// calibrated against CLOCK_MONOTONIC (20 ms, before that first reading returns), where
/// the kernel trusts it; CLOCK_MONOTONIC itself elsewhere.
#[derive(Clone, Copy, Debug, Default)]
pub struct MonotonicClock;

static TSC: OnceLock<Option<TscClock>> = OnceLock::new();

impl Clock for MonotonicClock {
    #[inline]
    fn now(&self) -> Nanos {
        match TSC.get_or_init(TscClock::calibrate) {
            Some(tsc) => Nanos(tsc.now_ns()),
            None => Nanos(monotonic_ns()),
        }
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
