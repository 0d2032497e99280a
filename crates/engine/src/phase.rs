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
}

impl<'a> Env<'a> {
    pub fn new(comm: &'a dyn Comm, interrupt: &'a AtomicBool) -> Self {
        Env {
            comm,
            interrupt,
            progress: None,
            probe: None,
        }
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
    pub cpu: CpuUsage,
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

#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
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
}

fn combine(ticks: &[Tick]) -> Tick {
    let mut g = Tick {
        wear_out_max: Some(0),
        ..Tick::default()
    };
    for t in ticks {
        g.finished += t.finished;
        g.workers += t.workers;
        g.first_done |= t.first_done;
        g.stop |= t.stop;
        g.wear_out_max = match (g.wear_out_max, t.wear_out_max) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        g.ops += t.ops;
        g.bytes += t.bytes;
    }
    g
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
    let mut cpu0 = (Nanos::ZERO, Nanos::ZERO);
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
            cpu0 = iolab_backend::process::cpu_times();
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

    let cpu1 = iolab_backend::process::cpu_times();
    let mut outcome = RankOutcome {
        rank: comm.rank(),
        host: comm.host().to_string(),
        threads: workers as u32,
        setup_error,
        first_done: Nanos(u64::MAX),
        ..RankOutcome::default()
    };
    for r in reports {
        match r {
            Ok(rep) => {
                outcome.measure.merge(&rep.measure);
                outcome.completed.push(rep.completed);
                outcome.elapsed = outcome.elapsed.max(rep.finished_at);
                outcome.first_done = outcome.first_done.min(rep.finished_at);
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
    outcome.cpu = CpuUsage {
        user: cpu1.0.saturating_sub(cpu0.0),
        system: cpu1.1.saturating_sub(cpu0.1),
        wall: outcome.elapsed,
        cpus: iolab_backend::process::allowed_cpus().len() as u32,
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
    loop {
        control.wait_for_change(TICK);
        if env.interrupt.load(Ordering::Relaxed) && !interrupted {
            interrupted = true;
            control.stop_all();
        }
        let (ops, bytes) = control.totals();
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
        };
        let global = if comm.size() > 1 {
            let all = comm.all_gather(&local).unwrap_or_else(|_| {
                vec![Tick {
                    stop: true,
                    ..local
                }]
            });
            combine(&all)
        } else {
            local
        };
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
