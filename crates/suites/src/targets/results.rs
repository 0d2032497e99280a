//! From a finished targets phase to results: a `PhaseResult` per target ("target 19",
//! params id/node/path, `extra` with its throughput, distance from the median and flags)
//! and a summary phase whose `extra` holds minimum, maximum, average, aggregate, median
//! and MAD, and whose warnings carry the flags in words, so the store keeps all of it.

use std::collections::BTreeMap;

use iolab_comm::Comm;
use iolab_core::result::{OpKind, PhaseKind, PhaseResult};
use iolab_core::spec::{DataSpec, TargetsSpec};

use super::analysis::{TargetAnalysis, TargetFigure, analyze, flag_lines};
use super::assign::AssignedTarget;
use super::prepare::TargetSet;
use super::run::TargetsPhase;
use super::units::{UnitRow, strip, summary_phase, throughput_of, unit_phase};
use iolab_engine::PhaseMeta;
use iolab_engine::runner::PhaseRun;
use iolab_engine::runner::assemble;
use iolab_engine::runner::params_of;

/// How the targets ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    AllAtOnce,
    OneAtATime,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::AllAtOnce => "all-at-once",
            Mode::OneAtATime => "one-at-a-time",
        }
    }
}

/// Everything a finished phase is made of.
pub(crate) struct Finished<'a> {
    pub set: &'a TargetSet,
    pub spec: &'a TargetsSpec,
    pub data: &'a DataSpec,
    pub mode: Mode,
    pub runs: &'a [PhaseRun],
    pub rows: &'a [UnitRow],
    pub warnings: Vec<String>,
}

fn target_meta(t: &AssignedTarget, data: &DataSpec, mode: Mode) -> PhaseMeta {
    let mut params = params_of(data, 1);
    params.remove("ranks");
    params.insert("id".into(), t.entry.id.clone());
    params.insert("node".into(), t.entry.node.clone());
    params.insert("host".into(), t.host.clone());
    params.insert("path".into(), t.entry.path.display().to_string());
    params.insert("rank".into(), t.rank.to_string());
    params.insert("mode".into(), mode.name().into());
    if let Some(r) = t.entry.rated {
        params.insert("rated".into(), format!("{} {}", r.value, r.unit.name()));
    }
    PhaseMeta {
        name: format!("target {}", t.entry.id),
        kind: Some(PhaseKind::Data),
        params,
        repetition: 0,
        spec: serde_json::to_value(data).unwrap_or_default(),
        warnings: Vec::new(),
    }
}

/// The summary of targets run one after another: their times add up.
fn sequence_summary(meta: PhaseMeta, runs: &[PhaseRun], ranks: u32) -> PhaseResult {
    let empty = PhaseRun::from_outcomes(
        Vec::new(),
        runs.iter().any(|r| r.interrupted),
        runs.first().map_or(0, |r| r.started_at_ms),
        None,
    );
    let mut p = strip(assemble(meta, &empty));
    p.ranks = ranks;
    for run in runs {
        let elapsed = run
            .outcomes
            .iter()
            .map(|o| o.elapsed)
            .max()
            .unwrap_or_default();
        p.elapsed = p.elapsed + elapsed;
        p.workers += run.outcomes.iter().map(|o| o.threads).sum::<u32>();
        for o in &run.outcomes {
            p.cpu.user = p.cpu.user + o.cpu.user;
            p.cpu.system = p.cpu.system + o.cpu.system;
        }
    }
    p.cpu.wall = p.elapsed;
    p.first_done = p.elapsed;
    p
}

