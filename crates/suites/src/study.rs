//! Running a study: [`run_study`] runs the phases a study file expands to, in order, on one
//! prepared target, handing each result to the caller the moment it ends (so it is
//! stored at once). Files written by a sweep point are kept for the following phases of
//! that point (a read reads what the write wrote) and removed before the next point. A
//! metadata phase builds its tree, runs its operations (one result each, named
//! `<phase>-<op>`) and removes the tree again. An S3 phase runs its operations against
//! the endpoints an [`ObjectConnector`] reaches (one result each) and removes the objects
//! it wrote.
//! [`estimate`] says what a study needs before anything is written: capacity and time;
//! [`target_backend`] which backend its target is prepared for.

use iolab_core::SpecError;
use iolab_core::result::PhaseResult;
use iolab_core::spec::{BackendKind, MetaBackendKind, MetaOp, PhaseSpec, PlannedPhase};
pub use iolab_core::spec::{PhaseEstimate, StudyEstimate};
use iolab_core::units::{ByteCount, BytesPerSec, Nanos};

use iolab_engine::Clock;
use iolab_engine::EngineError;
use iolab_engine::Env;
use iolab_engine::PreparedTarget;
use iolab_engine::{DataOptions, run_data};
use iolab_engine::{DataTarget, shares};
use iolab_engine::{MetaOptions, finish_meta, run_meta};
use iolab_engine::{ObjectFactory, ObjectOptions, finish_s3, run_s3, start_s3};

/// How a study ended.
#[derive(Debug, Default)]
pub struct StudyOutcome {
    pub phases_run: usize,
    pub interrupted: bool,
    /// Anything left behind (a metadata tree that could not be removed).
    pub warnings: Vec<String>,
}

/// What runs an S3 phase once its clients can be made: the phases it produced.
pub type WithFactory<'b> =
    dyn FnMut(ObjectFactory<'_>, &ObjectOptions) -> Result<Vec<PhaseResult>, EngineError> + 'b;

/// How the S3 phases of a study reach their servers: the command line resolves the
/// endpoints, keys and TLS once, and makes each worker's client.
pub trait ObjectConnector: Sync {
    /// Runs `f` with the factory of `spec`'s clients and the options its phases run with.
    fn with_factory(
        &self,
        spec: &iolab_core::spec::S3Spec,
        f: &mut WithFactory<'_>,
    ) -> Result<Vec<PhaseResult>, EngineError>;
}

/// Where and how a study runs: its phases in order, the prepared target, whether the
/// last point's files (and objects, and tree) stay (`keep`), and how S3 phases reach
/// their servers (S3 phases need it).
pub struct StudyRun<'a> {
    pub phases: &'a [PlannedPhase],
    pub target: &'a PreparedTarget,
    pub keep: bool,
    pub objects: Option<&'a dyn ObjectConnector>,
}

/// A phase after a stonewalled write of the same point works on exactly what it wrote
/// (IOR's read after -D): the last data phase's point, repetition, completed counts and
/// whether it was a stonewalled write.
type Previous = Option<(usize, u32, Vec<u64>, bool)>;

/// Runs the study's phases in order; `on_phase` receives every result as soon as it
/// ends.
pub fn run_study<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    run: &StudyRun<'_>,
    on_phase: &mut dyn FnMut(PhaseResult),
) -> Result<StudyOutcome, EngineError> {
    let (phases, target, keep) = (run.phases, run.target, run.keep);
    let mut outcome = StudyOutcome::default();
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    let mut previous: Previous = None;
    for (i, planned) in phases.iter().enumerate() {
        if env.interrupt.load(std::sync::atomic::Ordering::Relaxed) {
            outcome.interrupted = true;
            break;
        }
        let group = (planned.point, planned.repetition);
        let last_of_group = phases
            .get(i + 1)
            .is_none_or(|n| (n.point, n.repetition) != group);
        // What is kept at the end (files, objects, a tree) is the last point's.
        let keep_last = keep && i + 1 == phases.len();
        let results = match &planned.spec {
            PhaseSpec::S3(spec) => {
                previous = None;
                let (results, warnings) = s3_phase(env, clock, run, planned, spec, keep_last)?;
                outcome.warnings.extend(warnings);
                results
            }
            PhaseSpec::Meta(spec) => {
                previous = None;
                let (results, warnings) = meta_phase(env, clock, target, planned, spec, keep_last)?;
                outcome.warnings.extend(warnings);
                results
            }
            PhaseSpec::Data(spec) => {
                let result = data_phase(env, clock, target, planned, spec, &previous)?;
                files.extend(result.files.iter().cloned());
                let stonewalled = spec.stonewall.is_some() && spec.rw.writes();
                previous = Some((group.0, group.1, result.completed.clone(), stonewalled));
                result.phases
            }
        };
        let interrupted = results.iter().any(|p| p.interrupted);
        for p in results {
            on_phase(p);
        }
        outcome.phases_run += 1;
        if interrupted {
            outcome.interrupted = true;
            break;
        }
        if last_of_group && !keep_last {
            remove_files(env, target, &mut files)?;
        }
    }
    Ok(outcome)
}

