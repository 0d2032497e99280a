//! Metadata workloads (mdtest class): [`MetaSpec`] says which operations ([`MetaOp`]) run
//! as phases, in what tree, on which backend ([`MetaBackendKind`]). The tree is a private
//! one per thread (mdtest -u) or one shared by all threads (mdtest-hard); its leaf
//! directories hold the files. [`FindSpec`] (in `find`) is a parallel tree walk.
//! Defaults are written once, in the clap attributes, and `Default` is derived from them.

mod find;
mod glob;

pub use find::*;
pub use glob::*;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::error::SpecError;
use crate::result::OpKind;
use crate::spec::data::DEFAULT_SEED;
use crate::units::{ByteCount, CpuList, MIB, TimeSpan};

/// The largest --file-size: a metadata workload keeps one file in memory per thread.
pub const MAX_META_FILE_SIZE: u64 = 64 * MIB;
/// The deepest tree iolab builds below each thread's directory.
pub const MAX_DEPTH: u32 = 16;

/// One metadata operation, and the phase that does it for every item.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum MetaOp {
    /// Create each file (and write --file-size bytes into it).
    Create,
    /// stat each file.
    Stat,
    /// Open, read and check each file, then close it.
    Read,
    /// Remove (unlink) each file.
    Remove,
    /// Create the directory tree (timed; untimed setup otherwise).
    Mkdir,
    /// Remove the directory tree (timed; untimed cleanup otherwise).
    Rmdir,
}

impl MetaOp {
    pub fn name(self) -> &'static str {
        match self {
            MetaOp::Create => "create",
            MetaOp::Stat => "stat",
            MetaOp::Read => "read",
            MetaOp::Remove => "remove",
            MetaOp::Mkdir => "mkdir",
            MetaOp::Rmdir => "rmdir",
        }
    }

    /// The operation kind its latencies are recorded under.
    pub fn op_kind(self) -> OpKind {
        match self {
            MetaOp::Create => OpKind::Create,
            MetaOp::Stat => OpKind::Stat,
            MetaOp::Read => OpKind::Read,
            MetaOp::Remove => OpKind::Remove,
            MetaOp::Mkdir => OpKind::Mkdir,
            MetaOp::Rmdir => OpKind::Rmdir,
        }
    }

    /// True for the operations on files (as opposed to the tree's directories).
    pub fn on_files(self) -> bool {
        !matches!(self, MetaOp::Mkdir | MetaOp::Rmdir)
    }
}

/// How metadata operations reach storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum MetaBackendKind {
    /// POSIX calls relative to an open directory (openat, fstatat, unlinkat, mkdirat).
    Posix,
    /// Completes every operation at once without touching storage (measures iolab itself).
    Null,
    /// NFS calls through libnfs (loaded at run time) on the export of --nfs-url: create,
    /// stat, read, remove, mkdir, rmdir, each a call to the server.
    Nfs,
}

impl MetaBackendKind {
    pub fn name(self) -> &'static str {
        match self {
            MetaBackendKind::Posix => "posix",
            MetaBackendKind::Null => "null",
            MetaBackendKind::Nfs => "nfs",
        }
    }
}

/// What the items of a metadata workload are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum MetaItems {
    /// Files (`file.mdtest.<w>.<i>`): create opens and writes, read reads, remove unlinks.
    #[default]
    Files,
    /// Directories (`dir.mdtest.<w>.<i>`, mdtest -D): create is mkdir, stat a stat,
    /// remove rmdir; there is nothing to read.
    Dirs,
}

/// How a metadata operation names its file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum MetaPaths {
    /// Whole paths from the current directory (open, stat, unlink of
    /// `.../test-dir.0-0/mdtest_tree.1.0/file.mdtest.0.17`), as mdtest, IO500 and most
    /// applications call them: every call walks every component. Comparable with mdtest.
    #[default]
    Whole,
    /// Relative to an open directory (openat, fstatat, unlinkat): no path walk per call.
    /// Faster on network file systems, and not comparable with mdtest.
    Relative,
}

impl MetaPaths {
    pub fn name(self) -> &'static str {
        match self {
            MetaPaths::Whole => "whole",
            MetaPaths::Relative => "relative",
        }
    }
}

