//! Metadata operations. [`MetaBackend`] creates, stats, reads, removes files and makes and
//! removes directories, each named by an entry of a [`MetaDir`]; it also lists directories
//! for tree walks. [`PosixPaths`] calls them with whole paths, as mdtest does (every call
//! walks every component); [`PosixMeta`] uses the *at system calls relative to an open
//! directory, so the kernel walks no long path; [`NullMeta`] touches nothing.
//! Errors are [`BackendError::Meta`], naming the full path with a hint ([`meta_error`]).

use std::ffi::CStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use iolab_core::spec::{MetaBackendKind, MetaPaths};
use rustix::fs::FileType;

use crate::error::BackendError;

mod at;
mod name;
mod on_nfs;
mod paths;
mod stream;
pub use at::PosixMeta;
pub(crate) use at::{fail, list, read_into, write_all};
pub use name::EntryName;
pub use paths::{PosixPaths, lstat_whole_path};
pub use stream::{DirStream, lstat_path};

/// A directory whose entries operations name: an open descriptor (relative calls only),
/// its path (errors, whole-path calls) and that path with a trailing slash, ready for an
/// entry name to be appended, with a number no other `MetaDir` of the process has (a
/// thread's path buffer keeps the prefix of the directory it last spelled).
#[derive(Debug)]
pub struct MetaDir {
    fd: Option<OwnedFd>,
    path: PathBuf,
    slash: Vec<u8>,
    id: u64,
    /// `slash` holds no NUL byte (a Unix path may): a whole path of it and an entry's
    /// name is then a C string without a check.
    nul_free: bool,
}

/// The next `MetaDir`'s number (0 is no directory's).
static NEXT_DIR_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl MetaDir {
    pub(crate) fn new(fd: Option<OwnedFd>, path: PathBuf) -> MetaDir {
        let mut slash = path.as_os_str().as_bytes().to_vec();
        if slash.last() != Some(&b'/') {
            slash.push(b'/');
        }
        let nul_free = !slash.contains(&0);
        let id = NEXT_DIR_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        MetaDir {
            fd,
            path,
            slash,
            id,
            nul_free,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The full path of entry `name` (for messages; allocates).
    pub fn entry(&self, name: &CStr) -> PathBuf {
        self.path.join(std::ffi::OsStr::from_bytes(name.to_bytes()))
    }

    fn fd(&self, op: &'static str, name: &CStr) -> Result<BorrowedFd<'_>, BackendError> {
        self.fd.as_ref().map(|f| f.as_fd()).ok_or_else(|| {
            meta_error(
                op,
                self.entry(name),
                io::Error::from_raw_os_error(libc::EBADF),
            )
        })
    }
}

/// What a directory entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
    /// The file system did not say (d_type DT_UNKNOWN): stat the entry to know.
    Unknown,
}

impl EntryKind {
    pub(crate) fn of(t: FileType) -> EntryKind {
        match t {
            FileType::RegularFile => EntryKind::File,
            FileType::Directory => EntryKind::Dir,
            FileType::Symlink => EntryKind::Symlink,
            FileType::Unknown => EntryKind::Unknown,
            _ => EntryKind::Other,
        }
    }
}

/// A modification time, ordered as find -newer compares them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MTime {
    pub secs: i64,
    pub nanos: u32,
}

/// What stat says about an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryStat {
    pub kind: EntryKind,
    pub size: u64,
    pub mtime: MTime,
    /// The status change time in whole seconds (what pfind's -newer compares).
    pub ctime_secs: i64,
}

impl EntryStat {
    pub(crate) fn of(st: &rustix::fs::Stat) -> EntryStat {
        EntryStat {
            kind: EntryKind::of(FileType::from_raw_mode(st.st_mode)),
            size: st.st_size as u64,
            mtime: MTime {
                secs: st.st_mtime,
                nanos: st.st_mtime_nsec as u32,
            },
            ctime_secs: st.st_ctime,
        }
    }
}

/// What a metadata backend can do; the engine adapts to it rather than to its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaCapabilities {
    /// False for the null backend: nothing is created, and contents cannot be checked.
    pub touches_storage: bool,
}

/// Buffer for directory listings, reused across [`MetaBackend::read_dir`] calls.
pub struct DirBuffer {
    buf: Vec<u8>,
}

impl DirBuffer {
    pub fn new() -> Self {
        DirBuffer {
            buf: Vec::with_capacity(64 * 1024),
        }
    }

