//! [`run_steps`]: a phase in steps on the phase runner, DLIO's training epoch: each
//! worker (a simulated accelerator) runs its steps and meets every other worker of the
//! job after each (the [`StepMeeting`] it is handed); the phase's [`StepHook`] is the
//! cross-rank part of each meeting. Threads, start barrier, recorder merge, errors and
//! the assembled phase are the runner's.

use std::time::Duration;

use iolab_core::result::PhaseResult;
use iolab_core::units::Nanos;

use crate::assemble::{PhaseMeta, assemble};
use crate::clock::Clock;
use crate::error::EngineError;
use crate::phase::{Env, StepHook, StepMeeting, WorkerReport, run_step_phase};
use crate::recorder::WorkerMeasure;

/// What a step phase is.
pub struct StepPhaseSpec {
    pub name: String,
    /// The resolved configuration stored with the phase.
    pub spec: serde_json::Value,
    /// Workers on this rank.
    pub workers: usize,
}

/// What one worker of a step phase measured.
pub struct StepWork {
    pub measure: WorkerMeasure,
    /// Its count (samples, bytes: the caller's).
    pub completed: u64,
}

/// A step phase as this rank knows it once it ended.
pub struct StepPhase {
    /// Every rank's outcome assembled (on rank 0; this rank's own elsewhere).
    pub result: PhaseResult,
    /// Errors on all ranks together (on every rank).
    pub errors: u64,
    pub interrupted: bool,
}

/// Runs one step phase on this rank, in step with all other ranks (collective).
/// `work(index, start, meeting)` runs worker `index` from the phase's common `start`.
pub fn run_steps<C, W>(
    env: &Env<'_>,
    clock: &C,
    spec: &StepPhaseSpec,
    hook: &dyn StepHook,
    work: W,
) -> Result<StepPhase, EngineError>
where
    C: Clock,
    W: Fn(usize, Nanos, &dyn StepMeeting) -> Result<StepWork, String> + Sync,
{
    // An epoch's time starts at its loader's start, as DLIO's: no settling before it.
    let env = env.with_settle(Duration::ZERO);
    let run = run_step_phase(
        &env,
        clock,
        &spec.name,
        spec.workers,
        hook,
        |i, control, steps| {
            let Some(start) = control.ready_and_wait(true) else {
                return Ok(WorkerReport::idle());
            };
            let r = work(i, start, steps);
            let finished_at = clock.now().saturating_sub(start);
            control.finished(i);
            r.map(|w| WorkerReport {
                measure: w.measure,
                completed: w.completed,
                finished_at,
            })
        },
    )?;
    let meta = PhaseMeta {
        name: spec.name.clone(),
        spec: spec.spec.clone(),
        ..PhaseMeta::default()
    };
    Ok(StepPhase {
        result: assemble(meta, &run),
        errors: run.errors,
        interrupted: run.interrupted,
    })
}
