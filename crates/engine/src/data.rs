//! A data workload from start to end on every rank: [`run_data`] checks that ranks agree
//! on the spec, plans, prepares files (lay out for reads, create for writes, cache
//! state), runs the timed phase and, for `--verify` writes, a read-back phase that checks
//! every block written. [`DataOptions`] lets studies and IO500 chain phases ("read
//! exactly what the write did").

use std::collections::BTreeMap;

use iolab_comm::{Comm, CommExt};
use iolab_core::result::{PhaseKind, PhaseResult};
use iolab_core::spec::{BackendKind, CacheMode, DataSpec, Layout, Placement, RandomKind, RwKind};
use iolab_core::units::ByteCount;

use crate::assemble::{PhaseMeta, assemble};
use crate::clock::Clock;
use crate::error::EngineError;
use crate::layout::{create_for_write, lay_out, set_cache_state};
use crate::phase::{Env, RankOutcome, run_phase};
use crate::plan::{DataPlan, DataTarget, PlanContext, plan_data};
use crate::target::{PreparedTarget, agree};
use crate::workdir::{FileInfo, VerifyInfo};
use crate::worker::{WorkerSetup, run_data_worker};

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

/// The read shift a spec asks for, resolved against the topology: by default each rank
/// reads what a rank on the next host wrote (IOR -C) when the ranks work in one
/// directory (`one_dir`: the same path on every rank, a shared file system); its own data
/// on one host, on a device, or where `{host}`/`{rank}` gave each its own directory.
pub fn resolve_read_shift(spec: &DataSpec, comm: &dyn Comm, one_dir: bool) -> u32 {
    spec.read_shift.unwrap_or_else(|| {
        let topo = comm.topology();
        if topo.hosts().len() > 1 && one_dir {
            topo.ranks_per_host()
        } else {
            0
        }
    })
}

/// Says so when the size asked for is not a whole number of blocks per worker: the
/// workload moves whole blocks, and what it moves is what it reports.
fn rounding_note(spec: &DataSpec) -> Option<String> {
    let bs = spec.block_size.get().max(1);
    let (option, asked) = match (spec.size, spec.total_size) {
        (Some(s), _) => ("--size", s.get()),
        (None, Some(t)) => ("--total-size", t.get()),
        _ => return None,
    };
    let moved = asked / bs * bs;
    (moved != asked).then(|| {
        format!(
            "{option} of {asked} bytes is not a whole number of {bs}-byte blocks: {moved} bytes{} are used",
            if option == "--size" { " per thread" } else { "" }
        )
    })
}

/// Whether every rank works in the same directory (collective).
fn one_dir(comm: &dyn Comm, target: &DataTarget) -> Result<bool, EngineError> {
    let DataTarget::Dir(dir) = target else {
        return Ok(false);
    };
    let dirs: Vec<String> = comm
        .all_gather(&dir.to_string_lossy().into_owned())
        .map_err(|e| EngineError::Setup(e.to_string()))?;
    Ok(dirs.iter().all(|d| *d == dirs[0]))
}

static BUILD: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Records the revision this iolab was built from (the CLI knows it), so ranks running
/// different builds of one version are told apart at startup.
pub fn set_build_revision(revision: &str) {
    let _ = BUILD.set(revision.to_string());
}

