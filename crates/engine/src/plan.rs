//! From intent to this rank's work: [`plan_data`] turns a [`DataSpec`], a [`DataTarget`]
//! and the topology into a [`DataPlan`]: the files this rank opens ([`FilePlan`]) and, per
//! worker, which blocks of which files it owns ([`WorkerPlan`]). Shares add up to the
//! total exactly; a read can be shifted to data another rank wrote (cache avoidance) or
//! limited to what a stonewalled write got done; a worker may spread its share over
//! several files after a leading offset (fio's nrfiles and offset), and [`StartRule`]
//! says when its workers begin within their phase.

use std::path::PathBuf;

use iolab_core::SpecError;
use iolab_core::spec::{DataSpec, FioSettings, Layout};
use iolab_core::units::{ByteCount, GIB, Nanos};

mod arrange;

use arrange::{Arrangement, placement_end};

/// The timeline's resolution of every worker unless a finer one is asked for.
pub const INTERVAL: Nanos = Nanos::SECOND;

/// Where data goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataTarget {
    /// Files in this work directory.
    Dir(PathBuf),
    /// A block device (or image file) of this size, used directly.
    Device { path: PathBuf, size: u64 },
    /// Nowhere: the null backend.
    Null,
}

/// One file this rank opens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePlan {
    pub path: PathBuf,
    /// Identifies the file in verify blocks: the owning worker for file-per-thread, 0 for
    /// a shared file or device.
    pub id: u64,
    /// Bytes the workload covers in it.
    pub size: u64,
    /// Whose data each block is (IOR's pattern holds the writer's rank).
    pub owners: BlockOwners,
}

/// Which worker's data a block of a file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockOwners {
    /// All of it: a file per worker.
    One(u64),
    /// Block k belongs to worker k mod `workers` (IOR's -b = -t shared file).
    Strided { workers: u64 },
    /// Worker w owns the blocks from `starts[w]` on (a shared file in regions).
    Segmented { starts: Vec<u64> },
}

impl FilePlan {
    /// The worker whose data the block at `offset` is, with blocks of `block_size`.
    pub fn owner_at(&self, offset: u64, block_size: u64) -> u64 {
        let block = offset / block_size.max(1);
        match &self.owners {
            BlockOwners::One(w) => *w,
            BlockOwners::Strided { workers } => block % (*workers).max(1),
            BlockOwners::Segmented { starts } => {
                starts.partition_point(|s| *s <= block).saturating_sub(1) as u64
            }
        }
    }
}

/// One worker's share: block b of it lives at `base + b * stride` in `files[file]`;
/// with several files, block b is block `b / files` of `files[file + b % files]` (the
/// files take turns, as fio's round-robin file service does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerPlan {
    pub thread: u32,
    /// Index of this worker among all workers of all ranks.
    pub global: u32,
    /// The worker whose data this one works on (itself unless reads are shifted).
    pub owner: u32,
    pub file: usize,
    /// Files of its share, from `file` on (1 unless several files per worker).
    pub files: u32,
    pub base: u64,
    pub stride: u64,
    /// Blocks in the share.
    pub blocks: u64,
    pub seed: u64,
    pub cpu: Option<usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DataPlan {
    pub spec: DataSpec,
    pub rank: u32,
    pub ranks: u32,
    pub block_size: u64,
    pub total_workers: u32,
    pub files: Vec<FilePlan>,
    pub workers: Vec<WorkerPlan>,
    /// Files this rank writes in full before a read (it owns their data).
    pub owned_files: Vec<FilePlan>,
    /// Bytes in all shares of all ranks together.
    pub total_bytes: u64,
    /// Time-based: workers loop over their share until the runtime is over.
    pub looping: bool,
    /// When the workers begin within their phase (at once by default).
    pub start: StartRule,
    /// The workload settings fio's options become, as the caller gave them
    /// ([`FioSettings`]; a plain workload: their default): the workers read them here.
    pub fio: FioSettings,
    /// The workers' timeline resolution (a second unless finer is asked for).
    pub interval: Nanos,
    /// Size-based: each worker issues at most this many I/Os, counted from the end of
    /// its ramp (fio's number_ios times loops; None: its share decides alone).
    pub io_limit: Option<u64>,
    /// What a worker's end stops among the phase's workers (fio's exitall).
    pub exit: Option<ExitRule>,
}