/// An S3 phase against the endpoints `run.objects` reaches: its results and warnings
/// (objects it could not remove).
fn s3_phase<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    run: &StudyRun<'_>,
    planned: &PlannedPhase,
    spec: &iolab_core::spec::S3Spec,
    keep_objects: bool,
) -> Result<(Vec<PhaseResult>, Vec<String>), EngineError> {
    let Some(connector) = run.objects else {
        return Err(EngineError::Setup(format!(
            "phase {} is an S3 phase, and this command cannot run one",
            planned.name
        )));
    };
    let mut warnings = Vec::new();
    let results = connector.with_factory(spec, &mut |factory, base| {
        let opts = ObjectOptions {
            name_prefix: Some(planned.name.clone()),
            repetition: planned.repetition,
            params: planned.coordinates.clone(),
            ..base.clone()
        };
        let (plan, made) = start_s3(env.comm, spec, factory, &opts)?;
        let out = run_s3(env, clock, &plan, made, factory, &opts);
        warnings.extend(finish_s3(env.comm, &out, factory, keep_objects));
        Ok(out.phases)
    })?;
    Ok((results, warnings))
}

/// A metadata phase: it builds its tree, runs its operations and removes the tree
/// (unless `keep_tree`); its results and warnings.
fn meta_phase<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    target: &PreparedTarget,
    planned: &PlannedPhase,
    spec: &iolab_core::spec::MetaSpec,
    keep_tree: bool,
) -> Result<(Vec<PhaseResult>, Vec<String>), EngineError> {
    let opts = MetaOptions {
        name_prefix: Some(planned.name.clone()),
        repetition: planned.repetition,
        params: planned.coordinates.clone(),
        ..MetaOptions::default()
    };
    let target = if spec.backend == MetaBackendKind::Null {
        &PreparedTarget::Null
    } else {
        target
    };
    let result = run_meta(env, clock, spec, target, &opts)?;
    let warnings = finish_meta(env.comm, spec, target, &opts, &result, keep_tree)?;
    Ok((result.phases, warnings))
}

/// A data phase; after a stonewalled write of the same point (`previous`), a read works
/// on exactly what it wrote.
fn data_phase<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    target: &PreparedTarget,
    planned: &PlannedPhase,
    spec: &iolab_core::spec::DataSpec,
    previous: &Previous,
) -> Result<iolab_engine::DataOutcome, EngineError> {
    let group = (planned.point, planned.repetition);
    let written_blocks = match previous {
        Some((point, rep, completed, stonewalled))
            if (*point, *rep) == group && *stonewalled && spec.rw.reads() =>
        {
            Some(completed.clone())
        }
        _ => None,
    };
    let opts = DataOptions {
        name: Some(planned.name.clone()),
        repetition: planned.repetition,
        params: planned.coordinates.clone(),
        written_blocks,
        no_verify_pass: false,
        own_cache_policy: false,
        ..DataOptions::default()
    };
    // A phase on the null backend touches no storage, whatever the study's target:
    // nothing is laid out for it.
    let target = if spec.backend == BackendKind::Null {
        &PreparedTarget::Null
    } else {
        target
    };
    run_data(env, clock, spec, target, &opts)
}

fn remove_files(
    env: &Env<'_>,
    target: &PreparedTarget,
    files: &mut Vec<std::path::PathBuf>,
) -> Result<(), EngineError> {
    if let Some(w) = target.workdir() {
        // Every rank removes its own files once all ranks are done reading.
        env.comm.barrier();
        files.sort();
        files.dedup();
        w.remove_files(files)?;
    }
    files.clear();
    Ok(())
}