/// "0.1.0", or "0.1.0 (3f2a9c1d0e4b)" when the revision is known.
fn build() -> String {
    match BUILD.get().filter(|r| !r.is_empty()) {
        Some(rev) => format!("{} ({rev})", env!("CARGO_PKG_VERSION")),
        None => env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// Fails unless every rank runs the same iolab build (version and revision) with the same
/// resolved spec.
pub fn check_ranks_agree<T: serde::Serialize>(
    comm: &dyn Comm,
    what: &'static str,
    value: &T,
) -> Result<(), EngineError> {
    if comm.size() == 1 {
        return Ok(());
    }
    let mine = (build(), serde_json::to_value(value).unwrap_or_default());
    let all: Vec<(String, serde_json::Value)> = comm
        .all_gather(&mine)
        .map_err(|e| EngineError::Setup(e.to_string()))?;
    let topo = comm.topology();
    for (rank, (version, spec)) in all.iter().enumerate() {
        let (v0, s0) = &all[0];
        let mismatch =
            |what: &'static str, rank0: String, other: String| EngineError::RankMismatch {
                what,
                rank: rank as u32,
                host: topo.ranks[rank].host.clone(),
                rank0,
                other,
            };
        if version != v0 {
            return Err(mismatch(
                "the iolab version",
                format!("iolab {v0}"),
                format!("iolab {version}"),
            ));
        }
        if spec != s0 {
            let (key, a, b) = first_difference(s0, spec);
            return Err(mismatch(
                what,
                format!("{key} = {a}"),
                format!("{key} = {b}"),
            ));
        }
    }
    Ok(())
}

/// The first top-level field where two JSON objects differ: (field, left, right).
fn first_difference(a: &serde_json::Value, b: &serde_json::Value) -> (String, String, String) {
    if let (Some(ma), Some(mb)) = (a.as_object(), b.as_object()) {
        for (k, va) in ma {
            let vb = mb.get(k).cloned().unwrap_or(serde_json::Value::Null);
            if *va != vb {
                return (k.clone(), va.to_string(), vb.to_string());
            }
        }
    }
    ("the spec".to_string(), a.to_string(), b.to_string())
}

pub(crate) fn params_of(spec: &DataSpec, ranks: u32) -> BTreeMap<String, String> {
    let mut p = BTreeMap::new();
    p.insert("rw".into(), spec.rw.name().into());
    p.insert("block_size".into(), spec.block_size.to_string());
    p.insert("threads".into(), spec.threads.to_string());
    p.insert("queue_depth".into(), spec.queue_depth.to_string());
    p.insert("backend".into(), spec.backend.name().into());
    p.insert("ranks".into(), ranks.to_string());
    p.insert(
        "layout".into(),
        match spec.layout {
            Layout::FilePerThread => "file-per-thread".into(),
            Layout::Shared => format!(
                "shared-{}",
                if spec.placement == iolab_core::spec::Placement::Strided {
                    "strided"
                } else {
                    "segmented"
                }
            ),
        },
    );
    p.insert(
        "io".into(),
        if spec.direct {
            "direct".into()
        } else {
            "buffered".into()
        },
    );
    if spec.rw.is_mixed() {
        p.insert("rwmix_read".into(), spec.rwmix_read.to_string());
    }
    p
}

/// Every CPU of `--cpus` must be one this process may run on (pinning to another would
/// silently fail and change the placement asked for).
pub(crate) fn check_cpus(cpus: Option<&iolab_core::units::CpuList>) -> Result<(), EngineError> {
    let Some(cpus) = cpus else {
        return Ok(());
    };
    let allowed = iolab_backend::process::allowed_cpus();
    if let Some(bad) = cpus.0.iter().find(|c| !allowed.contains(c)) {
        return Err(EngineError::Spec(iolab_core::SpecError::new(
            "--cpus",
            format!(
                "CPU {bad} is not one this process may run on ({} on {})",
                iolab_core::units::CpuList(allowed),
                iolab_comm::hostname()
            ),
        )));
    }
    Ok(())
}

/// The memory of this machine in bytes, if known.
pub(crate) fn memory_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
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
    let comm = env.comm;
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
    if spec.backend == BackendKind::Psync && spec.queue_depth > 1 {
        warnings.push(format!(
            "psync completes one I/O at a time per thread: --queue-depth {} had no effect (use --backend uring)",
            spec.queue_depth
        ));
    }
    if let Some(w) = rounding_note(&spec) {
        warnings.push(w);
    }
    check_ranks_agree(comm, "the workload", &spec)?;
    let data_target = target.data_target();
    let ctx = PlanContext {
        rank: comm.rank(),
        ranks: comm.size(),
        read_shift: resolve_read_shift(&spec, comm, one_dir(comm, &data_target)?),
        written_blocks: opts.written_blocks.clone(),
    };
    let plan = agree(
        comm,
        plan_data(&spec, &data_target, &ctx).map_err(EngineError::from),
    )?;
    let alignment = iolab_backend::files::direct_io_alignment(match &data_target {
        DataTarget::Dir(d) => d.as_path(),
        DataTarget::Device { path, .. } => path.as_path(),
        DataTarget::Null => std::path::Path::new("/"),
    });
    if spec.direct
        && !spec.block_size.get().is_multiple_of(alignment)
        && data_target != DataTarget::Null
    {
        return Err(EngineError::Spec(iolab_core::SpecError::new(
            "--block-size",
            format!(
                "{} is not a multiple of {} bytes, the direct-I/O alignment of the target; use a multiple of {} or drop --direct",
                spec.block_size,
                alignment,
                ByteCount(alignment)
            ),
        )));
    }
    agree(comm, check_cpus(spec.cpus.as_ref()))?;
    check_space(comm, &plan, target)?;

    // Untimed preparation, then every rank waits for all files to exist.
    let prepared = prepare_files(&plan, target, &spec, alignment, env.interrupt);
    agree(comm, prepared)?;
    comm.barrier();
    agree(comm, check_visible(&plan, &data_target, comm.host()))?;
    if spec.rw.reads() && data_target != DataTarget::Null {
        warnings.extend(agree(comm, set_cache_state(&plan.files, &spec))?);
        // Dropped from the page cache first and each block read once: the storage
        // answers, as the warning's own advice says.
        let cold_once = spec.cache == CacheMode::Cold && spec.runtime.is_none();
        if !spec.direct && !cold_once {
            cache_warning(&plan, &mut warnings);
        }
    }
    let name = opts.name.clone().unwrap_or_else(|| spec.name());
    let mut params = params_of(&spec, comm.size());
    params.extend(opts.params.clone());
    let meta = PhaseMeta {
        name: name.clone(),
        kind: Some(PhaseKind::Data),
        params: params.clone(),
        repetition: opts.repetition,
        spec: serde_json::to_value(&spec).unwrap_or_default(),
        warnings,
    };
    let counts = plan.workers.iter().map(|w| w.blocks).collect();
    let run = run_workers(env, clock, &name, &plan, alignment, counts)?;
    let completed = run.completed_by_worker();
    let mut phases = vec![assemble(meta, &run)];
    record_complete_files(comm, &plan, target, &completed, &run.outcomes)?;

    if spec.verify
        && spec.rw.writes()
        && !spec.rw.is_mixed()
        && !opts.no_verify_pass
        && !run.interrupted
        && phases[0].error_count == 0
    {
        phases.push(verify_pass(
            env,
            clock,
            &spec,
            &data_target,
            &plan,
            &completed,
            alignment,
            opts,
        )?);
    }
    let mut files = crate::layout::paths(&plan.owned_files);
    if matches!(target, PreparedTarget::Device { .. } | PreparedTarget::Null) {
        files.clear();
    }
    Ok(DataOutcome {
        phases,
        completed,
        files,
    })
}