impl DataPlan {
    /// Drop the files' cached pages at every new pass over them: fio's invalidate=1 on a
    /// time-based buffered job whose cache is to be cold.
    pub fn invalidate_each_pass(&self) -> bool {
        self.fio.invalidate_each_pass
            && !self.spec.direct
            && self.spec.runtime.is_some()
            && self.spec.cache == iolab_core::spec::CacheMode::Cold
    }
}

/// fio's exitall and exitall_on_error (backend.c's `fio_terminate_threads(groupid,
/// exit_what)` when a job's thread ends): when a worker of the plan ends (only with an
/// error, for `on_error_only`), these workers of the phase stop as at the end of their
/// runtime; those still waiting to start never start, unless `running_only` (fio's
/// exit_what=stonewall, which stops the jobs already running).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExitRule {
    pub on_error_only: bool,
    /// By index on this rank (set by the phase that runs several jobs together).
    pub workers: Vec<usize>,
    pub running_only: bool,
}

/// When a plan's workers begin within their phase, and from when they are measured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartRule {
    /// Wait this long after the phase starts (fio's startdelay).
    pub delay: Nanos,
    /// Then wait until these workers of the phase (by index on this rank) have finished
    /// (fio's wait_for, when the job waited for runs in the same phase).
    pub after: Vec<usize>,
    /// Run this long before measuring: what completes earlier is done but not counted,
    /// and a runtime counts from its end (fio's ramp_time).
    pub ramp: Nanos,
    /// The workers never start: an earlier phase's end stopped every job after it
    /// (fio's exit_what=all).
    pub never: bool,
}

impl StartRule {
    /// Whether the workers start with the phase.
    pub fn at_once(&self) -> bool {
        self.delay == Nanos::ZERO && self.after.is_empty()
    }
}

/// Placement inputs that do not come from the spec.
#[derive(Clone, Debug, Default)]
pub struct PlanContext {
    pub rank: u32,
    pub ranks: u32,
    /// Shift reads by this many ranks (0: each rank reads its own data).
    pub read_shift: u32,
    /// Blocks each worker (by global index) completed in an earlier stonewalled phase:
    /// this phase then works on exactly those.
    pub written_blocks: Option<Vec<u64>>,
    /// What the files are called.
    pub names: FileNames,
    /// The rank whose data this rank reads (IOR -Z), instead of `read_shift`.
    pub read_from: Option<u32>,
    /// Files each worker spreads its share over, taking turns (fio's nrfiles; 0 or 1:
    /// one). Each holds an equal part of the share; only with a file per worker.
    pub files_per_worker: u32,
    /// Bytes before the region the workers work on in each file (fio's offset), a
    /// multiple of the block size; the files hold them too.
    pub start_offset: u64,
    /// Bytes between the regions of consecutive workers (by global index), fio's
    /// offset_increment: worker w's region starts at `start_offset + w *
    /// offset_increment`, in its own files or in a shared one (where the regions must
    /// not overlap). A multiple of the block size; 0: the usual placement.
    pub offset_increment: u64,
}

/// The names of data files in the work directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FileNames {
    /// iolab's: `data.r<rank>.t<thread>` per worker, `data.shared` for one file.
    #[default]
    Iolab,
    /// IOR's for `-o BASE`: `BASE.%08d` (the worker's global index, IOR's rank) with -F,
    /// `BASE` for a shared file. BASE is relative to the work directory and may name a
    /// subdirectory (`ior-easy/ior_file_easy`).
    Ior(String),
    /// Names made from a template relative to the work directory, where `{worker}` is the
    /// worker's global index and `{file}` the file's number among the worker's files
    /// (fio's filename_format, as `iolab fio` writes it). The caller keeps it inside the
    /// work directory (no absolute path, no `..`).
    Template(String),
}

