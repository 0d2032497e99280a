//! `iolab train`: AI training's data loading, as MLPerf Storage's DLIO emulates it.
//! `datagen` writes a dataset in DLIO's layout and formats, `run` trains on one and
//! reports AU per epoch with MLPerf's validity checks, `search` finds the most
//! accelerators that keep AU at the threshold, `plan` prints what a workload resolves to.
//! This file holds the arguments and what the subcommands share.

mod datagen;
mod plan;
mod run;
mod search;

pub(crate) use run::node_memory;

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Args, Subcommand};
use iolab_core::SpecError;
use iolab_core::spec::{LoaderKind, TrainConfig, TrainSpec};
use iolab_core::units::{ByteCount, Nanos};
use iolab_engine::{Available, ranks_on_this_host};
use iolab_suites::train::{Dataset, LiveStep, TrainHooks, loader};

use crate::args::OutputArgs;
use crate::runtime::Runtime;
use crate::sink::RunSink;

#[derive(Args, Debug)]
pub struct TrainArgs {
    #[command(subcommand)]
    pub command: TrainCommand,
}

#[derive(Subcommand, Debug)]
pub enum TrainCommand {
    /// Write a dataset in DLIO's layout and format (npz, tfrecord) under --data-dir.
    Datagen(DatagenArgs),
    /// Train on a dataset: simulated accelerators read it and compute; AU per epoch.
    Run(TrainRunArgs),
    /// Find the most accelerators that keep AU at the threshold (MLPerf Storage's headline).
    Search(SearchArgs),
    /// Print what a workload resolves to (DLIO's settings, sizes, memory), without I/O.
    Plan(PlanArgs),
}

#[derive(Args, Debug)]
pub struct DatagenArgs {
    #[command(flatten)]
    pub spec: TrainSpec,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct TrainRunArgs {
    #[command(flatten)]
    pub spec: TrainSpec,
    /// Empty the page cache before the run (root; MLPerf requires it on every host).
    #[arg(long)]
    pub drop_caches: bool,
    /// Counted runs, each with a new seed (--seed, --seed + 1, ...): figures are their
    /// mean, and MLPerf wants them within 5 %.
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Warm-up runs before the counted ones (not counted, seeds before theirs).
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = clap::value_parser!(u32).range(0..=100))]
    pub warmup: u32,
    /// MLPerf Storage's run rule: --warmup 1 --runs 5 --drop-caches, with the verdict.
    #[arg(long, conflicts_with_all = ["runs", "warmup"])]
    pub mlperf: bool,
    /// Also write the result as DLIO's summary.json.
    #[arg(long, value_name = "FILE")]
    pub summary_json: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    pub spec: TrainSpec,
    /// The most accelerators per process to try.
    #[arg(long, default_value_t = 64)]
    pub max: u32,
    /// Empty the page cache before every trial (root).
    #[arg(long)]
    pub drop_caches: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(flatten)]
    pub spec: TrainSpec,
}

pub fn train(args: TrainArgs) -> Result<u8> {
    match args.command {
        TrainCommand::Datagen(a) => Runtime::with(|rt| datagen::datagen_in(rt, a)),
        TrainCommand::Run(a) => Runtime::with(|rt| run::run_in(rt, a)),
        TrainCommand::Search(a) => Runtime::with(|rt| search::search_in(rt, a)),
        TrainCommand::Plan(a) => plan::plan(a),
    }
}

fn data_dir(spec: &TrainSpec) -> Result<PathBuf, SpecError> {
    spec.data_dir.clone().ok_or_else(|| {
        SpecError::new(
            "--data-dir",
            "is required: where the dataset is (DLIO's data_folder)",
        )
    })
}

/// What one accelerator's loader holds: iolab's read buffers (each reader thread a
/// slot per read in flight, each slot its largest read: a parquet row group, a jpeg
/// file, else --transfer-size; `largest_file` the dataset's), and DLIO's (a whole file
/// per reader thread while it loads, and prefetched batches of samples).
fn memory_per_accelerator(cfg: &TrainConfig, largest_file: u64) -> (u64, u64) {
    let iolab =
        u64::from(cfg.reader_threads()).saturating_mul(loader::reader_buffers(cfg, largest_file));
    let file = cfg.record_length as u64 * cfg.samples_per_file;
    let dlio = (u64::from(cfg.read_threads) * file).saturating_add(prefetched(cfg));
    (iolab, dlio)
}

/// The samples a training job's loader holds ahead of one accelerator: prefetch x batch
/// x the mean sample size (the and MLPerf's memory figure for a reader).
/// For tf.data the parallel map's `computation_threads` batches count too (DLIO's
/// `batch().map(num_parallel_calls=computation_threads).prefetch(prefetch_size)`).
fn prefetched(cfg: &TrainConfig) -> u64 {
    (batches_ahead(cfg) as f64 * cfg.batch_size as f64 * cfg.record_length).min(u64::MAX as f64)
        as u64
}

fn batches_ahead(cfg: &TrainConfig) -> u64 {
    match cfg.loader {
        LoaderKind::Pytorch => u64::from(cfg.prefetch),
        LoaderKind::Tensorflow => u64::from(cfg.prefetch) + u64::from(cfg.computation_threads),
    }
}