/// A metadata workload. Fields mirror the `iolab meta` flags one to one.
///
/// The most leaf directories of all threads together: every one is planned up front.
pub const MAX_META_DIRS: u64 = 50_000_000;

/// Every thread (of every rank) works on `files_per_dir` files in each of its directories.
/// Private trees (the default): thread w owns `t<w>/`, whose leaf directories hold its
/// files. `--shared-dir`: all threads create their files in the same leaf directories, so a
/// shared directory holds `files_per_dir` files of every thread.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct MetaSpec {
    /// Worker threads (per rank under MPI).
    #[arg(short = 't', long, default_value_t = 1)]
    pub threads: u32,

    /// Files each thread works on in each of its directories (mdtest -I; mdtest -n when
    /// each thread has one directory).
    #[arg(short = 'n', long, default_value_t = 1000)]
    pub files_per_dir: u64,

    /// Leaf directories per thread (with --shared-dir: shared leaf directories)
    /// [default: 1].
    #[arg(long, conflicts_with = "total_files")]
    pub dirs_per_thread: Option<u32>,

    /// Files of all threads of all ranks together: sets the directories per thread to
    /// total / (files per dir x threads), rounded up (S1: 960000 with 3000 files per dir
    /// gives 320 dirs for 1 thread ... 10 dirs for 32 threads).
    #[arg(long, value_name = "N")]
    pub total_files: Option<u64>,

    /// Phases to run, in this order.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "create,stat,read,remove"
    )]
    pub ops: Vec<MetaOp>,

    /// Bytes create writes into each file and read reads back and checks (0: empty
    /// files; IO500 mdtest-hard uses 3901).
    #[arg(long, default_value = "0")]
    pub file_size: ByteCount,

    /// All threads of all ranks work in the same directories (mdtest-hard) instead of a
    /// private tree per thread (mdtest -u).
    #[arg(long)]
    pub shared_dir: bool,

    /// Levels of intermediate directories above the leaf directories (mdtest -z).
    #[arg(long, default_value_t = 0)]
    pub depth: u32,

    /// Subdirectories of each intermediate directory (mdtest -b); leaf directories are
    /// spread round robin over the deepest ones.
    #[arg(long, default_value_t = 10)]
    pub branching: u32,

    /// Stop the create phase at this deadline (stonewall, mdtest -W); later phases work on
    /// exactly the files that were created.
    #[arg(long)]
    pub runtime: Option<TimeSpan>,

    /// After the create deadline, every thread continues until it has created as many
    /// files as the thread that created the most (IO500 wear-out).
    #[arg(long)]
    pub wear_out: bool,

    /// Cache avoidance, as mdtest -N: with N, rank r creates its files in the tree of rank
    /// r+N, and stat, read and remove work on the files of rank r+N, r+2N and r+3N (0:
    /// its own; other ranks' files must be visible, on a file system all hosts share). By
    /// default ranks on several hosts working in one --dir move to the next node;
    /// otherwise each rank works on its own files.
    #[arg(long, value_name = "RANKS")]
    pub shift: Option<u32>,

    /// How operations reach storage.
    #[arg(long, value_enum, default_value_t = MetaBackendKind::Posix)]
    pub backend: MetaBackendKind,

    /// How each operation names its file: whole paths as mdtest does (the default), or
    /// relative to an open directory (not comparable with mdtest).
    #[arg(long, value_enum, default_value_t = MetaPaths::Whole)]
    pub paths: MetaPaths,

    /// mdtest -Y: every rank calls sync(2) once all its workers' creates are done,
    /// inside the create phase's time (IO500's mdtest-easy-write and mdtest-hard-write do).
    #[arg(long)]
    pub sync_after_create: bool,

    /// mdtest -Y as mdtest runs it with every phase: sync(2) once per rank at the end of
    /// each phase, inside its time (stat, read and remove too).
    #[arg(long)]
    pub sync_after_every_phase: bool,

    /// What the items are: files, or directories (mdtest -D).
    #[arg(long, value_enum, default_value_t = MetaItems::Files)]
    pub items: MetaItems,

    /// Seed for the contents of files; the same seed gives the same files.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,

    /// Pin worker threads to these CPUs, round robin (0-7,16-23).
    #[arg(long)]
    pub cpus: Option<CpuList>,
}

