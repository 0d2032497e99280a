//! Training epochs as DLIO's main loop runs them: each simulated accelerator (a thread;
//! `accelerators` per rank) takes a batch, "computes" (sleeps computation_time), and
//! then waits for every other accelerator of the job (DLIO's `comm.barrier()` after each
//! step): here the accelerators of a rank meet at a barrier with the rank's main thread,
//! which joins the other ranks in one small allreduce (the step's counters, so rank 0
//! can show the job live). Times are DLIO's: an epoch starts before its loader starts
//! and ends after the last step's barrier; AU leaves the first step out.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use iolab_comm::{Comm, CommExt};
use iolab_core::LatencyHistogram;
use iolab_core::result::{CpuUsage, OpKind, PhaseResult, Timeline};
use iolab_core::rng::{Rng, mix};
use iolab_core::spec::{LoaderKind, TrainConfig};
use iolab_core::train::{AcceleratorEpoch, RunFigures};
use iolab_core::units::Nanos;
use iolab_engine::train::{ReaderSetup, StepDone, StepMeeting, WorkerMeasure, run_accelerator};
use iolab_engine::{Clock, MonotonicClock};
use serde::{Deserialize, Serialize};

use crate::train::dataset::Dataset;
use crate::train::loader::{self, Assignment, ReadCounters, ReaderShared};
use crate::train::order::{file_order, files_assignment, indexed_assignment};
use crate::train::phase::epoch_phase;
use crate::train::{TrainError, format, normal};

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

/// One accelerator's epoch, sent to rank 0.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct AccReport {
    pub(crate) epoch: AcceleratorEpoch,
    pub(crate) reads_hist: Vec<u8>,
    /// The readers' reads per second from the epoch's start on this rank.
    pub(crate) timeline: Timeline,
    pub(crate) load_hist: Vec<u8>,
    /// Time at the step meetings, all steps.
    #[serde(default)]
    pub(crate) wait_sum_ns: u64,
    pub(crate) error: Option<String>,
}

/// One rank's epoch, sent to rank 0.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RankReport {
    pub(crate) host: String,
    pub(crate) accs: Vec<AccReport>,
    pub(crate) cpu_user: u64,
    pub(crate) cpu_system: u64,
    pub(crate) elapsed: u64,
}

/// The per-step meeting of a rank's accelerators and its main thread.
struct StepSync {
    arrive: Barrier,
    depart: Barrier,
    stop: AtomicBool,
    failed: AtomicBool,
}

/// Running counters of one accelerator (the live view).
#[derive(Default)]
struct AccLive {
    samples: AtomicU64,
    compute_ns: AtomicU64,
    time_ns: AtomicU64,
}

impl StepMeeting for StepSync {
    fn meet(&self, _step: u64, failed: bool) -> bool {
        if failed {
            self.failed.store(true, Ordering::Relaxed);
        }
        self.arrive.wait();
        self.depart.wait();
        self.stop.load(Ordering::Acquire)
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
    /// What rank 0 is sent of it.
    fn report(self) -> AccReport {
        let reads = self.reads.ops.get(&OpKind::Read);
        AccReport {
            epoch: self.epoch,
            reads_hist: reads
                .and_then(|m| m.histogram.to_bytes().ok())
                .unwrap_or_default(),
            timeline: self.reads.timeline,
            load_hist: self.loads.to_bytes().unwrap_or_default(),
            wait_sum_ns: self.wait_sum.0,
            error: self.error,
        }
    }
}

/// What an accelerator's epoch reads and how.
struct AccWork<'a> {
    cfg: &'a TrainConfig,
    dataset: &'a Dataset,
    assignment: Assignment,
    seed: u64,
}

