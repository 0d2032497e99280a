//! The phase runner, shared by every workload: spawn this rank's workers, agree that all
//! ranks set up fine, start together after a barrier, coordinate while they run (first
//! done, stop, wear-out, live progress) and gather every rank's [`RankOutcome`]. Ranks
//! exchange a small status each tick, so a failure or Ctrl-C anywhere stops everyone and
//! no rank waits forever.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use iolab_comm::Comm;
use iolab_core::civil::now_ms;
use iolab_core::telemetry::Telemetry;
use iolab_core::units::Nanos;

use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::error::EngineError;
use crate::recorder::WorkerMeasure;

mod breakdown;
mod coordinate;
mod gather;
mod outcome;
mod steady;
mod steps;
mod tick;
mod workers;

pub use breakdown::{RankProgress, UnitProgress};
use coordinate::coordinate;
use gather::gather_outcomes;
pub use outcome::RankOutcome;
pub use steady::SteadyWatch;
pub use steps::{RankSteps, StepHook, StepMeeting};
pub use tick::Stall;
use workers::{join_workers, rank_outcome, spawn_worker};

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
    /// Latencies completed since the last report, all ranks together, in the coarse
    /// buckets of iolab_core::live_latency.
    pub latency: &'a [u64],
    /// Each rank's host and counts so far, by rank, when [`Env::per_rank_progress`] asks
    /// for them (the live page's host rows); empty otherwise.
    pub per_rank: &'a [RankProgress],
    /// Operations the workers of all ranks counted so far by operation (`OpKind::index`),
    /// then their bytes by operation: what the phase's stored result counts (a ramp's
    /// are not), when [`Env::per_rank_progress`] asks for them; empty otherwise.
    pub counted: &'a [u64],
    /// Each unit's counts as last heard (at most [`UNITS_PER_TICK`](breakdown::UNITS_PER_TICK) per rank a tick), by
    /// unit, when [`Env::per_rank_progress`] asks for them and the workload has units
    /// ([`Env::units`]); empty otherwise.
    pub per_unit: &'a [UnitProgress],
}

/// Something that watches the machine while a phase's timed part runs (device and CPU
/// telemetry); started and stopped by rank 0.
pub trait PhaseProbe: Sync {
    fn start(&self);
    fn stop(&self) -> Option<Telemetry>;
}

/// Called on rank 0 at every coordination tick with the phase's control and the time
/// since its start (status reports that need the workers' own figures).
pub type StatusHook<'a> = &'a (dyn Fn(&PhaseControl, Nanos) + Sync);

/// The world a phase runs in.
#[derive(Clone, Copy)]
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
    /// Rank 0 also receives every rank's counts with each progress tick (a gather of 16
    /// bytes per rank, to rank 0 only, and 20 more for each of up to [`UNITS_PER_TICK`](breakdown::UNITS_PER_TICK)
    /// units): for the live page's host and target rows. The same on every rank (it
    /// follows the command line).
    pub per_rank_progress: bool,
    /// Called on rank 0 at every tick (see [`StatusHook`]).
    pub status: Option<StatusHook<'a>>,
    /// The unit (a storage target of `iolab targets`: its index in the list every rank
    /// shares) each of this rank's workers belongs to, by worker; with
    /// `per_rank_progress`, rank 0 also receives the units' counts (at most
    /// [`UNITS_PER_TICK`](breakdown::UNITS_PER_TICK) of them per rank a tick, in turn).
    pub units: Option<&'a [u32]>,
    /// How old the phase's worker threads are, at least, when its timed part starts
    /// ([`WORKER_SETTLE`] unless a test asks for less).
    pub settle: Duration,
    /// Steady-state stops judged at every tick on rank 0 (`--steady-state`, fio's ss).
    pub steady: Option<&'a SteadyWatch>,
}

/// The age a worker thread reaches before its phase's timed part starts. Linux gives a
/// new task the load of a busy one until its own history replaces it (its per-entity
/// load average, half-life 32 ms). On a 2-vCPU VM, a direct 128k sequential write
/// through a loop device timed at once ran at 13.4-16.4k IOPS in 35 of 36 runs: the
/// writer and the loop's kernel worker settled on opposite CPUs, waking each other with
/// an IPI per write, and stayed there. From threads 300 ms old it ran at 19.2-20.9k in
/// 11 of 11, as fio (18.0-20.9k), whose jobs wait about 100 ms in its start loop. The
/// same 300 ms spent before spawning the threads did not help (5 of 5 slow).
/// BENCHMARKS.md has the runs.
pub const WORKER_SETTLE: Duration = Duration::from_millis(300);

