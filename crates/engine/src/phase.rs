//! The phase runner, shared by every workload: spawn this rank's workers, agree that all
//! ranks set up fine, start together after a barrier, coordinate while they run (first
//! done, stop, wear-out, live progress) and gather every rank's [`RankOutcome`]. Ranks
//! exchange a small status each tick, so a failure or Ctrl-C anywhere stops everyone and
//! no rank waits forever.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use iolab_comm::{Comm, CommExt};
use iolab_core::result::CpuUsage;
use iolab_core::telemetry::Telemetry;
use iolab_core::units::Nanos;
use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::error::EngineError;
use crate::recorder::WorkerMeasure;

/// How often ranks exchange status while a phase runs.
const TICK: Duration = Duration::from_millis(100);

/// Live figures of a running phase, summed over all ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress<'a> {
    pub phase: &'a str,
    pub elapsed: Nanos,
    pub ops: u64,
    pub bytes: u64,
    pub workers_done: u32,
    pub workers: u32,
}

/// Something that watches the machine while a phase's timed part runs (device and CPU
/// telemetry); started and stopped by rank 0.
pub trait PhaseProbe: Sync {
    fn start(&self);
    fn stop(&self) -> Option<Telemetry>;
}

/// The world a phase runs in.
pub struct Env<'a> {
    pub comm: &'a dyn Comm,
    /// Set by the Ctrl-C handler.
    pub interrupt: &'a AtomicBool,
    /// Called on rank 0 about ten times a second while a phase runs.
    pub progress: Option<&'a (dyn Fn(&Progress<'_>) + Sync)>,
    /// Samples the machine beside each phase (rank 0).
    pub probe: Option<&'a dyn PhaseProbe>,
    /// A worker that completes no operation for this long, or a rank that stops
    /// answering for this long, ends the job (`--stall-timeout`; None: never).
    pub stall_timeout: Option<Duration>,
    /// Called on rank 0 when a stall ends the job, before it ends (to store the run as
    /// failed and say why).
    pub on_stall: Option<&'a (dyn Fn(&Stall) + Sync)>,
}

impl<'a> Env<'a> {
    pub fn new(comm: &'a dyn Comm, interrupt: &'a AtomicBool) -> Self {
        Env {
            comm,
            interrupt,
            progress: None,
            probe: None,
            stall_timeout: None,
            on_stall: None,
        }
    }

    pub fn with_stall_timeout(
        mut self,
        timeout: Option<Duration>,
        on_stall: &'a (dyn Fn(&Stall) + Sync),
    ) -> Self {
        self.stall_timeout = timeout;
        self.on_stall = Some(on_stall);
        self
    }

    /// Says (on rank 0) that `stall` ends the job.
    fn stalled(&self, stall: &Stall) {
        match self.on_stall {
            Some(f) => f(stall),
            None => eprintln!("iolab: {stall}"),
        }
    }

    /// Ends the job after a stall: a stalled worker may never return, so the phase
    /// cannot be joined. Rank 0 ends it at once (MPI_Abort or exit 1); the others give it
    /// time to store the run first.
    fn end_after_stall(&self) -> ! {
        if self.comm.rank() != 0 {
            std::thread::sleep(Duration::from_secs(10));
        }
        self.comm.abort(1)
    }

    pub fn with_progress(mut self, progress: &'a (dyn Fn(&Progress<'_>) + Sync)) -> Self {
        self.progress = Some(progress);
        self
    }

    pub fn with_probe(mut self, probe: &'a dyn PhaseProbe) -> Self {
        self.probe = Some(probe);
        self
    }
}

/// What one worker of any workload returns.
pub struct WorkerReport {
    pub measure: WorkerMeasure,
    pub completed: u64,
    pub finished_at: Nanos,
}

impl WorkerReport {
    /// A worker that did nothing: the phase did not start, or it had no share.
    pub fn idle() -> WorkerReport {
        WorkerReport {
            measure: crate::recorder::Recorder::new(Nanos::ZERO, crate::worker::INTERVAL).finish(),
            completed: 0,
            finished_at: Nanos::ZERO,
        }
    }
}

