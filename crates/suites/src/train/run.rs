//! Training epochs as DLIO's main loop runs them: each simulated accelerator (a worker
//! of the engine's step phase; `accelerators` per rank) takes a batch, "computes"
//! (sleeps computation_time), and then waits for every other accelerator of the job
//! (DLIO's `comm.barrier()` after each step): the accelerators of a rank meet the
//! engine's coordinating thread, which joins the other ranks in one small allreduce
//! ([`EpochSteps`]: the step's counters, so rank 0 can show the job live). Times are DLIO's: an epoch starts before its loader starts
//! and ends after the last step's barrier; AU leaves the first step out.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iolab_comm::{Comm, CommExt};
use iolab_core::LatencyHistogram;
use iolab_core::result::{CpuUsage, PhaseResult};
use iolab_core::rng::{Rng, mix};
use iolab_core::spec::{LoaderKind, TrainConfig};
use iolab_core::train::{AcceleratorEpoch, RunFigures};
use iolab_core::units::Nanos;
use iolab_engine::train::{
    ReaderPool, ReaderSetup, StepDone, StepHook, StepMeeting, StepPhase, StepPhaseSpec, StepWork,
    WorkerMeasure, run_accelerator, run_steps,
};
use iolab_engine::{Clock, Env, MonotonicClock};
use serde::{Deserialize, Serialize};

use crate::AiError;
use crate::train::dataset::Dataset;
use crate::train::loader::{self, Assignment, ReadCounters, ReaderShared};
use crate::train::normal;
use crate::train::order::{file_order, files_assignment, indexed_assignment};
use crate::train::phase::epoch_phase;

/// What rank 0 is told after every step (the whole job's counts).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveStep {
    pub epoch: u32,
    pub epochs: u32,
    pub step: u64,
    pub steps: u64,
    pub elapsed: Duration,
    pub samples: u64,
    pub bytes: u64,
    pub reads: u64,
    /// Compute over time so far, all accelerators (time-weighted; DLIO's AU is the
    /// mean of the accelerators' and is known at the epoch's end).
    pub au_percent: f64,
    pub accelerators: u64,
}

/// How a training run is watched and stopped.
pub struct TrainHooks<'a> {
    pub interrupt: &'a AtomicBool,
    /// Called on rank 0 after every step.
    pub on_step: Option<&'a (dyn Fn(&LiveStep) + Sync)>,
    /// A rank that does not reach a step's meeting within this long ends the job.
    pub stall: Option<Duration>,
    /// Samples the devices and CPU beside each epoch (rank 0).
    pub probe: Option<&'a dyn iolab_engine::PhaseProbe>,
}

/// A training run's result: on rank 0 every epoch's figures and phase.
#[derive(Clone, Debug, Default)]
pub struct TrainOutcome {
    pub figures: RunFigures,
    pub phases: Vec<PhaseResult>,
    pub interrupted: bool,
    /// Process CPU time of all ranks over the epochs.
    pub cpu: CpuUsage,
}

/// One accelerator's epoch, sent to rank 0 (its reads travel in the engine's phase).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct AccReport {
    pub(crate) epoch: AcceleratorEpoch,
    pub(crate) load_hist: Vec<u8>,
    /// Time at the step meetings, all steps.
    #[serde(default)]
    pub(crate) wait_sum_ns: u64,
    pub(crate) error: Option<String>,
}

/// One rank's epoch, sent to rank 0.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RankReport {
    pub(crate) accs: Vec<AccReport>,
    /// The process's CPU time over the epoch (the readers' threads with the
    /// accelerators').
    pub(crate) cpu_user: u64,
    pub(crate) cpu_system: u64,
}

/// The cross-rank part of each step's meeting: the job's counters summed for the live
/// view, and whether to stop (the last step, Ctrl-C or a failure anywhere).
struct EpochSteps<'a> {
    comm: &'a dyn Comm,
    hooks: &'a TrainHooks<'a>,
    epoch: u32,
    epochs: u32,
    steps: u64,
    total: u64,
    lives: &'a [AccLive],
    counters: &'a [ReadCounters],
    started: Nanos,
    interrupted: AtomicBool,
}

/// Running counters of one accelerator (the live view).
#[derive(Default)]
struct AccLive {
    samples: AtomicU64,
    compute_ns: AtomicU64,
    time_ns: AtomicU64,
}

