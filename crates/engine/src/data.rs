//! A data workload from start to end on every rank: [`run_data`] checks that ranks agree
//! on the spec, plans, prepares files (lay out for reads, create for writes, cache
//! state), runs the timed phase and, for `--verify` writes, a read-back phase that checks
//! every block written. [`DataOptions`] lets studies and IO500 chain phases ("read
//! exactly what the write did"). What is checked before the phase runs is in
//! `preflight`.

use std::collections::BTreeMap;

use iolab_core::result::{PhaseKind, PhaseResult};
use iolab_core::spec::{BackendKind, CacheMode, DataSpec, FioSettings};
use iolab_core::units::{ByteCount, Nanos};

use crate::assemble::{PhaseMeta, assemble};
use crate::clock::Clock;
use crate::error::EngineError;
use crate::layout::{create_for_write, lay_out, set_cache_state};
use crate::phase::{Env, run_phase};
use crate::plan::{DataPlan, DataTarget, FileNames, PlanContext, StartRule, plan_data};
use crate::target::{PreparedTarget, agree};
use crate::worker::{WorkerSetup, run_data_worker};

mod conclude;
mod params;
mod preflight;
mod together;
mod warnings;

pub use params::params_of;
pub use preflight::{
    check_cpus, check_kept_for, check_ranks_agree, resolve_read_shift, set_build_revision,
};
use preflight::{check_space, check_visible, one_dir, rounding_note};
pub use together::{
    DataJob, JobRun, JobsExit, JobsRun, StatusEvery, WorkerRow, phase_of_rows, run_data_jobs,
};
use warnings::cache_warning;
pub(crate) use warnings::memory_total;
pub use warnings::{client_cache_warning, client_write_warning};

/// How a data phase fits into a larger run.
#[derive(Clone, Debug, Default)]
pub struct DataOptions {
    /// Phase name (default: the workload's, e.g. "randread-4KiB").
    pub name: Option<String>,
    pub repetition: u32,
    /// Extra coordinates (a study's sweep values).
    pub params: BTreeMap<String, String>,
    /// Work on exactly the blocks each worker (by global index) completed in an earlier
    /// phase: IO500 reads what its stonewalled writes wrote.
    pub written_blocks: Option<Vec<u64>>,
    /// Skip the read-back phase after a --verify write.
    pub no_verify_pass: bool,
    /// The caller keeps or empties the page cache itself and says so (IO500's policy):
    /// the engine's page-cache advice, which names `iolab run` options, is left out.
    pub own_cache_policy: bool,
    /// What the data files are called (IOR's names for the modes named after IOR).
    pub names: FileNames,
    /// I/Os each worker issues when size-based, instead of one per block of its share:
    /// IOR -z -z draws `-s` random transfers over a file of any size.
    pub ops_per_worker: Option<u64>,
    /// The rank whose data each rank reads, by rank (IOR -Z), instead of a shift; the same
    /// list on every rank.
    pub read_from: Option<Vec<u32>>,
    /// The workload settings fio's options become (a plain workload: their default),
    /// taken as they are: the plan holds them and the workers read them.
    pub fio: FioSettings,
}

/// The phases a data workload produced.
#[derive(Debug)]
pub struct DataOutcome {
    pub phases: Vec<PhaseResult>,
    /// I/Os completed by each worker (global index) in the main phase.
    pub completed: Vec<u64>,
    /// Files this rank wrote or laid out (to remove at cleanup).
    pub files: Vec<std::path::PathBuf>,
}

/// Runs a data workload on every rank. Rank 0's `phases` are the results to report; the
/// other ranks get the same.
pub fn run_data<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    spec: &DataSpec,
    target: &PreparedTarget,
    opts: &DataOptions,
) -> Result<DataOutcome, EngineError> {
    let job = ReadyJob::new(env, spec, target, opts)?;
    // --steady-state: the phase stops once steady, judged on all ranks' counts.
    let watch = job.spec.steady().map(crate::phase::SteadyWatch::whole);
    let run = run_workers(
        &watch.as_ref().map_or(*env, |w| env.with_steady(w)),
        clock,
        &job.meta.name,
        &job.plan,
        job.alignment,
        job.counts.clone(),
    )?;
    let completed = run.completed_by_worker();
    let mut main = assemble(job.meta.clone(), &run);
    if let Some(w) = &watch {
        main.extra.extend(w.figures(0));
    }
    let mut phases = vec![main];
    phases.extend(job.conclude(env, clock, &completed, run.errors, run.interrupted)?);
    Ok(DataOutcome {
        phases,
        completed,
        files: job.files(),
    })
}

