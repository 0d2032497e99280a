//! The time workers stamp operations with. [`monotonic_ns`] reads CLOCK_MONOTONIC through
//! the C library's vDSO call (no system call; rustix's own vDSO lookup reads the auxiliary
//! vector in a way valgrind does not support, which ruled out counting the per-I/O
//! instructions with callgrind). [`TscClock`] reads the CPU's time-stamp counter, scaled
//! to nanoseconds against CLOCK_MONOTONIC: a third of the cost per reading here (about 8
//! ns against 25), and two readings per I/O are most of what recording costs at a few
//! million I/Os per second. It is what fio reads by default on x86 (clocksource=cpu).

/// Nanoseconds of CLOCK_MONOTONIC.
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into `ts`, which we own; CLOCK_MONOTONIC
    // exists on every Linux, so it cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds from the time-stamp counter: `ns0 + (tsc - tsc0) * scale / 2^32`, where
/// (tsc0, ns0) is one moment read on both clocks and `scale` the nanoseconds per tick
/// measured between two such moments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TscClock {
    tsc0: u64,
    ns0: u64,
    scale: u64,
}

/// How long calibration watches both clocks: the rate it measures is off by about the
/// jitter of a pair of readings (tens of ns) over this span, a few parts per million.
const CALIBRATION: std::time::Duration = std::time::Duration::from_millis(20);

impl TscClock {
    /// A calibrated TSC clock, or None where the counter is not a trustworthy clock: on
    /// anything but x86_64, and unless Linux itself keeps time by it (its clocksource is
    /// `tsc`, which the kernel chooses only for a counter that runs at a constant rate,
    /// does not stop in idle states and agrees between CPUs).
    pub fn calibrate() -> Option<TscClock> {
        let source = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .ok()?;
        if source.trim() != "tsc" {
            return None;
        }
        let (tsc_a, ns_a) = pair()?;
        std::thread::sleep(CALIBRATION);
        let (tsc_b, ns_b) = pair()?;
        let ticks = tsc_b.checked_sub(tsc_a).filter(|t| *t > 0)?;
        let scale = ((u128::from(ns_b - ns_a) << 32) / u128::from(ticks)) as u64;
        Some(TscClock {
            tsc0: tsc_a,
            ns0: ns_a,
            scale,
        })
    }

    /// Nanoseconds on CLOCK_MONOTONIC's scale (drifting from it by the calibration's few
    /// parts per million, and by whatever NTP slews CLOCK_MONOTONIC).
    #[inline]
    pub fn now_ns(&self) -> u64 {
        let ticks = rdtsc().wrapping_sub(self.tsc0);
        self.ns0 + ((u128::from(ticks) * u128::from(self.scale)) >> 32) as u64
    }
}

/// One moment on both clocks: the TSC halfway between two counter readings around a
/// CLOCK_MONOTONIC reading, from the tightest of a few tries.
fn pair() -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64, u64)> = None;
    for _ in 0..16 {
        let t1 = rdtsc();
        let ns = monotonic_ns();
        let t2 = rdtsc();
        let width = t2.wrapping_sub(t1);
        if best.is_none_or(|(w, _, _)| width < w) {
            best = Some((width, t1 + width / 2, ns));
        }
    }
    best.map(|(_, tsc, ns)| (tsc, ns))
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC reads a counter; it has no operands and no effect on memory, and every
    // x86_64 CPU has it.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn rdtsc() -> u64 {
    // Never a clock here: `calibrate` refuses anything but x86_64's TSC before this is
    // read (the clocksource named "tsc" exists only on x86).
    monotonic_ns()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tsc_clock_keeps_monotonic_time() {
        let Some(tsc) = TscClock::calibrate() else {
            eprintln!("skipped: the kernel does not keep time by the TSC here");
            return;
        };
        // Read side by side over 50 ms, the two clocks agree within 20 µs (a few parts
        // per million of drift plus the readings' own jitter).
        let start = monotonic_ns();
        while monotonic_ns() - start < 50_000_000 {
            let a = monotonic_ns();
            let t = tsc.now_ns();
            let b = monotonic_ns();
            assert!(t + 20_000 >= a && t <= b + 20_000, "{a} {t} {b}");
        }
        let a = tsc.now_ns();
        let b = tsc.now_ns();
        assert!(b >= a);
    }
}
