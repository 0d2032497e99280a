//! fio's latency target (`latency_target`, `latency_window`, `latency_percentile`,
//! `latency_run`; fio 3.33's io_u.c `lat_target_*`): the worker starts at one I/O in
//! flight and, window by window, doubles the depth while the window's share of I/Os
//! within the target reaches the percentile, bisects down when it does not, and once
//! the depth stops moving runs one more window at it, counted afresh, and ends (unless
//! `latency_run`, which keeps adjusting).

use iolab_core::units::Nanos;

pub use iolab_core::spec::LatencyTarget;

/// What the loop does after a completion or a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Go,
    /// The depth went down: the I/Os in flight complete first.
    Quiesce,
    /// The depth settled: the I/Os in flight complete, the figures start afresh (fio's
    /// reset_all_stats) and one more window runs.
    FinalRun,
    /// The final window is over: the job ends.
    Done,
    /// An I/O over the target at a depth of one with percentile 100: the job fails.
    Fatal,
}

/// One worker's search for its depth.
#[derive(Debug)]
pub struct DepthSearch {
    t: LatencyTarget,
    max: u32,
    pub depth: u32,
    high: u32,
    low: u32,
    stable: u32,
    end_run: bool,
    window_start: Nanos,
    window_ios: u64,
    failed: u64,
}

impl DepthSearch {
    /// fio's lat_target_init: depth 1, up to `max` (the job's iodepth).
    pub fn new(t: LatencyTarget, max: u32, now: Nanos, ios: u64) -> DepthSearch {
        DepthSearch {
            t,
            max: max.max(1),
            depth: 1,
            high: max.max(1),
            low: 1,
            stable: 0,
            end_run: false,
            window_start: now,
            window_ios: ios,
            failed: 0,
        }
    }

    fn new_window(&mut self, now: Nanos, ios: u64) {
        self.window_start = now;
        self.window_ios = ios;
        self.failed = 0;
    }

    pub fn target(&self) -> Nanos {
        self.t.target
    }

    /// An I/O completed in `latency`; `ios` completed so far.
    pub fn completed(&mut self, latency: Nanos, now: Nanos, ios: u64) -> Step {
        if latency <= self.t.target {
            return Step::Go;
        }
        if self.t.percentile < 100.0 {
            self.failed += 1;
            return Step::Go;
        }
        self.failed_window(now, ios)
    }

    /// fio's __lat_target_failed: bisect down (at depth 1: give up).
    fn failed_window(&mut self, now: Nanos, ios: u64) -> Step {
        if self.depth == 1 {
            return Step::Fatal;
        }
        self.high = self.depth;
        if self.depth == self.low {
            self.low -= 1;
        }
        self.depth = (self.depth + self.low) / 2;
        self.stable = 0;
        self.new_window(now, ios);
        Step::Quiesce
    }

    /// fio's lat_target_check, after completions: at the end of a window, up or down.
    pub fn check(&mut self, now: Nanos, ios: u64) -> Step {
        if now.saturating_sub(self.window_start) < self.t.window {
            return Step::Go;
        }
        let done = ios - self.window_ios;
        // fio's 0/0 success rate fails the window.
        let success = if done == 0 {
            f64::NAN
        } else {
            (done - self.failed.min(done)) as f64 / done as f64 * 100.0
        };
        if success >= self.t.percentile {
            self.success(now, ios)
        } else if self.depth == 1 {
            // fio's lat_target_check ignores __lat_target_failed's "give up" here:
            // nothing changes, not even the window's start.
            Step::Go
        } else {
            self.failed_window(now, ios)
        }
    }

    /// fio's lat_target_success: up (doubling until a window fails, then bisecting).
    fn success(&mut self, now: Nanos, ios: u64) -> Step {
        let before = self.depth;
        self.low = self.depth;
        if self.depth + 1 == self.high {
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        self.depth = if self.high != self.max {
            (self.depth + self.high) / 2
        } else {
            self.depth * 2
        }
        .min(self.max);
        let mut step = Step::Go;
        if !self.t.keep_running && self.depth == before {
            if self.end_run {
                step = Step::Done;
            } else {
                self.end_run = true;
                step = Step::FinalRun;
            }
        }
        self.new_window(now, ios);
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(percentile: f64) -> LatencyTarget {
        LatencyTarget {
            target: Nanos(1000),
            window: Nanos(100),
            percentile,
            keep_running: false,
        }
    }

    /// The depth doubles while windows succeed, bisects when one fails, settles, runs
    /// one final window and ends: fio's sequence for a device that meets the target up
    /// to a depth of 5.
    #[test]
    fn the_depth_doubles_bisects_settles_and_ends() {
        let mut s = DepthSearch::new(target(100.0), 16, Nanos(0), 0);
        let (mut t, mut ios) = (0u64, 0u64);
        let mut depths = vec![s.depth];
        let mut steps = Vec::new();
        for _ in 0..40 {
            t += 100;
            ios += 10;
            // Over the target at a depth above 5.
            let lat = if s.depth > 5 { 2000 } else { 500 };
            let mut step = s.completed(Nanos(lat), Nanos(t), ios);
            if step == Step::Go {
                step = s.check(Nanos(t), ios);
            }
            steps.push(step);
            depths.push(s.depth);
            if step == Step::Done {
                break;
            }
        }
        assert_eq!(steps.last(), Some(&Step::Done));
        assert!(steps.contains(&Step::FinalRun) && steps.contains(&Step::Quiesce));
        assert_eq!(&depths[..4], [1, 2, 4, 8]);
        assert!(*depths.last().unwrap() <= 5, "{depths:?}");
        // At depth 1 with percentile 100, one I/O over the target fails the job.
        let mut s = DepthSearch::new(target(100.0), 16, Nanos(0), 0);
        assert_eq!(s.completed(Nanos(5000), Nanos(1), 1), Step::Fatal);
        // Below 100, it only counts against the window: 1 of 10 over is 90 %.
        let mut s = DepthSearch::new(target(95.0), 16, Nanos(0), 0);
        assert_eq!(s.completed(Nanos(5000), Nanos(1), 1), Step::Go);
        assert_eq!(s.check(Nanos(100), 10), Step::Go);
        assert_eq!(s.depth, 1);
        // A window not yet over changes nothing.
        assert_eq!(s.check(Nanos(150), 20), Step::Go);
    }
}
