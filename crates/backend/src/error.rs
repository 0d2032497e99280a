//! [`BackendError`]: what went wrong reaching storage, with the operation, path and
//! offset, and a hint of what to try. [`errno_hint`] turns an errno into that hint.

use std::io;
use std::path::PathBuf;

pub use iolab_core::error::{describe, errno_hint, errno_hint_at, errno_name};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum BackendError {
    #[error("cannot open {path}: {}{}", describe(source), errno_hint(source.raw_os_error()))]
    Open { path: PathBuf, source: io::Error },

    #[error(
        "{path}: the file system refuses direct I/O (O_DIRECT) ({source}); drop --direct, or run on a file system that supports it"
    )]
    DirectUnsupported { path: PathBuf, source: io::Error },

    #[error(
        "{op} of {len} bytes at offset {offset} in {path} is not aligned to {align} bytes as O_DIRECT requires; use a --block-size that is a multiple of {align} or drop --direct"
    )]
    Unaligned {
        op: &'static str,
        path: PathBuf,
        offset: u64,
        len: u64,
        align: u64,
    },

    #[error("{op} of {len} bytes at offset {offset} in {path} failed: {}{}{}", describe(source), errno_name(source.raw_os_error()), errno_hint_at(path, source.raw_os_error()))]
    Io {
        op: &'static str,
        path: PathBuf,
        offset: u64,
        len: u64,
        source: io::Error,
    },

    #[error("{op} on {path} failed: {}{}{}", describe(source), errno_name(source.raw_os_error()), errno_hint_at(path, source.raw_os_error()))]
    File {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },

    /// A metadata operation (create, stat, read, unlink, mkdir, rmdir, readdir) on `path`.
    #[error("{op} {path} failed: {}{}{hint}", describe(source), errno_name(source.raw_os_error()))]
    Meta {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
        hint: &'static str,
    },

    #[error("cannot look for signatures on {path}: {why}")]
    Probe { path: PathBuf, why: String },

    #[error("io_uring is not available here ({reason}); use --backend psync")]
    UringUnavailable { reason: String },

    #[error("cannot allocate {bytes} bytes of I/O buffers ({slots} x {slot_size} bytes)")]
    BufferAlloc {
        bytes: u64,
        slots: u32,
        slot_size: u64,
    },

    #[error(
        "--backend nbd needs libnbd ({soname}), which cannot be loaded here ({why}); install it (Debian/Ubuntu: apt-get install libnbd0; Fedora: dnf install libnbd)"
    )]
    NbdUnavailable { soname: String, why: String },

    #[error("cannot connect to the NBD export {uri}: {why}")]
    NbdConnect { uri: String, why: String },

    #[error(
        "the {backend} backend cannot reach {path}: an NBD export is reached with --backend nbd"
    )]
    NotLocal {
        backend: &'static str,
        path: PathBuf,
    },

    #[error(
        "the nbd backend works on an NBD export, not on {path}: give it with --nbd-uri nbd+unix:///?socket=SOCKET or --nbd-uri nbd://HOST:PORT"
    )]
    NeedsExport { path: PathBuf },
    /// libnfs cannot be loaded (one line: the library and the package that has it).
    #[error("{0}")]
    NfsUnavailable(String),

    #[error("cannot mount {url}: {reason}")]
    NfsMount { url: String, reason: String },

    #[error("--nfs-url {url}: {reason}")]
    NfsUrl { url: String, reason: String },

    /// A backend that works on descriptors given a file on an NFS export.
    #[error(
        "the {backend} backend cannot reach {path}: a file on an NFS export (--nfs-url) is reached with --backend nfs"
    )]
    NfsNotLocal {
        backend: &'static str,
        path: PathBuf,
    },

    #[error("the backend queue is full ({depth} in flight): reap completions before queuing more")]
    QueueFull { depth: u32 },
}

impl BackendError {
    /// The errno behind the error, when there is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            BackendError::Open { source, .. }
            | BackendError::DirectUnsupported { source, .. }
            | BackendError::Io { source, .. }
            | BackendError::File { source, .. }
            | BackendError::Meta { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_place_and_suggest_a_fix() {
        let e = BackendError::Io {
            op: "write",
            path: "/x/f.0".into(),
            offset: 4096,
            len: 1024,
            source: io::Error::from_raw_os_error(libc::ENOSPC),
        };
        assert_eq!(
            e.to_string(),
            "write of 1024 bytes at offset 4096 in /x/f.0 failed: No space left on device (ENOSPC); free space on the target or use a smaller --size/--total-size"
        );
        assert_eq!(e.errno(), Some(libc::ENOSPC));
    }
}
