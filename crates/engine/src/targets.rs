//! A data workload on several targets at once (`iolab targets`): [`run_targets`] plans
//! each of this rank's targets ([`TargetOnRank`]: its own files in its own work
//! directory, or the device), prepares their files untimed, runs the workers of all
//! targets of all ranks inside ONE phase so they start together (or one target at a
//! time), records which files now hold complete data and splits the outcome per target
//! ([`TargetsOutcome`]): a target's throughput is the bytes moved on it over the time of
//! its slowest thread. Which targets, in what order and what their figures mean is the
//! caller's.

mod files;
mod plan;
mod results;

use std::path::{Path, PathBuf};

use iolab_core::result::PhaseResult;
use iolab_core::spec::DataSpec;

use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::data::check_cpus;
use crate::error::EngineError;
use crate::phase::{Env, PhaseRun, WorkerReport};
use crate::plan::DataPlan;
use crate::target::{PreparedTarget, agree};
use crate::units::{UnitMember, UnitResult, UnitRow, run_units};
use crate::worker::flow::Flows;
use crate::worker::{WorkerSetup, run_data_worker};
use files::{add_once, client_warnings, prepare_files, record_complete};

/// One of this rank's targets.
pub struct TargetOnRank<'a> {
    /// Its index in [`TargetsOptions::ids`].
    pub unit: u32,
    /// The path it was given (what messages name).
    pub path: &'a Path,
    pub prepared: &'a PreparedTarget,
    /// Its direct-I/O alignment.
    pub alignment: u64,
}

/// One phase over every target.
pub struct TargetsOptions<'a> {
    /// The phase's workload (its `rw` is the phase's direction).
    pub data: &'a DataSpec,
    /// Every target's id, in the order every rank shares (results and one-at-a-time
    /// runs follow it).
    pub ids: &'a [String],
    /// This rank's targets.
    pub local: &'a [TargetOnRank<'a>],
    /// One phase per target, in the order of `ids`, instead of all at once.
    pub one_at_a_time: bool,
    /// The caller's warnings, first among the phase's.
    pub warnings: &'a [String],
}

impl TargetsOptions<'_> {
    fn id(&self, t: &TargetOnRank<'_>) -> &str {
        &self.ids[t.unit as usize]
    }
}

/// A phase over every target once it ended.
#[derive(Debug)]
pub struct TargetsOutcome {
    /// The phase as a whole: time, timeline, CPU use, per-rank rows, parameters `mode`
    /// and `targets`, warnings; its operations are the targets'.
    pub summary: PhaseResult,
    /// Each target's phase ("target 19", parameters `id`, `mode` and the workload's), by
    /// unit: every target's on rank 0, this rank's own elsewhere.
    pub targets: Vec<UnitResult>,
    /// The files each of this rank's targets holds for the workload, in the order of
    /// [`TargetsOptions::local`] (also noted in its work directory).
    pub files: Vec<Vec<PathBuf>>,
}

/// Runs one phase of `opts.data` on every target (collective).
pub fn run_targets<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    opts: &TargetsOptions<'_>,
) -> Result<TargetsOutcome, EngineError> {
    let comm = env.comm;
    let data = opts.data;
    // As `run` does: pinning to a CPU this process may not use would fail silently.
    agree(comm, check_cpus(data.cpus.as_ref()))?;
    let plans = agree(comm, plan::plan_local(opts, comm.rank()))?;
    let mut warnings = opts.warnings.to_vec();
    let prepared = prepare_files(opts.local, &plans, data, env.interrupt);
    add_once(&mut warnings, agree(comm, prepared)?);
    add_once(&mut warnings, client_warnings(opts.local, data));
    comm.barrier();
    let (runs, rows) = if opts.one_at_a_time {
        one_at_a_time(env, clock, opts, &plans)?
    } else {
        let (run, rows) = all_at_once(env, clock, opts, &plans)?;
        (vec![run], rows)
    };
    // The images this phase wrote are iolab's, as they are now.
    if data.writes_target() {
        for t in opts.local {
            t.prepared.mark_written();
        }
    }
    let recorded = record_complete(opts.local, opts.ids, &plans, data, &rows);
    add_once(&mut warnings, recorded);
    let mut outcome = results::finish(comm, opts, &runs, &rows, warnings);
    outcome.files = plans
        .iter()
        .map(|p| p.owned_files.iter().map(|f| f.path.clone()).collect())
        .collect();
    Ok(outcome)
}

/// Runs worker `worker` of target `t`'s plan as this rank's worker `index`.
fn run_worker<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    (id, t, plan): (&str, &TargetOnRank<'_>, &DataPlan),
    (worker, index): (usize, usize),
    control: &PhaseControl,
) -> Result<WorkerReport, String> {
    let setup = WorkerSetup {
        plan,
        worker: &plan.workers[worker],
        index,
        control,
        clock,
        rank: env.comm.rank(),
        host: env.comm.host(),
        alignment: t.alignment,
        count: plan.workers[worker].blocks,
        isolated: true,
        // A target's workers have no flow group (fio's flow is iolab fio's).
        flows: &Flows::default(),
    };
    run_data_worker(&setup).map_err(|e| format!("target {id}: {e}"))
}

/// All local targets' workers in one phase; worker i belongs to target map[i].0.
fn all_at_once<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    opts: &TargetsOptions<'_>,
    plans: &[DataPlan],
) -> Result<(PhaseRun, Vec<UnitRow>), EngineError> {
    let map: Vec<(usize, usize)> = plans
        .iter()
        .enumerate()
        .flat_map(|(t, p)| (0..p.workers.len()).map(move |w| (t, w)))
        .collect();
    let members: Vec<UnitMember> = map
        .iter()
        .map(|&(t, _)| UnitMember {
            unit: opts.local[t].unit,
            timed: true,
        })
        .collect();
    run_units(env, clock, &opts.data.name(), &members, |i, control| {
        let (t, w) = map[i];
        let target = (opts.id(&opts.local[t]), &opts.local[t], &plans[t]);
        run_worker(env, clock, target, (w, i), control)
    })
}

/// One phase per target, in the order of the shared list; every rank takes part in
/// each (with no workers unless the target is its own).
fn one_at_a_time<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    opts: &TargetsOptions<'_>,
    plans: &[DataPlan],
) -> Result<(Vec<PhaseRun>, Vec<UnitRow>), EngineError> {
    let comm = env.comm;
    let mut runs = Vec::new();
    let mut rows = Vec::new();
    for (g, id) in opts.ids.iter().enumerate() {
        let mine = opts.local.iter().position(|l| l.unit as usize == g);
        let n = mine.map_or(0, |t| plans[t].workers.len());
        let member = UnitMember {
            unit: g as u32,
            timed: true,
        };
        let name = format!("{} target {id}", opts.data.name());
        let (run, unit_rows) = run_units(env, clock, &name, &vec![member; n], |i, control| {
            let Some(t) = mine else {
                return Err("a worker was started for another rank's target".to_string());
            };
            run_worker(env, clock, (id, &opts.local[t], &plans[t]), (i, i), control)
        })?;
        rows.extend(unit_rows);
        let interrupted = run.interrupted;
        runs.push(run);
        if !comm.all_ok(!interrupted) {
            break;
        }
    }
    Ok((runs, rows))
}

#[cfg(test)]
mod tests;
