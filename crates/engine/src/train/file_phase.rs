//! [`run_file_phase`]: a data phase whose workers write or read whole files through
//! [`FileIo`] (DLIO's checkpoint write and read: a worker per simulated rank; dataset
//! generation: a worker per writer thread), run by the phase runner: every rank's
//! workers start together after a barrier, each worker's I/O is timed by the clock
//! into its recorder, and the phase is assembled from every rank's outcome.

use std::sync::atomic::Ordering;
use std::time::Duration;

use iolab_core::result::{ErrorRecord, OpKind, PhaseResult};
use iolab_core::spec::BackendKind;

use crate::assemble::{PhaseMeta, assemble};
use crate::clock::Clock;
use crate::error::EngineError;
use crate::phase::{Env, WorkerReport, run_phase};
use crate::train::files::FileIo;

/// What a file phase is.
pub struct FilePhaseSpec {
    pub name: String,
    /// The resolved configuration stored with the phase.
    pub spec: serde_json::Value,
    pub backend: BackendKind,
    /// The largest single write or read (each worker's buffer).
    pub buffer: u64,
    /// Workers on this rank.
    pub workers: usize,
}

/// A file phase as this rank knows it once it ended.
pub struct FilePhase {
    /// Every rank's outcome assembled (on rank 0; this rank's own elsewhere).
    pub result: PhaseResult,
    /// What each of this rank's workers returned (files, bytes: the caller's count),
    /// by worker; 0 for a worker that failed.
    pub completed: Vec<u64>,
    /// Errors on all ranks together (on every rank).
    pub errors: u64,
    pub interrupted: bool,
}

/// Runs one file phase on this rank, in step with all other ranks (collective).
/// `prepare(index, io)` runs before the start (untimed: filling the write buffer);
/// `work(index, io)` is the worker's timed part and returns its count. A worker that
/// fails stops the others of its rank; its error is in the phase's errors.
pub fn run_file_phase<C, P, W>(
    env: &Env<'_>,
    clock: &C,
    spec: &FilePhaseSpec,
    prepare: P,
    work: W,
) -> Result<FilePhase, EngineError>
where
    C: Clock,
    P: Fn(usize, &mut FileIo<'_, C>) -> Result<(), EngineError> + Sync,
    W: Fn(usize, &mut FileIo<'_, C>) -> Result<u64, EngineError> + Sync,
{
    let env = env.with_settle(Duration::ZERO);
    let run = run_phase(
        &env,
        clock,
        &spec.name,
        spec.workers,
        false,
        |i, control| {
            let io = FileIo::new(clock, spec.backend, spec.buffer, clock.now())
                .and_then(|mut io| prepare(i, &mut io).map(|()| io));
            let Some(start) = control.ready_and_wait(io.is_ok()) else {
                return match io {
                    Ok(_) => Ok(WorkerReport::idle()),
                    Err(e) => Err(e.to_string()),
                };
            };
            let mut io = io.map_err(|e| e.to_string())?;
            io.restart(start);
            let r = if control.stop.load(Ordering::Relaxed) {
                Ok(0)
            } else {
                work(i, &mut io)
            };
            let completed = match r {
                Ok(n) => n,
                Err(e) => {
                    io.note_error(&e);
                    control.stop_all();
                    0
                }
            };
            let finished_at = clock.now().saturating_sub(start);
            control.finished(i);
            Ok(WorkerReport {
                measure: io.finish(),
                completed,
                finished_at,
            })
        },
    )?;
    let meta = PhaseMeta {
        name: spec.name.clone(),
        spec: spec.spec.clone(),
        ..PhaseMeta::default()
    };
    let result = assemble(meta, &run);
    let mine = env.comm.rank() as usize;
    let completed = match run.outcomes.iter().find(|o| o.rank as usize == mine) {
        Some(o) => o.completed.clone(),
        None => Vec::new(),
    };
    Ok(FilePhase {
        result,
        completed,
        errors: run.errors,
        interrupted: run.interrupted,
    })
}

/// The record of a failure that did not come from an I/O (an open, a bad file).
pub(crate) fn error_record(op: OpKind, e: &EngineError) -> ErrorRecord {
    ErrorRecord {
        rank: 0,
        host: String::new(),
        op,
        path: String::new(),
        offset: None,
        errno: None,
        message: e.to_string(),
    }
}