impl StepHook for EpochSteps<'_> {
    fn after_step(&self, step: u64, failed: bool) -> bool {
        let n = self.lives.len();
        let sum = |f: &dyn Fn(usize) -> u64| (0..n).map(f).sum::<u64>();
        let sums = [
            sum(&|i| self.lives[i].samples.load(Ordering::Relaxed)),
            sum(&|i| self.counters[i].bytes.load(Ordering::Relaxed)),
            sum(&|i| self.counters[i].reads.load(Ordering::Relaxed)),
            sum(&|i| self.lives[i].compute_ns.load(Ordering::Relaxed)),
            sum(&|i| self.lives[i].time_ns.load(Ordering::Relaxed)),
        ];
        let local_stop = self.hooks.interrupt.load(Ordering::Relaxed);
        let (sums, maxes) = self.comm.reduce(
            &sums,
            &[u64::from(local_stop), u64::from(failed)],
            self.hooks.stall,
            &|_| {},
        );
        if maxes[0] > 0 {
            self.interrupted.store(true, Ordering::Relaxed);
        }
        if self.comm.rank() == 0
            && let Some(f) = self.hooks.on_step
        {
            let now = MonotonicClock.now().saturating_sub(self.started);
            f(&LiveStep {
                epoch: self.epoch,
                epochs: self.epochs,
                step,
                steps: self.steps,
                elapsed: Duration::from_nanos(now.0),
                samples: sums[0],
                bytes: sums[1],
                reads: sums[2],
                au_percent: if sums[4] > 0 {
                    sums[3] as f64 / sums[4] as f64 * 100.0
                } else {
                    0.0
                },
                accelerators: self.total,
            });
        }
        step >= self.steps || maxes[0] > 0 || maxes[1] > 0
    }
}

struct AccOut {
    epoch: AcceleratorEpoch,
    reads: WorkerMeasure,
    loads: LatencyHistogram,
    wait_sum: Nanos,
    error: Option<String>,
}

impl AccOut {
    /// What rank 0 is sent of it; its reads go to the engine.
    fn report(self) -> (AccReport, WorkerMeasure) {
        let report = AccReport {
            epoch: self.epoch,
            load_hist: self.loads.to_bytes().unwrap_or_default(),
            wait_sum_ns: self.wait_sum.0,
            error: self.error,
        };
        (report, self.reads)
    }
}

/// What an accelerator's epoch reads and how.
struct AccWork<'a> {
    cfg: &'a TrainConfig,
    dataset: &'a Dataset,
    assignment: Assignment,
    /// Its reader backends, kept across epochs, and their slots' size.
    pool: &'a ReaderPool,
    read_slot: u64,
    seed: u64,
}

/// One accelerator's epoch from the phase's `started`: its readers started, then the
/// engine's step loop on the monotonic clock (batch, compute, the step meeting).
fn accelerator(
    w: AccWork<'_>,
    started: Nanos,
    sync: &dyn StepMeeting,
    live: &AccLive,
    counters: &ReadCounters,
) -> AccOut {
    let cfg = w.cfg;
    let clock = MonotonicClock;
    let measure = Mutex::new(None);
    let stop_readers = AtomicBool::new(false);
    let mut loads = LatencyHistogram::new();
    let mut rng = Rng::new(w.seed);
    let setup = ReaderSetup {
        backend: cfg.backend,
        queue_depth: cfg.queue_depth,
        transfer: w.read_slot,
        direct: cfg.direct,
    };
    let steps = std::thread::scope(|s| {
        let shared = Arc::new(ReaderShared {
            cfg,
            files: &w.dataset.files,
            sizes: &w.dataset.sizes,
            counters,
            stop: &stop_readers,
            setup,
            start: started,
            measure: &measure,
            pool: w.pool,
        });
        let mut batches = loader::start(s, shared, w.assignment).map_err(|e| e.to_string());
        let mut next = || match batches.as_mut() {
            Ok(b) => b
                .next_batch()
                .map(|r| r.map(|b| b.samples).map_err(|e| e.to_string())),
            Err(e) => Some(Err(e.clone())),
        };
        let mut compute = || {
            let c = normal(&mut rng, cfg.computation_time, cfg.computation_time_stdev).max(0.0);
            Nanos((c * 1e9) as u64)
        };
        let mut first_proc = None;
        let mut on_step = |d: &StepDone| {
            loads.record((d.times.load * 1e9) as u64);
            // AU leaves the first step's compute out, and its time before the first
            // step's end.
            if first_proc.is_some() {
                live.compute_ns
                    .fetch_add((d.times.measured * 1e9) as u64, Ordering::Relaxed);
            }
            let first = *first_proc.get_or_insert(d.times.proc);
            live.samples.fetch_add(d.samples, Ordering::Relaxed);
            let time = (d.at.0 as f64 / 1e9 - first).max(0.0);
            live.time_ns.store((time * 1e9) as u64, Ordering::Relaxed);
        };
        let steps = run_accelerator(&clock, started, &mut next, &mut compute, sync, &mut on_step);
        stop_readers.store(true, Ordering::Relaxed);
        drop(batches);
        steps
    });
    let mut epoch =
        AcceleratorEpoch::from_steps(&steps.steps, steps.elapsed.0 as f64 / 1e9, cfg.batch_size);
    epoch.bytes = counters.bytes.load(Ordering::Relaxed);
    epoch.reads = counters.reads.load(Ordering::Relaxed);
    AccOut {
        epoch,
        reads: measure.into_inner().ok().flatten().unwrap_or_default(),
        loads,
        wait_sum: Nanos(steps.waits.iter().map(|w| w.0).sum()),
        error: steps.error,
    }
}