    fn space(&mut self) -> &mut [MaybeUninit<u8>] {
        self.buf.spare_capacity_mut()
    }
}

impl Default for DirBuffer {
    fn default() -> Self {
        Self::new()
    }
}

/// Metadata operations relative to an open directory. Implementations are shared by all
/// workers of a rank (`&self`); the hot path allocates nothing unless an operation fails.
pub trait MetaBackend: Send + Sync {
    fn kind(&self) -> MetaBackendKind;
    fn capabilities(&self) -> MetaCapabilities;
    /// Opens a directory by path.
    fn open_dir(&self, path: &Path) -> Result<MetaDir, BackendError>;
    /// Opens subdirectory `name` of `dir` (symbolic links are not followed).
    fn open_subdir(&self, dir: &MetaDir, name: &CStr) -> Result<MetaDir, BackendError>;
    /// Creates a new file (failing if it exists) and writes `content` into it.
    fn create(&self, dir: &MetaDir, name: &CStr, content: &[u8]) -> Result<(), BackendError>;
    /// stat of an entry, without following a symbolic link.
    fn stat(&self, dir: &MetaDir, name: &CStr) -> Result<EntryStat, BackendError>;
    /// The size [`MetaBackend::stat`] gives, by the same call, without the rest of the
    /// answer (a metadata stat phase checks the size alone).
    fn stat_size(&self, dir: &MetaDir, name: &CStr) -> Result<u64, BackendError> {
        self.stat(dir, name).map(|st| st.size)
    }
    /// Opens a file, reads from its start into `buf` until at least `expect` bytes (at most
    /// `buf.len()`) arrived or the file ended, and closes it; returns the bytes read.
    /// With `buf` one byte longer than `expect`, one read call both fetches an intact file
    /// and reveals a longer one. `expect` 0 only opens and closes.
    fn read(
        &self,
        dir: &MetaDir,
        name: &CStr,
        buf: &mut [u8],
        expect: usize,
    ) -> Result<usize, BackendError>;
    /// Removes a file.
    fn remove(&self, dir: &MetaDir, name: &CStr) -> Result<(), BackendError>;
    fn mkdir(&self, dir: &MetaDir, name: &CStr) -> Result<(), BackendError>;
    fn rmdir(&self, dir: &MetaDir, name: &CStr) -> Result<(), BackendError>;
    /// Writes every file system's dirty data back (sync(2), mdtest -Y); nothing on a
    /// backend that touches no storage.
    fn sync(&self) {
        if self.capabilities().touches_storage {
            rustix::fs::sync();
        }
    }
    /// Calls `each` for every entry of `dir` but "." and "..", from the start.
    fn read_dir(
        &self,
        dir: &MetaDir,
        buf: &mut DirBuffer,
        each: &mut dyn FnMut(&CStr, EntryKind),
    ) -> Result<(), BackendError>;
}

/// The metadata backend of `kind` naming files as `paths` says.
pub fn meta_backend(kind: MetaBackendKind, paths: MetaPaths) -> Box<dyn MetaBackend> {
    match (kind, paths) {
        (MetaBackendKind::Posix, MetaPaths::Whole) => Box::new(PosixPaths),
        (MetaBackendKind::Posix, MetaPaths::Relative) => Box::new(PosixMeta),
        (MetaBackendKind::Null, _) => Box::new(NullMeta),
        (MetaBackendKind::Nfs, _) => Box::new(on_nfs::NfsMeta),
    }
}

/// The modification time of `path` (following symbolic links), for find -newer.
pub fn mtime_of(path: &Path) -> Result<MTime, BackendError> {
    rustix::fs::stat(path)
        .map(|st| MTime {
            secs: st.st_mtime,
            nanos: st.st_mtime_nsec as u32,
        })
        .map_err(|e| meta_error("stat", path.to_path_buf(), e.into()))
}

/// The status change time of `path` in whole seconds, as pfind reads its -newer file
/// (lstat).
pub fn ctime_secs_of(path: &Path) -> Result<i64, BackendError> {
    rustix::fs::lstat(path)
        .map(|st| st.st_ctime)
        .map_err(|e| meta_error("stat", path.to_path_buf(), e.into()))
}

