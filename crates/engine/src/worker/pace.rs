//! A worker's timing rules, decided before its loop: [`Pace`] (when the next I/O may be
//! issued: --rate/--rate-iops, all workers together, evenly or as a Poisson process),
//! [`Think`] (fio's thinktime: a pause every N I/Os or every so much I/O time) and
//! [`MinRate`] (fio's rate_min: a worker that falls below its part fails the phase).
//! Each answers from counts and times the loop gives it; the loop sleeps and drains.

use iolab_backend::IoDir;
use iolab_core::rng::{Rng, mix};
use iolab_core::spec::{DataSpec, RateProcess, ThinkCount};
use iolab_core::units::{ByteCount, Nanos};

/// One schedule: the I/Os it covers are due at `start + cost so far / rate`, the rate of
/// all workers together shared evenly, each worker's I/Os set between the others' (worker
/// w of W starts w/W of an I/O later), so W workers issue as one stream.
#[derive(Clone, Debug)]
struct Lane {
    /// I/Os or bytes per second, all workers together.
    per_second: u128,
    /// Cost in bytes (a byte rate) or one per I/O.
    bytes: bool,
    workers: u128,
    start: Nanos,
    /// Cost issued so far times the workers, plus this worker's place among them.
    spent: u128,
    due: Nanos,
    /// Poisson gaps (fio's rate_process=poisson).
    poisson: Option<Rng>,
}

impl Lane {
    fn new(per_second: u64, bytes: bool, first: u64, s: &Setup) -> Lane {
        let mut lane = Lane {
            per_second: u128::from(per_second.max(1)),
            bytes,
            workers: u128::from(s.workers.max(1)),
            start: s.start,
            spent: 0,
            due: s.start,
            poisson: None,
        };
        match s.process {
            RateProcess::Linear => {
                lane.spent = u128::from(s.worker) * u128::from(if bytes { first } else { 1 });
                lane.due = lane.at(lane.spent);
            }
            RateProcess::Poisson => lane.poisson = Some(Rng::new(mix(&[s.seed, 0x9015_5011]))),
        }
        lane
    }

    fn at(&self, spent: u128) -> Nanos {
        let ns = spent * 1_000_000_000 / self.per_second;
        self.start + Nanos(ns.min(u128::from(u64::MAX / 2)) as u64)
    }

    /// An I/O of `len` bytes was issued on this schedule.
    fn issued(&mut self, len: u64) {
        let cost = if self.bytes { u128::from(len) } else { 1 };
        match &mut self.poisson {
            None => {
                self.spent += cost * self.workers;
                self.due = self.at(self.spent);
            }
            Some(rng) => {
                // An exponential gap of mean cost x workers / rate: -ln(U), U in (0, 1].
                let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
                let mean = (cost * self.workers) as f64 * 1e9 / self.per_second as f64;
                self.due = self.due + Nanos((-u.ln() * mean) as u64);
            }
        }
    }
}

/// What a worker's schedules are built from.
struct Setup {
    workers: u32,
    worker: u32,
    start: Nanos,
    process: RateProcess,
    seed: u64,
}

/// When the next I/O may be issued.
#[derive(Clone, Debug)]
pub(super) struct Pace {
    /// One schedule for every I/O (in `lanes[0]`), or one per direction (`IoDir` order;
    /// None: that direction is not limited).
    shared: bool,
    lanes: [Option<Lane>; 2],
    /// Whether each direction takes any share of the I/Os (a switch needs one).
    share: [bool; 2],
}

impl Pace {
    /// The pace of worker `worker` of `workers` starting at `start`; None when nothing
    /// limits the rate.
    pub(super) fn new(
        spec: &DataSpec,
        workers: u32,
        worker: u32,
        start: Nanos,
        seed: u64,
    ) -> Option<Pace> {
        if !spec.paced() {
            return None;
        }
        let s = Setup {
            workers,
            worker,
            start,
            process: spec.rate_process,
            seed,
        };
        let [read, write] = spec.sizes().map(|s| s.smallest);
        // [all I/Os, reads, writes]; a limit of all I/Os or one per direction.
        let (limits, bytes) = if [spec.rate, spec.read_rate, spec.write_rate]
            .iter()
            .any(Option::is_some)
        {
            (
                [spec.rate, spec.read_rate, spec.write_rate].map(|r| r.map(ByteCount::get)),
                true,
            )
        } else {
            (
                [spec.rate_iops, spec.read_rate_iops, spec.write_rate_iops],
                false,
            )
        };
        let shared = limits[0].is_some();
        let lanes = if shared {
            [
                limits[0].map(|r| Lane::new(r, bytes, read.min(write), &s)),
                None,
            ]
        } else {
            [
                limits[1].map(|r| Lane::new(r, bytes, read, &s)),
                limits[2].map(|r| Lane::new(r, bytes, write, &s)),
            ]
        };
        let reads = spec.read_percent();
        Some(Pace {
            shared,
            lanes,
            share: [reads > 0, reads < 100],
        })
    }

    fn lane(&self, dir: IoDir) -> Option<&Lane> {
        self.lanes[if self.shared { 0 } else { dir as usize }].as_ref()
    }

    /// When an I/O of `dir` is due (now or earlier for a direction not limited).
    fn due(&self, dir: IoDir, now: Nanos) -> Nanos {
        self.lane(dir).map_or(now, |l| l.due)
    }

