//! From the engine's outcome of a targets phase to results: each target's phase gets
//! where it ran (params node/host/path/rank) and, in `extra`, its throughput, distance
//! from the median and flags; the summary phase's `extra` holds minimum, maximum,
//! average, aggregate, median and MAD, and its warnings carry the flags in words, so the
//! store keeps all of it.

use std::collections::BTreeMap;

use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::{DataSpec, TargetsSpec};

use super::analysis::{TargetAnalysis, TargetFigure, analyze, flag_lines};
use super::assign::AssignedTarget;
use super::prepare::TargetSet;
use iolab_core::targets::TargetsPhase;
use iolab_engine::{TargetsOutcome, UnitResult};

/// A target's phase with where it ran: its node, host, path and rank (and its rated
/// figure), beside the engine's id, mode and workload.
fn place_params(p: &mut PhaseResult, t: &AssignedTarget) {
    let params = &mut p.params;
    params.insert("node".into(), t.entry.node.clone());
    params.insert("host".into(), t.host.clone());
    params.insert("path".into(), t.entry.path.display().to_string());
    params.insert("rank".into(), t.rank.to_string());
    if let Some(r) = t.entry.rated {
        params.insert("rated".into(), format!("{} {}", r.value, r.unit.name()));
    }
}

/// The engine's outcome of one phase with the analysis of its targets.
pub(crate) fn finish_phase(
    set: &TargetSet,
    spec: &TargetsSpec,
    data: &DataSpec,
    outcome: TargetsOutcome,
) -> TargetsPhase {
    let mut summary = outcome.summary;
    let mut targets = Vec::with_capacity(outcome.targets.len());
    let mut figures = Vec::with_capacity(outcome.targets.len());
    for UnitResult { unit, mut result } in outcome.targets {
        let t = &set.all[unit as usize];
        place_params(&mut result, t);
        let (throughput, iops) = throughput_of(&result);
        figures.push(TargetFigure {
            id: t.entry.id.clone(),
            // The host the target was assigned to, so that "vm", "vm.example.org"
            // and a target on every host are one machine, flagged as one node.
            node: t.host.clone(),
            throughput,
            iops,
            service: None,
            rated: t.entry.rated,
        });
        targets.push(result);
    }
    let analysis = analyze(&figures, spec.threshold);
    if let Some(a) = &analysis {
        annotate(&mut summary, &mut targets, &figures, a);
    }
    // Beside the sum of the targets' own rates: every byte over the wall time, for
    // targets that ran together.
    if !spec.one_at_a_time {
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
        rw: data.rw,
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

/// A unit's figure of merit (a target, or a link of `iolab net`): bandwidth and IOPS
/// summed over the operations that move data (fsync and the like excluded).
pub fn throughput_of(p: &PhaseResult) -> (f64, f64) {
    p.ops
        .iter()
        .filter(|o| matches!(o.op, OpKind::Read | OpKind::Write | OpKind::Transfer))
        .fold((0.0, 0.0), |(b, i), o| {
            (b + o.bandwidth.get(), i + o.iops.get())
        })
}