/// An S3 phase keeps nothing on the study's target; its time is its duration per
/// operation, or its objects moved at the assumed speed.
fn estimate_s3(
    spec: &iolab_core::spec::S3Spec,
    _ranks: u32,
    bandwidth: BytesPerSec,
    iops: f64,
) -> PhaseEstimate {
    let ops = spec.ops.len() as u64;
    let (time, time_based) = match spec.duration {
        Some(d) => (Nanos(d.nanos().0.saturating_mul(ops)), true),
        None => {
            let bytes = spec.objects.saturating_mul(spec.object_size.get()) as f64;
            let secs = (bytes / bandwidth.get().max(1.0)).max(spec.objects as f64 / iops.max(1.0));
            (Nanos((secs * ops as f64 * 1e9) as u64), false)
        }
    };
    PhaseEstimate {
        data_bytes: 0,
        time,
        time_based,
        files: 0,
        dirs: 0,
    }
}

/// The backend the study's target is prepared for: the first phase's that touches
/// storage, so a study whose phases run `--set backend=nfs` prepares the export of
/// --nfs-url (its metadata phases' `nfs` is the same NFS client).
pub fn target_backend(phases: &[PlannedPhase]) -> BackendKind {
    phases
        .iter()
        .find_map(|p| match &p.spec {
            PhaseSpec::Data(s) if iolab_backend::capabilities_of(s.backend, 1).touches_storage => {
                Some(s.backend)
            }
            PhaseSpec::Meta(m) if m.backend == MetaBackendKind::Nfs => Some(BackendKind::Nfs),
            _ => None,
        })
        .unwrap_or(BackendKind::Psync)
}

/// Estimates capacity and time for `phases` run by `ranks` ranks, assuming data moves
/// at `bandwidth`, or `iops` I/Os per second when that is slower, where a phase is not
/// time based. A metadata phase whose tree cannot be planned for that many ranks is
/// refused, naming its sweep and phase (the run would refuse it).
pub fn estimate(
    phases: &[PlannedPhase],
    ranks: u32,
    bandwidth: BytesPerSec,
    iops: f64,
) -> Result<StudyEstimate, SpecError> {
    let mut out = Vec::new();
    let mut capacity = 0u64;
    let mut group_bytes = 0u64;
    let mut group = None;
    for p in phases {
        let spec = match &p.spec {
            PhaseSpec::Data(spec) => spec,
            PhaseSpec::S3(spec) => {
                let e = estimate_s3(spec, ranks, bandwidth, iops);
                out.push(e);
                continue;
            }
            PhaseSpec::Meta(spec) => {
                let e = estimate_meta(spec, ranks, iops).map_err(|e| {
                    SpecError::new(
                        format!("sweep '{}', phase '{}' on {ranks} ranks", p.sweep, p.name),
                        e.to_string(),
                    )
                })?;
                if group != Some((p.point, p.repetition)) {
                    group = Some((p.point, p.repetition));
                    group_bytes = 0;
                }
                capacity = capacity.max(group_bytes.saturating_add(e.data_bytes));
                out.push(e);
                continue;
            }
        };
        let e = estimate_data(spec, ranks, bandwidth, iops);
        if group != Some((p.point, p.repetition)) {
            group = Some((p.point, p.repetition));
            group_bytes = 0;
        }
        // Phases of a point share files when they have the same shape; count the largest.
        group_bytes = group_bytes.max(e.data_bytes);
        capacity = capacity.max(group_bytes);
        out.push(e);
    }
    let time = Nanos(out.iter().fold(0u64, |a, e| a.saturating_add(e.time.0)));
    Ok(StudyEstimate {
        phases: out,
        capacity,
        time,
    })
}

/// A data phase: the bytes its files hold (none on the null backend) and its time, the
/// runtime when time based, else its bytes at `bandwidth` or its I/Os at `iops`,
/// whichever is slower.
fn estimate_data(
    spec: &iolab_core::spec::DataSpec,
    ranks: u32,
    bandwidth: BytesPerSec,
    iops: f64,
) -> PhaseEstimate {
    // Saturating throughout: an estimate of 16 EiB is refused by the space check
    // with the figure; an overflow panicked (debug) or wrapped to a small need.
    let workers = u64::from(spec.threads) * u64::from(ranks.max(1));
    let target = DataTarget::Dir(".".into());
    let sum = |s: Vec<u64>| s.iter().fold(0u64, |a, b| a.saturating_add(*b));
    let blocks: u64 = match spec.size {
        // Every worker moves --size: one share times the workers, without a vector
        // of a share per worker (a plan for a million ranks of 4096 threads).
        Some(_) => shares(spec, &target, 1)
            .map(|s| sum(s).saturating_mul(workers))
            .unwrap_or(0),
        None => shares(spec, &target, workers.min(1 << 20) as u32)
            .map(sum)
            .unwrap_or(0),
    };
    let data_bytes = blocks.saturating_mul(spec.block_size.get());
    let (time, time_based) = match spec.runtime.or(spec.stonewall) {
        Some(t) => (t.nanos(), spec.runtime.is_some()),
        None => {
            let by_bytes = data_bytes as f64 / bandwidth.get().max(1.0);
            let by_ios = blocks as f64 / iops.max(1.0);
            (Nanos((by_bytes.max(by_ios) * 1e9) as u64), false)
        }
    };
    // The null backend stores nothing.
    let data_bytes = if spec.backend == BackendKind::Null {
        0
    } else {
        data_bytes
    };
    PhaseEstimate {
        data_bytes,
        time,
        time_based,
        files: 0,
        dirs: 0,
    }
}

