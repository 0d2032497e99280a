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
        print!("{}", render(&ladder, &slo, args.axis, &latencies));
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

/// "p99" of an objective.
fn figure_name(slo: &Slo) -> String {
    match slo.percentile {
        None => "mean".to_string(),
        Some(p) => format!("p{p}"),
    }
}

/// The operation a step was judged by: its slowest.
fn judged(latencies: &[(OpKind, Nanos)]) -> Option<OpKind> {
    latencies.iter().max_by_key(|(_, l)| *l).map(|(op, _)| *op)
}

/// "read p99 210 µs, write p99 6.10 ms" for step `i`.
fn latency_words(latencies: &[Vec<(OpKind, Nanos)>], i: usize, figure: &str) -> String {
    latencies
        .get(i)
        .map(|ls| {
            ls.iter()
                .map(|(op, l)| format!("{} {figure} {}", op.name(), l.human()))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// The steps with each operation's latency in a column of its own ("read p99", "write
/// p99") and the verdict naming the operation it judged, then the highest load within
/// the objective and the knee.
fn render(l: &Ladder, slo: &Slo, axis: Axis, latencies: &[Vec<(OpKind, Nanos)>]) -> String {
    use std::fmt::Write as _;
    let name = match axis {
        Axis::QueueDepth => "QD",
        Axis::Threads => "threads",
        Axis::Rate => "offered IOPS",
    };
    let figure = figure_name(slo);
    let mut ops: Vec<OpKind> = latencies.iter().flatten().map(|(op, _)| *op).collect();
    ops.sort();
    ops.dedup();
    let mut out = format!("\nladder: objective {slo}");
    if ops.len() > 1 {
        let _ = write!(
            out,
            " (judged on the slowest operation: each step's worst {figure})"
        );
    }
    let _ = write!(
        out,
        "\n{}",
        steps_table(l, (name, &figure), &ops, latencies).to_text()
    );
    out.push_str(&verdicts(l, (name, &figure), latencies));
    out
}

/// One row per step: load, IOPS, each operation's latency, and the verdict.
fn steps_table(
    l: &Ladder,
    (name, figure): (&str, &str),
    ops: &[OpKind],
    latencies: &[Vec<(OpKind, Nanos)>],
) -> iolab_report::table::Table {
    let mut headers = vec![format!(">{name}"), ">IOPS".to_string()];
    headers.extend(ops.iter().map(|op| format!(">{} {figure}", op.name())));
    headers.push("meets".to_string());
    let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = iolab_report::table::Table::new(&refs);
    for (i, s) in l.steps.iter().enumerate() {
        let step = latencies.get(i).map(Vec::as_slice).unwrap_or_default();
        let mut row = vec![
            s.load.to_string(),
            iolab_core::units::OpsPerSec(s.iops).human(),
        ];
        for op in ops {
            row.push(
                step.iter()
                    .find(|(o, _)| o == op)
                    .map(|(_, l)| l.human())
                    .unwrap_or_else(|| "—".to_string()),
            );
        }
        // The verdict names the operation whose latency decided it.
        let by = judged(step)
            .filter(|_| ops.len() > 1)
            .map(|op| format!(" ({} {figure})", op.name()))
            .unwrap_or_default();
        let tag = if l.knee == Some(i) { "  <- knee" } else { "" };
        let verdict = match s.latency {
            None => "no (no operations completed)".to_string(),
            Some(_) => format!("{}{by}{tag}", if s.meets { "yes" } else { "no" }),
        };
        row.push(verdict);
        t.push(row);
    }
    t
}

/// The highest load within the objective, the most IOPS within it, and the knee.
fn verdicts(
    l: &Ladder,
    (name, figure): (&str, &str),
    latencies: &[Vec<(OpKind, Nanos)>],
) -> String {
    use std::fmt::Write as _;
    let iops = |v: f64| iolab_core::units::OpsPerSec(v).human();
    let mut out = String::new();
    match (l.highest_load, l.peak) {
        (Some(h), Some(p)) => {
            let (hs, ps) = (&l.steps[h], &l.steps[p]);
            let _ = writeln!(
                out,
                "highest load within the objective: {name} {} at {} IOPS ({})",
                hs.load,
                iops(hs.iops),
                latency_words(latencies, h, figure)
            );
            let _ = writeln!(
                out,
                "most IOPS within the objective: {} IOPS, first at {name} {} ({})",
                iops(ps.iops),
                ps.load,
                latency_words(latencies, p, figure)
            );
        }
        _ if l.steps.first().is_some_and(|s| s.latency.is_none()) => {
            let _ = writeln!(
                out,
                "no load met the objective: the lightest step ({name} {}) completed no operations",
                l.steps[0].load
            );
        }
        _ => {
            let _ = writeln!(
                out,
                "no load met the objective: even the lightest step took {}",
                latency_words(latencies, 0, figure)
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
                iops(l.steps[k].iops),
                latency_words(latencies, k, figure)
            );
        }
        None => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_suites::ladder::Step;

    /// A mixed workload whose writes are 30 times slower at p99 than its reads: the table
    /// gives each its own column and the verdict names the writes.
    #[test]
    fn a_mixed_ladder_labels_read_and_write_latency_and_says_which_it_judged() {
        let step = |load, iops, meets| Step {
            load,
            iops,
            latency: Some(Nanos::from_millis(if meets { 1 } else { 6 })),
            meets,
        };
        let l = Ladder {
            steps: vec![step(1, 10_000.0, true), step(2, 12_000.0, false)],
            highest_load: Some(0),
            peak: Some(0),
            knee: None,
        };
        let latencies = vec![
            vec![
                (OpKind::Read, Nanos::from_micros(33)),
                (OpKind::Write, Nanos::from_millis(1)),
            ],
            vec![
                (OpKind::Read, Nanos::from_micros(200)),
                (OpKind::Write, Nanos::from_millis(6)),
            ],
        ];
        let slo: Slo = "p99<=1ms".parse().unwrap();
        let text = render(&l, &slo, Axis::QueueDepth, &latencies);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            "ladder: objective p99 <= 1.00 ms (judged on the slowest operation: each step's worst p99)"
        );
        assert_eq!(lines[2], "QD   IOPS  read p99  write p99  meets");
        assert_eq!(lines[3], " 1  10.0k   33.0 µs    1.00 ms  yes (write p99)");
        assert_eq!(lines[4], " 2  12.0k    200 µs    6.00 ms  no (write p99)");
        assert_eq!(
            lines[5],
            "highest load within the objective: QD 1 at 10.0k IOPS (read p99 33.0 µs, write p99 1.00 ms)"
        );
    }

    /// A step that completed no operation has no latency: its verdict is "no" and says
    /// why (it was "yes" at 0 IOPS, judged by a latency of 0).
    #[test]
    fn a_step_with_no_completed_operation_says_so() {
        let slo: Slo = "p99<=1ms".parse().unwrap();
        let measured = vec![(OpKind::Read, Nanos::from_micros(200))];
        let l = iolab_suites::ladder::climb(&[1, 2, 4], &slo, |qd| {
            Ok::<_, ()>(if qd == 1 {
                (5_000.0, Some(Nanos::from_micros(200)))
            } else {
                (0.0, None)
            })
        })
        .unwrap();
        let text = render(&l, &slo, Axis::QueueDepth, &[measured, vec![]]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2], "QD   IOPS  read p99  meets");
        assert_eq!(lines[3], " 1  5.00k    200 µs  yes");
        assert_eq!(
            lines[4],
            " 2      0         —  no (no operations completed)"
        );
        assert_eq!(
            lines[5],
            "highest load within the objective: QD 1 at 5.00k IOPS (read p99 200 µs)"
        );
        // None at the first step.
        let l = iolab_suites::ladder::climb(&[1, 2], &slo, |_| Ok::<_, ()>((0.0, None))).unwrap();
        let text = render(&l, &slo, Axis::Threads, &[vec![]]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[3], "      1     0  no (no operations completed)");
        assert_eq!(
            lines[4],
            "no load met the objective: the lightest step (threads 1) completed no operations"
        );
    }
}