/// Runs `cfg.epochs` epochs over `dataset`. Collective: every rank calls it.
pub fn train_epochs(
    comm: &dyn Comm,
    dataset: &Dataset,
    cfg: &TrainConfig,
    hooks: &TrainHooks<'_>,
) -> Result<TrainOutcome, AiError> {
    let per_rank = u64::from(cfg.accelerators);
    let total = per_rank * u64::from(comm.size());
    cfg.check_job(total)?;
    let order = file_order(cfg);
    // Each accelerator's reader backends, kept from epoch to epoch.
    let pools: Vec<ReaderPool> = (0..cfg.accelerators)
        .map(|_| ReaderPool::default())
        .collect();
    let mut out = TrainOutcome::default();
    let mut epochs = Vec::new();
    let cpu_start = iolab_backend::process::cpu_times();
    let wall_start = MonotonicClock.now();
    let epoch = Epoch {
        comm,
        dataset,
        cfg,
        hooks,
        total,
        order: &order,
        pools: &pools,
        read_slot: loader::read_slot(cfg, dataset.sizes.iter().copied().max().unwrap_or(0)),
    };
    for e in 1..=cfg.epochs {
        let (report, run) = epoch.run(e)?;
        let reports = comm
            .gather(0, &report)
            .map_err(|e| AiError::Setup(e.to_string()))?;
        if comm.rank() == 0 {
            let (fig, phase) = epoch_phase(cfg, e, &reports, run.result);
            epochs.push(fig);
            out.phases.push(phase);
        }
        let failed = report.accs.iter().find_map(|a| a.error.clone());
        let all_ok = comm.all_ok(failed.is_none());
        if let Some(e) = failed {
            return Err(AiError::Io(e));
        }
        if !all_ok || run.errors > 0 {
            let first = reports
                .iter()
                .flat_map(|r| r.accs.iter())
                .find_map(|a| a.error.clone());
            return Err(AiError::Io(
                first.unwrap_or_else(|| "another rank's accelerator failed".into()),
            ));
        }
        if run.interrupted {
            out.interrupted = true;
            break;
        }
    }
    let (u, s) = iolab_backend::process::cpu_times();
    let cpu = [u.0 - cpu_start.0.0, s.0 - cpu_start.1.0];
    out.cpu = CpuUsage {
        user: Nanos(comm.all_sum(cpu[0])),
        system: Nanos(comm.all_sum(cpu[1])),
        wall: MonotonicClock.now().saturating_sub(wall_start),
        cpus: iolab_backend::process::allowed_cpus().len() as u32,
    };
    out.figures = RunFigures::of(total, epochs, cfg.record_length, cfg.au_threshold);
    Ok(out)
}

/// What every epoch of a run shares.
struct Epoch<'a> {
    comm: &'a dyn Comm,
    dataset: &'a Dataset,
    cfg: &'a TrainConfig,
    hooks: &'a TrainHooks<'a>,
    /// Accelerators of the job.
    total: u64,
    order: &'a [usize],
    /// Each accelerator's reader backends, and their slots' size (the largest read).
    pools: &'a [ReaderPool],
    read_slot: u64,
}

