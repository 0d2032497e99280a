//! Errors of the vocabulary crate: values that do not parse, specs that contradict
//! themselves, histograms that do not decode.

use std::io;

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum UnitError {
    #[error(
        "invalid size '{0}': use a whole number of bytes with an optional unit, e.g. 4KiB, 1MiB, 2GB, 4096"
    )]
    Bytes(String),
    #[error(
        "invalid duration '{0}': use a number with a unit, e.g. 30s, 500ms, 5m, 1h (a bare number is seconds)"
    )]
    Duration(String),
    #[error("duration '{0}' is longer than 100 years, the longest iolab takes")]
    DurationTooLong(String),
    #[error("invalid CPU list '{0}': use numbers and ranges such as 0-7,9,12-15")]
    Cpus(String),
    #[error("'{0}' is not a run id: use the form r42 or 42")]
    RunId(String),
}

impl UnitError {
    pub(crate) fn bytes(s: &str) -> Self {
        UnitError::Bytes(s.to_string())
    }
    pub(crate) fn duration(s: &str) -> Self {
        UnitError::Duration(s.to_string())
    }
    pub(crate) fn cpus(s: &str) -> Self {
        UnitError::Cpus(s.to_string())
    }
}

/// A specification that cannot be run as written. `option` names the flag (or study
/// key) at fault so the user knows what to change.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{option}: {reason}")]
pub struct SpecError {
    pub option: String,
    pub reason: String,
}

impl SpecError {
    pub fn new(option: impl Into<String>, reason: impl Into<String>) -> Self {
        SpecError {
            option: option.into(),
            reason: reason.into(),
        }
    }
}

#[derive(Debug, Error)]
pub enum HistogramError {
    #[error("latency histogram does not decode: {0}")]
    Decode(String),
    #[error("latency histogram does not encode: {0}")]
    Encode(String),
}

/// An io::Error's words without the " (os error N)" suffix.
pub fn describe(e: &io::Error) -> String {
    // io::Error's Display appends " (os error N)"; keep the words, drop the number.
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The symbolic name of the errnos a storage fault raises, as " (EIO)" (empty for
/// others, whose words say enough): what a user greps a log or a kernel trace for.
pub fn errno_name(errno: Option<i32>) -> &'static str {
    match errno {
        Some(libc::EIO) => " (EIO)",
        Some(libc::ENOSPC) => " (ENOSPC)",
        Some(libc::EDQUOT) => " (EDQUOT)",
        Some(libc::EROFS) => " (EROFS)",
        Some(libc::ETIMEDOUT) => " (ETIMEDOUT)",
        Some(libc::ESTALE) => " (ESTALE)",
        Some(libc::ENXIO) => " (ENXIO)",
        Some(libc::ENODEV) => " (ENODEV)",
        _ => "",
    }
}

/// [`errno_hint`] for an error on `path`, where an I/O error on an NBD or NFS URL is the
/// server's, not this machine's: its hint points at the server's log, not the kernel's.
pub fn errno_hint_at(path: &std::path::Path, errno: Option<i32>) -> &'static str {
    let url = path.to_str().unwrap_or("");
    match errno {
        Some(libc::EIO) if url.starts_with("nbd:") || url.starts_with("nbd+") => {
            "; the NBD server reported an I/O error: check the server's log (nbdkit: its stderr, and its error filter if one is set)"
        }
        Some(libc::EIO) if url.starts_with("nfs://") => {
            "; the NFS server reported an I/O error: check the server's log (NFS-Ganesha: its -L log file)"
        }
        _ => errno_hint(errno),
    }
}

/// A short suggestion for common errnos, starting with "; " (empty if none applies).
pub fn errno_hint(errno: Option<i32>) -> &'static str {
    match errno {
        Some(libc::ENOSPC) => "; free space on the target or use a smaller --size/--total-size",
        Some(libc::EDQUOT) => "; the disk quota is exhausted: free space or use a smaller --size",
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "; check the permissions, or choose a directory you can write to"
        }
        Some(libc::ENOENT) => "; check that the path exists",
        Some(libc::EROFS) => "; the file system is mounted read-only",
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            "; too many open files: raise the limit (ulimit -n) or use fewer threads"
        }
        Some(libc::EIO) => "; the device reported an I/O error: check the kernel log (dmesg)",
        _ => "",
    }
}
