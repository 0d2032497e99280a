//! [`PosixPaths`]: every operation names its file by its whole path from the current
//! directory, with the calls and flags mdtest's POSIX backend uses, so the kernel (and a
//! network file system's client) walks every component each time, as it does for mdtest,
//! IO500 and most applications. A worker's path is spelled into a reused per-thread
//! buffer: the hot path allocates nothing.
//!
//! Per operation (mdtest 4.1, `-a POSIX`): create is open(O_CREAT|O_RDWR, 0664), then
//! lseek(0) and write when there is content, and close; stat is stat(2) (following
//! links); read is open(O_RDWR), lseek(0), read, close; remove is unlink(2); the tree's
//! directories mkdir(2)/rmdir(2). The one difference: create adds O_EXCL, so iolab never
//! opens a file it did not just create.

use std::cell::RefCell;
use std::ffi::CStr;
use std::os::fd::AsFd;
use std::path::Path;

use iolab_core::spec::MetaBackendKind;
use rustix::fs::{Mode, OFlags, SeekFrom};
use rustix::io::Errno;

use super::{
    DirBuffer, EntryKind, EntryStat, MetaBackend, MetaCapabilities, MetaDir, fail, list,
    meta_error, read_into, write_all,
};
use crate::error::BackendError;

/// Whole-path POSIX calls, as mdtest makes them.
#[derive(Clone, Copy, Debug, Default)]
pub struct PosixPaths;

/// A thread's path buffer, and which directory's prefix (`MetaDir::id`; 0: none) it
/// starts with.
struct PathBuffer {
    dir: u64,
    bytes: Vec<u8>,
}

thread_local! {
    static PATH: RefCell<PathBuffer> = const {
        RefCell::new(PathBuffer {
            dir: 0,
            bytes: Vec::new(),
        })
    };
}

/// Calls `f` with the whole path of entry `name` of `dir`. The directory's prefix is
/// spelled once per run of operations in it, then only the name is (a worker's
/// operations in one directory follow each other); neither is scanned for NULs again.
#[inline]
fn with_path<R>(dir: &MetaDir, name: &CStr, f: impl FnOnce(&CStr) -> R) -> R {
    // Only the buffer's address comes out of `with`: a closure that small lets
    // `LocalKey::with` be inlined, so the thread-local is reached in line; with the whole
    // body inside, `with` stayed a call that reached it through a function pointer
    // (some 30 instructions of each operation's 380, callgrind).
    let cell: *const RefCell<PathBuffer> = PATH.with(|buf| buf as *const _);
    // SAFETY: a thread's own thread-local lives until the thread exits, and this runs on
    // that thread (never from a thread-local's destructor): the pointer stays valid for
    // the call. The RefCell still guards against a nested borrow.
    let mut buf = unsafe { &*cell }.borrow_mut();
    let buf = &mut *buf;
    if buf.dir == dir.id {
        buf.bytes.truncate(dir.slash.len());
    } else {
        buf.bytes.clear();
        buf.bytes.extend_from_slice(&dir.slash);
        buf.dir = dir.id;
    }
    append(&mut buf.bytes, name.to_bytes_with_nul());
    let path = if dir.nul_free {
        // SAFETY: the bytes are the prefix, which holds no NUL (`nul_free`), then a C
        // string's bytes with its NUL: exactly one NUL, the last byte.
        unsafe { CStr::from_bytes_with_nul_unchecked(&buf.bytes) }
    } else {
        CStr::from_bytes_with_nul(&buf.bytes).expect("one NUL, at the end")
    };
    f(path)
}

/// Appends `bytes` to `v`. A name of 16 to 32 bytes with its NUL (mdtest's
/// `file.mdtest.R.I` is 21) goes in as two overlapping 16-byte copies, in line: as a
/// call to memcpy it cost some 15 instructions of each operation (callgrind).
#[inline(always)]
fn append(v: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.len();
    if !(16..=32).contains(&n) {
        v.extend_from_slice(bytes);
        return;
    }
    v.reserve(n);
    let len = v.len();
    let head: [u8; 16] = bytes[..16].try_into().expect("16 bytes");
    let tail: [u8; 16] = bytes[n - 16..].try_into().expect("16 bytes");
    // SAFETY: `reserve` made room for `n` more bytes after `len`; the two writes cover
    // `len..len + 16` and `len + n - 16..len + n` (n is 16 to 32: together every byte
    // of `len..len + n`, all initialized before `set_len` counts them).
    unsafe {
        let at = v.as_mut_ptr().add(len);
        std::ptr::write_unaligned(at.cast::<[u8; 16]>(), head);
        std::ptr::write_unaligned(at.add(n - 16).cast::<[u8; 16]>(), tail);
        v.set_len(len + n);
    }
}

/// lstat(2) of entry `name` of `dir` by its whole path, as pfind looks at an entry:
/// `newfstatat(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW)`.
pub fn lstat_whole_path(dir: &MetaDir, name: &CStr) -> Result<EntryStat, BackendError> {
    with_path(dir, name, |path| {
        rustix::fs::lstat(path)
            .map(|st| EntryStat::of(&st))
            .map_err(|e| fail("stat", dir, name, e))
    })
}

/// openat(AT_FDCWD, path, O_RDWR | flags), as glibc's open(3) calls it.
fn open_rw(path: &CStr, flags: OFlags, mode: u32) -> Result<std::os::fd::OwnedFd, Errno> {
    let flags = flags | OFlags::RDWR | OFlags::CLOEXEC;
    rustix::fs::openat(rustix::fs::CWD, path, flags, Mode::from(mode))
}

