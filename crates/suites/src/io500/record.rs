//! IO500 runs in iolab's store, kept like any other run (kind "io500"): [`phase_result`]
//! turns a [`PhaseFigure`] into a `PhaseResult` (name = IO500 phase name; kind data, meta
//! or find; one operation with its bytes or items and the phase time), [`figure_of`]
//! turns it back, [`run_from_parsed`] makes a whole imported run and [`score_from_run`]
//! scores any stored IO500 run.

use std::collections::BTreeMap;

use iolab_core::LatencyHistogram;
use iolab_core::result::{
    OpCount, OpKind, OpResult, PhaseKind, PhaseResult, Provenance, RunRecord, RunStatus, Timeline,
};
use iolab_core::units::{GIB, Nanos, TimeSpan};
use serde_json::json;

use super::plan::{PhasePlan, plan_phases};
use iolab_compat::io500::parse::ParsedResult;
use iolab_compat::io500::phases::{
    EXTENDED_PHASES, Io500PhaseKind, IorAccess, MdtestOp, Workload, phase,
};
use iolab_compat::io500::score::{PhaseFigure, Score, score};
use iolab_core::spec::io500::Io500Spec;

/// The kind of an IO500 run in the store.
pub const KIND: &str = "io500";
/// `PhaseResult::extra` key of the figure as the source stated it (GiB/s or kIOPS).
pub const VALUE_KEY: &str = "io500-value";
/// `PhaseResult::extra` key set to 1 when the source marked the phase invalid.
pub const INVALID_KEY: &str = "io500-invalid";
/// `PhaseResult::extra` key of the files find matched (as `iolab find` stores it).
pub const MATCHED_KEY: &str = "matched";

fn seconds(t: f64) -> Nanos {
    if t.is_finite() && t > 0.0 {
        Nanos((t * 1e9).round() as u64)
    } else {
        Nanos::ZERO
    }
}

fn count(value: f64, scale: f64, secs: f64) -> u64 {
    let c = value * scale * secs;
    if c.is_finite() && c > 0.0 {
        c.round() as u64
    } else {
        0
    }
}

/// What a phase did, for its operation row: kind, op, ops and bytes.
fn shape(fig: &PhaseFigure, plan: Option<&PhasePlan>) -> (PhaseKind, OpKind, OpCount) {
    let secs = if fig.time.is_finite() { fig.time } else { 0.0 };
    let bytes = || {
        fig.bytes
            .unwrap_or_else(|| count(fig.value, GIB as f64, secs))
    };
    let items = || fig.items.unwrap_or_else(|| count(fig.value, 1000.0, secs));
    let Some(plan) = plan else {
        return if fig.name.starts_with('i') {
            let b = bytes();
            (PhaseKind::Data, OpKind::Read, OpCount { ops: 0, bytes: b })
        } else if fig.name.starts_with("find") {
            (
                PhaseKind::Find,
                OpKind::Scan,
                OpCount {
                    ops: items(),
                    bytes: 0,
                },
            )
        } else {
            (
                PhaseKind::Meta,
                OpKind::Stat,
                OpCount {
                    ops: items(),
                    bytes: 0,
                },
            )
        };
    };
    match plan.def.workload {
        Workload::Ior { access, .. } => {
            let b = bytes();
            let transfer = plan.data.as_ref().map_or(1, |d| d.block_size.get().max(1));
            let op = match access {
                IorAccess::Write => OpKind::Write,
                IorAccess::Read | IorAccess::RandomRead => OpKind::Read,
            };
            (
                PhaseKind::Data,
                op,
                OpCount {
                    ops: b / transfer,
                    bytes: b,
                },
            )
        }
        Workload::Mdtest { op, file_size, .. } => {
            let n = items();
            let (op, bytes) = match op {
                MdtestOp::Create => (OpKind::Create, n * file_size),
                MdtestOp::Stat => (OpKind::Stat, 0),
                MdtestOp::Read => (OpKind::Read, n * file_size),
                MdtestOp::Delete => (OpKind::Remove, 0),
            };
            (PhaseKind::Meta, op, OpCount { ops: n, bytes })
        }
        Workload::Find => (
            PhaseKind::Find,
            OpKind::Scan,
            OpCount {
                ops: items(),
                bytes: 0,
            },
        ),
        Workload::Timestamp => (
            PhaseKind::Meta,
            OpKind::Create,
            OpCount { ops: 1, bytes: 0 },
        ),
    }
}