/// Every file this rank works on exists here once its owner laid it out: a directory
/// the ranks do not share (node-local storage, `{host}` or `{rank}` in `--dir`) would
/// otherwise end a shifted read or an N-1 phase on a bare "no such file".
fn check_visible(plan: &DataPlan, target: &DataTarget, host: &str) -> Result<(), EngineError> {
    if !matches!(target, DataTarget::Dir(_)) {
        return Ok(());
    }
    let threads = plan.spec.threads.max(1) as u64;
    for f in &plan.files {
        if plan.owned_files.contains(f) || f.path.exists() {
            continue;
        }
        let shared = plan.spec.layout == Layout::Shared;
        let owner = if shared { 0 } else { f.id / threads };
        let (option, advice) = if shared {
            ("--dir", "a shared file needs a directory every rank shares")
        } else {
            (
                "--read-shift",
                "use a directory every rank shares, or --read-shift 0 to read what each rank wrote itself",
            )
        };
        return Err(EngineError::Spec(iolab_core::SpecError::new(
            option,
            format!(
                "rank {} on {host} cannot see {}, which rank {owner} laid out: the ranks do not share this directory (node-local storage, or {{host}}/{{rank}} in --dir); {advice}",
                plan.rank,
                f.path.display()
            ),
        )));
    }
    Ok(())
}

fn check_space(
    comm: &dyn Comm,
    plan: &DataPlan,
    target: &PreparedTarget,
) -> Result<(), EngineError> {
    let PreparedTarget::Dir { workdir, .. } = target else {
        return Ok(());
    };
    // A stonewalled phase is bounded by its time, not by its nominal size.
    if plan.spec.stonewall.is_some() {
        return Ok(());
    }
    let result = if comm.rank() == 0 {
        // Files that already hold enough data need no new space.
        let need: u64 = plan
            .files
            .iter()
            .filter(|f| workdir.file_info(&f.path).is_none_or(|i| i.size < f.size))
            .map(|f| f.size)
            .sum::<u64>()
            .max(if plan.spec.rw.writes() {
                plan.total_bytes
            } else {
                0
            });
        match iolab_backend::files::fs_space(workdir.path()) {
            // A file system that reports no capacity (ramfs, some FUSE) cannot be checked.
            Ok((total, free)) if total > 0 && need > free => Err(EngineError::NoSpace {
                path: workdir.path().to_path_buf(),
                need: ByteCount(need).human(),
                free: ByteCount(free).human(),
            }),
            _ => Ok(()),
        }
    } else {
        Ok(())
    };
    agree(comm, result)
}

fn prepare_files(
    plan: &DataPlan,
    target: &PreparedTarget,
    spec: &DataSpec,
    alignment: u64,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(), EngineError> {
    if matches!(target, PreparedTarget::Null) {
        return Ok(());
    }
    if spec.rw.reads() {
        lay_out(&plan.owned_files, target.workdir(), spec, alignment, stop)?;
    } else {
        create_for_write(&plan.owned_files, target.workdir(), spec)?;
    }
    Ok(())
}

fn cache_warning(plan: &DataPlan, warnings: &mut Vec<String>) {
    let per_host = plan.files.iter().map(|f| f.size).sum::<u64>();
    if let Some(mem) = memory_total()
        && per_host < mem
    {
        warnings.push(format!(
            "buffered reads of {} on a host with {} of memory: the page cache may be serving them (use --direct, a data set larger than memory, or --cache cold without --runtime)",
            ByteCount(per_host).human(),
            ByteCount(mem).human()
        ));
    }
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
            };
            run_data_worker(&setup).map_err(|e| e.to_string())
        },
    )
}