/// A data workload ready to run on this rank: spec settled, planned, checked, its files
/// prepared and the page cache in the state it asks for.
pub(crate) struct ReadyJob<'a> {
    pub spec: DataSpec,
    pub target: &'a PreparedTarget,
    pub data_target: DataTarget,
    pub plan: DataPlan,
    pub alignment: u64,
    /// The main phase's name, parameters, spec and warnings.
    pub meta: PhaseMeta,
    /// I/Os each of this rank's workers does when size-based.
    pub counts: Vec<u64>,
    pub opts: &'a DataOptions,
}

/// A data phase's name, parameters and `warnings`, as stored; with `read_shift`, which
/// rank's data each rank read (the resolved shift, default or asked for).
fn data_phase_meta(
    spec: &DataSpec,
    ranks: u32,
    read_shift: u32,
    opts: &DataOptions,
    warnings: Vec<String>,
) -> PhaseMeta {
    let mut params = params_of(spec, ranks);
    if spec.rw.reads() && read_shift > 0 {
        params.insert("read_shift".into(), read_shift.to_string());
    }
    params.extend(opts.params.clone());
    PhaseMeta {
        name: opts.name.clone().unwrap_or_else(|| spec.name()),
        kind: Some(PhaseKind::Data),
        params,
        repetition: opts.repetition,
        spec: serde_json::to_value(spec).unwrap_or_default(),
        warnings,
    }
}

impl<'a> ReadyJob<'a> {
    /// Everything before the timed phase. Collective.
    pub(crate) fn new(
        env: &Env<'_>,
        spec: &DataSpec,
        target: &'a PreparedTarget,
        opts: &'a DataOptions,
    ) -> Result<ReadyJob<'a>, EngineError> {
        let comm = env.comm;
        let (spec, mut warnings) = settle(spec);
        check_ranks_agree(comm, "the workload", &spec)?;
        let on_host = crate::memory::ranks_on_this_host(comm);
        agree(comm, crate::memory::check_buffers_here(&spec, on_host))?;
        let data_target = target.data_target();
        let (plan, ctx) = plan_here(comm, &spec, &data_target, opts)?;
        let loops = u64::from(opts.fio.loops.max(1));
        agree(comm, crate::memory::check_maps_here(&plan, on_host))?;
        let alignment = check_alignment(&spec, &data_target)?;
        agree(comm, check_cpus(spec.cpus.as_ref()))?;
        if opts.fio.verify_existing {
            if spec.rw.writes() || !spec.verify {
                return Err(EngineError::Setup(
                    "a verify-only phase reads with verify on and never writes".into(),
                ));
            }
            let kept = crate::kept::check_kept(&plan.files, target.workdir(), &spec);
            agree(comm, kept)?;
        }
        check_space(comm, &plan, target)?;

        // Untimed preparation, then every rank waits for all files to exist.
        let prepared = if opts.fio.verify_existing {
            Ok(())
        } else {
            prepare_files(
                &plan,
                target,
                &spec,
                alignment,
                opts.fio.lay_out_writes,
                env.interrupt,
            )
        };
        agree(comm, prepared)?;
        comm.barrier();
        agree(comm, check_visible(&plan, &data_target, comm.host()))?;
        if let DataTarget::Dir(dir) = &data_target
            && let Some(w) = iolab_backend::files::client_cache(dir)
                .and_then(|c| client_write_warning(&c, &spec))
        {
            warnings.push(w);
        }
        read_cache(comm, &plan, &spec, &data_target, opts, &mut warnings)?;
        let meta = data_phase_meta(&spec, comm.size(), ctx.read_shift, opts, warnings);
        let counts = plan
            .workers
            .iter()
            .map(|w| {
                opts.ops_per_worker
                    .unwrap_or(w.blocks.saturating_mul(loops))
            })
            .collect();
        Ok(ReadyJob {
            spec,
            target,
            data_target,
            plan,
            alignment,
            meta,
            counts,
            opts,
        })
    }

    /// The files this rank wrote or laid out, to remove at cleanup.
    pub(crate) fn files(&self) -> Vec<std::path::PathBuf> {
        if matches!(
            self.target,
            PreparedTarget::Device { .. } | PreparedTarget::Null
        ) {
            return Vec::new();
        }
        crate::layout::paths(&self.plan.owned_files)
    }
}

