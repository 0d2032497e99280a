//! A unit phase's rows: [`Capture`] keeps each worker's measure apart while the phase
//! runner runs them, [`Capture::row`] merges a unit's workers of this rank into a
//! [`UnitRow`] (its time is that of its slowest worker), [`gather_rows`] brings every
//! rank's rows to rank 0 and [`join_members`] makes them one row per unit.

use std::sync::Mutex;

use iolab_comm::{Comm, CommExt};
use iolab_core::units::Nanos;
use serde::{Deserialize, Serialize};

use super::UnitMember;
use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::error::EngineError;
use crate::phase::{Env, PhaseRun, WorkerReport, run_phase};
use crate::recorder::WorkerMeasure;

struct Kept {
    measure: WorkerMeasure,
    finished_at: Nanos,
    completed: u64,
}

/// Each worker's report of one phase on this rank, by worker index.
struct Capture {
    slots: Vec<Mutex<Option<Kept>>>,
}

impl Capture {
    fn new(workers: usize) -> Self {
        Capture {
            slots: (0..workers).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// Keeps worker `i`'s measure and hands the phase runner its report without it (the
    /// rows carry the measures, so nothing is counted twice).
    fn keep(&self, i: usize, report: Result<WorkerReport, String>) -> Result<WorkerReport, String> {
        let mut report = report?;
        let kept = Kept {
            measure: std::mem::take(&mut report.measure),
            finished_at: report.finished_at,
            completed: report.completed,
        };
        *self.slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(kept);
        Ok(report)
    }

    /// The row of `member`'s unit, made of this rank's `workers`.
    fn row(&self, member: UnitMember, workers: &[usize], rank: u32, host: &str) -> UnitRow {
        let mut row = UnitRow {
            unit: member.unit,
            timed: member.timed,
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
    /// Made of timed workers (see [`UnitMember::timed`]).
    pub timed: bool,
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

/// Runs this rank's workers, worker `i` a member of `members[i]`, in one phase of the
/// phase runner (collective); returns the run and one row per unit: every unit's on
/// rank 0, this rank's own elsewhere, by unit.
pub(crate) fn run_units<C, W>(
    env: &Env<'_>,
    clock: &C,
    name: &str,
    members: &[UnitMember],
    work: W,
) -> Result<(PhaseRun, Vec<UnitRow>), EngineError>
where
    C: Clock,
    W: Fn(usize, &PhaseControl) -> Result<WorkerReport, String> + Sync,
{
    let comm = env.comm;
    // Each worker's unit, for the live page's unit rows (--serve).
    let units: Vec<u32> = members.iter().map(|m| m.unit).collect();
    let env = env.with_units(&units);
    let capture = Capture::new(members.len());
    let run = run_phase(&env, clock, name, members.len(), false, |i, control| {
        capture.keep(i, work(i, control))
    })?;
    // One row per unit and kind of member, in the order they first appear.
    let mut groups: Vec<UnitMember> = Vec::new();
    for m in members {
        if !groups.contains(m) {
            groups.push(*m);
        }
    }
    let rows = groups
        .into_iter()
        .map(|g| {
            let workers: Vec<usize> = (0..members.len()).filter(|&i| members[i] == g).collect();
            capture.row(g, &workers, comm.rank(), comm.host())
        })
        .collect();
    Ok((run, join_members(gather_rows(comm, rows)?)))
}

/// Every rank's rows on rank 0 (which prints and stores them), ordered by unit; the
/// other ranks keep their own (what they record of their own units).
fn gather_rows(comm: &dyn Comm, rows: Vec<UnitRow>) -> Result<Vec<UnitRow>, EngineError> {
    let mut rows = if comm.size() == 1 {
        rows
    } else {
        let all: Vec<Vec<UnitRow>> = comm.gather(0, &rows).map_err(|e| EngineError::Rank {
            rank: comm.rank(),
            host: comm.host().to_string(),
            message: e.to_string(),
        })?;
        if comm.rank() == 0 {
            all.into_iter().flatten().collect()
        } else {
            rows
        }
    };
    rows.sort_by_key(|r| r.unit);
    Ok(rows)
}

/// One row per unit: its timed row, with the measures of its other members' rows
/// (their errors) added; a unit without a timed row here has none.
fn join_members(rows: Vec<UnitRow>) -> Vec<UnitRow> {
    let (mut timed, others): (Vec<UnitRow>, Vec<UnitRow>) = rows.into_iter().partition(|r| r.timed);
    for o in others {
        if let Some(t) = timed.iter_mut().find(|t| t.unit == o.unit) {
            t.measure.merge(&o.measure);
        }
    }
    timed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(unit: u32, timed: bool, rank: u32, errors: u64) -> UnitRow {
        UnitRow {
            unit,
            timed,
            rank,
            measure: WorkerMeasure {
                error_count: errors,
                ..WorkerMeasure::default()
            },
            ..UnitRow::default()
        }
    }

    #[test]
    fn a_units_other_members_add_their_measure_to_its_timed_row() {
        let rows = vec![
            row(0, false, 0, 2),
            row(0, true, 1, 1),
            row(1, true, 0, 0),
            row(1, false, 1, 4),
            row(2, false, 1, 8),
        ];
        let joined = join_members(rows);
        let seen: Vec<(u32, u32, u64)> = joined
            .iter()
            .map(|r| (r.unit, r.rank, r.measure.error_count))
            .collect();
        // Unit 2 has no timed row here: nothing of it is kept.
        assert_eq!(seen, vec![(0, 1, 3), (1, 0, 4)]);
    }
}
