//! `iolab ladder`: steps the load up (queue depth, threads, or an offered rate) until a
//! latency objective breaks, and reports the IOPS-vs-latency curve, its knee and the
//! highest load that met the objective (S3: the useful figure is the highest IOPS at an
//! acceptable latency). Each step is a phase, stored like any study.

use anyhow::Result;
use clap::{Args, ValueEnum};
use iolab_comm::CommExt;
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::{BackendKind, DataSpec, TargetSpec};
use iolab_core::units::{Nanos, TimeSpan};
use iolab_engine::data::{DataOptions, run_data};
use iolab_engine::{EngineError, MonotonicClock, prepare_target};
use iolab_suites::ladder::{Ladder, Slo, climb, doubling};

use crate::cli::OutputArgs;
use crate::commands::finish::{abandon, cleanup, conclude};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

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

    /// The highest queue depth or thread count to try.
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
    args.spec.runtime = Some(args.spec.runtime.unwrap_or(args.step_time));
    args.spec.validate()?;
    Runtime::with(|rt| ladder_in(rt, args, slo))
}

fn ladder_in(rt: &Runtime, args: LadderArgs, slo: Slo) -> Result<u8> {
    args.output.prepare(rt)?;
    let target = prepare_target(rt.comm.as_ref(), &args.target, args.spec.backend, true)?;
    let mut sink = RunSink::start(
        rt,
        &args.output.store,
        "ladder",
        serde_json::json!({ "spec": args.spec, "slo": args.slo, "axis": format!("{:?}", args.axis), "max": args.max }),
        crate::commands::run::describe(&args.target),
        args.target.dir.as_deref(),
        args.output.label.clone(),
    );
    let watch = Watch::new(&args.output, &sink, args.target.device.as_deref());
    let progress = &watch.progress;
    let env = watch.env(rt);
    let mut phases: Vec<PhaseResult> = Vec::new();
    let mut step = |spec: &DataSpec| -> Result<(f64, Nanos), EngineError> {
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
        let iops: f64 = phase
            .ops
            .iter()
            .filter(|o| o.op != OpKind::Fsync)
            .map(|o| o.iops.get())
            .sum();
        let latency = phase
            .ops
            .iter()
            .filter(|o| o.op != OpKind::Fsync)
            .map(|o| slo.latency_of(&o.latency))
            .max()
            .unwrap_or(Nanos::ZERO);
        // Only rank 0 holds every rank's figures: its verdict decides the next step on
        // every rank, so that all ranks climb alike.
        let (iops, latency) = rt
            .comm
            .broadcast(0, &(iops, latency.0))
            .map_err(|e| EngineError::Setup(e.to_string()))?;
        progress.finish();
        phases.push(phase);
        Ok((iops, Nanos(latency)))
    };
    let result = climb_axis(&args, &slo, &mut step);
    progress.finish();
    let cleaned = cleanup(rt.comm.as_ref(), target, &[], args.target.keep);
    // A rate ladder's first phase is the unthrottled probe, not a step.
    let first_step = usize::from(args.axis == Axis::Rate);
    for (i, mut p) in phases.into_iter().enumerate() {
        if let (Ok(l), Some(step)) = (&result, i.checked_sub(first_step)) {
            mark(&mut p, l, step);
        }
        sink.phase(p);
    }
    let ladder = match result {
        Ok(l) => l,
        Err(EngineError::Interrupted) => return conclude(rt, sink, &args.output),
        Err(e) => return Err(abandon(sink, e)),
    };
    cleaned?;
    if rt.is_root() && !args.output.quiet {
        print!("{}", render(&ladder, &slo, args.axis));
        // What the steps warned of (page cache, saturated CPU), once each.
        let mut warned: Vec<&String> = sink
            .record
            .phases
            .iter()
            .flat_map(|p| p.warnings.iter())
            .collect();
        warned.sort();
        warned.dedup();
        for w in warned {
            println!("warning: {w}");
        }
    }
    let quiet = OutputArgs {
        quiet: true,
        ..args.output.clone()
    };
    if rt.is_root() && !args.output.quiet && !sink.record.id.is_empty() {
        println!("stored as {}", sink.record.id);
    }
    conclude(rt, sink, &quiet)
}

