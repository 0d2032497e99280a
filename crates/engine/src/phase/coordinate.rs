//! The coordinating loop of a running phase, on the thread that started the workers:
//! every tick it exchanges a small status with the other ranks, publishes live progress,
//! notes first-done and stalls, and stops everyone on a failure, Ctrl-C or wear-out.

use std::sync::atomic::Ordering;

use iolab_core::units::Nanos;

use super::breakdown::Breakdown;
use super::tick::{RANK_BITS, Stall, StallWatch, Tick};
use super::{Env, Progress, TICK};
use crate::clock::Clock;
use crate::control::PhaseControl;

/// The coordinating loop of a running phase; returns whether it was interrupted.
pub(super) fn coordinate<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    name: &str,
    control: &PhaseControl,
    start: Nanos,
    wear_out: bool,
) -> bool {
    let c = Coordinator {
        env,
        clock,
        name,
        control,
        start,
    };
    let comm = env.comm;
    let mut interrupted = false;
    let mut wear_out_set = false;
    let mut watch = StallWatch::new(control.workers.len());
    // The workers' latency buckets at the last tick: each tick sends what they counted
    // since (a fixed-size array, summed over ranks with the tick).
    let mut counted = vec![0u64; iolab_core::live_latency::BUCKETS];
    // Rank 0 learns the ranks' hosts once per phase, and with each tick their counts.
    let mut breakdown = env
        .per_rank_progress
        .then(|| Breakdown::start(comm, env.units));
    loop {
        control.wait_for_change(TICK);
        if env.interrupt.load(Ordering::Relaxed) && !interrupted {
            interrupted = true;
            control.stop_all();
        }
        let (ops, bytes) = control.totals();
        let now_counted = control.latency_counts();
        let mut counts = Counts {
            latency: now_counted
                .iter()
                .zip(&counted)
                .map(|(n, c)| n.saturating_sub(*c))
                .collect(),
            // With --serve, the counts by operation ride on the tick too.
            by_op: if env.per_rank_progress {
                control.counted()
            } else {
                Vec::new()
            },
        };
        counted = now_counted;
        let (quiet, worker) = watch.longest(control);
        let local = Tick {
            finished: control.finished_count(),
            workers: control.workers.len() as u32,
            first_done: control.first_done.load(Ordering::Relaxed),
            stop: control.stop.load(Ordering::Relaxed),
            wear_out_max: if wear_out {
                control.wear_out_local_max()
            } else {
                None
            },
            ops,
            bytes,
            stalled: ((quiet.as_millis() as u64) << RANK_BITS) | u64::from(comm.rank()),
        };
        let global = c.exchange(local, &mut counts);
        c.check_stall(&global, quiet, worker);
        c.apply(&global, wear_out, &mut wear_out_set);
        c.report(&global, &counts, breakdown.as_mut(), (ops, bytes));
        if global.finished >= global.workers {
            return interrupted;
        }
    }
}

/// What every tick of one phase's coordinating loop works with.
struct Coordinator<'a, C> {
    env: &'a Env<'a>,
    clock: &'a C,
    name: &'a str,
    control: &'a PhaseControl,
    start: Nanos,
}

/// The latency buckets counted since the last tick, and (with --serve) the counts by
/// operation: this rank's, then every rank's summed.
struct Counts {
    latency: Vec<u64>,
    by_op: Vec<u64>,
}

