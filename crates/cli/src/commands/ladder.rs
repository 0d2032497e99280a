//! `iolab ladder`: steps the load up (queue depth, threads, or an offered rate) until a
//! latency objective breaks, and reports the IOPS-vs-latency curve, its knee and the
//! highest load that met the objective (S3: the useful figure is the highest IOPS at an
//! acceptable latency). Each step is a phase, stored like any study.

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use iolab_comm::CommExt;
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::{BackendKind, DataSpec, TargetSpec};
use iolab_core::units::{Nanos, TimeSpan};
use iolab_engine::{DataOptions, run_data};
use iolab_engine::{EngineError, MonotonicClock, prepare_target};
use iolab_suites::ladder::{
    Ladder, LoadAxis, Slo, climb_axis, doubling, mark, op_latencies, step_figures,
};

use crate::args::OutputArgs;
use crate::commands::finish::{abandon, cleanup, conclude, conclude_after_report};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

/// The highest --max: the deepest queue and the most threads per rank a run takes.
const MAX_STEP: u64 = 4096;

/// What the ladder steps up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Axis {
    /// I/Os in flight per thread: 1, 2, 4, ... (io_uring).
    QueueDepth,
    /// Worker threads: 1, 2, 4, ...
    Threads,
    /// An offered rate: 10%, 20%, ... 100% of what an unthrottled run reaches.
    Rate,
}

#[derive(Args, Debug)]
pub struct LadderArgs {
    /// The latency objective: p50|p90|p99|p99.9|p99.99|mean <= a duration.
    #[arg(long, value_name = "OBJECTIVE", default_value = "p99<=1ms")]
    pub slo: String,

    /// What to step up.
    #[arg(long, value_enum, default_value_t = Axis::QueueDepth)]
    pub axis: Axis,

    /// The highest queue depth or thread count to try (at most 4096).
    #[arg(long, default_value_t = 256)]
    pub max: u64,

    /// How long each step runs.
    #[arg(long, default_value = "10s")]
    pub step_time: TimeSpan,

    #[command(flatten)]
    pub target: TargetSpec,