/// A read phase's page cache: put in the state the spec asks for (unless fio's
/// invalidate=1 drops it as the workers open their files), and a warning where a cache
/// may answer the reads instead of the storage. Collective.
fn read_cache(
    comm: &dyn iolab_comm::Comm,
    plan: &DataPlan,
    spec: &DataSpec,
    data_target: &DataTarget,
    opts: &DataOptions,
    warnings: &mut Vec<String>,
) -> Result<(), EngineError> {
    if spec.rw.reads() && *data_target != DataTarget::Null {
        // fio's invalidate=1 drops the files' pages when the workers open them
        // (plan.fio.invalidate_at_open), as fio does, and nothing before.
        if !(plan.fio.invalidate_at_open && spec.cache == CacheMode::Cold && !spec.drop_caches) {
            warnings.extend(agree(comm, set_cache_state(&plan.files, spec))?);
        }
        // Dropped from the page cache first and each block read once: the storage
        // answers, as the warning's own advice says.
        let cold_once = spec.cache == CacheMode::Cold && spec.runtime.is_none();
        // A client's own cache (ceph-fuse, weed mount) outlives every page-cache
        // control: said whatever the cache policy, a suite's own included.
        let client = match data_target {
            DataTarget::Dir(dir) => iolab_backend::files::client_cache(dir),
            _ => None,
        };
        if let Some(w) = client.and_then(|c| client_cache_warning(&c, spec.direct)) {
            warnings.push(w);
        } else if !spec.direct
            && !cold_once
            && !opts.own_cache_policy
            // An export is read from its server: no page cache here to serve it.
            && !iolab_backend::capabilities_of(spec.backend, 1).reaches_export
        {
            cache_warning(plan, warnings);
        }
    }
    Ok(())
}

/// This rank's plan of a settled spec, holding the fio settings as given, with when its
/// workers start and how much they issue; and the context it was planned in. Collective.
fn plan_here(
    comm: &dyn iolab_comm::Comm,
    spec: &DataSpec,
    data_target: &DataTarget,
    opts: &DataOptions,
) -> Result<(DataPlan, PlanContext), EngineError> {
    let ctx = PlanContext {
        rank: comm.rank(),
        ranks: comm.size(),
        read_shift: resolve_read_shift(spec, comm, one_dir(comm, data_target)?),
        written_blocks: opts.written_blocks.clone(),
        names: opts.names.clone(),
        files_per_worker: opts.fio.files_per_worker,
        start_offset: opts.fio.start_offset.get(),
        offset_increment: opts.fio.offset_increment.get(),
        read_from: opts
            .read_from
            .as_ref()
            .and_then(|from| from.get(comm.rank() as usize).copied()),
    };
    let mut plan = agree(
        comm,
        plan_data(spec, data_target, &ctx).map_err(EngineError::from),
    )?;
    plan.fio = opts.fio.clone();
    plan.start = StartRule {
        delay: opts.fio.start_delay.map_or(Nanos::ZERO, |d| d.nanos()),
        after: Vec::new(),
        ramp: opts
            .fio
            .ramp
            .or(spec.ramp)
            .map_or(Nanos::ZERO, |d| d.nanos()),
        never: false,
    };
    plan.io_limit = io_limit(spec, &opts.fio);
    if let Some(i) = opts.fio.timeline_interval.filter(|i| i.0 > 0) {
        plan.interval = i;
    }
    Ok((plan, ctx))
}

/// Size-based: the I/Os each worker issues at most, counted from the end of its ramp.
/// fio's number_ios times the passes (time-based jobs ignore it, keep_running, as fio's
/// do; a trimwrite's trim and write are two I/Os, as fio doubles number_ios for it), or
/// fio's io_size in I/Os.
fn io_limit(spec: &DataSpec, fio: &FioSettings) -> Option<u64> {
    if spec.runtime.is_some() {
        return None;
    }
    let loops = u64::from(fio.loops.max(1));
    let pairs = if spec.rw.trims() && spec.rw.writes() {
        2
    } else {
        1
    };
    fio.number_ios
        .map(|n| n.saturating_mul(loops).saturating_mul(pairs))
        .or(fio.io_limit)
}

