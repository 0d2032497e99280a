//! The end of a phase: every rank's outcome brought to rank 0, which prints and stores
//! them, while every rank learns only what it decides on ([`gather_outcomes`]).

use iolab_comm::{Comm, CommExt};
use iolab_core::telemetry::Telemetry;

use super::{PhaseRun, RankOutcome};
use crate::error::EngineError;
use crate::recorder::WorkerMeasure;

/// Brings the phase's outcomes together: every rank learns what it decides on (setup
/// errors, each worker's completed count, the errors anywhere), and only rank 0, which
/// prints and stores, receives the ranks' whole outcomes (histograms, timelines).
pub(super) fn gather_outcomes(
    comm: &dyn Comm,
    outcome: RankOutcome,
    interrupted: bool,
    started_at_ms: i64,
    telemetry: Option<Telemetry>,
) -> Result<PhaseRun, EngineError> {
    if !comm.all_ok(outcome.setup_error.is_none()) {
        return Err(setup_failure(comm, outcome)?);
    }
    let completed = completed_counts(comm, &outcome.completed);
    let (sums, _) = comm.reduce(&[outcome.measure.error_count], &[], None, &|_| {});
    let (outcomes, merged) = to_rank_zero(comm, outcome)?;
    Ok(PhaseRun {
        outcomes,
        merged,
        completed,
        errors: sums[0],
        interrupted,
        started_at_ms,
        telemetry,
    })
}

/// This rank's part in reporting a comm failure as the rank's error.
fn rank_error(comm: &dyn Comm) -> impl Fn(iolab_comm::CommError) -> EngineError + '_ {
    move |e| EngineError::Rank {
        rank: comm.rank(),
        host: comm.host().to_string(),
        message: e.to_string(),
    }
}

/// Only on failure: every rank learns which rank failed to set up and why (the first
/// one), as the error to end the phase with. Collective.
fn setup_failure(comm: &dyn Comm, outcome: RankOutcome) -> Result<EngineError, EngineError> {
    let errors: Vec<(u32, String, Option<String>)> = comm
        .all_gather(&(outcome.rank, outcome.host.clone(), outcome.setup_error))
        .map_err(rank_error(comm))?;
    let (rank, host, message) = errors
        .into_iter()
        .find_map(|(r, h, e)| e.map(|e| (r, h, e)))
        .unwrap_or_default();
    Ok(if comm.size() == 1 {
        EngineError::Setup(message)
    } else {
        EngineError::Rank {
            rank,
            host,
            message,
        }
    })
}

/// Every worker's completed count, on every rank, eight bytes per worker: later phases (a
/// stat after a stonewalled create, a read of what was written) start from exactly what
/// each worker completed. Collective.
fn completed_counts(comm: &dyn Comm, mine: &[u64]) -> Vec<u64> {
    let mine: Vec<u8> = mine.iter().flat_map(|c| c.to_le_bytes()).collect();
    comm.all_gather_bytes(&mine)
        .iter()
        .flat_map(|b| {
            b.chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        })
        .collect()
}

/// The ranks' whole outcomes on rank 0, with their measures merged there; every other
/// rank keeps its own. Collective.
fn to_rank_zero(
    comm: &dyn Comm,
    outcome: RankOutcome,
) -> Result<(Vec<RankOutcome>, Option<WorkerMeasure>), EngineError> {
    if comm.size() == 1 {
        return Ok((vec![outcome], None));
    }
    if comm.rank() != 0 {
        let sent = comm.gather_each(0, &outcome, |_, _: RankOutcome| {});
        if !comm.all_ok(sent.is_ok()) {
            return Err(sent.map_err(rank_error(comm)).err().unwrap_or_else(|| {
                EngineError::Setup("rank 0 could not read this phase's results".into())
            }));
        }
        return Ok((vec![outcome], None));
    }
    // Each rank's measure is merged as it arrives and only its counts kept: rank 0
    // holds one merged histogram and timeline, not one per rank.
    let mut merged = WorkerMeasure::default();
    let mut all = Vec::with_capacity(comm.size() as usize);
    let got = comm.gather_each(0, &outcome, |_, mut o: RankOutcome| {
        merged.merge(&o.measure);
        o.measure.shed_detail();
        all.push(o);
    });
    // An outcome rank 0 cannot read ends the phase on every rank, not on rank 0
    // alone (the others would go on to a collective rank 0 never joins).
    if !comm.all_ok(got.is_ok()) {
        return Err(match got {
            Err(e) => rank_error(comm)(e),
            Ok(()) => EngineError::Setup("a rank could not send this phase's results".into()),
        });
    }
    Ok((all, Some(merged)))
}
