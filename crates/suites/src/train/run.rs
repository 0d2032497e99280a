//! Training epochs as DLIO's main loop runs them: each simulated accelerator (a thread;
//! `accelerators` per rank) takes a batch, "computes" (sleeps computation_time), and
//! then waits for every other accelerator of the job (DLIO's `comm.barrier()` after each
//! step): here the accelerators of a rank meet at a barrier with the rank's main thread,
//! which joins the other ranks in one small allreduce (the step's counters, so rank 0
//! can show the job live). Times are DLIO's: an epoch starts before its loader starts
//! and ends after the last step's barrier; AU leaves the first step out.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use iolab_comm::{Comm, CommExt};
use iolab_core::LatencyHistogram;
use iolab_core::result::{CpuUsage, OpCount, OpKind, PhaseResult, RankSummary};
use iolab_core::rng::{Permutation, Rng, mix};
use iolab_core::spec::{LoaderKind, ShuffleKind, TrainConfig};
use iolab_core::train::{AcceleratorEpoch, EpochFigures, RunFigures, StepTimes};
use iolab_core::units::Nanos;
use serde::{Deserialize, Serialize};

use crate::train::dataset::Dataset;
use crate::train::loader::{self, Assignment, ReadCounters, ReaderShared};
use crate::train::{TrainError, normal, whole_phase};

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
struct AccReport {
    epoch: AcceleratorEpoch,
    reads_hist: Vec<u8>,
    load_hist: Vec<u8>,
    error: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct RankReport {
    host: String,
    accs: Vec<AccReport>,
    cpu_user: u64,
    cpu_system: u64,
    elapsed: u64,
}

/// DLIO's sample order for an epoch under the PyTorch sampler, and this accelerator's
/// batches of file indices.
fn indexed_assignment(cfg: &TrainConfig, epoch: u32, global: u64, total: u64) -> Assignment {
    let samples = cfg.total_samples();
    let per_acc = samples / total;
    let perm = match cfg.sample_shuffle {
        ShuffleKind::Off => None,
        ShuffleKind::Seed => Some(Permutation::new(
            samples,
            mix(&[cfg.seed, u64::from(epoch)]),
        )),
        ShuffleKind::Random => Some(Permutation::new(
            samples,
            mix(&[cfg.seed, u64::from(epoch), random_seed()]),
        )),
    };
    let start = global * per_acc;
    let steps = cfg.steps_per_epoch(total) as usize;
    let mut batches = Vec::with_capacity(steps);
    let mut cur = Vec::with_capacity(cfg.batch_size as usize);
    for i in start..start + per_acc {
        let s = perm.as_ref().map_or(i, |p| p.get(i));
        cur.push((s / cfg.samples_per_file) as usize);
        if cur.len() as u64 == cfg.batch_size {
            batches.push(std::mem::take(&mut cur));
            if batches.len() == steps {
                break;
            }
        }
    }
    Assignment::Indexed { batches }
}

fn random_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ u64::from(std::process::id())
}

/// The TensorFlow reader's files for this accelerator: the list shuffled once by the
/// seed (DLIO shuffles it before building the dataset), then dealt round-robin.
fn files_assignment(cfg: &TrainConfig, global: u64, total: u64, order: &[usize]) -> Assignment {
    let files: Vec<usize> = if cfg.files >= total {
        order
            .iter()
            .enumerate()
            .filter(|(i, _)| *i as u64 % total == global)
            .map(|(_, f)| *f)
            .collect()
    } else {
        // Fewer files than accelerators: every accelerator reads every file (tf.data
        // shards the records then), keeping its share of the samples.
        order.to_vec()
    };
    Assignment::Files {
        files,
        samples: cfg.samples_per_file,
    }
}

fn file_order(cfg: &TrainConfig) -> Vec<usize> {
    let n = cfg.files;
    match cfg.file_shuffle {
        ShuffleKind::Off => (0..n as usize).collect(),
        s => {
            let seed = if s == ShuffleKind::Seed {
                mix(&[cfg.seed, 1])
            } else {
                random_seed()
            };
            let p = Permutation::new(n, seed);
            (0..n).map(|i| p.get(i) as usize).collect()
        }
    }
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

fn sleep_compute(cfg: &TrainConfig, rng: &mut Rng) -> f64 {
    let c = normal(rng, cfg.computation_time, cfg.computation_time_stdev).max(0.0);
    if c > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(c));
    }
    c
}