/// One rank's part of a phase, as all ranks receive it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RankOutcome {
    pub rank: u32,
    pub host: String,
    pub threads: u32,
    /// Why this rank could not run the phase, if it could not.
    pub setup_error: Option<String>,
    /// From the common start until this rank's last / first worker finished.
    pub elapsed: Nanos,
    pub first_done: Nanos,
    pub measure: WorkerMeasure,
    /// Operations completed by each of this rank's workers.
    pub completed: Vec<u64>,
    /// CPU time of this rank's worker threads, each from the start until it finished,
    /// over `elapsed`.
    pub cpu: CpuUsage,
    /// The CPUs this rank may run on, so that ranks sharing a host count them once.
    #[serde(default)]
    pub cpu_set: Vec<u32>,
}

/// Every rank's outcome of one phase.
pub struct PhaseRun {
    pub outcomes: Vec<RankOutcome>,
    pub interrupted: bool,
    /// Wall-clock start on this rank, ms since the epoch.
    pub started_at_ms: i64,
    /// What the probe saw on rank 0 while the phase ran.
    pub telemetry: Option<Telemetry>,
}

impl PhaseRun {
    /// Operations completed per worker, indexed by global worker number.
    pub fn completed_by_worker(&self) -> Vec<u64> {
        self.outcomes
            .iter()
            .flat_map(|o| o.completed.iter().copied())
            .collect()
    }
}

/// What one rank tells the others while a phase runs, about ten times a second: a
/// fixed-size record of numbers combined by MPI_Allreduce (sums and maxima), so its cost
/// is the same whatever the job size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tick {
    finished: u32,
    workers: u32,
    first_done: bool,
    stop: bool,
    /// Wear-out: the most I/Os any worker waiting at the rendezvous did, when all of
    /// this rank's workers are waiting or finished.
    wear_out_max: Option<u64>,
    ops: u64,
    bytes: u64,
    /// The longest time (ms) one of this rank's running workers has completed nothing,
    /// with the rank in the low 24 bits (so the maximum names its rank).
    stalled: u64,
}

/// Bits of [`Tick::stalled`] that hold the rank.
const RANK_BITS: u32 = 24;

