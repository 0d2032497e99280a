//! The procedure of a targets run: [`run_targets`] checks the workload once, warns
//! where targets share a device or writes stay in the page cache, then runs each
//! direction it asks for (write, then read) as one phase of the engine's
//! `run_targets` over every target, and hands the outcome to the analysis
//! ([`TargetsPhase`]).

use iolab_core::spec::{BackendKind, DataSpec, TargetsSpec};
use iolab_core::targets::TargetsPhase;

use super::prepare::TargetSet;
use super::results::finish_phase;
use super::warnings::shared_devices;
use iolab_engine::{Clock, EngineError, Env, check_ranks_agree};
use iolab_engine::{TargetOnRank, TargetsOptions};

/// Runs the phases `spec` asks for on every target of `set`. Collective.
pub fn run_targets<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    set: &mut TargetSet,
    spec: &TargetsSpec,
    data: &DataSpec,
) -> Result<Vec<TargetsPhase>, EngineError> {
    run_targets_with(env, clock, set, spec, data, &mut |_| {})
}

/// [`run_targets`], handing each phase to `done` as soon as it ended (to store it and
/// show it while the next runs).
pub fn run_targets_with<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    set: &mut TargetSet,
    spec: &TargetsSpec,
    data: &DataSpec,
    done: &mut dyn FnMut(&TargetsPhase),
) -> Result<Vec<TargetsPhase>, EngineError> {
    let comm = env.comm;
    iolab_core::spec::check_threshold(spec.threshold)?;
    let rws = spec.plan_phases(data)?;
    let mut data = data.clone();
    let mut warnings = Vec::new();
    if data.backend == BackendKind::Uring
        && let Err(why) = iolab_backend::uring_available()
    {
        warnings.push(format!(
            "io_uring is not available here ({why}); this phase ran with psync instead"
        ));
        data.backend = BackendKind::Psync;
    }
    data.validate()?;
    check_ranks_agree(comm, "the workload", &(spec, &data))?;
    warnings.extend(shared_devices(comm, set));
    if data.rw.writes()
        && data.backend != BackendKind::Null
        // An export's writes go to its server: no page cache here to absorb them.
        && !iolab_backend::capabilities_of(data.backend, 1).reaches_export
        && !data.direct
        && !data.sync
        && !data.fsync_at_end
        && data.fsync_every.is_none()
    {
        warnings.push(
            "buffered writes without --direct, --sync or an fsync: the page cache absorbs them, so the figures are mostly memory's, not the targets' (add --direct or --fsync-at-end)"
                .to_string(),
        );
    }
    let mut phases = Vec::new();
    for rw in rws {
        let mut phase_spec = data.clone();
        phase_spec.rw = rw;
        let phase = run_one(env, clock, set, spec, &phase_spec, &warnings)?;
        done(&phase);
        let interrupted = phase.summary.interrupted;
        phases.push(phase);
        if !comm.all_ok(!interrupted) {
            break;
        }
    }
    Ok(phases)
}

fn run_one<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    set: &mut TargetSet,
    spec: &TargetsSpec,
    data: &DataSpec,
    warnings: &[String],
) -> Result<TargetsPhase, EngineError> {
    let ids: Vec<String> = set.all.iter().map(|t| t.entry.id.clone()).collect();
    let local: Vec<TargetOnRank<'_>> = set
        .local
        .iter()
        .map(|t| TargetOnRank {
            unit: t.index as u32,
            path: &t.target.entry.path,
            prepared: &t.prepared,
            alignment: t.alignment,
        })
        .collect();
    let opts = TargetsOptions {
        data,
        ids: &ids,
        local: &local,
        one_at_a_time: spec.one_at_a_time,
        warnings,
    };
    let outcome = iolab_engine::run_targets(env, clock, &opts)?;
    // The files of each target, removed at cleanup.
    for (t, files) in set.local.iter_mut().zip(&outcome.files) {
        for f in files {
            if !t.files.contains(f) {
                t.files.push(f.clone());
            }
        }
    }
    Ok(finish_phase(set, spec, data, outcome))
}