struct AccOut {
    epoch: AcceleratorEpoch,
    reads: LatencyHistogram,
    loads: LatencyHistogram,
    error: Option<String>,
}

#[allow(clippy::too_many_arguments)]
fn accelerator(
    cfg: &TrainConfig,
    files: &[PathBuf],
    assignment: Assignment,
    sync: &StepSync,
    live: &AccLive,
    counters: &ReadCounters,
    seed: u64,
) -> AccOut {
    let hist = Mutex::new(LatencyHistogram::new());
    let stop_readers = AtomicBool::new(false);
    let mut loads = LatencyHistogram::new();
    let mut steps: Vec<StepTimes> = Vec::new();
    let mut error = None;
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    let mut elapsed = 0.0;
    std::thread::scope(|s| {
        let shared = Arc::new(ReaderShared {
            cfg,
            files,
            counters,
            stop: &stop_readers,
            hist: &hist,
        });
        let mut batches = match loader::start(s, shared, assignment) {
            Ok(b) => Some(b),
            Err(e) => {
                error = Some(e.to_string());
                sync.failed.store(true, Ordering::Relaxed);
                None
            }
        };
        let mut t0 = Instant::now();
        loop {
            if error.is_none()
                && let Some(b) = batches.as_mut()
            {
                match b.next_batch() {
                    Some(Ok(batch)) => {
                        let load = t0.elapsed().as_secs_f64();
                        loads.record((load * 1e9) as u64);
                        let compute = sleep_compute(cfg, &mut rng);
                        let proc = t0.elapsed().as_secs_f64();
                        if !steps.is_empty() {
                            live.compute_ns
                                .fetch_add((compute * 1e9) as u64, Ordering::Relaxed);
                        }
                        steps.push(StepTimes {
                            load,
                            proc,
                            compute,
                        });
                        live.samples.fetch_add(batch.samples, Ordering::Relaxed);
                        let first = steps[0].proc;
                        live.time_ns.store(
                            ((started.elapsed().as_secs_f64() - first).max(0.0) * 1e9) as u64,
                            Ordering::Relaxed,
                        );
                    }
                    Some(Err(e)) => {
                        error = Some(e.to_string());
                        sync.failed.store(true, Ordering::Relaxed);
                    }
                    None => {
                        error = Some("the readers ran out of samples before the epoch's last step (a file shorter than the dataset says?)".into());
                        sync.failed.store(true, Ordering::Relaxed);
                    }
                }
            }
            sync.arrive.wait();
            sync.depart.wait();
            if sync.stop.load(Ordering::Acquire) {
                break;
            }
            t0 = Instant::now();
        }
        elapsed = started.elapsed().as_secs_f64();
        stop_readers.store(true, Ordering::Relaxed);
        drop(batches);
    });
    let mut epoch = AcceleratorEpoch::from_steps(&steps, elapsed, cfg.batch_size);
    epoch.bytes = counters.bytes.load(Ordering::Relaxed);
    epoch.reads = counters.reads.load(Ordering::Relaxed);
    AccOut {
        epoch,
        reads: hist.into_inner().unwrap_or_default(),
        loads,
        error,
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
        let started_at_ms = now_ms();
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

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
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
                let files = &dataset.files;
                std::thread::Builder::new()
                    .name(format!("iolab-acc{i}"))
                    .spawn_scoped(s, move || {
                        accelerator(cfg, files, asg, sync, live, counters, seed)
                    })
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
        accs: outs
            .into_iter()
            .map(|o| AccReport {
                epoch: o.epoch,
                reads_hist: o.reads.to_bytes().unwrap_or_default(),
                load_hist: o.loads.to_bytes().unwrap_or_default(),
                error: o.error,
            })
            .collect(),
        cpu_user: u.0 - cpu0.0.0,
        cpu_system: sy.0 - cpu0.1.0,
        elapsed: started.elapsed().as_nanos() as u64,
    };
    Ok((report, interrupted))
}

