//! Running a data workload on every target: [`run_targets`] plans each local target
//! (its own files in its own work directory, or the device), prepares files untimed, then
//! runs the workers of all targets of all ranks inside ONE phase so they start together
//! (or one target at a time), and splits the outcome per target: a target's throughput
//! is the bytes moved on it over the time of its slowest thread.

use std::path::{Path, PathBuf};

use iolab_core::SpecError;
use iolab_core::result::PhaseResult;
use iolab_core::spec::{BackendKind, DataSpec, Layout, RandomKind, RwKind, TargetsSpec};
use iolab_core::units::ByteCount;

use super::analysis::TargetAnalysis;
use super::prepare::{LocalTarget, TargetSet};
use super::results::{Finished, Mode, finish_phase};
use super::units::{Capture, UnitRow, gather_rows};
use super::warnings::{client_warnings, shared_devices};
use iolab_engine::Clock;
use iolab_engine::DataTarget;
use iolab_engine::EngineError;
use iolab_engine::Env;
use iolab_engine::runner::PhaseControl;
use iolab_engine::runner::{DataPlan, PlanContext, plan_data};
use iolab_engine::runner::{FileInfo, VerifyInfo};
use iolab_engine::runner::{PhaseRun, WorkerReport, run_phase};
use iolab_engine::runner::{WorkerSetup, run_data_worker};
use iolab_engine::runner::{check_cpus, check_ranks_agree};
use iolab_engine::runner::{create_for_write, lay_out, set_cache_state};
use iolab_engine::{PreparedTarget, agree};