/// A metadata phase: its files' bytes, and the create stonewall plus every operation over
/// all files at `rate` files per second.
fn estimate_meta(
    spec: &iolab_core::spec::MetaSpec,
    ranks: u32,
    rate: f64,
) -> Result<PhaseEstimate, SpecError> {
    let workers = u64::from(spec.threads) * u64::from(ranks.max(1));
    let files = spec.total_files_for(workers)?;
    // A shared tree's leaves hold every worker's files; private trees have leaves each.
    let leaves_per_thread = u64::from(spec.dirs_per_thread_for(workers)?);
    let dirs = if spec.shared_dir {
        leaves_per_thread
    } else {
        leaves_per_thread.saturating_mul(workers)
    };
    let file_ops = spec.ops.iter().filter(|o| o.on_files()).count() as u64;
    // One pass over every file at `rate` files per second.
    let pass = Nanos((files as f64 / rate.max(1.0) * 1e9) as u64);
    let time = match spec.runtime {
        // A stonewalled create takes its deadline; the other operations, one pass each.
        Some(t) if spec.has(MetaOp::Create) => Nanos(
            t.nanos()
                .0
                .saturating_add(pass.0.saturating_mul(file_ops.saturating_sub(1))),
        ),
        _ => Nanos(pass.0.saturating_mul(file_ops)),
    };
    let stored = match spec.backend {
        MetaBackendKind::Null => 0,
        MetaBackendKind::Posix | MetaBackendKind::Nfs => files.saturating_mul(spec.file_size.get()),
    };
    Ok(PhaseEstimate {
        data_bytes: stored,
        time,
        time_based: false,
        files,
        dirs,
    })
}

/// "2.00 TB" style figure for plans.
pub fn describe_bytes(b: u64) -> String {
    ByteCount(b).human()
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::spec::{Overrides, StudySpec};

    #[test]
    fn a_metadata_phase_needs_its_files_and_a_pass_per_operation() {
        let text = r#"
name = "md"
[[sweep]]
name = "m"
[[sweep.phase]]
name = "md"
kind = "meta"
threads = 2
files_per_dir = 1000
dirs_per_thread = 5
file_size = 4096
ops = "create,stat,read,remove"
"#;
        let study = StudySpec::from_toml(text, "md.toml").unwrap();
        let phases = study.expand("md.toml", &Overrides::default()).unwrap();
        // 2 ranks x 2 threads x 5 dirs x 1000 files = 20,000 files at 1,000 files/s.
        let e = estimate(&phases, 2, BytesPerSec(1e9), 1000.0).unwrap();
        assert_eq!(e.capacity, 20_000 * 4096);
        assert_eq!(e.time, Nanos(80 * 1_000_000_000));
        // A stonewalled create takes its deadline, the other three a pass each.
        let timed = study
            .expand(
                "md.toml",
                &Overrides {
                    set: vec![Overrides::parse_set("runtime=5s").unwrap()],
                    ..Overrides::default()
                },
            )
            .unwrap();
        assert_eq!(
            estimate(&timed, 2, BytesPerSec(1e9), 1000.0).unwrap().time,
            Nanos(65 * 1_000_000_000)
        );
    }

    #[test]
    fn null_backend_phases_need_no_capacity_but_take_their_time() {
        let text = r#"
name = "n"
[[sweep]]
name = "s"
over = { backend = ["psync", "null"] }
phase = [{ name = "p", rw = "write", threads = 2, size = "1MiB", block_size = "4KiB" }]
"#;
        let study = StudySpec::from_toml(text, "n.toml").unwrap();
        let phases = study.expand("n.toml", &Overrides::default()).unwrap();
        let e = estimate(&phases, 1, BytesPerSec(1e9), 1e9).unwrap();
        assert_eq!(e.phases[0].data_bytes, 2 << 20);
        assert_eq!(e.phases[1].data_bytes, 0);
        assert_eq!(e.capacity, 2 << 20);
        assert_eq!(e.phases[0].time, e.phases[1].time);
    }
}