/// Rank 0's epoch figures and the phase stored for it.
fn epoch_phase(
    cfg: &TrainConfig,
    epoch: u32,
    reports: &[RankReport],
    started_at_ms: i64,
    interrupted: bool,
) -> (EpochFigures, PhaseResult) {
    let accs: Vec<AcceleratorEpoch> = reports
        .iter()
        .flat_map(|r| r.accs.iter().map(|a| a.epoch))
        .collect();
    let fig = EpochFigures::of(epoch, &accs, cfg.record_length);
    let mut reads = LatencyHistogram::new();
    let mut loads = LatencyHistogram::new();
    for a in reports.iter().flat_map(|r| r.accs.iter()) {
        if let Ok(h) = LatencyHistogram::from_bytes(&a.reads_hist) {
            reads.merge(&h);
        }
        if let Ok(h) = LatencyHistogram::from_bytes(&a.load_hist) {
            loads.merge(&h);
        }
    }
    let elapsed = Nanos((fig.elapsed * 1e9) as u64);
    let cpu = CpuUsage {
        user: Nanos(reports.iter().map(|r| r.cpu_user).sum()),
        system: Nanos(reports.iter().map(|r| r.cpu_system).sum()),
        wall: elapsed,
        cpus: iolab_backend::process::allowed_cpus().len() as u32,
    };
    let per_rank = reports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut ops = std::collections::BTreeMap::new();
            ops.insert(
                OpKind::Read,
                OpCount {
                    ops: r.accs.iter().map(|a| a.epoch.reads).sum(),
                    bytes: r.accs.iter().map(|a| a.epoch.bytes).sum(),
                },
            );
            RankSummary {
                rank: i as u32,
                host: r.host.clone(),
                threads: r.accs.len() as u32 * cfg.reader_threads(),
                elapsed: Nanos(r.elapsed),
                first_done: Nanos(r.elapsed),
                ops,
                cpu: CpuUsage {
                    user: Nanos(r.cpu_user),
                    system: Nanos(r.cpu_system),
                    wall: Nanos(r.elapsed),
                    cpus: cpu.cpus,
                },
                errors: r.accs.iter().filter(|a| a.error.is_some()).count() as u64,
                cpu_set: Vec::new(),
            }
        })
        .collect();
    let mut extra = std::collections::BTreeMap::new();
    extra.insert("au_percent".into(), fig.au_percent);
    extra.insert("au_min_percent".into(), fig.au_min_percent);
    extra.insert("au_threshold_percent".into(), cfg.au_threshold);
    extra.insert("samples_per_sec".into(), fig.samples_per_sec);
    extra.insert("dlio_mib_per_sec".into(), fig.dlio_mib_per_sec);
    extra.insert("accelerators".into(), accs.len() as f64);
    extra.insert("steps".into(), fig.steps as f64);
    extra.insert("samples".into(), fig.samples as f64);
    extra.insert("load_mean_s".into(), fig.load_mean);
    extra.insert(
        "first_step_mean_s".into(),
        accs.iter().map(|a| a.first_proc).sum::<f64>() / accs.len().max(1) as f64,
    );
    extra.insert("compute_mean_s".into(), fig.compute_mean);
    extra.insert("load_p50_s".into(), loads.percentile(50.0).as_secs_f64());
    extra.insert("load_p99_s".into(), loads.percentile(99.0).as_secs_f64());
    extra.insert(
        "cpu_ns_per_sample".into(),
        if fig.samples > 0 {
            (cpu.user.0 + cpu.system.0) as f64 / fig.samples as f64
        } else {
            0.0
        },
    );
    let mut params = std::collections::BTreeMap::new();
    params.insert("epoch".into(), epoch.to_string());
    params.insert("accelerators".into(), accs.len().to_string());
    params.insert("batch_size".into(), cfg.batch_size.to_string());
    params.insert("read_threads".into(), cfg.read_threads.to_string());
    params.insert("format".into(), cfg.format.extension().to_string());
    let count = OpCount {
        ops: fig.reads,
        bytes: fig.bytes,
    };
    let phase = PhaseResult {
        params,
        cpu,
        per_rank,
        error_count: reports
            .iter()
            .flat_map(|r| r.accs.iter())
            .filter(|a| a.error.is_some())
            .count() as u64,
        extra,
        interrupted,
        ..whole_phase(
            format!("train-epoch-{epoch}"),
            OpKind::Read,
            count,
            elapsed,
            reads,
            serde_json::to_value(cfg).unwrap_or_default(),
            started_at_ms,
            (
                reports.len() as u32,
                accs.len() as u32 * cfg.reader_threads(),
            ),
        )
    };
    (fig, phase)
}