pub(crate) fn finish_phase(comm: &dyn Comm, f: Finished<'_>) -> TargetsPhase {
    let interrupted = f.runs.iter().any(|r| r.interrupted);
    let started = f.runs.first().map_or(0, |r| r.started_at_ms);
    let mut targets: Vec<PhaseResult> = f
        .rows
        .iter()
        .map(|r| {
            let t = &f.set.all[r.unit as usize];
            unit_phase(target_meta(t, f.data, f.mode), r, interrupted, started)
        })
        .collect();
    let figures: Vec<TargetFigure> = f
        .rows
        .iter()
        .zip(&targets)
        .map(|(r, p)| {
            let t = &f.set.all[r.unit as usize];
            let (throughput, iops) = throughput_of(p);
            TargetFigure {
                id: t.entry.id.clone(),
                // The host the target was assigned to, so that "vm", "vm.example.org"
                // and a target on every host are one machine, flagged as one node.
                node: t.host.clone(),
                throughput,
                iops,
                service: None,
                rated: t.entry.rated,
            }
        })
        .collect();
    let analysis = analyze(&figures, f.spec.threshold);
    let mut params = params_of(f.data, comm.size());
    params.insert("mode".into(), f.mode.name().into());
    params.insert("targets".into(), f.set.all.len().to_string());
    let meta = PhaseMeta {
        name: f.data.name(),
        kind: Some(PhaseKind::Data),
        params,
        repetition: 0,
        spec: serde_json::to_value(f.data).unwrap_or_default(),
        warnings: f.warnings,
    };
    let mut summary = match (f.mode, f.runs) {
        (Mode::AllAtOnce, [run]) => summary_phase(meta, run, f.rows),
        _ => sequence_summary(meta, f.runs, comm.size()),
    };
    if let Some(a) = &analysis {
        annotate(&mut summary, &mut targets, &figures, a);
    }
    // Beside the sum of the targets' own rates: every byte over the wall time, for
    // targets that ran together.
    if f.mode == Mode::AllAtOnce {
        let bytes: u64 = targets
            .iter()
            .flat_map(|t| t.ops.iter())
            .filter(|o| matches!(o.op, OpKind::Read | OpKind::Write | OpKind::Transfer))
            .map(|o| o.bytes.get())
            .sum();
        let secs = summary.elapsed.as_secs_f64();
        if bytes > 0 && secs > 0.0 {
            summary.extra.insert("total_bytes".into(), bytes as f64);
            summary
                .extra
                .insert("wall_bytes_per_sec".into(), bytes as f64 / secs);
        }
    }
    TargetsPhase {
        rw: f.data.rw,
        summary,
        targets,
        analysis,
    }
}

/// Puts the statistics and flags where the store keeps them.
fn annotate(
    summary: &mut PhaseResult,
    targets: &mut [PhaseResult],
    figures: &[TargetFigure],
    a: &TargetAnalysis,
) {
    for ((p, fig), v) in targets.iter_mut().zip(figures).zip(&a.targets) {
        let x = &mut p.extra;
        x.insert("bytes_per_sec".into(), fig.throughput);
        x.insert("iops".into(), fig.iops);
        x.insert("vs_median_percent".into(), v.vs_median_percent);
        x.insert("slow".into(), f64::from(u8::from(v.slow)));
        x.insert("node_slow".into(), f64::from(u8::from(v.node_slow)));
        if let Some(pct) = v.percent_of_rated {
            x.insert("percent_of_rated".into(), pct);
        }
    }
    summary.extra.extend(summary_extra(a));
    summary.params.insert("min_target".into(), a.min.id.clone());
    summary.params.insert("min_node".into(), a.min.node.clone());
    summary.params.insert("max_target".into(), a.max.id.clone());
    summary.params.insert("max_node".into(), a.max.node.clone());
    summary.warnings.extend(flag_lines(a));
    summary.warnings.extend(a.notes.iter().cloned());
}

/// The figures of a whole set of targets, by name (throughputs in bytes per second).
pub fn summary_extra(a: &TargetAnalysis) -> BTreeMap<String, f64> {
    let mut x = BTreeMap::new();
    x.insert("targets".into(), a.count as f64);
    x.insert("min_bytes_per_sec".into(), a.min.throughput);
    x.insert("max_bytes_per_sec".into(), a.max.throughput);
    x.insert("average_bytes_per_sec".into(), a.average);
    x.insert("aggregate_bytes_per_sec".into(), a.aggregate);
    x.insert("median_bytes_per_sec".into(), a.median);
    x.insert("mad_bytes_per_sec".into(), a.mad);
    x.insert("threshold_percent".into(), a.threshold_percent);
    x.insert("slow_targets".into(), a.slow_targets.len() as f64);
    x.insert("slow_nodes".into(), a.slow_nodes.len() as f64);
    if let Some(t) = &a.theoretical {
        x.insert("percent_of_rated".into(), t.percent);
    }
    x
}
