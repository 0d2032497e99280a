//! [`MetaError`]: why a metadata workload or a tree walk cannot run as asked, with the
//! path and what to do. Every message is one line. Its own module, below both `meta`
//! (which re-exports it) and the engine's `error` (which wraps it).

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum MetaError {
    #[error(
        "{root} holds a tree kept by an earlier run (--keep); use it with --ops stat,read,remove (no create or mkdir) and the same options, or remove it with --ops remove,rmdir"
    )]
    TreeKept { root: PathBuf },

    #[error(
        "{root} exists but holds no record of its contents: a run that did not finish left it, or another run is using it; remove it (rm -r {root}) or choose another --dir"
    )]
    TreeUnknown { root: PathBuf },

    #[error(
        "there is no tree to work on in {root}: add create to --ops, or keep one from an earlier run with --keep"
    )]
    NoTree { root: PathBuf },

    #[error(
        "the tree in {root} was made with {kept}, but this run asks for {asked}; use the same options"
    )]
    LayoutMismatch {
        root: PathBuf,
        kept: String,
        asked: String,
    },

    #[error("the tree in {root} still holds {files} files; add remove before rmdir in --ops")]
    TreeNotEmpty { root: PathBuf, files: u64 },

    #[error("iolab meta works in a directory; use --dir (--device is for iolab run)")]
    NeedsDir,

    #[error("--dir {path} does not exist; give the directory to walk")]
    FindDirMissing { path: PathBuf },

    #[error("--dir {path} is not a directory; give the directory to walk")]
    FindNotDir { path: PathBuf },

    #[error("--newer {path}: cannot read its modification time ({reason}); give an existing file")]
    NewerUnreadable { path: PathBuf, reason: String },

    #[error(
        "this phase works on the files of {expected} workers, but {given} were given (from a run with other --threads or ranks)"
    )]
    WorkerCount { expected: usize, given: usize },
}
