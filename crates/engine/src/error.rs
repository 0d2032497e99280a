//! [`EngineError`]: why a workload could not run or had to stop, with the place and what
//! to try. Every message is one line.

use std::io;
use std::path::PathBuf;

use iolab_backend::BackendError;
use iolab_core::SpecError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    Spec(#[from] SpecError),

    #[error(transparent)]
    Backend(#[from] BackendError),

    #[error(transparent)]
    Meta(#[from] crate::meta_error::MetaError),

    #[error("--dir {path} does not exist; create it first or choose another directory")]
    TargetMissing { path: PathBuf },

    #[error("--dir {path} is not a directory")]
    TargetNotDir { path: PathBuf },

    #[error(
        "{path} exists but was not created by iolab (no {marker} in it); iolab will not write into it: move it away or choose another --dir"
    )]
    ForeignWorkDir { path: PathBuf, marker: &'static str },

    #[error(
        "{path} is in use by {holder} (another iolab run holds {lock}); wait for it to finish or choose another --dir"
    )]
    WorkDirBusy {
        path: PathBuf,
        holder: String,
        lock: PathBuf,
    },

    #[error("--verify: {path} {what}: the file was changed outside iolab since it was written")]
    KeptFileChanged { path: PathBuf, what: String },

    #[error(
        "{path} {what}, so there is nothing to verify (a verify-only read never lays out or writes); write it first with verify on and keep it (--keep)"
    )]
    NothingToVerify { path: PathBuf, what: String },

    #[error(
        "{path} is a symbolic link; iolab never follows a link where its work directory belongs: remove the link or choose another --dir"
    )]
    WorkDirLink { path: PathBuf },

    #[error("{op} of s3 object {key} failed: {source}")]
    Object {
        op: &'static str,
        key: String,
        source: Box<iolab_backend::object::ObjectError>,
    },

    #[error("{op} {path}: {}{}", iolab_core::error::describe(source), iolab_core::error::errno_hint(source.raw_os_error()))]
    WorkDirIo {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },

    #[error(
        "the workload needs {need} in {path} but only {free} is free; use a smaller --size/--total-size or free space"
    )]
    NoSpace {
        path: PathBuf,
        need: String,
        free: String,
    },

    #[error(
        "refusing to write to {path}: it holds {what}; pass --allow-destroy to overwrite it (its contents will be lost)"
    )]
    DeviceRefused { path: PathBuf, what: String },

    #[error(
        "refusing to write to {path}: it holds data in use ({why}); stop using it first (--allow-destroy does not override this)"
    )]
    DeviceBusy { path: PathBuf, why: String },

    #[error("{path} is {actual} but the workload needs {need}; use a smaller --size")]
    DeviceTooSmall {
        path: PathBuf,
        actual: String,
        need: String,
    },

    #[error("rank {rank} on {host} failed: {message}")]
    Rank {
        rank: u32,
        host: String,
        message: String,
    },

    #[error(
        "ranks disagree on {what}: rank 0 has {rank0}, rank {rank} on {host} has {other}; run the same iolab binary with the same options on every rank"
    )]
    RankMismatch {
        what: &'static str,
        rank: u32,
        host: String,
        rank0: String,
        other: String,
    },

    /// A worker could not set up (open a file, start a backend); the message says why.
    #[error("{0}")]
    Setup(String),

    #[error("interrupted (Ctrl-C or a termination signal); the phases that had ended are kept")]
    Interrupted,

    #[error("could not start worker thread: {0}")]
    Thread(io::Error),
}

impl EngineError {
    /// Whether this error is a refusal before any I/O (the target is too small, not
    /// iolab's, busy, or the options are invalid): such a run is not kept as failed.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            EngineError::Spec(_)
                | EngineError::TargetMissing { .. }
                | EngineError::TargetNotDir { .. }
                | EngineError::ForeignWorkDir { .. }
                | EngineError::WorkDirBusy { .. }
                | EngineError::WorkDirLink { .. }
                | EngineError::NothingToVerify { .. }
                | EngineError::NoSpace { .. }
                | EngineError::DeviceRefused { .. }
                | EngineError::DeviceBusy { .. }
                | EngineError::DeviceTooSmall { .. }
                | EngineError::Meta(
                    crate::meta_error::MetaError::NoTree { .. }
                        | crate::meta_error::MetaError::TreeKept { .. }
                        | crate::meta_error::MetaError::TreeUnknown { .. }
                        | crate::meta_error::MetaError::LayoutMismatch { .. }
                        | crate::meta_error::MetaError::TreeNotEmpty { .. }
                )
        )
    }

    pub fn workdir(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        EngineError::WorkDirIo {
            op,
            path: path.into(),
            source,
        }
    }
}