impl Default for MetaSpec {
    fn default() -> Self {
        crate::spec::command_line_defaults()
    }
}

impl MetaSpec {
    /// A short name for the workload: "meta-create,stat-3901B".
    pub fn name(&self) -> String {
        let ops: Vec<&str> = self.ops.iter().map(|o| o.name()).collect();
        format!("meta-{}-{}", ops.join(","), self.file_size)
    }

    pub fn has(&self, op: MetaOp) -> bool {
        self.ops.contains(&op)
    }

    /// Whether any phase works on files (not only on the tree's directories).
    pub fn touches_files(&self) -> bool {
        self.ops.iter().any(|o| o.on_files())
    }

    /// The leaf directories per thread for a run with `workers` threads on all ranks
    /// together: `--dirs-per-thread`, or `--total-files` divided by files per directory
    /// and workers, rounded up (so the total is never less than asked for).
    pub fn dirs_per_thread_for(&self, workers: u64) -> Result<u32, SpecError> {
        let workers = workers.max(1);
        if workers > MAX_META_DIRS {
            return Err(SpecError::new(
                "--threads",
                format!(
                    "{workers} threads of all ranks together need a directory each, more than the {MAX_META_DIRS} directories iolab plans at once; use fewer threads or ranks"
                ),
            ));
        }
        let Some(total) = self.total_files else {
            let dirs = self.dirs_per_thread.unwrap_or(1);
            if u64::from(dirs) * workers > MAX_META_DIRS {
                return Err(SpecError::new(
                    "--dirs-per-thread",
                    format!(
                        "{dirs} directories for each of {workers} threads is more than the {MAX_META_DIRS} directories iolab plans at once; use fewer directories and more --files-per-dir"
                    ),
                ));
            }
            return Ok(dirs);
        };
        let per_dir = self.files_per_dir.max(1) * workers;
        let dirs = total.div_ceil(per_dir).max(1);
        if dirs * workers > MAX_META_DIRS {
            return Err(SpecError::new(
                "--total-files",
                format!(
                    "{total} files need {dirs} directories per thread, more than the {MAX_META_DIRS} directories iolab plans at once; use a larger --files-per-dir"
                ),
            ));
        }
        Ok(dirs as u32)
    }

    /// Files all workers work on together, for a run with `workers` threads on all ranks.
    pub fn total_files_for(&self, workers: u64) -> Result<u64, SpecError> {
        let dirs = self.dirs_per_thread_for(workers)? as u64;
        Ok(self.files_per_dir * dirs * workers)
    }

    /// A note when `--total-files` does not divide evenly, saying what runs instead.
    pub fn total_files_note(&self, workers: u64) -> Option<String> {
        let asked = self.total_files?;
        let actual = self.total_files_for(workers).ok()?;
        (actual != asked).then(|| {
            format!(
                "--total-files {asked} does not divide into {} files per directory for {workers} threads: {} directories per thread make {actual} files",
                self.files_per_dir,
                self.dirs_per_thread_for(workers).unwrap_or(0)
            )
        })
    }

    /// Checks what can be checked without looking at the target.
    pub fn validate(&self) -> Result<(), SpecError> {
        crate::spec::validate_threads(self.threads)?;
        self.validate_tree()?;
        self.dirs_per_thread_for(u64::from(self.threads))?;
        validate_ops(&self.ops, self.files_per_dir)?;
        self.validate_stonewall()?;
        if self.items == MetaItems::Dirs {
            if self.has(MetaOp::Read) {
                return Err(SpecError::new(
                    "--ops",
                    "a directory item has nothing to read; leave read out with --items dirs",
                ));
            }
            if self.file_size.get() > 0 {
                return Err(SpecError::new(
                    "--file-size",
                    "a directory item holds no bytes; leave --file-size out with --items dirs",
                ));
            }
        }
        if self.file_size.get() > MAX_META_FILE_SIZE {
            return Err(SpecError::new(
                "--file-size",
                format!(
                    "{} is more than the {} a metadata workload writes per file; use iolab run for large files",
                    self.file_size,
                    ByteCount(MAX_META_FILE_SIZE)
                ),
            ));
        }
        if let Some(cpus) = &self.cpus
            && cpus.0.is_empty()
        {
            return Err(SpecError::new("--cpus", "names no CPU"));
        }
        Ok(())
    }

