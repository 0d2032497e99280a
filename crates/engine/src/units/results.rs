//! A unit phase's rows as results: [`unit_phase`] gives one unit its figures over its
//! own time (bytes / slowest worker), [`summary_phase`] the whole phase its time,
//! timeline, CPU use and per-rank rows, with the operations left to the units' phases
//! ([`strip`]), so a run's totals count each only once.

use iolab_core::result::PhaseResult;

use super::rows::UnitRow;
use crate::assemble::{PhaseMeta, assemble};
use crate::phase::{PhaseRun, RankOutcome};
use crate::recorder::WorkerMeasure;

/// The phase of one unit: its figures over its own time (bytes / slowest worker).
pub(crate) fn unit_phase(
    meta: PhaseMeta,
    row: &UnitRow,
    interrupted: bool,
    started_at_ms: i64,
) -> PhaseResult {
    let run = PhaseRun::from_outcomes(
        vec![RankOutcome {
            rank: row.rank,
            host: row.host.clone(),
            threads: row.threads,
            setup_error: None,
            elapsed: row.elapsed,
            first_done: row.first_done,
            measure: row.measure.clone(),
            completed: row.completed.clone(),
            cpu: Default::default(),
            cpu_set: Vec::new(),
        }],
        interrupted,
        started_at_ms,
        None,
    );
    assemble(meta, &run)
}

/// The whole phase of several units that ran together: timeline, CPU use and per-rank
/// rows of all of them. Its operations, errors and verify failures are left to the units'
/// phases, so a run's totals count each only once.
pub(crate) fn summary_phase(meta: PhaseMeta, run: &PhaseRun, rows: &[UnitRow]) -> PhaseResult {
    let outcomes = run
        .outcomes
        .iter()
        .map(|o| {
            let mut o = o.clone();
            o.measure = WorkerMeasure::default();
            for r in rows.iter().filter(|r| r.rank == o.rank) {
                o.measure.merge(&r.measure);
            }
            o
        })
        .collect();
    let patched = PhaseRun::from_outcomes(
        outcomes,
        run.interrupted,
        run.started_at_ms,
        run.telemetry.clone(),
    );
    strip(assemble(meta, &patched))
}

/// Leaves a phase with its time, timeline and per-rank rows but without operations
/// (first-done figures too are the units').
pub(crate) fn strip(mut p: PhaseResult) -> PhaseResult {
    p.ops.clear();
    p.first_done = p.elapsed;
    p.errors.clear();
    p.error_count = 0;
    p.verify_failures = 0;
    p
}
