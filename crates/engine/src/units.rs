//! Phases whose workers belong to units (a storage target of `iolab targets`, a link of
//! `iolab net`): [`run_unit_phase`] runs a caller's worker body, handed a [`UnitWorker`]
//! (the start gate, the stop flag, its recorder and live counters), on the phase runner
//! and returns each unit's phase ([`UnitResult`]: its bytes over the time of its slowest
//! worker) beside the whole one ([`UnitPhase`]). `rows` keeps each worker's measure
//! apart and merges a unit's; `results` makes the rows phases.

mod results;
mod rows;

use std::sync::atomic::Ordering;

use iolab_core::result::{ErrorRecord, OpKind, PhaseResult};
use iolab_core::units::Nanos;

use crate::assemble::PhaseMeta;
use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::error::EngineError;
use crate::phase::{Env, WorkerReport};
use crate::plan::INTERVAL;
use crate::recorder::Recorder;
pub(crate) use results::{strip, summary_phase, unit_phase};
pub(crate) use rows::{UnitRow, run_units};

/// Where one of this rank's workers belongs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitMember {
    /// The unit's index in the list every rank shares.
    pub unit: u32,
    /// Its time, thread and count are the unit's; otherwise only what it measured joins
    /// the unit's (its errors: a link's sending streams, whose receiver measures the
    /// link). A unit's timed workers are all on one rank.
    pub timed: bool,
}

/// What a unit phase is.
pub struct UnitPhaseSpec<'a> {
    /// The whole phase's identity (its name is the phase's).
    pub meta: PhaseMeta,
    /// Each unit's identity.
    pub unit_meta: &'a dyn Fn(u32) -> PhaseMeta,
    /// This rank's workers, by index: the unit each belongs to.
    pub members: &'a [UnitMember],
}

/// One unit's phase.
#[derive(Debug)]
pub struct UnitResult {
    pub unit: u32,
    pub result: PhaseResult,
}

/// A unit phase once it ended.
#[derive(Debug)]
pub struct UnitPhase {
    /// The phase as a whole: time, timeline, CPU use and per-rank rows; its operations,
    /// errors and verify failures are the units'.
    pub summary: PhaseResult,
    /// Each unit's phase, by unit: every unit's on rank 0, this rank's own elsewhere.
    pub units: Vec<UnitResult>,
}

/// What one worker of a unit phase is handed: the common start, the stop flag, its
/// recorder (from the start on) and its live counters.
pub struct UnitWorker<'a> {
    index: usize,
    control: &'a PhaseControl,
    /// Whether it passed the start gate, and when the phase started if it runs.
    start: Option<Option<Nanos>>,
    recorder: Option<Recorder>,
}

impl<'a> UnitWorker<'a> {
    fn new(index: usize, control: &'a PhaseControl) -> Self {
        UnitWorker {
            index,
            control,
            start: None,
            recorder: None,
        }
    }

    /// Its index among this rank's workers (in [`UnitPhaseSpec::members`]).
    pub fn index(&self) -> usize {
        self.index
    }

    /// Says whether its setup went well and waits for every worker of every rank: the
    /// common start, or None when the phase does not run (a setup failed somewhere).
    /// Called once; a body that returns without it is taken as set up when it returns
    /// Ok, as failed when it returns an error.
    pub fn wait_for_start(&mut self, ok: bool) -> Option<Nanos> {
        if let Some(start) = self.start {
            return start;
        }
        let start = self.control.ready_and_wait(ok);
        self.recorder = start.map(|s| Recorder::new(s, INTERVAL));
        self.start = Some(start);
        start
    }

    /// The phase was stopped (Ctrl-C, a failure elsewhere): end at once.
    pub fn stopped(&self) -> bool {
        self.control.stop.load(Ordering::Relaxed)
    }

    /// Records one operation that completed at `at` after `latency` (after the start).
    pub fn record(&mut self, op: OpKind, latency: Nanos, bytes: u64, at: Nanos) {
        if let Some(r) = &mut self.recorder {
            r.record(op, latency, bytes, at);
        }
    }

    /// Records an error (after the start).
    pub fn error(&mut self, record: ErrorRecord) {
        if let Some(r) = &mut self.recorder {
            r.error(record);
        }
    }

    /// Its live counters, shown while the phase runs.
    pub fn show(&self, ops: u64, bytes: u64) {
        let p = &self.control.workers[self.index];
        p.ops.store(ops, Ordering::Relaxed);
        p.bytes.store(bytes, Ordering::Relaxed);
    }

    /// Its report once its body returned `done` (its count, or why it failed).
    fn end<C: Clock>(
        mut self,
        clock: &C,
        done: Result<u64, String>,
    ) -> Result<WorkerReport, String> {
        let Some(start) = self.wait_for_start(done.is_ok()) else {
            return done.map(|_| WorkerReport::idle());
        };
        let finished_at = clock.now().saturating_sub(start);
        self.control.finished(self.index);
        let measure = self
            .recorder
            .take()
            .map(Recorder::finish)
            .unwrap_or_default();
        done.map(|completed| WorkerReport {
            measure,
            completed,
            finished_at,
        })
    }
}

/// Runs one unit phase on this rank, in step with all other ranks (collective):
/// `work(worker)` is the body of each of this rank's workers (its index in
/// `spec.members`): its setup, [`UnitWorker::wait_for_start`], then its timed part,
/// returning its count or why it failed. Each unit's phase holds what its members
/// measured, over the time of its slowest timed worker.
pub fn run_unit_phase<C, W>(
    env: &Env<'_>,
    clock: &C,
    spec: &UnitPhaseSpec<'_>,
    work: W,
) -> Result<UnitPhase, EngineError>
where
    C: Clock,
    W: Fn(&mut UnitWorker<'_>) -> Result<u64, String> + Sync,
{
    let (run, rows) = run_units(env, clock, &spec.meta.name, spec.members, |i, control| {
        let mut worker = UnitWorker::new(i, control);
        let done = work(&mut worker);
        worker.end(clock, done)
    })?;
    let units = rows
        .iter()
        .map(|r| UnitResult {
            unit: r.unit,
            result: unit_phase(
                (spec.unit_meta)(r.unit),
                r,
                run.interrupted,
                run.started_at_ms,
            ),
        })
        .collect();
    Ok(UnitPhase {
        summary: summary_phase(spec.meta.clone(), &run, &rows),
        units,
    })
}

#[cfg(test)]
mod tests;