impl Tick {
    /// Sums: finished, workers, ops, bytes, ranks without a wear-out figure yet.
    /// Maxima: first done, stop, wear-out maximum, stalled.
    fn encode(&self) -> ([u64; 5], [u64; 4]) {
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

    fn decode(sums: &[u64], maxes: &[u64]) -> Tick {
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
    fn stall(&self) -> (u64, u32) {
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
struct StallWatch {
    last: Vec<(u64, std::time::Instant)>,
}

impl StallWatch {
    fn new(workers: usize) -> StallWatch {
        StallWatch {
            last: vec![(0, std::time::Instant::now()); workers],
        }
    }

    /// The longest a running worker (not done, not waiting at the wear-out rendezvous)
    /// has gone without completing an operation, and which worker.
    fn longest(&mut self, control: &PhaseControl) -> (Duration, usize) {
        let now = std::time::Instant::now();
        let mut worst = (Duration::ZERO, 0);
        for (i, (w, last)) in control.workers.iter().zip(&mut self.last).enumerate() {
            let ops = w.ops.load(Ordering::Relaxed);
            let idle = w.done.load(Ordering::Acquire) || control.waited_at_rendezvous(i);
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

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Runs `workers` workers of one phase on this rank, in step with all other ranks.
/// `work(index, control)` must call `control.ready_and_wait` once its setup is done and
/// `control.finished(index)` when it is done; it returns its report or why it failed.
pub fn run_phase<C, W>(
    env: &Env<'_>,
    clock: &C,
    name: &str,
    workers: usize,
    wear_out: bool,
    work: W,
) -> Result<PhaseRun, EngineError>
where
    C: Clock,
    W: Fn(usize, &PhaseControl) -> Result<WorkerReport, String> + Sync,
{
    let comm = env.comm;
    let control = PhaseControl::new(workers);
    let started_at_ms = now_ms();
    let mut interrupted = false;
    let mut setup_error = None;
    let mut start = Nanos::ZERO;
    let mut telemetry = None;
    let probe = env.probe.filter(|_| comm.rank() == 0);

    let reports: Vec<Result<WorkerReport, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|i| {
                let control = &control;
                let work = &work;
                std::thread::Builder::new()
                    .name(format!("iolab-w{i}"))
                    .spawn_scoped(s, move || {
                        let r = work(i, control);
                        if r.is_err() {
                            // A failed worker must not leave the others (or other ranks)
                            // running without it.
                            control.stop_all();
                            if !control.workers[i].done.load(Ordering::Acquire) {
                                control.finished(i);
                            }
                        }
                        r
                    })
            })
            .collect();
        if handles.iter().any(|h| h.is_err()) {
            setup_error = Some(
                "could not start a worker thread (too many threads? see ulimit -u)".to_string(),
            );
        }
        let local_ok = control.wait_all_ready() && setup_error.is_none();
        if comm.all_ok(local_ok) {
            comm.barrier();
            start = clock.now();
            control.release(Some(start));
            if let Some(p) = probe {
                p.start();
            }
            interrupted = coordinate(env, clock, name, &control, start, wear_out);
            telemetry = probe.and_then(|p| p.stop());
        } else {
            control.release(None);
        }
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err("worker thread panicked".to_string())),
                Err(e) => Err(e.to_string()),
            })
            .collect()
    });

    let mut outcome = RankOutcome {
        rank: comm.rank(),
        host: comm.host().to_string(),
        threads: workers as u32,
        setup_error,
        first_done: Nanos(u64::MAX),
        ..RankOutcome::default()
    };
    for (i, r) in reports.into_iter().enumerate() {
        match r {
            Ok(rep) => {
                outcome.measure.merge(&rep.measure);
                outcome.completed.push(rep.completed);
                outcome.elapsed = outcome.elapsed.max(rep.finished_at);
                // A worker that finished its share early and then waited at the wear-out
                // rendezvous finishes late; its first-done moment is when it froze its
                // figures, not when the rendezvous let it go.
                let done = match rep.measure.first_done_at {
                    Some(at) if control.waited_at_rendezvous(i) => at.min(rep.finished_at),
                    _ => rep.finished_at,
                };
                outcome.first_done = outcome.first_done.min(done);
            }
            Err(e) => {
                outcome.completed.push(0);
                outcome.setup_error.get_or_insert(e);
            }
        }
    }
    if outcome.first_done == Nanos(u64::MAX) {
        outcome.first_done = Nanos::ZERO;
    }
    // The workers' own CPU time, over the same window as the rank's elapsed time: not
    // the process's, which would add the time this rank spent waiting for the others
    // (and, with MPI, polling in collectives) over a wall time that excludes it.
    let (user, system) = control.worker_cpu();
    outcome.cpu_set = iolab_backend::process::allowed_cpus()
        .into_iter()
        .map(|c| c as u32)
        .collect();
    outcome.cpu = CpuUsage {
        user,
        system,
        wall: outcome.elapsed,
        cpus: outcome.cpu_set.len() as u32,
    };
    let _ = start;
    let outcomes: Vec<RankOutcome> = comm.all_gather(&outcome).map_err(|e| EngineError::Rank {
        rank: comm.rank(),
        host: comm.host().to_string(),
        message: e.to_string(),
    })?;
    interrupted |= env.interrupt.load(Ordering::Relaxed);
    if let Some(bad) = outcomes.iter().find(|o| o.setup_error.is_some()) {
        let message = bad.setup_error.clone().unwrap_or_default();
        return Err(if comm.size() == 1 {
            EngineError::Setup(message)
        } else {
            EngineError::Rank {
                rank: bad.rank,
                host: bad.host.clone(),
                message,
            }
        });
    }
    Ok(PhaseRun {
        outcomes,
        interrupted,
        started_at_ms,
        telemetry,
    })
}

/// The coordinating loop of a running phase; returns whether it was interrupted.
fn coordinate<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    name: &str,
    control: &PhaseControl,
    start: Nanos,
    wear_out: bool,
) -> bool {
    let comm = env.comm;
    let mut interrupted = false;
    let mut wear_out_set = false;
    let mut watch = StallWatch::new(control.workers.len());
    loop {
        control.wait_for_change(TICK);
        if env.interrupt.load(Ordering::Relaxed) && !interrupted {
            interrupted = true;
            control.stop_all();
        }
        let (ops, bytes) = control.totals();
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
        let global = if comm.size() > 1 {
            let (sums, maxes) = local.encode();
            let silent = |s: &iolab_comm::Silence| {
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
            };
            let (sums, maxes) = comm.reduce(&sums, &maxes, env.stall_timeout, &silent);
            Tick::decode(&sums, &maxes)
        } else {
            local
        };
        if let Some(limit) = env.stall_timeout {
            let (ms, rank) = global.stall();
            if ms >= limit.as_millis() as u64 {
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
                        phase: name.to_string(),
                        what: String::from_utf8_lossy(&what).into_owned(),
                    });
                }
                env.end_after_stall();
            }
        }
        if global.first_done {
            control.first_done.store(true, Ordering::Relaxed);
        }
        if global.stop && !control.stop.load(Ordering::Relaxed) {
            control.stop_all();
        }
        if wear_out
            && !wear_out_set
            && let Some(max) = global.wear_out_max
        {
            control.set_wear_out_target(max);
            wear_out_set = true;
        }
        if comm.rank() == 0
            && let Some(p) = env.progress
        {
            p(&Progress {
                phase: name,
                elapsed: clock.now().saturating_sub(start),
                ops: global.ops,
                bytes: global.bytes,
                workers_done: global.finished,
                workers: global.workers,
            });
        }
        if global.finished >= global.workers {
            return interrupted;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use iolab_comm::InProcess;
    use iolab_core::result::OpKind;

    use super::*;
    use crate::assemble::{PhaseMeta, assemble};
    use crate::recorder::Recorder;

    const MS: u64 = 1_000_000;
    const MIB: u64 = 1 << 20;

    /// A clock that never moves: the phase starts at 0 and workers stamp their own times.
    struct Still;
    impl Clock for Still {
        fn now(&self) -> Nanos {
            Nanos::ZERO
        }
    }

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

    /// Waits (boundedly) until this rank has heard that some worker is done.
    fn await_first_done(control: &PhaseControl) {
        let t = Instant::now();
        while !control.first_done.load(Ordering::Relaxed) && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(control.first_done.load(Ordering::Relaxed));
    }

    /// Two ranks with wear-out: rank 0 writes its 4 MiB share by 4 ms and then waits at
    /// the rendezvous until rank 1, slow, reaches its stonewall at 1 s with 10 MiB.
    #[test]
    fn wear_out_first_done_is_when_the_fast_worker_finished_its_share() {
        let interrupt = AtomicBool::new(false);
        let results = InProcess::run(
            2,
            |r| format!("h{r}"),
            |comm| {
                let env = Env::new(comm, &interrupt);
                let fast = comm.rank() == 0;
                let run = run_phase(&env, &Still, "write", 1, true, |i, control| {
                    let start = control.ready_and_wait(true).unwrap();
                    let mut rec = Recorder::new(start, Nanos::SECOND);
                    let done = if fast {
                        for t in 1..=4 {
                            rec.record(OpKind::Write, Nanos(MS), MIB, Nanos(t * MS));
                        }
                        4
                    } else {
                        // Hears of rank 0's finish at 10 ms, one write done by then.
                        await_first_done(control);
                        rec.record(OpKind::Write, Nanos(MS), MIB, Nanos(10 * MS));
                        rec.mark_first_done();
                        for t in 2..=10 {
                            rec.record(OpKind::Write, Nanos(MS), MIB, Nanos(t * 100 * MS));
                        }
                        10
                    };
                    // Rank 0 has nothing left to do when told the target: it finishes
                    // as the rendezvous lets it go, at 1 s, like rank 1.
                    assert_eq!(control.wear_out_wait(i, done), 10);
                    control.finished(i);
                    Ok(WorkerReport {
                        measure: rec.finish(),
                        completed: done,
                        finished_at: Nanos(1000 * MS),
                    })
                })
                .unwrap();
                assemble(PhaseMeta::default(), &run)
            },
        );
        for p in &results {
            let w = p.op(OpKind::Write).unwrap();
            assert_eq!((w.ops, w.bytes.0), (14, 14 * MIB));
            assert_eq!(p.elapsed, Nanos(1000 * MS));
            assert_eq!(p.first_done, Nanos(4 * MS));
            assert_eq!(p.per_rank[0].first_done, Nanos(4 * MS));
            assert_eq!(p.per_rank[1].first_done, Nanos(10 * MS));
            // By 4 ms: rank 0's 4 writes, and 0.4 of rank 1's (1 by 10 ms).
            assert_eq!(w.first_done_ops, 4);
            assert_eq!(w.first_done_bytes.0, (4.4 * MIB as f64).round() as u64);
        }
    }

    /// First-done counts are capped at what was done in all, whatever the rates say.
    #[test]
    fn first_done_counts_never_exceed_the_totals() {
        let mut a = Recorder::new(Nanos::ZERO, Nanos::SECOND);
        a.record(OpKind::Write, Nanos(1), 10, Nanos(MS));
        let run = PhaseRun {
            outcomes: vec![RankOutcome {
                host: "h".into(),
                threads: 1,
                elapsed: Nanos(1000 * MS),
                // Later than the worker froze its figures (as a worker's finish after a
                // wait was before the fix): the rate would extrapolate to 1000 writes.
                first_done: Nanos(1000 * MS),
                measure: a.finish(),
                completed: vec![1],
                ..RankOutcome::default()
            }],
            interrupted: false,
            started_at_ms: 0,
            telemetry: None,
        };
        let p = assemble(PhaseMeta::default(), &run);
        let w = p.op(OpKind::Write).unwrap();
        assert_eq!((w.first_done_ops, w.first_done_bytes.0), (1, 10));
    }

    /// Rank 0's worker is done at once and sits at the wear-out rendezvous while rank 1's
    /// two workers keep two CPUs busy: rank 0's CPU use is its worker's, over its own
    /// wall time, so it cannot exceed one CPU (it showed rank 1's two).
    #[test]
    fn a_rank_waiting_at_the_rendezvous_is_not_charged_for_the_others() {
        let interrupt = AtomicBool::new(false);
        let results = InProcess::run(
            2,
            |_| "h".to_string(),
            |comm| {
                let env = Env::new(comm, &interrupt);
                let clock = crate::clock::MonotonicClock;
                let fast = comm.rank() == 0;
                let workers = if fast { 1 } else { 2 };
                let run = run_phase(&env, &clock, "write", workers, true, |i, control| {
                    let start = control.ready_and_wait(true).unwrap();
                    let mut rec = Recorder::new(start, Nanos::SECOND);
                    let done = if fast {
                        rec.record(OpKind::Write, Nanos(1), 1, clock.now());
                        1
                    } else {
                        let t = Instant::now();
                        let mut x = 0u64;
                        while t.elapsed() < Duration::from_millis(300) {
                            x = std::hint::black_box(x.wrapping_add(1));
                        }
                        rec.record(OpKind::Write, Nanos(1), 1, clock.now());
                        1
                    };
                    control.wear_out_wait(i, done);
                    let finished_at = clock.now().saturating_sub(start);
                    control.finished(i);
                    Ok(WorkerReport {
                        measure: rec.finish(),
                        completed: done,
                        finished_at,
                    })
                })
                .unwrap();
                assemble(PhaseMeta::default(), &run)
            },
        );
        let rank0 = &results[0].per_rank[0];
        assert_eq!(rank0.threads, 1);
        assert!(
            rank0.cpu.percent_of_one_cpu() <= 100.0,
            "rank 0 kept {:.0}% of a CPU busy",
            rank0.cpu.percent_of_one_cpu()
        );
        // Both ranks on one host: its CPUs count once.
        let cpus = iolab_backend::process::allowed_cpus().len() as u32;
        assert_eq!(results[0].cpu.cpus, cpus);
    }
}