/// A [`BackendError::Meta`] for `op` on `path`, with a hint fitting the errno (for ENOSPC
/// it looks whether the file system ran out of inodes or of space).
pub fn meta_error(op: &'static str, path: PathBuf, source: io::Error) -> BackendError {
    let hint = meta_hint(source.raw_os_error(), &path);
    BackendError::Meta {
        op,
        path,
        source,
        hint,
    }
}

fn meta_hint(errno: Option<i32>, path: &Path) -> &'static str {
    match errno {
        Some(libc::ENOSPC) => {
            let dir = path.parent().unwrap_or(path);
            if matches!(crate::files::fs_free_inodes(dir), Ok(Some(0))) {
                "; the file system has no inodes left (see df -i): use fewer files (--files-per-dir, --dirs-per-thread, --total-files) or free some"
            } else {
                "; the file system is full (no space or no inodes left): use fewer or smaller files, or free space"
            }
        }
        Some(libc::EDQUOT) => {
            "; the disk quota (space or inodes) is exhausted: use fewer or smaller files"
        }
        Some(libc::EEXIST) => {
            "; it already exists: iolab creates only new files, so remove what an earlier run left or choose another --dir"
        }
        Some(libc::ENOENT) => {
            "; it does not exist: something else removed it, or it was never created"
        }
        Some(libc::ENOTEMPTY) => "; the directory holds entries iolab did not create",
        Some(libc::EMLINK) => {
            "; the directory holds as many subdirectories as the file system allows: use fewer --dirs-per-thread or a --depth"
        }
        Some(libc::ENAMETOOLONG) => {
            "; the path is too long: use a shorter --dir or a smaller --depth"
        }
        other => crate::error::errno_hint(other),
    }
}

/// Completes every operation at once without touching storage: a run on it measures
/// iolab's own cost per operation.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullMeta;

impl MetaBackend for NullMeta {
    fn kind(&self) -> MetaBackendKind {
        MetaBackendKind::Null
    }

    fn capabilities(&self) -> MetaCapabilities {
        MetaCapabilities {
            touches_storage: false,
        }
    }

    fn open_dir(&self, path: &Path) -> Result<MetaDir, BackendError> {
        Ok(MetaDir::new(None, path.to_path_buf()))
    }

    fn open_subdir(&self, dir: &MetaDir, name: &CStr) -> Result<MetaDir, BackendError> {
        Ok(MetaDir::new(None, dir.entry(name)))
    }

    #[inline]
    fn create(&self, _dir: &MetaDir, _name: &CStr, _content: &[u8]) -> Result<(), BackendError> {
        Ok(())
    }

    #[inline]
    fn stat(&self, _dir: &MetaDir, _name: &CStr) -> Result<EntryStat, BackendError> {
        Ok(EntryStat {
            kind: EntryKind::File,
            size: 0,
            mtime: MTime::default(),
            ctime_secs: 0,
        })
    }

    #[inline]
    fn read(
        &self,
        _dir: &MetaDir,
        _name: &CStr,
        buf: &mut [u8],
        expect: usize,
    ) -> Result<usize, BackendError> {
        Ok(expect.min(buf.len()))
    }

    #[inline]
    fn remove(&self, _dir: &MetaDir, _name: &CStr) -> Result<(), BackendError> {
        Ok(())
    }

    fn mkdir(&self, _dir: &MetaDir, _name: &CStr) -> Result<(), BackendError> {
        Ok(())
    }

    fn rmdir(&self, _dir: &MetaDir, _name: &CStr) -> Result<(), BackendError> {
        Ok(())
    }

    fn read_dir(
        &self,
        _dir: &MetaDir,
        _buf: &mut DirBuffer,
        _each: &mut dyn FnMut(&CStr, EntryKind),
    ) -> Result<(), BackendError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_path_and_suggest_a_fix() {
        let e = meta_error(
            "create",
            PathBuf::from("/x/t0/d0/f0.1"),
            io::Error::from_raw_os_error(libc::EACCES),
        );
        assert_eq!(
            e.to_string(),
            "create /x/t0/d0/f0.1 failed: Permission denied; check the permissions, or choose a directory you can write to"
        );
        assert_eq!(e.errno(), Some(libc::EACCES));
        let full = meta_error(
            "create",
            PathBuf::from("/nonexistent/f"),
            io::Error::from_raw_os_error(libc::ENOSPC),
        )
        .to_string();
        assert!(
            full.contains("No space left on device (ENOSPC); the file system is full"),
            "{full}"
        );
    }
}