/// Runs one step's phase: its IOPS and the latency the objective is about.
type StepFn<'a> = dyn FnMut(&DataSpec) -> Result<(f64, Nanos), EngineError> + 'a;

/// Runs the ladder along the chosen axis.
fn climb_axis(args: &LadderArgs, slo: &Slo, step: &mut StepFn<'_>) -> Result<Ladder, EngineError> {
    let base = &args.spec;
    match args.axis {
        Axis::QueueDepth => climb(&doubling(args.max.min(4096)), slo, |qd| {
            let spec = DataSpec {
                queue_depth: qd as u32,
                ..base.clone()
            };
            step(&spec)
        }),
        Axis::Threads => climb(&doubling(args.max.min(4096)), slo, |t| {
            let spec = DataSpec {
                threads: t as u32,
                ..base.clone()
            };
            step(&spec)
        }),
        Axis::Rate => {
            // An unthrottled step finds the ceiling; then offer 10% ... 100% of it.
            let (max_iops, _) = step(&DataSpec {
                rate_iops: None,
                ..base.clone()
            })?;
            let rates: Vec<u64> = (1..=10)
                .map(|i| ((max_iops * i as f64 / 10.0) as u64).max(1))
                .collect();
            climb(&rates, slo, |r| {
                let spec = DataSpec {
                    rate_iops: Some(r),
                    ..base.clone()
                };
                step(&spec)
            })
        }
    }
}

/// Records the ladder's verdicts in a step's phase (so stored runs keep them).
fn mark(p: &mut PhaseResult, l: &Ladder, step_index: usize) {
    if let Some(step) = l.steps.get(step_index) {
        p.extra.insert("ladder_load".into(), step.load as f64);
        p.extra
            .insert("meets_objective".into(), step.meets as u8 as f64);
        p.extra
            .insert("objective_latency_ns".into(), step.latency.0 as f64);
        if l.knee == Some(step_index) {
            p.extra.insert("knee".into(), 1.0);
        }
    }
}

fn render(l: &Ladder, slo: &Slo, axis: Axis) -> String {
    use std::fmt::Write as _;
    let name = match axis {
        Axis::QueueDepth => "QD",
        Axis::Threads => "threads",
        Axis::Rate => "offered IOPS",
    };
    let mut out = format!(
        "\nladder: objective {slo}\n{name:>12} {:>10} {:>12}  meets\n",
        "IOPS", "latency"
    );
    for (i, s) in l.steps.iter().enumerate() {
        let tag = if l.knee == Some(i) { "  <- knee" } else { "" };
        let _ = writeln!(
            out,
            "{:>12} {:>10} {:>12}  {}{tag}",
            s.load,
            iolab_core::units::OpsPerSec(s.iops).human(),
            s.latency.human(),
            if s.meets { "yes" } else { "no" }
        );
    }
    match (l.highest_load, l.peak) {
        (Some(h), Some(p)) => {
            let (h, p) = (&l.steps[h], &l.steps[p]);
            let _ = writeln!(
                out,
                "highest load within the objective: {name} {} at {} IOPS ({})",
                h.load,
                iolab_core::units::OpsPerSec(h.iops).human(),
                h.latency.human()
            );
            let _ = writeln!(
                out,
                "most IOPS within the objective: {} IOPS, first at {name} {} ({})",
                iolab_core::units::OpsPerSec(p.iops).human(),
                p.load,
                p.latency.human()
            );
        }
        _ => {
            let _ = writeln!(
                out,
                "no load met the objective: even the lightest step took {}",
                l.steps
                    .first()
                    .map(|s| s.latency.human())
                    .unwrap_or_default()
            );
        }
    }
    match l.knee {
        Some(k) if k + 1 == l.steps.len() => {
            let _ = writeln!(
                out,
                "knee: none up to {name} {}: IOPS still grew as fast as latency; try more load",
                l.steps[k].load
            );
        }
        Some(k) => {
            let _ = writeln!(
                out,
                "knee: {name} {} ({} IOPS at {}): beyond it latency grows faster than IOPS",
                l.steps[k].load,
                iolab_core::units::OpsPerSec(l.steps[k].iops).human(),
                l.steps[k].latency.human()
            );
        }
        None => {}
    }
    out
}