impl<'a> Env<'a> {
    pub fn new(comm: &'a dyn Comm, interrupt: &'a AtomicBool) -> Self {
        Env {
            comm,
            interrupt,
            progress: None,
            probe: None,
            stall_timeout: None,
            on_stall: None,
            per_rank_progress: false,
            status: None,
            units: None,
            settle: WORKER_SETTLE,
            steady: None,
        }
    }

    /// Starts the timed part once the workers are `settle` old instead of
    /// [`WORKER_SETTLE`].
    pub fn with_settle(mut self, settle: Duration) -> Self {
        self.settle = settle;
        self
    }

    /// The same world for a phase whose workers belong to `units` (see [`Env::units`]).
    pub fn with_units<'b>(&'b self, units: &'b [u32]) -> Env<'b> {
        Env {
            units: Some(units),
            ..*self
        }
    }

    /// The same world with steady-state stops judged by `watch`.
    pub fn with_steady<'b>(&'b self, watch: &'b SteadyWatch) -> Env<'b> {
        Env {
            steady: Some(watch),
            ..*self
        }
    }

    pub fn with_status(mut self, status: StatusHook<'a>) -> Self {
        self.status = Some(status);
        self
    }

    pub fn with_per_rank_progress(mut self, on: bool) -> Self {
        self.per_rank_progress = on;
        self
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
            measure: crate::recorder::Recorder::new(Nanos::ZERO, crate::plan::INTERVAL).finish(),
            completed: 0,
            finished_at: Nanos::ZERO,
        }
    }
}

/// One phase as this rank knows it once it ended.
pub struct PhaseRun {
    /// Every rank's outcome on rank 0 (which prints and stores them); this rank's own on
    /// the others, so that they do not receive what they would not use.
    pub outcomes: Vec<RankOutcome>,
    /// Operations each worker of every rank completed, indexed by global worker number,
    /// on every rank.
    pub completed: Vec<u64>,
    /// Errors on all ranks together, on every rank (what decides whether a phase that
    /// follows runs).
    pub errors: u64,
    /// On rank 0 of several ranks, every rank's measure merged as it arrived (the
    /// outcomes then keep only their counts); None where the outcomes keep their own.
    pub merged: Option<WorkerMeasure>,
    pub interrupted: bool,
    /// Wall-clock start on this rank, ms since the epoch.
    pub started_at_ms: i64,
    /// What the probe saw on rank 0 while the phase ran.
    pub telemetry: Option<Telemetry>,
}

impl PhaseRun {
    /// A run made of outcomes already in hand (every rank's, or a unit's), as rank 0
    /// would have them.
    pub fn from_outcomes(
        outcomes: Vec<RankOutcome>,
        interrupted: bool,
        started_at_ms: i64,
        telemetry: Option<Telemetry>,
    ) -> PhaseRun {
        PhaseRun {
            merged: None,
            completed: outcomes
                .iter()
                .flat_map(|o| o.completed.iter().copied())
                .collect(),
            errors: outcomes.iter().map(|o| o.measure.error_count).sum(),
            outcomes,
            interrupted,
            started_at_ms,
            telemetry,
        }
    }

    /// Operations completed per worker, indexed by global worker number.
    pub fn completed_by_worker(&self) -> Vec<u64> {
        self.completed.clone()
    }
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
    let how = Coordination::Ticks { wear_out };
    run_phase_with(env, clock, name, workers, how, work)
}

/// Runs a phase in steps (see [`steps`]): `work(index, control, meeting)` as in
/// [`run_phase`], meeting every other worker of the job after each of its steps; the
/// coordinating thread calls `hook` after every meeting, until it ends the phase.
pub fn run_step_phase<C, W>(
    env: &Env<'_>,
    clock: &C,
    name: &str,
    workers: usize,
    hook: &dyn StepHook,
    work: W,
) -> Result<PhaseRun, EngineError>
where
    C: Clock,
    W: Fn(usize, &PhaseControl, &RankSteps) -> Result<WorkerReport, String> + Sync,
{
    let steps = RankSteps::new(workers);
    let how = Coordination::Steps(&steps, hook);
    run_phase_with(env, clock, name, workers, how, |i, control| {
        // Left however the worker ends (a panic too), so no meeting waits for it.
        let _leave = steps.leaving();
        work(i, control, &steps)
    })
}

