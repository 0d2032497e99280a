//! `iolab ladder`: steps the load up (queue depth, threads, or an offered rate) until a
//! latency objective breaks, and reports the IOPS-vs-latency curve, its knee and the
//! highest load that met the objective (S3: the useful figure is the highest IOPS at an
//! acceptable latency). Each step is a phase, stored like any study.

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use iolab_core::spec::{BackendKind, DataSpec, TargetSpec};
use iolab_core::units::TimeSpan;
use iolab_engine::{EngineError, MonotonicClock, PreparedTarget, prepare_target};
use iolab_suites::ladder::{LadderPlan, LoadAxis, Slo, doubling, ladder_steps, run_ladder};

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
    let target = prepare(rt, &args)?;
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "ladder",
        serde_json::json!({ "spec": args.spec, "slo": args.slo, "axis": format!("{:?}", args.axis), "max": args.max }),
        crate::commands::run::describe(&args.target),
        args.target.dir.as_deref(),
    );
    plan_live(&args);
    let watch = Watch::new(&args.output, &sink, args.target.device.as_deref());
    let progress = &watch.progress;
    let env = watch.env(rt);
    let plan = LadderPlan {
        spec: &args.spec,
        axis: args.axis.into(),
        max: args.max,
        slo: &slo,
        target: &target,
    };
    let run = run_ladder(&env, &MonotonicClock, &plan, &mut |phase| {
        progress.finish();
        // The live page counts each step as it ends; the run keeps them all at the end
        // (with the ladder's verdicts).
        if let Some(live) = crate::live::current() {
            live.phase_done(phase);
        }
    });
    progress.finish();
    let cleaned = cleanup(rt.comm.as_ref(), target, &[], args.target.keep);
    let steps = ladder_steps(run, args.axis.into(), &slo);
    for p in steps.phases {
        sink.keep(p);
    }
    let latencies = steps.latencies;
    let ladder = match steps.result {
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
        print!("{}", iolab_report::ladder_warnings(&sink.record.phases));
    }
    conclude_after_report(rt, sink, &args.output)
}

/// The ladder's target, once every rank agrees that every step has room for an aligned
/// I/O (the most threads one takes).
fn prepare(rt: &Runtime, args: &LadderArgs) -> Result<PreparedTarget> {
    let writes = args.spec.writes_target();
    let target = prepare_target(rt.comm.as_ref(), &args.target, args.spec.backend, writes)?;
    let threads = match args.axis {
        Axis::Threads => doubling(args.max).last().map_or(1, |t| *t as u32),
        _ => args.spec.threads,
    };
    crate::commands::run::agree_block_align(rt, &args.spec, threads, target, args.target.keep)
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
