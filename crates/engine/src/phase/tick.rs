//! What ranks tell each other while a phase runs ([`Tick`], a fixed-size record
//! combined by reduction) and the stall watchdog that rides on it ([`StallWatch`],
//! [`Stall`]).

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::control::PhaseControl;

/// What one rank tells the others while a phase runs, about ten times a second: a
/// fixed-size record of numbers combined by MPI_Allreduce (sums and maxima), so its cost
/// is the same whatever the job size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Tick {
    pub(super) finished: u32,
    pub(super) workers: u32,
    pub(super) first_done: bool,
    pub(super) stop: bool,
    /// Wear-out: the most I/Os any worker waiting at the rendezvous did, when all of
    /// this rank's workers are waiting or finished.
    pub(super) wear_out_max: Option<u64>,
    pub(super) ops: u64,
    pub(super) bytes: u64,
    /// The longest time (ms) one of this rank's running workers has completed nothing,
    /// with the rank in the low 24 bits (so the maximum names its rank).
    pub(super) stalled: u64,
}

/// Bits of [`Tick::stalled`] that hold the rank.
pub(super) const RANK_BITS: u32 = 24;

impl Tick {
    /// Sums: finished, workers, ops, bytes, ranks without a wear-out figure yet.
    /// Maxima: first done, stop, wear-out maximum, stalled.
    pub(super) fn encode(&self) -> ([u64; 5], [u64; 4]) {
        (
            [
                u64::from(self.finished),
                u64::from(self.workers),
                self.ops,
                self.bytes,
                u64::from(self.wear_out_max.is_none()),
            ],
            [
                u64::from(self.first_done),
                u64::from(self.stop),
                self.wear_out_max.unwrap_or(0),
                self.stalled,
            ],
        )
    }

    pub(super) fn decode(sums: &[u64], maxes: &[u64]) -> Tick {
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        Tick {
            finished: at(sums, 0) as u32,
            workers: at(sums, 1) as u32,
            ops: at(sums, 2),
            bytes: at(sums, 3),
            wear_out_max: (at(sums, 4) == 0).then(|| at(maxes, 2)),
            first_done: at(maxes, 0) != 0,
            stop: at(maxes, 1) != 0,
            stalled: at(maxes, 3),
        }
    }

    /// How long (ms) the most stalled worker has done nothing, and its rank.
    pub(super) fn stall(&self) -> (u64, u32) {
        (
            self.stalled >> RANK_BITS,
            (self.stalled & ((1 << RANK_BITS) - 1)) as u32,
        )
    }
}

/// A rank that stopped making progress for longer than `--stall-timeout`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stall {
    pub rank: u32,
    pub host: String,
    pub phase: String,
    /// What was seen ("worker 2 completed no operation for 5.0 s").
    pub what: String,
}

impl std::fmt::Display for Stall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rank {} on {} stalled in {}: {}",
            self.rank, self.host, self.phase, self.what
        )
    }
}

/// Tracks when each of this rank's workers last completed an operation.
pub(super) struct StallWatch {
    last: Vec<(u64, std::time::Instant)>,
}

impl StallWatch {
    pub(super) fn new(workers: usize) -> StallWatch {
        StallWatch {
            last: vec![(0, std::time::Instant::now()); workers],
        }
    }

    /// The longest a running worker (not done, not holding: waiting to start or for
    /// work from its peers; not waiting at the wear-out rendezvous) has gone without
    /// completing an operation, and which worker.
    pub(super) fn longest(&mut self, control: &PhaseControl) -> (Duration, usize) {
        let now = std::time::Instant::now();
        let mut worst = (Duration::ZERO, 0);
        for (i, (w, last)) in control.workers.iter().zip(&mut self.last).enumerate() {
            let ops = w.ops.load(Ordering::Relaxed);
            let idle = w.done.load(Ordering::Acquire)
                || w.holding.load(Ordering::Acquire)
                || control.waited_at_rendezvous(i);
            if ops != last.0 || idle {
                *last = (ops, now);
                continue;
            }
            let quiet = now.duration_since(last.1);
            if quiet > worst.0 {
                worst = (quiet, i);
            }
        }
        worst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_survives_its_encoding_and_names_the_stalled_rank() {
        let tick = Tick {
            finished: 3,
            workers: 8,
            first_done: true,
            stop: false,
            wear_out_max: Some(42),
            ops: 1 << 40,
            bytes: 7,
            stalled: (6_500 << RANK_BITS) | 99_999,
        };
        let (sums, maxes) = tick.encode();
        assert_eq!(Tick::decode(&sums, &maxes), tick);
        assert_eq!(tick.stall(), (6_500, 99_999));
        let none = Tick {
            wear_out_max: None,
            ..tick
        };
        let (sums, maxes) = none.encode();
        assert_eq!(Tick::decode(&sums, &maxes).wear_out_max, None);
    }

    #[test]
    fn a_worker_that_completes_nothing_is_the_longest_quiet() {
        let control = PhaseControl::new(2);
        let mut watch = StallWatch::new(2);
        std::thread::sleep(Duration::from_millis(30));
        control.workers[0].ops.store(5, Ordering::Relaxed);
        let (quiet, worker) = watch.longest(&control);
        assert_eq!(worker, 1);
        assert!(quiet >= Duration::from_millis(30), "{quiet:?}");
        // A finished worker is never stalled; worker 0 made progress a moment ago.
        control.finished(1);
        assert_eq!(watch.longest(&control).1, 0);
    }
}
