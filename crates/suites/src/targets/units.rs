//! Splitting one phase into units: a storage target, or a pair of ranks in `iolab net`.
//! Workers of several units run inside one `run_phase`; [`Capture`] keeps each worker's
//! measure apart, [`Capture::row`] merges a unit's workers into a [`UnitRow`] (its time is
//! that of its slowest worker), [`gather_rows`] brings every rank's rows to rank 0,
//! and [`unit_phase`] / [`summary_phase`] turn them into `PhaseResult`s.

use std::sync::Mutex;

use iolab_comm::{Comm, CommExt};
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::units::Nanos;
use serde::{Deserialize, Serialize};

use iolab_engine::EngineError;
use iolab_engine::PhaseMeta;
use iolab_engine::WorkerMeasure;
use iolab_engine::runner::assemble;
use iolab_engine::runner::{PhaseRun, RankOutcome, WorkerReport};

struct Kept {
    measure: WorkerMeasure,
    finished_at: Nanos,
    completed: u64,
}

/// Each worker's report of one phase on this rank, by worker index.
pub(crate) struct Capture {
    slots: Vec<Mutex<Option<Kept>>>,
}

impl Capture {
    pub fn new(workers: usize) -> Self {
        Capture {
            slots: (0..workers).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// Keeps worker `i`'s measure and hands the phase runner its report without it (the
    /// rows carry the measures, so nothing is counted twice).
    pub fn keep(
        &self,
        i: usize,
        report: Result<WorkerReport, String>,
    ) -> Result<WorkerReport, String> {
        let mut report = report?;
        let kept = Kept {
            measure: std::mem::take(&mut report.measure),
            finished_at: report.finished_at,
            completed: report.completed,
        };
        *self.slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(kept);
        Ok(report)
    }

    /// The row of unit `unit`, made of this rank's `workers`.
    pub fn row(&self, unit: u32, workers: &[usize], rank: u32, host: &str) -> UnitRow {
        let mut row = UnitRow {
            unit,
            rank,
            host: host.to_string(),
            threads: workers.len() as u32,
            elapsed: Nanos::ZERO,
            first_done: Nanos(u64::MAX),
            completed: Vec::with_capacity(workers.len()),
            measure: WorkerMeasure::default(),
        };
        for &w in workers {
            let kept = self.slots[w]
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            match kept {
                Some(k) => {
                    row.measure.merge(&k.measure);
                    row.elapsed = row.elapsed.max(k.finished_at);
                    row.first_done = row.first_done.min(k.finished_at);
                    row.completed.push(k.completed);
                }
                None => row.completed.push(0),
            }
        }
        if row.first_done == Nanos(u64::MAX) {
            row.first_done = Nanos::ZERO;
        }
        row
    }
}

/// One unit's part of a phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct UnitRow {
    /// The unit's index in the list every rank shares.
    pub unit: u32,
    pub rank: u32,
    pub host: String,
    pub threads: u32,
    /// From the common start until the unit's slowest / fastest worker finished.
    pub elapsed: Nanos,
    pub first_done: Nanos,
    /// Operations each of its workers completed.
    pub completed: Vec<u64>,
    pub measure: WorkerMeasure,
}

/// Every rank's rows on rank 0 (which analyses, prints and stores them), ordered by
/// unit; the other ranks keep their own (what they record of their own targets).
pub(crate) fn gather_rows(
    comm: &dyn Comm,
    rows: Vec<UnitRow>,
) -> Result<Vec<UnitRow>, EngineError> {
    if comm.size() == 1 {
        return Ok(rows);
    }
    let all: Vec<Vec<UnitRow>> = comm.gather(0, &rows).map_err(|e| EngineError::Rank {
        rank: comm.rank(),
        host: comm.host().to_string(),
        message: e.to_string(),
    })?;
    let mut rows: Vec<UnitRow> = if comm.rank() == 0 {
        all.into_iter().flatten().collect()
    } else {
        rows
    };
    rows.sort_by_key(|r| r.unit);
    Ok(rows)
}

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

/// A unit's figure of merit: bandwidth and IOPS summed over the operations that move
/// data (fsync and the like excluded).
pub fn throughput_of(p: &PhaseResult) -> (f64, f64) {
    p.ops
        .iter()
        .filter(|o| matches!(o.op, OpKind::Read | OpKind::Write | OpKind::Transfer))
        .fold((0.0, 0.0), |(b, i), o| {
            (b + o.bandwidth.get(), i + o.iops.get())
        })
}