    /// The direction to issue and when, for a drawn `dir` at `now` (fio's rate_ddir): the
    /// drawn one when due; else the other when it is due; else whichever is due first.
    pub(super) fn choose(&self, dir: IoDir, now: Nanos) -> (IoDir, Nanos) {
        let due = self.due(dir, now);
        if due <= now || self.shared {
            return (dir, due);
        }
        let other = match dir {
            IoDir::Read => IoDir::Write,
            IoDir::Write => IoDir::Read,
            // Trims are never paced per direction (not a mixed workload).
            IoDir::Trim => return (dir, due),
        };
        if !self.share[other as usize] {
            return (dir, due);
        }
        let other_due = self.due(other, now);
        if other_due < due {
            (other, other_due)
        } else {
            (dir, due)
        }
    }

    /// An I/O of `dir` and `len` bytes was issued.
    pub(super) fn issued(&mut self, dir: IoDir, len: u64) {
        let i = if self.shared { 0 } else { dir as usize };
        if let Some(l) = &mut self.lanes[i] {
            l.issued(len);
        }
    }
}

/// fio's thinktime: when the next pause is due.
#[derive(Clone, Debug)]
pub(super) struct Think {
    pub(super) pause: Nanos,
    pub(super) spin: Nanos,
    every: u64,
    count: ThinkCount,
    /// Pause after this much time (of I/O and the pause) since the last one.
    io_time: Option<Nanos>,
    /// The count at the last pause.
    last_count: u64,
    /// When the last pause began (or the worker started).
    last_at: Nanos,
}

impl Think {
    pub(super) fn new(spec: &DataSpec, start: Nanos) -> Option<Think> {
        let pause = spec.think_time?.nanos();
        Some(Think {
            pause,
            spin: spec.think_spin.map_or(Nanos::ZERO, |s| s.nanos()),
            every: spec.think_every.max(1),
            count: spec.think_count,
            io_time: spec.think_io_time.map(|t| t.nanos()),
            last_count: 0,
            last_at: start,
        })
    }

    /// Whether issued I/Os are what is counted (a pause may then come between issues).
    pub(super) fn counts_issues(&self) -> bool {
        self.count == ThinkCount::Issue
    }

    /// Whether a pause is due now, given the I/Os issued and completed so far; when it
    /// is, the period starts again from here.
    pub(super) fn due(&mut self, issued: u64, completed: u64, now: Nanos) -> bool {
        let count = match self.count {
            ThinkCount::Complete => completed,
            ThinkCount::Issue => issued,
        };
        let by_time = self
            .io_time
            .is_some_and(|t| now.saturating_sub(self.last_at) >= t + self.pause);
        // With an I/O time and the default of one I/O, only the time counts (fio's).
        let by_count =
            !(self.io_time.is_some() && self.every == 1) && count >= self.last_count + self.every;
        if by_time || by_count {
            self.last_count = count;
            self.last_at = now;
            return true;
        }
        false
    }
}

/// fio's rate_min and rate_iops_min: each direction that moves data must keep this
/// worker's part of the minimum over every window of `cycle`, after a 2 s settle.
#[derive(Clone, Debug)]
pub(super) struct MinRate {
    /// Bytes (or I/Os) per second, all workers together.
    min: u128,
    bytes: bool,
    workers: u128,
    cycle: Nanos,
    start: Nanos,
    /// Per direction: (bytes or I/Os, when) at the last check, once one was made.
    last: [Option<(u64, Nanos)>; 3],
}

/// A worker that fell below its part of the minimum.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Shortfall {
    pub(super) dir: IoDir,
    /// What it did per second over the window, and its part of the minimum.
    pub(super) got: f64,
    pub(super) part: f64,
    pub(super) bytes: bool,
    pub(super) over: Nanos,
}

/// No minimum is checked in a worker's first 2 s (fio's settle).
const MIN_RATE_SETTLE: Nanos = Nanos(2_000_000_000);

impl MinRate {
    pub(super) fn new(spec: &DataSpec, workers: u32, start: Nanos) -> Option<MinRate> {
        let (min, bytes) = match (spec.rate_min, spec.rate_iops_min) {
            (Some(b), _) => (b.get(), true),
            (None, Some(n)) => (n, false),
            (None, None) => return None,
        };
        Some(MinRate {
            min: u128::from(min),
            bytes,
            workers: u128::from(workers.max(1)),
            cycle: spec.rate_cycle.map_or(Nanos::SECOND, |c| c.nanos()),
            start,
            last: [None; 3],
        })
    }

    /// Checks at `now` with `done` bytes and I/Os completed per direction; a shortfall
    /// ends the worker.
    pub(super) fn check(
        &mut self,
        now: Nanos,
        bytes: [u64; 3],
        ios: [u64; 3],
    ) -> Option<Shortfall> {
        if now.saturating_sub(self.start) < MIN_RATE_SETTLE {
            return None;
        }
        for dir in [IoDir::Read, IoDir::Write, IoDir::Trim] {
            let d = dir as usize;
            if bytes[d] == 0 {
                continue;
            }
            let done = if self.bytes { bytes[d] } else { ios[d] };
            if let Some((before, at)) = self.last[d] {
                let spent = now.saturating_sub(at);
                if spent < self.cycle || spent.0 == 0 {
                    continue;
                }
                // done / spent < min / workers, in whole numbers.
                let moved = u128::from(done - before);
                if moved * self.workers * 1_000_000_000 < self.min * u128::from(spent.0) {
                    return Some(Shortfall {
                        dir,
                        got: moved as f64 * 1e9 / spent.0 as f64,
                        part: self.min as f64 / self.workers as f64,
                        bytes: self.bytes,
                        over: spent,
                    });
                }
            }
            self.last[d] = Some((done, now));
        }
        None
    }
}

#[cfg(test)]
#[path = "pace_tests.rs"]
mod tests;
