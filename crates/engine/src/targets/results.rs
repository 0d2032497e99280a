//! A finished targets phase as results: a phase per target ("target 19", the workload's
//! parameters with its id and the mode) and the summary phase, whose time is the
//! common one when the targets ran together and the sum of theirs when they ran one
//! after another.

use iolab_comm::Comm;
use iolab_core::result::{PhaseKind, PhaseResult};
use iolab_core::spec::DataSpec;

use super::{TargetsOptions, TargetsOutcome};
use crate::assemble::{PhaseMeta, assemble};
use crate::data::params_of;
use crate::phase::PhaseRun;
use crate::units::{UnitResult, UnitRow, strip, summary_phase, unit_phase};

/// How the targets ran, as the results name it.
fn mode(one_at_a_time: bool) -> &'static str {
    if one_at_a_time {
        "one-at-a-time"
    } else {
        "all-at-once"
    }
}

fn target_meta(id: &str, data: &DataSpec, one_at_a_time: bool) -> PhaseMeta {
    let mut params = params_of(data, 1);
    params.remove("ranks");
    params.insert("id".into(), id.to_string());
    params.insert("mode".into(), mode(one_at_a_time).into());
    PhaseMeta {
        name: format!("target {id}"),
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

/// Every unit's phase and the summary of the phase `runs` made.
pub(super) fn finish(
    comm: &dyn Comm,
    opts: &TargetsOptions<'_>,
    runs: &[PhaseRun],
    rows: &[UnitRow],
    warnings: Vec<String>,
) -> TargetsOutcome {
    let data = opts.data;
    let interrupted = runs.iter().any(|r| r.interrupted);
    let started = runs.first().map_or(0, |r| r.started_at_ms);
    let targets = rows
        .iter()
        .map(|r| {
            let meta = target_meta(&opts.ids[r.unit as usize], data, opts.one_at_a_time);
            UnitResult {
                unit: r.unit,
                result: unit_phase(meta, r, interrupted, started),
            }
        })
        .collect();
    let mut params = params_of(data, comm.size());
    params.insert("mode".into(), mode(opts.one_at_a_time).into());
    params.insert("targets".into(), opts.ids.len().to_string());
    let meta = PhaseMeta {
        name: data.name(),
        kind: Some(PhaseKind::Data),
        params,
        repetition: 0,
        spec: serde_json::to_value(data).unwrap_or_default(),
        warnings,
    };
    let summary = match (opts.one_at_a_time, runs) {
        (false, [run]) => summary_phase(meta, run, rows),
        _ => sequence_summary(meta, runs, comm.size()),
    };
    TargetsOutcome {
        summary,
        targets,
        files: Vec::new(),
    }
}