/// After a write phase, records which files now hold complete data so later reads can
/// reuse them.
fn record_complete_files(
    comm: &dyn Comm,
    plan: &DataPlan,
    target: &PreparedTarget,
    completed: &[u64],
    outcomes: &[RankOutcome],
) -> Result<(), EngineError> {
    let Some(workdir) = target.workdir() else {
        return Ok(());
    };
    let spec = &plan.spec;
    if !spec.rw.writes() || spec.rw.is_mixed() || outcomes.iter().any(|o| o.measure.error_count > 0)
    {
        return Ok(());
    }
    let verify = spec.verify.then_some(VerifyInfo {
        seed: spec.seed,
        block_size: spec.block_size.get(),
    });
    let shares =
        crate::plan::shares(spec, &target.data_target(), plan.total_workers).unwrap_or_default();
    let result = (|| {
        for (i, f) in plan.owned_files.iter().enumerate() {
            let global = (comm.rank() * plan.spec.threads) as usize + i;
            let size = written_prefix(spec, plan, f.size, global, completed, &shares);
            if size > 0 {
                workdir.set_file_info(&f.path, &FileInfo { size, verify })?;
            }
        }
        Ok(())
    })();
    agree(comm, result)
}

/// How many bytes from the start of an owned file hold data after a write phase that
/// completed `completed` blocks per worker: sequential writes (time-based or cut short
/// by a stonewall) fill a prefix; a random phase fills it only if every block was
/// written (full coverage, share done).
fn written_prefix(
    spec: &DataSpec,
    plan: &DataPlan,
    file_size: u64,
    global: usize,
    completed: &[u64],
    shares: &[u64],
) -> u64 {
    let bs = plan.block_size;
    let all_done =
        shares.len() == completed.len() && completed.iter().zip(shares).all(|(c, s)| c >= s);
    if spec.rw.is_random() {
        let full = spec.random == RandomKind::FullCoverage && all_done;
        return if full { file_size } else { 0 };
    }
    match (spec.layout, spec.placement) {
        (Layout::FilePerThread, _) => {
            (completed.get(global).copied().unwrap_or(0) * bs).min(file_size)
        }
        // Interleaved blocks: every worker wrote its first `min` blocks.
        (Layout::Shared, Placement::Strided) => {
            let min = completed.iter().copied().min().unwrap_or(0);
            (min * plan.total_workers as u64 * bs).min(file_size)
        }
        // Contiguous regions: only a file every worker finished is a prefix.
        (Layout::Shared, Placement::Segmented) => {
            if all_done {
                file_size
            } else {
                0
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn verify_pass<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    spec: &DataSpec,
    target: &DataTarget,
    plan: &DataPlan,
    completed: &[u64],
    alignment: u64,
    opts: &DataOptions,
) -> Result<PhaseResult, EngineError> {
    let comm = env.comm;
    let mut read = spec.clone();
    read.rw = if spec.rw.is_random() {
        RwKind::Randread
    } else {
        RwKind::Read
    };
    read.runtime = None;
    read.stonewall = None;
    read.wear_out = false;
    read.fsync_at_end = false;
    read.fsync_every = None;
    read.rate_iops = None;
    read.read_shift = Some(0);
    read.cache = CacheMode::Cold;
    let ctx = PlanContext {
        rank: comm.rank(),
        ranks: comm.size(),
        read_shift: 0,
        written_blocks: None,
    };
    let mut rplan = plan_data(&read, target, &ctx)?;
    // The same blocks as the write: same shares, and writes that looped or were cut
    // short are replayed by count with the same seeds.
    rplan.workers = plan.workers.clone();
    rplan.files = plan.files.clone();
    let warnings = if *target == DataTarget::Null {
        Vec::new()
    } else {
        agree(comm, set_cache_state(&rplan.files, &read))?
    };
    let counts: Vec<u64> = rplan
        .workers
        .iter()
        .map(|w| completed.get(w.global as usize).copied().unwrap_or(0))
        .collect();
    let run = run_workers(env, clock, "verify", &rplan, alignment, counts)?;
    let mut params = params_of(&read, comm.size());
    params.extend(opts.params.clone());
    Ok(assemble(
        PhaseMeta {
            name: "verify".into(),
            kind: Some(PhaseKind::Data),
            params,
            repetition: opts.repetition,
            spec: serde_json::to_value(&read).unwrap_or_default(),
            warnings,
        },
        &run,
    ))
}