/// The result of a libc call that returns 0 or -1 with errno.
fn check(ret: libc::c_int) -> Result<(), Errno> {
    if ret == 0 {
        Ok(())
    } else {
        Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO))
    }
}

// unlink(2), mkdir(2) and rmdir(2) themselves, as mdtest's calls reach the kernel (rustix
// would issue unlinkat/mkdirat with AT_FDCWD: the same work, other names in strace).
fn unlink(path: &CStr) -> Result<(), Errno> {
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
    check(unsafe { libc::unlink(path.as_ptr()) })
}

fn mkdir(path: &CStr, mode: libc::mode_t) -> Result<(), Errno> {
    // SAFETY: as for unlink.
    check(unsafe { libc::mkdir(path.as_ptr(), mode) })
}

fn rmdir(path: &CStr) -> Result<(), Errno> {
    // SAFETY: as for unlink.
    check(unsafe { libc::rmdir(path.as_ptr()) })
}

impl MetaBackend for PosixPaths {
    fn kind(&self) -> MetaBackendKind {
        MetaBackendKind::Posix
    }

    fn capabilities(&self) -> MetaCapabilities {
        MetaCapabilities {
            touches_storage: true,
        }
    }

    /// Opens nothing: operations name the directory in every path.
    fn open_dir(&self, path: &Path) -> Result<MetaDir, BackendError> {
        Ok(MetaDir::new(None, path.to_path_buf()))
    }

    fn open_subdir(&self, dir: &MetaDir, name: &CStr) -> Result<MetaDir, BackendError> {
        Ok(MetaDir::new(None, dir.entry(name)))
    }

    #[inline]
    fn create(&self, dir: &MetaDir, name: &CStr, content: &[u8]) -> Result<(), BackendError> {
        // As in stat: the closure's result is an errno (and which call failed).
        with_path(dir, name, |path| {
            let fd =
                open_rw(path, OFlags::CREATE | OFlags::EXCL, 0o664).map_err(|e| ("create", e))?;
            if !content.is_empty() {
                rustix::fs::seek(fd.as_fd(), SeekFrom::Start(0)).map_err(|e| ("write", e))?;
                write_all(fd.as_fd(), content).map_err(|e| ("write", e))?;
            }
            Ok(())
        })
        .map_err(|(op, e)| fail(op, dir, name, e))
    }

    #[inline]
    fn stat(&self, dir: &MetaDir, name: &CStr) -> Result<EntryStat, BackendError> {
        // The error is made outside the path buffer's closure: a result the size of an
        // errno leaves it, not one the size of a BackendError copied out field by field
        // on every call (some 40 instructions a stat, callgrind).
        with_path(dir, name, |path| {
            rustix::fs::stat(path).map(|st| EntryStat::of(&st))
        })
        .map_err(|e| fail("stat", dir, name, e))
    }

    /// As `stat`, the size alone: no kind, times or `EntryStat` made from the answer
    /// (some 15 instructions of a stat, callgrind).
    #[inline]
    fn stat_size(&self, dir: &MetaDir, name: &CStr) -> Result<u64, BackendError> {
        with_path(dir, name, |path| {
            rustix::fs::stat(path).map(|st| st.st_size as u64)
        })
        .map_err(|e| fail("stat", dir, name, e))
    }

    #[inline]
    fn read(
        &self,
        dir: &MetaDir,
        name: &CStr,
        buf: &mut [u8],
        expect: usize,
    ) -> Result<usize, BackendError> {
        with_path(dir, name, |path| {
            let fd = open_rw(path, OFlags::empty(), 0).map_err(|e| fail("open", dir, name, e))?;
            if expect == 0 {
                return Ok(0);
            }
            rustix::fs::seek(fd.as_fd(), SeekFrom::Start(0))
                .map_err(|e| fail("read", dir, name, e))?;
            read_into(fd.as_fd(), buf, expect).map_err(|e| fail("read", dir, name, e))
        })
    }

    #[inline]
    fn remove(&self, dir: &MetaDir, name: &CStr) -> Result<(), BackendError> {
        with_path(dir, name, unlink).map_err(|e| fail("remove", dir, name, e))
    }

    /// mkdir(2) with mdtest's DIRMODE (0775; the umask takes what it takes).
    fn mkdir(&self, dir: &MetaDir, name: &CStr) -> Result<(), BackendError> {
        with_path(dir, name, |path| {
            mkdir(path, 0o775).map_err(|e| fail("mkdir", dir, name, e))
        })
    }

    fn rmdir(&self, dir: &MetaDir, name: &CStr) -> Result<(), BackendError> {
        with_path(dir, name, |path| {
            rmdir(path).map_err(|e| fail("rmdir", dir, name, e))
        })
    }

    /// Opens the directory by its path for the listing (tree walks, not timed).
    fn read_dir(
        &self,
        dir: &MetaDir,
        buf: &mut DirBuffer,
        each: &mut dyn FnMut(&CStr, EntryKind),
    ) -> Result<(), BackendError> {
        let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC;
        let fd = rustix::fs::open(&dir.path, flags, Mode::empty())
            .map_err(|e| meta_error("list", dir.path.clone(), e.into()))?;
        list(fd.as_fd(), &dir.path, buf, each)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_copies_every_length_exactly() {
        let src: Vec<u8> = (1..=40).collect();
        for start in [0usize, 3, 17] {
            for n in 0..=40 {
                let mut v: Vec<u8> = vec![0xee; start];
                append(&mut v, &src[..n]);
                let mut want = vec![0xee; start];
                want.extend_from_slice(&src[..n]);
                assert_eq!(v, want, "start {start}, {n} bytes");
            }
        }
    }
}