/// The spec as it will run, with what changed and other advice: io_uring falls back to
/// psync where the kernel lacks it.
fn settle(spec: &DataSpec) -> (DataSpec, Vec<String>) {
    let mut spec = spec.clone();
    let mut warnings = Vec::new();
    if spec.backend == BackendKind::Uring
        && let Err(why) = iolab_backend::uring_available()
    {
        warnings.push(format!(
            "io_uring is not available here ({why}); this phase ran with psync instead"
        ));
        spec.backend = BackendKind::Psync;
    }
    if matches!(spec.backend, BackendKind::Psync | BackendKind::Sync) && spec.queue_depth > 1 {
        warnings.push(format!(
            "{} completes one I/O at a time per thread: --queue-depth {} had no effect (use --backend uring)",
            spec.backend.name(),
            spec.queue_depth
        ));
    }
    if let Some(w) = rounding_note(&spec) {
        warnings.push(w);
    }
    (spec, warnings)
}

/// The target's direct-I/O alignment (tried on the target when the kernel does not say
/// and the run asks for direct I/O); a direct block size off it is refused.
fn check_alignment(spec: &DataSpec, target: &DataTarget) -> Result<u64, EngineError> {
    let path = match target {
        DataTarget::Dir(d) => d.as_path(),
        DataTarget::Device { path, .. } => path.as_path(),
        DataTarget::Null => std::path::Path::new("/"),
    };
    let alignment = if spec.direct && *target != DataTarget::Null {
        iolab_backend::files::tried_direct_io_alignment(path)
    } else {
        iolab_backend::files::direct_io_alignment(path)
    };
    // Every size and offset is a multiple of the smallest of these.
    let [read_mix, write_mix] = [&spec.block_sizes, &spec.write_block_sizes]
        .map(|m| m.as_ref().map(|m| ByteCount(m.smallest())));
    let sizes = [
        (
            "--block-size",
            read_mix.is_none().then_some(spec.block_size),
        ),
        ("--write-block-size", spec.write_block_size),
        ("--block-sizes", read_mix),
        ("--write-block-sizes", write_mix),
        ("--block-align", spec.block_align),
    ];
    for (option, size) in sizes.into_iter().filter_map(|(o, s)| Some((o, s?))) {
        if spec.direct && !size.get().is_multiple_of(alignment) && *target != DataTarget::Null {
            return Err(EngineError::Spec(iolab_core::SpecError::new(
                option,
                format!(
                    "{size} is not a multiple of {alignment} bytes, the direct-I/O alignment of the target; use a multiple of {} or drop --direct",
                    ByteCount(alignment)
                ),
            )));
        }
    }
    Ok(alignment)
}

fn prepare_files(
    plan: &DataPlan,
    target: &PreparedTarget,
    spec: &DataSpec,
    alignment: u64,
    lay_out_writes: bool,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(), EngineError> {
    if matches!(target, PreparedTarget::Null) {
        return Ok(());
    }
    // A device or image prepared for reading only is never written: not by the phase,
    // and not by the layout of --verify's blocks for its reads.
    if let PreparedTarget::Device {
        check,
        writable: false,
    } = target
        && spec.writes_target()
    {
        return Err(EngineError::DeviceRefused {
            path: check.path.clone(),
            what: "what it holds, and it was prepared for reading only (reads with verification lay out their own data first)".into(),
        });
    }
    if spec.rw.needs_data() || lay_out_writes {
        lay_out(&plan.owned_files, target.workdir(), spec, alignment, stop)?;
    } else {
        create_for_write(&plan.owned_files, target.workdir(), spec)?;
    }
    Ok(())
}

fn run_workers<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    name: &str,
    plan: &DataPlan,
    alignment: u64,
    counts: Vec<u64>,
) -> Result<crate::phase::PhaseRun, EngineError> {
    let comm = env.comm;
    let host = comm.host().to_string();
    let wear_out = plan.spec.wear_out && plan.spec.stonewall.is_some();
    let flows = crate::worker::flow::Flows::new([plan.fio.flow]);
    run_phase(
        env,
        clock,
        name,
        plan.workers.len(),
        wear_out,
        |i, control| {
            let setup = WorkerSetup {
                plan,
                worker: &plan.workers[i],
                index: i,
                control,
                clock,
                rank: comm.rank(),
                host: &host,
                alignment,
                count: counts[i],
                isolated: false,
                flows: &flows,
            };
            run_data_worker(&setup).map_err(|e| e.to_string())
        },
    )
}
