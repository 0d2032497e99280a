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

    /// Sleeps about `span`, as a simulated user's think or generation time wants it:
    /// it may overshoot by the timer's slack, and never spins (a clock whose `sleep`
    /// spins its last stretch for a paced I/O's precision keeps that for `sleep`).
    fn nap(&self, span: Nanos) {
        self.sleep(span)
    }

    /// This clock as one thread's hot loop reads it: the same readings as
    /// [`Clock::now`], with what `now` decides anew at every reading decided once, here
    /// ([`MonotonicClock`]: which source it reads, and that the TSC was calibrated).
    /// Other clocks are read as they are. (Not for a `dyn Clock`, which stays one.)
    #[inline]
    fn hot(&self) -> impl Clock + '_
    where
        Self: Sized,
    {
        AsIs(self)
    }
}

/// A clock read as it is (what [`Clock::hot`] gives unless a clock has a faster way).
struct AsIs<'a, C: Clock>(&'a C);

impl<C: Clock> Clock for AsIs<'_, C> {
    #[inline]
    fn now(&self) -> Nanos {
        self.0.now()
    }

    fn sleep(&self, span: Nanos) {
        self.0.sleep(span)
    }

    fn nap(&self, span: Nanos) {
        self.0.nap(span)
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

    #[inline]
    fn hot(&self) -> impl Clock + '_
    where
        Self: Sized,
    {
        HotMonotonic(*TSC.get_or_init(TscClock::calibrate))
    }

    /// As fio's `usec_sleep` (time.c): sleeps `span` less the longest nanosleep of 1 µs
    /// takes here (fio's `ns_granularity`, measured once per process), again while what
    /// is left is longer than that, and spins the rest. A plain `nanosleep` overshoots by
    /// the timer slack and wake-up (~100 µs on a busy VM), which fio's pauses do not.
    fn sleep(&self, span: Nanos) {
        let granularity = *SLEEP_GRANULARITY.get_or_init(sleep_granularity);
        let start = self.now();
        loop {
            let left = span.saturating_sub(self.now().saturating_sub(start));
            if left.0 == 0 {
                return;
            }
            if left < granularity {
                break;
            }
            std::thread::sleep((left - granularity).to_duration());
        }
        while self.now().saturating_sub(start) < span {
            std::hint::spin_loop();
        }
    }

    /// A plain nanosleep: on a busy VM the spin of [`Clock::sleep`] lasts up to the
    /// longest 1 µs nanosleep measured at start (milliseconds), CPU burnt for a
    /// precision a think time does not need (kv-cache.py's `time.sleep` has none).
    fn nap(&self, span: Nanos) {
        std::thread::sleep(span.to_duration());
    }
}

/// [`MonotonicClock`] with its source decided: a reading is the counter and its scaling
/// (or the vDSO call), without the check of the process-wide decision at every reading
/// (a load through the GOT, the `OnceLock`'s state and the `Option`'s tag: some 6
/// instructions of a reading's 17, callgrind).
#[derive(Clone, Copy)]
struct HotMonotonic(Option<TscClock>);

impl Clock for HotMonotonic {
    #[inline]
    fn now(&self) -> Nanos {
        match &self.0 {
            Some(tsc) => Nanos(tsc.now_ns()),
            None => Nanos(monotonic_ns()),
        }
    }

    fn sleep(&self, span: Nanos) {
        MonotonicClock.sleep(span)
    }

    fn nap(&self, span: Nanos) {
        MonotonicClock.nap(span)
    }
}

static SLEEP_GRANULARITY: OnceLock<Nanos> = OnceLock::new();

/// The longest of ten 1 µs nanosleeps, as fio's `fio_clock_init` measures it.
fn sleep_granularity() -> Nanos {
    (0..10)
        .map(|_| {
            let t = std::time::Instant::now();
            std::thread::sleep(std::time::Duration::from_micros(1));
            Nanos(t.elapsed().as_nanos() as u64)
        })
        .max()
        .unwrap_or(Nanos::ZERO)
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
    fn monotonic_sleep_lasts_at_least_its_span() {
        let c = MonotonicClock;
        for span in [Nanos::ZERO, Nanos(50_000), Nanos(2_000_000)] {
            let a = c.now();
            c.sleep(span);
            assert!(c.now().saturating_sub(a) >= span, "{span:?}");
        }
        assert!(*SLEEP_GRANULARITY.get().unwrap() > Nanos::ZERO);
    }

    #[test]
    fn a_hot_clock_reads_what_its_clock_reads() {
        let c = MonotonicClock;
        let hot = c.hot();
        let (a, b, d) = (c.now(), hot.now(), c.now());
        assert!(a <= b && b <= d, "{a:?} {b:?} {d:?}");
        // A clock without a faster way is read as it is: its own steps.
        let fake = FakeClock::new(Nanos(10));
        let hot = fake.hot();
        assert_eq!(
            (hot.now(), fake.now(), hot.now()),
            (Nanos(10), Nanos(20), Nanos(30))
        );
    }

    #[test]
    fn fake_clock_steps() {
        let c = FakeClock::new(Nanos(10));
        assert_eq!(c.now(), Nanos(10));
        assert_eq!(c.now(), Nanos(20));
    }
}