    #[command(flatten)]
    pub spec: DataSpec,

    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn ladder(mut args: LadderArgs) -> Result<u8> {
    let slo: Slo = args
        .slo
        .parse()
        .map_err(|e: String| anyhow::anyhow!("--slo: {e}"))?;
    if args.axis == Axis::QueueDepth
        && matches!(args.spec.backend, BackendKind::Psync | BackendKind::Sync)
    {
        // psync keeps one I/O in flight: a queue-depth ladder needs io_uring.
        args.spec.backend = BackendKind::Uring;
    }
    // The ladder's last step runs at --max: above what a run takes, it was cut to 4096
    // without a word.
    let limit = match args.axis {
        Axis::QueueDepth => Some("the deepest --queue-depth"),
        Axis::Threads => Some("the most --threads per rank"),
        Axis::Rate => None,
    };
    if let Some(what) = limit {
        if args.max == 0 {
            bail!("--max: must be at least 1");
        }
        if args.max > MAX_STEP {
            bail!(
                "--max: {} is more than {MAX_STEP}, {what} iolab supports",
                args.max
            );
        }
    }
    args.spec.runtime = Some(args.spec.runtime.unwrap_or(args.step_time));
    args.spec.validate()?;
    Runtime::with(|rt| ladder_in(rt, args, slo))
}

fn ladder_in(rt: &Runtime, args: LadderArgs, slo: Slo) -> Result<u8> {
    rt.agree(args.output.prepare(rt))?;
    let writes = args.spec.writes_target();
    let target = prepare_target(rt.comm.as_ref(), &args.target, args.spec.backend, writes)?;
    // Every step must have room for an aligned I/O: the most threads one takes.
    let threads = match args.axis {
        Axis::Threads => doubling(args.max).last().map_or(1, |t| *t as u32),
        _ => args.spec.threads,
    };
    let target =
        crate::commands::run::agree_block_align(rt, &args.spec, threads, target, args.target.keep)?;
    let mut sink = RunSink::start(
        rt,
        &args.output.store,
        "ladder",
        serde_json::json!({ "spec": args.spec, "slo": args.slo, "axis": format!("{:?}", args.axis), "max": args.max }),
        crate::commands::run::describe(&args.target),
        args.target.dir.as_deref(),
        args.output.label.clone(),
    );
    plan_live(&args);
    let watch = Watch::new(&args.output, &sink, args.target.device.as_deref());
    let progress = &watch.progress;
    let env = watch.env(rt);
    let mut phases: Vec<PhaseResult> = Vec::new();
    let mut step = |spec: &DataSpec| -> Result<(f64, Option<Nanos>), EngineError> {
        if rt.interrupted() {
            return Err(EngineError::Interrupted);
        }
        let opts = DataOptions {
            name: Some("ladder".into()),
            ..DataOptions::default()
        };
        let out = run_data(&env, &MonotonicClock, spec, &target, &opts)?;
        let phase = out
            .phases
            .into_iter()
            .next()
            .expect("a data run has its phase");
        let (iops, latency) = step_figures(&phase, &slo);
        let latency = latency.map(|l| l.0);
        // Only rank 0 holds every rank's figures: its verdict decides the next step on
        // every rank, so that all ranks climb alike.
        let (iops, latency) = rt
            .comm
            .broadcast(0, &(iops, latency))
            .map_err(|e| EngineError::Setup(e.to_string()))?;
        progress.finish();
        // The live page counts each step as it ends; the run keeps them all at the end
        // (with the ladder's verdicts).
        if let Some(live) = crate::live::current() {
            live.phase_done(&phase);
        }
        phases.push(phase);
        Ok((iops, latency.map(Nanos)))
    };
    let result = climb_axis(&args.spec, args.axis.into(), args.max, &slo, &mut step);
    progress.finish();
    let cleaned = cleanup(rt.comm.as_ref(), target, &[], args.target.keep);
    let latencies = keep_steps(&mut sink, phases, &result, args.axis, &slo);
    let ladder = match result {
        Ok(l) => l,
        Err(EngineError::Interrupted) => return conclude(rt, sink, &args.output),
        Err(e) => return Err(abandon(sink, e)),
    };
    cleaned?;
    if rt.is_root() && !args.output.quiet {
        print!(
            "{}",
            iolab_report::render_ladder(&ladder, &slo, args.axis.into(), &latencies)
        );
        for w in warned_once(&sink.record.phases) {
            println!("warning: {w}");
        }
    }
    conclude_after_report(rt, sink, &args.output)
}

/// The live display's plan: the most steps the ladder may take, each a step's time (it
/// stops at the first step that misses the objective, so the ETA is an upper bound
/// until then).
fn plan_live(args: &LadderArgs) {
    let most = match args.axis {
        Axis::QueueDepth | Axis::Threads => doubling(args.max).len(),
        Axis::Rate => 11,
    };
    let step_secs = args.spec.runtime.map(|r| r.as_secs_f64());
    crate::live::plan((0..most).map(|_| ("ladder".to_string(), step_secs)));
}

/// Keeps the phases with the ladder's verdicts and returns each step's latencies by
/// operation. A rate ladder's first phase is the unthrottled probe, not a step.
fn keep_steps(
    sink: &mut RunSink,
    phases: Vec<PhaseResult>,
    result: &Result<Ladder, EngineError>,
    axis: Axis,
    slo: &Slo,
) -> Vec<Vec<(OpKind, Nanos)>> {
    let first_step = usize::from(axis == Axis::Rate);
    let latencies = phases
        .iter()
        .skip(first_step)
        .map(|p| op_latencies(p, slo))
        .collect();
    for (i, mut p) in phases.into_iter().enumerate() {
        if let (Ok(l), Some(step)) = (result, i.checked_sub(first_step)) {
            mark(&mut p, l, step);
        }
        sink.keep(p);
    }
    latencies
}

/// What the steps warned of (page cache, saturated CPU), once each, sorted.
fn warned_once(phases: &[PhaseResult]) -> Vec<&String> {
    let mut warned: Vec<&String> = phases.iter().flat_map(|p| p.warnings.iter()).collect();
    warned.sort();
    warned.dedup();
    warned
}

/// The suites' axis of the one `--axis` names.
impl From<Axis> for LoadAxis {
    fn from(a: Axis) -> LoadAxis {
        match a {
            Axis::QueueDepth => LoadAxis::QueueDepth,
            Axis::Threads => LoadAxis::Threads,
            Axis::Rate => LoadAxis::Rate,
        }
    }
}