/// One IO500 phase as a `PhaseResult`. The figure itself is kept in `extra` so the
/// score of a stored run is exactly the score of the figures it came from.
pub fn phase_result(
    fig: &PhaseFigure,
    plans: &[PhasePlan],
    ranks: u32,
    started_at_ms: i64,
) -> PhaseResult {
    let plan = plans.iter().find(|p| p.def.name == fig.name);
    let (kind, op, total) = shape(fig, plan);
    let elapsed = seconds(fig.time);
    let mut extra = BTreeMap::new();
    if fig.value.is_finite() {
        extra.insert(VALUE_KEY.to_string(), fig.value);
    }
    if !fig.valid {
        extra.insert(INVALID_KEY.to_string(), 1.0);
    }
    if let Some(found) = fig.found {
        extra.insert(MATCHED_KEY.to_string(), found as f64);
    }
    PhaseResult {
        figures: None,
        name: fig.name.clone(),
        kind,
        params: plan.map(|p| p.params.clone()).unwrap_or_default(),
        repetition: 0,
        spec: plan
            .and_then(|p| p.data.as_ref())
            .and_then(|d| serde_json::to_value(d).ok())
            .unwrap_or(serde_json::Value::Null),
        started_at_ms,
        ranks,
        workers: ranks,
        elapsed,
        first_done: elapsed,
        ops: vec![OpResult::whole(
            op,
            total,
            elapsed,
            fig.errors,
            LatencyHistogram::new(),
        )],
        timeline: Timeline::default(),
        cpu: Default::default(),
        per_rank: Vec::new(),
        errors: Vec::new(),
        error_count: fig.errors,
        verify_failures: 0,
        extra,
        warnings: fig.notes.clone(),
        interrupted: false,
        telemetry: None,
    }
}

/// The IO500 figure of a stored phase: the figure kept with it, or else bytes moved /
/// time / 2^30 (data) and items / time / 1000 (metadata, find).
pub fn figure_of(p: &PhaseResult) -> PhaseFigure {
    let data_bytes: u64 = p
        .ops
        .iter()
        .filter(|o| o.op.moves_data())
        .map(|o| o.bytes.get())
        .sum();
    let items: u64 = p
        .ops
        .iter()
        .filter(|o| !matches!(o.op, OpKind::Mkdir | OpKind::Rmdir | OpKind::Fsync))
        .map(|o| o.ops)
        .sum();
    let mut fig = match p.kind {
        PhaseKind::Data => PhaseFigure::from_bytes(&p.name, data_bytes, p.elapsed),
        _ => PhaseFigure::from_items(&p.name, items, p.elapsed),
    };
    if let Some(v) = p.extra.get(VALUE_KEY) {
        fig.value = *v;
    }
    fig.valid = !p.interrupted && !p.extra.contains_key(INVALID_KEY);
    fig.errors = p.error_count;
    fig.found = p.extra.get(MATCHED_KEY).map(|m| *m as u64);
    fig.notes = p.warnings.clone();
    fig
}

/// Whether a stored phase is an IO500 phase.
fn is_io500(name: &str) -> bool {
    phase(name).is_some() || EXTENDED_PHASES.contains(&name)
}

/// The stonewall a stored IO500 run was configured with: `spec.stonewall` of an iolab
/// run's configuration, or `stonewall` of an imported one.
fn stonewall_in(spec: &serde_json::Value) -> Option<TimeSpan> {
    let v = spec
        .pointer("/spec/stonewall")
        .or_else(|| spec.get("stonewall"))?;
    serde_json::from_value(v.clone()).ok()
}

/// The score as a stored run carries it in its spec (`spec["score"]`), for `results show`
/// and comparisons: GiB/s, kIOPS, the total and whether it is valid for submission.
pub fn score_json(score: &Score) -> serde_json::Value {
    json!({
        "bandwidth": score.bandwidth,
        "iops": score.metadata,
        "total": score.total,
        "valid": score.valid(),
    })
}

/// IO500's score of a stored run (its IO500 phases; others are ignored).
pub fn score_from_run(run: &RunRecord) -> Score {
    let figures: Vec<PhaseFigure> = run
        .phases
        .iter()
        .filter(|p| is_io500(&p.name))
        .map(figure_of)
        .collect();
    score(&figures, stonewall_in(&run.spec))
}

/// An IO500 result read from a file as a run for the store: every phase but the
/// timestamp, the source and stonewall as its spec, Failed when the check fails with
/// the reasons as warnings.
pub fn run_from_parsed(parsed: &ParsedResult, provenance: Provenance, now_ms: i64) -> RunRecord {
    let spec = Io500Spec {
        stonewall: parsed.stonewall.unwrap_or(Io500Spec::default().stonewall),
        ..Io500Spec::default()
    };
    let plans = plan_phases(&spec);
    let ranks = parsed.procs.unwrap_or(0);
    let source = json!({
        "imported": {
            "path": parsed.path.display().to_string(),
            "format": parsed.format,
            "version": parsed.version,
            "procs": parsed.procs,
        },
        "stonewall": parsed.stonewall,
    });
    let mut run = RunRecord::new(KIND, source, provenance, now_ms);
    run.phases = parsed
        .phases
        .iter()
        .filter(|f| phase(&f.name).is_none_or(|d| d.kind != Io500PhaseKind::Timestamp))
        .map(|f| phase_result(f, &plans, ranks, now_ms))
        .collect();
    let check = parsed.check();
    run.warnings = check.score.reasons.iter().map(|r| r.to_string()).collect();
    run.warnings.extend(check.problems.iter().cloned());
    run.spec["score"] = score_json(&check.score);
    // As for iolab's own runs: a short stonewall makes a result invalid for submission,
    // not failed; a zero phase, I/O errors, an empty find or a result that does not agree
    // with itself fail it.
    let failed = !check.problems.is_empty() || check.score.reasons.iter().any(|r| r.is_failure());
    run.status = if failed {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    };
    run.finished_at_ms = Some(now_ms);
    run
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