impl FileNames {
    fn shared(&self) -> String {
        match self {
            FileNames::Iolab => "data.shared".into(),
            FileNames::Ior(base) => base.clone(),
            FileNames::Template(t) => t.replace("{worker}", "0").replace("{file}", "0"),
        }
    }

    fn per_worker(&self, global: u32, threads: u32, file: u32, files: u32) -> String {
        let name = match self {
            FileNames::Iolab => format!("data.r{}.t{}", global / threads, global % threads),
            FileNames::Ior(base) => format!("{base}.{global:08}"),
            FileNames::Template(t) => {
                return t
                    .replace("{worker}", &global.to_string())
                    .replace("{file}", &file.to_string());
            }
        };
        if files > 1 {
            format!("{name}.f{file}")
        } else {
            name
        }
    }
}

/// Per-worker shares in blocks, adding up to the total exactly.
pub fn shares(spec: &DataSpec, target: &DataTarget, workers: u32) -> Result<Vec<u64>, SpecError> {
    let bs = spec.unit();
    let w = workers as u64;
    // Whole I/Os of the larger size fit in every share (a mixed workload whose writes
    // have a size of their own moves both); sizes drawn from a mix: whole units.
    let big = spec.grain();
    let per = |bytes: u64| bytes / big * (big / bs);
    let blocks: Vec<u64> = if let Some(size) = spec.size {
        vec![per(size.get()); workers as usize]
    } else {
        let total = match (spec.total_size, target) {
            (Some(t), _) => t.get(),
            (None, DataTarget::Device { size, .. }) => *size,
            (None, _) => GIB * w,
        };
        let m = big / bs;
        let total_big = per(total) / m;
        if total_big < w {
            return Err(SpecError::new(
                if spec.total_size.is_some() {
                    "--total-size"
                } else {
                    "--size"
                },
                format!(
                    "{} holds {total_big} blocks of {} but {workers} workers need at least one each",
                    ByteCount(total),
                    ByteCount(big)
                ),
            ));
        }
        (0..w)
            .map(|i| (total_big / w + u64::from(i < total_big % w)) * m)
            .collect()
    };
    Ok(blocks)
}

pub fn plan_data(
    spec: &DataSpec,
    target: &DataTarget,
    ctx: &PlanContext,
) -> Result<DataPlan, SpecError> {
    spec.validate()?;
    let ranks = ctx.ranks.max(1);
    let threads = spec.threads;
    let total_workers = ranks * threads;
    let bs = spec.unit();
    let blocks = worker_blocks(spec, target, ctx, total_workers)?;
    let total_blocks = total_blocks(spec, ctx, &blocks, total_workers)?;
    let shared =
        matches!(spec.layout, Layout::Shared) || matches!(target, DataTarget::Device { .. });
    let end = placement_end(spec, ctx, &blocks, shared, total_blocks)?;
    check_device_holds(target, ctx, end)?;
    let per_file =
        blocks.iter().min().copied().unwrap_or(0) / u64::from(ctx.files_per_worker.max(1));
    spec.check_zones_fit(per_file * bs)?;
    let arrangement = Arrangement {
        spec,
        target,
        ctx,
        blocks: &blocks,
        prefix: blocks
            .iter()
            .scan(0u64, |acc, b| {
                let start = *acc;
                *acc += b;
                Some(start)
            })
            .collect(),
        end,
        shared,
        files_per_worker: ctx.files_per_worker.max(1),
    };
    let (files, workers) = arrangement.workers();
    if let DataTarget::Dir(_) = target {
        reserved_names(&files)?;
    }
    let owned_files = if arrangement.shared {
        // One rank lays out a shared file (or prepares a device) for everyone.
        if ctx.rank == 0 {
            arrangement.worker_files(0)
        } else {
            Vec::new()
        }
    } else {
        (0..threads)
            .flat_map(|t| arrangement.worker_files(ctx.rank * threads + t))
            .collect()
    };
    Ok(DataPlan {
        spec: spec.clone(),
        rank: ctx.rank,
        ranks,
        block_size: bs,
        total_workers,
        files,
        workers,
        owned_files,
        total_bytes: total_blocks * bs,
        looping: spec.runtime.is_some(),
        start: StartRule::default(),
        fio: FioSettings::default(),
        interval: INTERVAL,
        io_limit: None,
        exit: None,
    })
}

