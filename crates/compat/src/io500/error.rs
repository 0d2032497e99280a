//! [`Io500Error`]: why an IO500 result could not be read or written, naming the file
//! (and line) at fault and what to do. Every message is one line.

use std::io;
use std::path::PathBuf;

use iolab_core::SpecError;
use iolab_core::error::{describe, errno_hint};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum Io500Error {
    #[error(transparent)]
    Spec(#[from] SpecError),

    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: io::Error },

    #[error(transparent)]
    Input(#[from] iolab_core::input::InputError),

    #[error("writing {path}: {source}")]
    Write { path: PathBuf, source: io::Error },

    #[error("{path}:{line}: {reason}")]
    Malformed {
        path: PathBuf,
        line: usize,
        reason: String,
    },

    #[error(
        "{path} holds no IO500 result: no [RESULT] lines and no phase sections with a score; give IO500's result_summary.txt or result.txt, or a directory holding them"
    )]
    NoFigures { path: PathBuf },

    #[error(
        "{dir} holds no IO500 result: no result.txt, result_summary.txt or iolab phases.json in it"
    )]
    NoResultIn { dir: PathBuf },

    #[error(
        "--result-dir {path} already holds files; give a new or empty directory (iolab never writes a result over another)"
    )]
    ResultDirInUse { path: PathBuf },

    #[error("--result-dir {path}: {op}: {}{}", describe(source), errno_hint(source.raw_os_error()))]
    ResultDir {
        path: PathBuf,
        op: &'static str,
        source: io::Error,
    },

    #[error("{path}: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
}

impl Io500Error {
    pub(crate) fn malformed(
        path: &std::path::Path,
        line: usize,
        reason: impl Into<String>,
    ) -> Self {
        Io500Error::Malformed {
            path: path.to_path_buf(),
            line,
            reason: reason.into(),
        }
    }
}