/// The memory pre-flight, before anything is read: the prefetched batches a training
/// job's loader would hold for this host's accelerators (prefetch x batch x sample size
/// each), and iolab's own read buffers, against what the host can give. Either one over
/// 80 % of it is refused with the figure: iolab does not keep the samples it reads, but
/// a workload whose loader could not fit on the host is not one a host could train.
fn check_memory(
    cfg: &TrainConfig,
    dataset: &Dataset,
    ranks_on_host: u32,
) -> Result<(u64, u64), SpecError> {
    let largest = dataset.sizes.iter().copied().max().unwrap_or(0);
    let (mine, dlio) = memory_per_accelerator(cfg, largest);
    let accs = u64::from(cfg.accelerators) * u64::from(ranks_on_host.max(1));
    let need = mine.saturating_mul(accs);
    let held = prefetched(cfg).saturating_mul(accs);
    if let Some(have) = Available::read(Path::new("/")).bytes() {
        let limit = have as f64 * 0.8;
        if held as f64 > limit {
            return Err(SpecError::new(
                "--prefetch",
                format!(
                    "{accs} accelerators x prefetch {} x batch {} x {} samples: a loader holds {} on this host, more than 80% of the {} available: lower --prefetch, --batch-size or the accelerators",
                    match cfg.loader {
                        LoaderKind::Pytorch => cfg.prefetch.to_string(),
                        LoaderKind::Tensorflow => format!(
                            "{} + {} (the map's computation threads)",
                            cfg.prefetch, cfg.computation_threads
                        ),
                    },
                    cfg.batch_size,
                    ByteCount(cfg.record_length as u64).human(),
                    ByteCount(held).human(),
                    ByteCount(have).human()
                ),
            ));
        }
        if need as f64 > limit {
            return Err(SpecError::new(
                "--read-threads",
                format!(
                    "{accs} accelerators x {} reader threads x {} of read buffers each (a {} slot per read in flight) need {} on this host, more than 80% of the {} available: lower one of them or --queue-depth",
                    cfg.reader_threads(),
                    ByteCount(loader::reader_buffers(cfg, largest)).human(),
                    ByteCount(loader::read_slot(cfg, largest)).human(),
                    ByteCount(need).human(),
                    ByteCount(have).human()
                ),
            ));
        }
    }
    Ok((need, dlio.saturating_mul(accs)))
}

fn spec_json(spec: &TrainSpec, cfg: &TrainConfig) -> serde_json::Value {
    serde_json::json!({ "spec": spec, "workload": cfg })
}

fn stored_as(rt: &Runtime, sink: &RunSink, output: &OutputArgs) {
    if rt.is_root() && !output.quiet && !sink.record.id.is_empty() {
        println!("stored as {}", sink.record.id);
    }
}

fn quiet(o: &OutputArgs) -> OutputArgs {
    OutputArgs {
        quiet: true,
        ..o.clone()
    }
}

/// Everything a training run needs before it reads: the workload, the dataset, the
/// memory pre-flight. Agreed by every rank.
fn prepare(
    rt: &Runtime,
    spec: &TrainSpec,
    output: &OutputArgs,
) -> Result<(TrainConfig, Dataset, (u64, u64))> {
    let ranks_here = ranks_on_this_host(rt.comm.as_ref());
    let step = (|| -> Result<_> {
        let cfg = spec.resolve()?;
        let dir = data_dir(spec)?;
        let dataset = Dataset::open(&dir, &cfg)?;
        let mem = check_memory(&cfg, &dataset, ranks_here)?;
        output.prepare(rt)?;
        Ok((cfg, dataset, mem))
    })();
    rt.agree(step)
}

fn drop_caches(rt: &Runtime) -> bool {
    let ok = iolab_backend::files::drop_whole_page_cache().is_ok();
    rt.comm.all_ok(ok)
}

/// The live page after a step; `prefix` names the run of a repeated run ("run-2-").
fn live_step(prefix: &str, s: &LiveStep) {
    if let Some(live) = crate::live::current() {
        let secs = s.elapsed.as_secs_f64().max(1e-9);
        live.update(|st| {
            st.train = Some(crate::live::state::TrainLive {
                epoch: s.epoch,
                epochs: s.epochs,
                step: s.step,
                steps: s.steps,
                accelerators: s.accelerators,
                au_percent: s.au_percent,
                samples_per_sec: s.samples as f64 / secs,
            });
        });
        live.progress(&iolab_engine::Progress {
            phase: &format!("{prefix}train-epoch-{}", s.epoch),
            elapsed: Nanos(s.elapsed.as_nanos() as u64),
            ops: s.reads,
            bytes: s.bytes,
            workers_done: 0,
            workers: s.accelerators as u32,
            latency: &[],
            per_rank: &[],
            per_unit: &[],
            counted: &[],
        });
    }
}

/// How a run is watched: Ctrl-C, the live page after every step, the stall deadline,
/// the device and CPU probe.
fn hooks<'a>(
    rt: &'a Runtime,
    output: &OutputArgs,
    probe: Option<&'a dyn iolab_engine::PhaseProbe>,
    on_step: &'a (dyn Fn(&LiveStep) + Sync),
) -> TrainHooks<'a> {
    TrainHooks {
        interrupt: rt.interrupt,
        on_step: Some(on_step),
        stall: output.stall_timeout(),
        probe,
    }
}