/// One accelerator's epoch: its readers started, then the engine's step loop on the
/// monotonic clock (batch, compute, the rank's step meeting).
fn accelerator(w: AccWork<'_>, sync: &StepSync, live: &AccLive, counters: &ReadCounters) -> AccOut {
    let cfg = w.cfg;
    let clock = MonotonicClock;
    let measure = Mutex::new(None);
    let stop_readers = AtomicBool::new(false);
    let mut loads = LatencyHistogram::new();
    let mut rng = Rng::new(w.seed);
    let started = clock.now();
    let setup = ReaderSetup {
        backend: cfg.backend,
        queue_depth: cfg.queue_depth,
        transfer: format::read_buffer(cfg, w.dataset.sizes.iter().copied().max().unwrap_or(0)),
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
                    .fetch_add((d.times.compute * 1e9) as u64, Ordering::Relaxed);
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
) -> Result<TrainOutcome, TrainError> {
    let per_rank = u64::from(cfg.accelerators);
    let total = per_rank * u64::from(comm.size());
    cfg.check_job(total)?;
    let steps = cfg.steps_per_epoch(total);
    let order = file_order(cfg);
    let mut out = TrainOutcome::default();
    let mut epochs = Vec::new();
    let cpu_start = iolab_backend::process::cpu_times();
    let wall_start = Instant::now();
    for epoch in 1..=cfg.epochs {
        let probe = hooks.probe.filter(|_| comm.rank() == 0);
        if let Some(p) = probe {
            p.start();
        }
        let started_at_ms = iolab_core::civil::now_ms();
        let ran = run_epoch(comm, dataset, cfg, hooks, epoch, steps, total, &order);
        let telemetry = probe.and_then(|p| p.stop());
        let (report, interrupted) = ran?;
        let reports = comm
            .gather(0, &report)
            .map_err(|e| TrainError::Setup(e.to_string()))?;
        let failed = report.accs.iter().find_map(|a| a.error.clone());
        let any_failed = !comm.all_ok(failed.is_none());
        if comm.rank() == 0 {
            let (fig, mut phase) = epoch_phase(cfg, epoch, &reports, started_at_ms, interrupted);
            phase.telemetry = telemetry;
            epochs.push(fig);
            out.phases.push(phase);
        }
        if let Some(e) = failed {
            return Err(TrainError::Io(e));
        }
        if any_failed {
            let first = reports
                .iter()
                .flat_map(|r| r.accs.iter())
                .find_map(|a| a.error.clone())
                .unwrap_or_else(|| "another rank's accelerator failed".into());
            return Err(TrainError::Io(first));
        }
        if interrupted {
            out.interrupted = true;
            break;
        }
    }
    let (u, s) = iolab_backend::process::cpu_times();
    let cpu = [u.0 - cpu_start.0.0, s.0 - cpu_start.1.0];
    out.cpu = CpuUsage {
        user: Nanos(comm.all_sum(cpu[0])),
        system: Nanos(comm.all_sum(cpu[1])),
        wall: Nanos(wall_start.elapsed().as_nanos() as u64),
        cpus: iolab_backend::process::allowed_cpus().len() as u32,
    };
    out.figures = RunFigures::of(total, epochs, cfg.record_length, cfg.au_threshold);
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn run_epoch(
    comm: &dyn Comm,
    dataset: &Dataset,
    cfg: &TrainConfig,
    hooks: &TrainHooks<'_>,
    epoch: u32,
    steps: u64,
    total: u64,
    order: &[usize],
) -> Result<(RankReport, bool), TrainError> {
    let a = cfg.accelerators as usize;
    let first_global = u64::from(comm.rank()) * u64::from(cfg.accelerators);
    let assignments: Vec<Assignment> = (0..a as u64)
        .map(|i| match cfg.loader {
            LoaderKind::Pytorch => indexed_assignment(cfg, epoch, first_global + i, total),
            LoaderKind::Tensorflow => files_assignment(cfg, first_global + i, total, order),
        })
        .collect();
    let sync = StepSync {
        arrive: Barrier::new(a + 1),
        depart: Barrier::new(a + 1),
        stop: AtomicBool::new(false),
        failed: AtomicBool::new(false),
    };
    let lives: Vec<AccLive> = (0..a).map(|_| AccLive::default()).collect();
    let counters: Vec<ReadCounters> = (0..a).map(|_| ReadCounters::default()).collect();
    let cpu0 = iolab_backend::process::cpu_times();
    let started = Instant::now();
    let mut interrupted = false;
    let outs: Vec<AccOut> = std::thread::scope(|s| {
        let handles: Vec<_> = assignments
            .into_iter()
            .enumerate()
            .map(|(i, asg)| {
                let (sync, live, counters) = (&sync, &lives[i], &counters[i]);
                let seed = mix(&[cfg.seed, u64::from(epoch), first_global + i as u64, 0xc0de]);
                let work = AccWork {
                    cfg,
                    dataset,
                    assignment: asg,
                    seed,
                };
                std::thread::Builder::new()
                    .name(format!("iolab-acc{i}"))
                    .spawn_scoped(s, move || accelerator(work, sync, live, counters))
                    .expect("an accelerator thread starts")
            })
            .collect();
        for step in 1..=steps {
            sync.arrive.wait();
            let sum = |f: &dyn Fn(usize) -> u64| (0..a).map(f).sum::<u64>();
            let sums = [
                sum(&|i| lives[i].samples.load(Ordering::Relaxed)),
                sum(&|i| counters[i].bytes.load(Ordering::Relaxed)),
                sum(&|i| counters[i].reads.load(Ordering::Relaxed)),
                sum(&|i| lives[i].compute_ns.load(Ordering::Relaxed)),
                sum(&|i| lives[i].time_ns.load(Ordering::Relaxed)),
            ];
            let local_stop = hooks.interrupt.load(Ordering::Relaxed);
            let local_fail = sync.failed.load(Ordering::Relaxed);
            let (sums, maxes) = comm.reduce(
                &sums,
                &[u64::from(local_stop), u64::from(local_fail)],
                hooks.stall,
                &|_| {},
            );
            if maxes[0] > 0 {
                interrupted = true;
            }
            let stop = step == steps || maxes[0] > 0 || maxes[1] > 0;
            if comm.rank() == 0
                && let Some(f) = hooks.on_step
            {
                f(&LiveStep {
                    epoch,
                    epochs: cfg.epochs,
                    step,
                    steps,
                    elapsed: started.elapsed(),
                    samples: sums[0],
                    bytes: sums[1],
                    reads: sums[2],
                    au_percent: if sums[4] > 0 {
                        sums[3] as f64 / sums[4] as f64 * 100.0
                    } else {
                        0.0
                    },
                    accelerators: total,
                });
            }
            sync.stop.store(stop, Ordering::Release);
            sync.depart.wait();
            if stop {
                break;
            }
        }
        handles
            .into_iter()
            .map(|h| h.join().expect("an accelerator thread ends"))
            .collect()
    });
    let (u, sy) = iolab_backend::process::cpu_times();
    let report = RankReport {
        host: comm.host().to_string(),
        accs: outs.into_iter().map(AccOut::report).collect(),
        cpu_user: u.0 - cpu0.0.0,
        cpu_system: sy.0 - cpu0.1.0,
        elapsed: started.elapsed().as_nanos() as u64,
    };
    Ok((report, interrupted))
}
