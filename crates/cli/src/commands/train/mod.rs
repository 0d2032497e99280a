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

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use iolab_core::spec::{TrainConfig, TrainSpec};
use iolab_core::units::Nanos;
use iolab_suites::train::memory::memory_per_accelerator;
use iolab_suites::train::{LiveStep, Prepared, TrainHooks};

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

/// The job ready to read ([`iolab_suites::train::prepare`]), and the output's files
/// made, agreed by every rank.
fn prepare(rt: &Runtime, spec: &TrainSpec, output: &OutputArgs) -> Result<Prepared> {
    let prepared = iolab_suites::train::prepare(rt.comm.as_ref(), spec)?;
    rt.agree(output.prepare(rt))?;
    Ok(prepared)
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