    fn validate_tree(&self) -> Result<(), SpecError> {
        if self.dirs_per_thread == Some(0) {
            return Err(SpecError::new("--dirs-per-thread", "must be at least 1"));
        }
        if self.total_files == Some(0) {
            return Err(SpecError::new("--total-files", "must be at least 1"));
        }
        if self.total_files.is_some() && self.dirs_per_thread.is_some() {
            return Err(SpecError::new(
                "--total-files",
                "cannot be combined with --dirs-per-thread (it decides the directories per thread)",
            ));
        }
        if self.depth > MAX_DEPTH {
            return Err(SpecError::new(
                "--depth",
                format!(
                    "{} is deeper than the {MAX_DEPTH} levels iolab builds",
                    self.depth
                ),
            ));
        }
        if self.depth > 0 && !(1..=100_000).contains(&self.branching) {
            return Err(SpecError::new(
                "--branching",
                "must be between 1 and 100000 subdirectories per directory",
            ));
        }
        if self.files_per_dir > u32::MAX as u64 {
            return Err(SpecError::new(
                "--files-per-dir",
                format!(
                    "{} is more than iolab supports in one directory",
                    self.files_per_dir
                ),
            ));
        }
        Ok(())
    }

    fn validate_stonewall(&self) -> Result<(), SpecError> {
        if let Some(r) = self.runtime {
            if r.nanos().0 == 0 {
                return Err(SpecError::new("--runtime", "must be longer than 0s"));
            }
            if !self.has(MetaOp::Create) {
                return Err(SpecError::new(
                    "--runtime",
                    "limits the create phase only; add create to --ops or drop --runtime",
                ));
            }
        }
        if self.wear_out && self.runtime.is_none() {
            return Err(SpecError::new(
                "--wear-out",
                "only applies to a create phase with --runtime",
            ));
        }
        Ok(())
    }
}

/// Checks that the phases make sense in their order: the tree exists before files go into
/// it, files exist before they are used, and directories are empty before they go.
fn validate_ops(ops: &[MetaOp], files_per_dir: u64) -> Result<(), SpecError> {
    let bad = |reason: String| Err(SpecError::new("--ops", reason));
    if ops.is_empty() {
        return bad("names no operation; use e.g. create,stat,read,remove".into());
    }
    let pos = |op: MetaOp| ops.iter().position(|o| *o == op);
    for (i, op) in ops.iter().enumerate() {
        if ops[..i].contains(op) {
            return bad(format!("names {} twice", op.name()));
        }
    }
    let before = |a: MetaOp, b: MetaOp| match (pos(a), pos(b)) {
        (Some(x), Some(y)) => x < y,
        _ => true,
    };
    let order = [
        (MetaOp::Mkdir, MetaOp::Create),
        (MetaOp::Mkdir, MetaOp::Stat),
        (MetaOp::Mkdir, MetaOp::Read),
        (MetaOp::Mkdir, MetaOp::Remove),
        (MetaOp::Mkdir, MetaOp::Rmdir),
        (MetaOp::Create, MetaOp::Stat),
        (MetaOp::Create, MetaOp::Read),
        (MetaOp::Create, MetaOp::Remove),
        (MetaOp::Stat, MetaOp::Remove),
        (MetaOp::Read, MetaOp::Remove),
        (MetaOp::Remove, MetaOp::Rmdir),
        (MetaOp::Create, MetaOp::Rmdir),
        (MetaOp::Stat, MetaOp::Rmdir),
        (MetaOp::Read, MetaOp::Rmdir),
    ];
    for (a, b) in order {
        if !before(a, b) {
            return bad(format!("{} must come before {}", a.name(), b.name()));
        }
    }
    let files = ops.iter().any(|o| o.on_files());
    if pos(MetaOp::Rmdir).is_some() && files && pos(MetaOp::Remove).is_none() {
        return bad("rmdir needs remove before it (directories must be empty to go)".into());
    }
    if pos(MetaOp::Mkdir).is_some() && files && pos(MetaOp::Create).is_none() {
        return bad("a new tree (mkdir) holds no files to stat, read or remove; add create".into());
    }
    if files && files_per_dir == 0 {
        return Err(SpecError::new(
            "--files-per-dir",
            "must be at least 1 for file operations (only mkdir,rmdir work without files)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