impl Epoch<'_> {
    /// Epoch `epoch` as a step phase on the engine: a worker per accelerator of this
    /// rank, the job's step meeting after each step. Collective.
    fn run(&self, epoch: u32) -> Result<(RankReport, StepPhase), AiError> {
        let (comm, cfg, total) = (self.comm, self.cfg, self.total);
        let a = cfg.accelerators as usize;
        let first_global = u64::from(comm.rank()) * u64::from(cfg.accelerators);
        let assignments = self.assignments(epoch, first_global);
        let lives: Vec<AccLive> = (0..a).map(|_| AccLive::default()).collect();
        let counters: Vec<ReadCounters> = (0..a).map(|_| ReadCounters::default()).collect();
        let reports: Vec<Mutex<Option<AccReport>>> = (0..a).map(|_| Mutex::new(None)).collect();
        let hook = EpochSteps {
            comm,
            hooks: self.hooks,
            epoch,
            epochs: cfg.epochs,
            steps: cfg.steps_per_epoch(total),
            total,
            lives: &lives,
            counters: &counters,
            started: MonotonicClock.now(),
            interrupted: AtomicBool::new(false),
        };
        let mut env = Env::new(comm, self.hooks.interrupt);
        if let Some(p) = self.hooks.probe {
            env = env.with_probe(p);
        }
        let spec = StepPhaseSpec {
            name: format!("train-epoch-{epoch}"),
            spec: serde_json::to_value(cfg).unwrap_or_default(),
            workers: a,
        };
        let cpu0 = iolab_backend::process::cpu_times();
        let mut run = run_steps(&env, &MonotonicClock, &spec, &hook, |i, start, meeting| {
            let assignment = assignments[i].lock().ok().and_then(|mut x| x.take());
            let assignment = assignment.ok_or("an accelerator's assignment is taken once")?;
            let work = AccWork {
                cfg,
                dataset: self.dataset,
                assignment,
                pool: &self.pools[i],
                read_slot: self.read_slot,
                seed: mix(&[cfg.seed, u64::from(epoch), first_global + i as u64, 0xc0de]),
            };
            let out = accelerator(work, start, meeting, &lives[i], &counters[i]);
            let samples = out.epoch.samples;
            let (report, measure) = out.report();
            if let Ok(mut r) = reports[i].lock() {
                *r = Some(report);
            }
            Ok(StepWork {
                measure,
                completed: samples,
            })
        })
        .map_err(|e| AiError::Setup(e.to_string()))?;
        run.interrupted |= hook.interrupted.load(Ordering::Relaxed);
        Ok((rank_report(reports, cpu0), run))
    }

    /// What each accelerator of this rank (the first the job's `first_global`) reads in
    /// epoch `epoch`, each taken once by its worker.
    fn assignments(&self, epoch: u32, first_global: u64) -> Vec<Mutex<Option<Assignment>>> {
        let (cfg, total) = (self.cfg, self.total);
        (0..u64::from(cfg.accelerators))
            .map(|i| {
                Mutex::new(Some(match cfg.loader {
                    LoaderKind::Pytorch => indexed_assignment(cfg, epoch, first_global + i, total),
                    LoaderKind::Tensorflow => {
                        files_assignment(cfg, first_global + i, total, self.order)
                    }
                }))
            })
            .collect()
    }
}

/// The rank's report of an epoch: each accelerator's (one that did not run says so) and
/// the CPU time used since `cpu0`.
fn rank_report(reports: Vec<Mutex<Option<AccReport>>>, cpu0: (Nanos, Nanos)) -> RankReport {
    let (u, sy) = iolab_backend::process::cpu_times();
    let accs = reports
        .into_iter()
        .map(|r| r.into_inner().ok().flatten())
        .map(|r| {
            r.unwrap_or_else(|| AccReport {
                epoch: AcceleratorEpoch::default(),
                load_hist: Vec::new(),
                wait_sum_ns: 0,
                error: Some("an accelerator did not run its epoch".into()),
            })
        })
        .collect();
    RankReport {
        accs,
        cpu_user: u.0 - cpu0.0.0,
        cpu_system: sy.0 - cpu0.1.0,
    }
}