impl<C: Clock> Coordinator<'_, C> {
    /// Sums and maxima of every rank's tick (one reduction; the counts ride on it).
    fn exchange(&self, local: Tick, counts: &mut Counts) -> Tick {
        let comm = self.env.comm;
        if comm.size() == 1 {
            return local;
        }
        let (tick_sums, maxes) = local.encode();
        let mut sums = tick_sums.to_vec();
        sums.extend_from_slice(&counts.latency);
        sums.extend_from_slice(&counts.by_op);
        let silent = |s: &iolab_comm::Silence| self.silence(s);
        let (sums, maxes) = comm.reduce(&sums, &maxes, self.env.stall_timeout, &silent);
        let ops_from = tick_sums.len() + counts.latency.len();
        counts.latency = sums[tick_sums.len()..ops_from].to_vec();
        counts.by_op = sums[ops_from..].to_vec();
        Tick::decode(&sums[..tick_sums.len()], &maxes)
    }

    /// A rank stopped answering the tick's reduction: rank 0 says which, another rank
    /// says it ends the job.
    fn silence(&self, s: &iolab_comm::Silence) {
        let (env, name) = (self.env, self.name);
        let comm = env.comm;
        let what = format!(
            "it stopped answering (no progress report for {:.1} s)",
            s.waited.as_secs_f64()
        );
        match s.ranks.first() {
            Some(r) if comm.rank() == 0 => env.stalled(&Stall {
                rank: r.rank,
                host: r.host.clone(),
                phase: name.to_string(),
                what,
            }),
            Some(r) => eprintln!(
                "iolab: rank {} on {} stalled in {name}: {what}; rank {} on {} ends the job",
                r.rank,
                r.host,
                comm.rank(),
                comm.host()
            ),
            None => env.stalled(&Stall {
                rank: comm.rank(),
                host: comm.host().to_string(),
                phase: name.to_string(),
                what: format!(
                    "a collective did not complete in {:.1} s, yet every rank answered the roll call",
                    s.waited.as_secs_f64()
                ),
            }),
        }
    }

    /// --stall-timeout: a worker anywhere that completed nothing for that long ends the
    /// job, its rank naming its host and worker.
    fn check_stall(&self, global: &Tick, quiet: std::time::Duration, worker: usize) {
        let env = self.env;
        let comm = env.comm;
        let Some(limit) = env.stall_timeout else {
            return;
        };
        let (ms, rank) = global.stall();
        if ms < limit.as_millis() as u64 {
            return;
        }
        // Every rank saw the same maximum: the stalled rank names its host.
        let host = comm.broadcast_bytes(rank, comm.host().as_bytes());
        let what = if rank == comm.rank() {
            format!(
                "worker {worker} completed no operation for {:.1} s (--stall-timeout {:.0} s)",
                quiet.as_secs_f64(),
                limit.as_secs_f64()
            )
        } else {
            String::new()
        };
        let what = comm.broadcast_bytes(rank, what.as_bytes());
        if comm.rank() == 0 {
            env.stalled(&Stall {
                rank,
                host: String::from_utf8_lossy(&host).into_owned(),
                phase: self.name.to_string(),
                what: String::from_utf8_lossy(&what).into_owned(),
            });
        }
        env.end_after_stall();
    }

    /// What every rank's tick asks of this rank's workers: first done, stop, and the
    /// wear-out target (set once).
    fn apply(&self, global: &Tick, wear_out: bool, wear_out_set: &mut bool) {
        let control = self.control;
        if global.first_done {
            control.first_done.store(true, Ordering::Relaxed);
        }
        if global.stop && !control.stop.load(Ordering::Relaxed) {
            control.stop_all();
        }
        if wear_out
            && !*wear_out_set
            && let Some(max) = global.wear_out_max
        {
            control.set_wear_out_target(max);
            *wear_out_set = true;
        }
    }

    /// Rank 0's live view: the steady-state watch, progress and status; every rank's
    /// part of the per-rank breakdown. `local` is this rank's ops and bytes.
    fn report(
        &self,
        global: &Tick,
        counts: &Counts,
        mut breakdown: Option<&mut Breakdown>,
        local: (u64, u64),
    ) {
        let (env, control, clock) = (self.env, self.control, self.clock);
        let comm = env.comm;
        // Read once a tick and only where used (a fake clock moves at each reading).
        let elapsed = if comm.rank() == 0
            && (env.progress.is_some() || breakdown.is_some() || env.steady.is_some())
        {
            clock.now().saturating_sub(self.start)
        } else {
            Nanos::ZERO
        };
        if comm.rank() == 0
            && let Some(watch) = env.steady
        {
            watch.tick(control, elapsed, (global.ops, global.bytes));
        }
        let per_rank = match breakdown.as_deref_mut() {
            Some(b) => b.tick(comm, control, local, elapsed),
            None => Vec::new(),
        };
        if comm.rank() == 0
            && let Some(p) = env.progress
        {
            p(&Progress {
                phase: self.name,
                elapsed,
                ops: global.ops,
                bytes: global.bytes,
                workers_done: global.finished,
                workers: global.workers,
                latency: &counts.latency,
                counted: &counts.by_op,
                per_rank: &per_rank,
                per_unit: breakdown.as_deref().map_or(&[], |b| b.units()),
            });
        }
        if comm.rank() == 0
            && let Some(status) = env.status
        {
            status(control, clock.now().saturating_sub(self.start));
        }
    }
}