/// One phase (write or read) over all targets.
#[derive(Debug)]
pub struct TargetsPhase {
    pub rw: RwKind,
    /// The phase as a whole: time, timeline, CPU, per-rank rows, and the statistics in
    /// `extra` (operations are in the targets' phases).
    pub summary: PhaseResult,
    /// One phase per target ("target 19"), in the order of [`TargetSet::all`].
    pub targets: Vec<PhaseResult>,
    pub analysis: Option<TargetAnalysis>,
}

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
    // As `run` does: pinning to a CPU this process may not use would fail silently.
    agree(comm, check_cpus(data.cpus.as_ref()))?;
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
    let comm = env.comm;
    let plans = agree(comm, plan_local(set, data, comm.rank()))?;
    let mut warnings = warnings.to_vec();
    for w in agree(comm, prepare_files(set, &plans, data, env.interrupt))? {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    for w in client_warnings(set, data) {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    comm.barrier();
    let ctx = WorkerCtx {
        clock,
        rank: comm.rank(),
        host: comm.host().to_string(),
    };
    let name = data.name();
    let (runs, rows) = if spec.one_at_a_time {
        one_at_a_time(env, &ctx, &name, set, &plans)?
    } else {
        let (run, rows) = all_at_once(env, &ctx, &name, set, &plans)?;
        (vec![run], rows)
    };
    // The images this phase wrote are iolab's, as they are now.
    if data.writes_target() {
        for t in &set.local {
            t.prepared.mark_written();
        }
    }
    for w in record_complete(set, &plans, data, &rows) {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    let mode = if spec.one_at_a_time {
        Mode::OneAtATime
    } else {
        Mode::AllAtOnce
    };
    Ok(finish_phase(
        comm,
        Finished {
            set,
            spec,
            data,
            mode,
            runs: &runs,
            rows: &rows,
            warnings,
        },
    ))
}

/// Plans each local target; records the files it will create for cleanup.
fn plan_local(
    set: &mut TargetSet,
    data: &DataSpec,
    rank: u32,
) -> Result<Vec<DataPlan>, EngineError> {
    let ctx = PlanContext {
        rank: 0,
        ranks: 1,
        read_shift: 0,
        ..PlanContext::default()
    };
    let mut plans = Vec::with_capacity(set.local.len());
    for t in &mut set.local {
        let id = &t.target.entry.id;
        let on_target =
            |e: SpecError| SpecError::new(e.option, format!("target {id}: {}", e.reason));
        let target = t.prepared.data_target();
        let mut plan = plan_data(data, &target, &ctx).map_err(on_target)?;
        if let DataTarget::Dir(_) = target {
            // Ranks on different hosts may share a directory (a path on a shared file
            // system given on every host): name files by rank.
            for f in plan.files.iter_mut().chain(plan.owned_files.iter_mut()) {
                f.path = by_rank(&f.path, rank);
            }
        }
        let bs = data.block_size.get();
        if data.direct && target != DataTarget::Null && !bs.is_multiple_of(t.alignment) {
            return Err(on_target(SpecError::new(
                "--block-size",
                format!(
                    "{} is not a multiple of {}, the direct-I/O alignment of {}; use a multiple of it or drop --direct",
                    data.block_size,
                    ByteCount(t.alignment),
                    t.target.entry.path.display()
                ),
            ))
            .into());
        }
        check_space(t, &plan)?;
        for f in &plan.owned_files {
            if !t.files.contains(&f.path) {
                t.files.push(f.path.clone());
            }
        }
        plans.push(plan);
    }
    Ok(plans)
}

/// "dir/data.r0.t3" becomes "dir/data.r<rank>.t3".
fn by_rank(path: &Path, rank: u32) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let renamed = match name.strip_prefix("data.r0.") {
        Some(rest) => format!("data.r{rank}.{rest}"),
        None => format!("data.r{rank}.{}", name.trim_start_matches("data.")),
    };
    path.with_file_name(renamed)
}

fn check_space(t: &LocalTarget, plan: &DataPlan) -> Result<(), EngineError> {
    let PreparedTarget::Dir { workdir, .. } = &t.prepared else {
        return Ok(());
    };
    let need: u64 = if plan.spec.rw.writes() {
        plan.total_bytes
    } else {
        plan.owned_files
            .iter()
            .filter(|f| workdir.file_info(&f.path).is_none_or(|i| i.size < f.size))
            .map(|f| f.size)
            .sum()
    };
    workdir.check_space(need)
}

/// Untimed preparation of every local target's files, targets in parallel; returns
/// warnings about the page cache.
fn prepare_files(
    set: &TargetSet,
    plans: &[DataPlan],
    data: &DataSpec,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Vec<String>, EngineError> {
    let results: Vec<Result<Vec<String>, EngineError>> = std::thread::scope(|s| {
        let handles: Vec<_> = set
            .local
            .iter()
            .zip(plans)
            .map(|(t, plan)| s.spawn(move || prepare_target_files(t, plan, data, stop)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(EngineError::Setup("preparing files failed".into())))
            })
            .collect()
    });
    let mut warnings = Vec::new();
    for r in results {
        for w in r? {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    Ok(warnings)
}

fn prepare_target_files(
    t: &LocalTarget,
    plan: &DataPlan,
    data: &DataSpec,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Vec<String>, EngineError> {
    if matches!(t.prepared, PreparedTarget::Null) {
        return Ok(Vec::new());
    }
    // A device or image prepared for reading only is never written, its layout included.
    if let PreparedTarget::Device {
        check,
        writable: false,
    } = &t.prepared
        && data.writes_target()
    {
        return Err(EngineError::DeviceRefused {
            path: check.path.clone(),
            what: "what it holds, and it was prepared for reading only".into(),
        });
    }
    let workdir = t.prepared.workdir();
    if data.rw.reads() {
        lay_out(&plan.owned_files, workdir, data, t.alignment, stop)?;
        set_cache_state(&plan.files, data)
    } else {
        create_for_write(&plan.owned_files, workdir, data)?;
        Ok(Vec::new())
    }
}

/// What every worker of a rank shares.
struct WorkerCtx<'a, C: Clock> {
    clock: &'a C,
    rank: u32,
    host: String,
}

fn run_worker<C: Clock>(
    ctx: &WorkerCtx<'_, C>,
    t: &LocalTarget,
    plan: &DataPlan,
    (worker, index): (usize, usize),
    control: &PhaseControl,
) -> Result<WorkerReport, String> {
    let setup = WorkerSetup {
        plan,
        worker: &plan.workers[worker],
        index,
        control,
        clock: ctx.clock,
        rank: ctx.rank,
        host: &ctx.host,
        alignment: t.alignment,
        count: plan.workers[worker].blocks,
        isolated: true,
        // A target's workers have no flow group (fio's flow is iolab fio's).
        flows: &iolab_engine::runner::Flows::default(),
    };
    run_data_worker(&setup).map_err(|e| format!("target {}: {e}", t.target.entry.id))
}

/// All local targets' workers in one phase; worker i belongs to target map[i].0.
fn all_at_once<C: Clock>(
    env: &Env<'_>,
    ctx: &WorkerCtx<'_, C>,
    name: &str,
    set: &TargetSet,
    plans: &[DataPlan],
) -> Result<(PhaseRun, Vec<UnitRow>), EngineError> {
    let map: Vec<(usize, usize)> = plans
        .iter()
        .enumerate()
        .flat_map(|(t, p)| (0..p.workers.len()).map(move |w| (t, w)))
        .collect();
    // Each worker's target, for the live page's target rows (--serve).
    let units: Vec<u32> = map
        .iter()
        .map(|&(t, _)| set.local[t].index as u32)
        .collect();
    let env = env.with_units(&units);
    let capture = Capture::new(map.len());
    let run = run_phase(&env, ctx.clock, name, map.len(), false, |i, control| {
        let (t, w) = map[i];
        capture.keep(
            i,
            run_worker(ctx, &set.local[t], &plans[t], (w, i), control),
        )
    })?;
    let rows = (0..plans.len())
        .map(|t| {
            let workers: Vec<usize> = (0..map.len()).filter(|&i| map[i].0 == t).collect();
            capture.row(set.local[t].index as u32, &workers, ctx.rank, &ctx.host)
        })
        .collect();
    Ok((run, gather_rows(env.comm, rows)?))
}

/// One phase per target, in the order of the shared list; every rank takes part in
/// each (with no workers unless the target is its own).
fn one_at_a_time<C: Clock>(
    env: &Env<'_>,
    ctx: &WorkerCtx<'_, C>,
    name: &str,
    set: &TargetSet,
    plans: &[DataPlan],
) -> Result<(Vec<PhaseRun>, Vec<UnitRow>), EngineError> {
    let comm = env.comm;
    let mut runs = Vec::new();
    let mut rows = Vec::new();
    for (g, target) in set.all.iter().enumerate() {
        let mine = set.local.iter().position(|l| l.index == g);
        let n = mine.map_or(0, |t| plans[t].workers.len());
        let capture = Capture::new(n);
        let phase_name = format!("{name} target {}", target.entry.id);
        let units = vec![g as u32; n];
        let env = env.with_units(&units);
        let run = run_phase(&env, ctx.clock, &phase_name, n, false, |i, control| {
            let Some(t) = mine else {
                return Err("a worker was started for another rank's target".to_string());
            };
            capture.keep(
                i,
                run_worker(ctx, &set.local[t], &plans[t], (i, i), control),
            )
        })?;
        let local: Vec<UnitRow> = mine
            .map(|_| capture.row(g as u32, &(0..n).collect::<Vec<_>>(), ctx.rank, &ctx.host))
            .into_iter()
            .collect();
        rows.extend(gather_rows(comm, local)?);
        let interrupted = run.interrupted;
        runs.push(run);
        if !comm.all_ok(!interrupted) {
            break;
        }
    }
    Ok((runs, rows))
}

/// After a write, records which files now hold complete data, so a read that follows
/// (this run's --read, or a later run after --keep) reads them instead of laying out.
/// A record that cannot be written (the target's file system is full) is a warning: the
/// measurement stands, a later read lays the file out again.
fn record_complete(
    set: &TargetSet,
    plans: &[DataPlan],
    data: &DataSpec,
    rows: &[UnitRow],
) -> Vec<String> {
    let mut warnings = Vec::new();
    let covers_all = !data.rw.is_random() || data.random == RandomKind::FullCoverage;
    if !data.rw.writes() || data.rw.is_mixed() || !covers_all {
        return warnings;
    }
    let verify = VerifyInfo::of(data);
    for (t, plan) in set.local.iter().zip(plans) {
        let Some(workdir) = t.prepared.workdir() else {
            continue;
        };
        let Some(row) = rows.iter().find(|r| r.unit == t.index as u32) else {
            continue;
        };
        if row.measure.error_count > 0 || row.completed.len() != plan.workers.len() {
            continue;
        }
        let all_done = plan
            .workers
            .iter()
            .zip(&row.completed)
            .all(|(w, c)| *c >= w.blocks);
        for (k, f) in plan.owned_files.iter().enumerate() {
            let done = if data.layout == Layout::Shared {
                all_done
            } else {
                row.completed[k] * plan.block_size >= f.size
            };
            let info = FileInfo {
                size: f.size,
                verify,
            };
            if done && let Err(e) = workdir.set_file_info(&f.path, &info) {
                warnings.push(format!(
                    "target {}: {e}; a later read of it lays its file out again",
                    t.target.entry.id
                ));
            }
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_named_by_rank() {
        assert_eq!(
            by_rank(Path::new("/t/iolab-work/data.r0.t3"), 5),
            PathBuf::from("/t/iolab-work/data.r5.t3")
        );
        assert_eq!(
            by_rank(Path::new("/t/iolab-work/data.shared"), 2),
            PathBuf::from("/t/iolab-work/data.r2.shared")
        );
    }
}