/// The blocks of all workers together; an error when they, in bytes after the start
/// offset, do not fit in any count (more than 16 EiB).
fn total_blocks(
    spec: &DataSpec,
    ctx: &PlanContext,
    blocks: &[u64],
    total_workers: u32,
) -> Result<u64, SpecError> {
    blocks
        .iter()
        .try_fold(0u64, |a, b| a.checked_add(*b))
        .filter(|t| {
            t.checked_mul(spec.unit())
                .and_then(|b| b.checked_add(ctx.start_offset))
                .is_some()
        })
        .ok_or_else(|| {
            SpecError::new(
                if spec.size.is_some() { "--size" } else { "--total-size" },
                format!(
                    "{} workers together would move more than {}, the most any file system or device holds",
                    total_workers,
                    ByteCount(u64::MAX).human()
                ),
            )
        })
}

/// On a device, an error when the workload's placement ends past its size.
fn check_device_holds(target: &DataTarget, ctx: &PlanContext, end: u64) -> Result<(), SpecError> {
    let DataTarget::Device { path, size } = target else {
        return Ok(());
    };
    if end <= *size {
        return Ok(());
    }
    Err(SpecError::new(
        "--size",
        format!(
            "the workload needs {}{} but {} holds {}",
            ByteCount(end - ctx.start_offset).human(),
            if ctx.start_offset > 0 {
                format!(
                    " after an offset of {}",
                    ByteCount(ctx.start_offset).human()
                )
            } else {
                String::new()
            },
            path.display(),
            ByteCount(*size).human()
        ),
    ))
}

/// A data file must not take the name of the work directory's own files (its lock, its
/// marker, the records beside each file): writing it would wreck them, and removing it
/// would remove them.
fn reserved_names(files: &[FilePlan]) -> Result<(), SpecError> {
    for f in files {
        let name = f
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if crate::workdir::is_reserved_name(&name) {
            return Err(SpecError::new(
                "file name",
                format!(
                    "'{name}' is a name iolab's work directory keeps for itself (.lock, .iolab-workdir, .NAME.iolab); choose another"
                ),
            ));
        }
    }
    Ok(())
}

/// Each worker's share in blocks: the spec's shares, or what an earlier phase completed,
/// cut to a whole number of blocks per file when a worker has several.
fn worker_blocks(
    spec: &DataSpec,
    target: &DataTarget,
    ctx: &PlanContext,
    total_workers: u32,
) -> Result<Vec<u64>, SpecError> {
    let bs = spec.unit();
    let mut blocks = shares(spec, target, total_workers)?;
    if let Some(written) = &ctx.written_blocks {
        if written.len() != blocks.len() {
            return Err(SpecError::new(
                "--threads",
                format!(
                    "this phase has {} workers but the phase whose data it reads had {}; use the same --threads and ranks",
                    blocks.len(),
                    written.len()
                ),
            ));
        }
        blocks = written.clone();
    }
    if !ctx.start_offset.is_multiple_of(bs) {
        return Err(SpecError::new(
            "start_offset",
            format!(
                "{} is not a multiple of the block size {}",
                ctx.start_offset, spec.block_size
            ),
        ));
    }
    let n = u64::from(ctx.files_per_worker.max(1));
    if n > 1 {
        let shared =
            matches!(spec.layout, Layout::Shared) || matches!(target, DataTarget::Device { .. });
        if shared {
            return Err(SpecError::new(
                "files_per_worker",
                "several files per worker need a file per worker, not a shared file or a device",
            ));
        }
        if ctx.written_blocks.is_none() {
            for b in &mut blocks {
                *b = *b / n * n;
            }
            if blocks.contains(&0) {
                return Err(SpecError::new(
                    "--size",
                    format!(
                        "a share holds less than one block of {} for each of its {n} files",
                        spec.block_size
                    ),
                ));
            }
        }
    }
    Ok(blocks)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
