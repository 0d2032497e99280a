//! [`FioError`]: why a fio command line or job file cannot run on iolab, in one line that
//! names where (file and line, or the command line), the job and the option.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{at}: {message}")]
pub struct FioError {
    /// "jobs.fio:12", "jobs.fio:12: [seq-read] bs", "command line: --bs".
    pub at: String,
    pub message: String,
}

impl FioError {
    pub fn at(at: &str, message: impl Into<String>) -> Self {
        FioError {
            at: at.to_string(),
            message: message.into(),
        }
    }

    /// An error about option `key` of job `job`, written at `at`.
    pub fn option(at: &str, job: &str, key: &str, message: impl Into<String>) -> Self {
        FioError {
            at: format!("{at}: [{job}] {key}"),
            message: message.into(),
        }
    }
}