/// How a phase's coordinating thread follows its workers once they started.
#[derive(Clone, Copy)]
enum Coordination<'s> {
    /// Status ticks with the other ranks (progress, first done, stalls, wear-out).
    Ticks { wear_out: bool },
    /// The workers' step meetings, the hook's collective after each (see [`steps`]).
    Steps(&'s RankSteps, &'s dyn StepHook),
}

impl Coordination<'_> {
    /// Follows the released workers until they end; true if interrupted.
    fn follow<C: Clock>(
        self,
        env: &Env<'_>,
        clock: &C,
        name: &str,
        control: &PhaseControl,
        start: Nanos,
    ) -> bool {
        match self {
            Coordination::Ticks { wear_out } => {
                coordinate(env, clock, name, control, start, wear_out)
            }
            Coordination::Steps(steps, hook) => {
                steps.coordinate(hook);
                false
            }
        }
    }
}

fn run_phase_with<C, W>(
    env: &Env<'_>,
    clock: &C,
    name: &str,
    workers: usize,
    how: Coordination<'_>,
    work: W,
) -> Result<PhaseRun, EngineError>
where
    C: Clock,
    W: Fn(usize, &PhaseControl) -> Result<WorkerReport, String> + Sync,
{
    let comm = env.comm;
    let control = PhaseControl::new(workers);
    let started_at_ms = now_ms();
    let mut setup_error = None;
    let mut timed = Timed::default();

    let spawned_at = std::time::Instant::now();
    let reports = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|i| spawn_worker(s, i, &control, &work))
            .collect();
        if handles.iter().any(|h| h.is_err()) {
            setup_error = Some(
                "could not start a worker thread (too many threads? see ulimit -u)".to_string(),
            );
        }
        let local_ok = settle(env, &control, spawned_at, setup_error.is_none());
        timed = start_and_coordinate(env, clock, name, &control, how, local_ok);
        join_workers(handles)
    });

    let outcome = rank_outcome(env, &control, setup_error, reports);
    let interrupted = timed.interrupted | env.interrupt.load(Ordering::Relaxed);
    gather_outcomes(comm, outcome, interrupted, started_at_ms, timed.telemetry)
}

/// What the timed part of a phase left on this rank: whether it was interrupted, and what
/// the probe saw (rank 0).
#[derive(Default)]
struct Timed {
    interrupted: bool,
    telemetry: Option<Telemetry>,
}

/// Waits until this rank's workers are set up and, when they all are, until they are
/// `env.settle` old; true when this rank is ready to start.
fn settle(
    env: &Env<'_>,
    control: &PhaseControl,
    spawned_at: std::time::Instant,
    spawned: bool,
) -> bool {
    let local_ok = control.wait_all_ready() && spawned;
    if local_ok {
        // New threads start with the scheduler's estimate of a heavy task, which
        // decays over the next few hundred milliseconds; timed before that, a
        // synchronous I/O loop through a kernel worker can settle into a slower
        // placement and keep it for the whole phase (see WORKER_SETTLE).
        std::thread::sleep(env.settle.saturating_sub(spawned_at.elapsed()));
    }
    local_ok
}

/// When every rank is ready, starts the workers of all ranks together and coordinates
/// them until the phase ends; otherwise releases them without a start.
fn start_and_coordinate<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    name: &str,
    control: &PhaseControl,
    how: Coordination<'_>,
    local_ok: bool,
) -> Timed {
    let comm = env.comm;
    if !comm.all_ok(local_ok) {
        control.release(None);
        return Timed::default();
    }
    let probe = env.probe.filter(|_| comm.rank() == 0);
    // The probe's thread and first readings before the gate opens, not beside the
    // first I/Os (started after it, its new thread was seen to take a worker's
    // CPU in the first millisecond and move the worker).
    if let Some(p) = probe {
        p.start();
    }
    comm.barrier();
    let start = clock.now();
    control.release(Some(start));
    let interrupted = how.follow(env, clock, name, control, start);
    Timed {
        interrupted,
        telemetry: probe.and_then(|p| p.stop()),
    }
}

#[cfg(test)]
mod tests;
