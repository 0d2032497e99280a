//! [`PosixMeta`]: every operation is a POSIX *at call relative to an open directory
//! ([`MetaDir`]'s descriptor), so the kernel walks no long path; and the helpers the
//! other POSIX backends share (a whole write, a read up to what is expected, a listing).

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use iolab_core::spec::MetaBackendKind;
use rustix::fs::{AtFlags, Mode, OFlags, RawDir};
use rustix::io::Errno;

use super::{DirBuffer, EntryKind, EntryStat, MetaBackend, MetaCapabilities, MetaDir, meta_error};
use crate::error::BackendError;

/// POSIX calls relative to an open directory.
#[derive(Clone, Copy, Debug, Default)]
pub struct PosixMeta;

pub(crate) fn fail(op: &'static str, dir: &MetaDir, name: &CStr, e: Errno) -> BackendError {
    meta_error(op, dir.entry(name), e.into())
}

pub(crate) fn write_all(fd: BorrowedFd<'_>, mut data: &[u8]) -> Result<(), Errno> {
    while !data.is_empty() {
        match rustix::io::write(fd, data) {
            Ok(0) => return Err(Errno::NOSPC),
            Ok(n) => data = &data[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

pub(crate) fn read_into(fd: BorrowedFd<'_>, buf: &mut [u8], expect: usize) -> Result<usize, Errno> {
    let mut got = 0;
    while got < expect.min(buf.len()) {
        match rustix::io::read(fd, &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl MetaBackend for PosixMeta {
    fn kind(&self) -> MetaBackendKind {
        MetaBackendKind::Posix
    }

    fn capabilities(&self) -> MetaCapabilities {
        MetaCapabilities {
            touches_storage: true,
        }
    }

    fn open_dir(&self, path: &Path) -> Result<MetaDir, BackendError> {
        let fd = rustix::fs::open(
            path,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| meta_error("open directory", path.to_path_buf(), e.into()))?;
        Ok(MetaDir::new(Some(fd), path.to_path_buf()))
    }

    fn open_subdir(&self, dir: &MetaDir, name: &CStr) -> Result<MetaDir, BackendError> {
        let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(dir.fd("open directory", name)?, name, flags, Mode::empty())
            .map_err(|e| fail("open directory", dir, name, e))?;
        Ok(MetaDir::new(Some(fd), dir.entry(name)))
    }

    #[inline]
    fn create(&self, dir: &MetaDir, name: &CStr, content: &[u8]) -> Result<(), BackendError> {
        let flags = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(dir.fd("create", name)?, name, flags, Mode::from(0o644))
            .map_err(|e| fail("create", dir, name, e))?;
        if !content.is_empty() {
            write_all(fd.as_fd(), content).map_err(|e| fail("write", dir, name, e))?;
        }
        Ok(())
    }

    #[inline]
    fn stat(&self, dir: &MetaDir, name: &CStr) -> Result<EntryStat, BackendError> {
        let st = rustix::fs::statat(dir.fd("stat", name)?, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| fail("stat", dir, name, e))?;
        Ok(EntryStat::of(&st))
    }

    #[inline]
    fn stat_size(&self, dir: &MetaDir, name: &CStr) -> Result<u64, BackendError> {
        rustix::fs::statat(dir.fd("stat", name)?, name, AtFlags::SYMLINK_NOFOLLOW)
            .map(|st| st.st_size as u64)
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
        let flags = OFlags::RDONLY | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(dir.fd("open", name)?, name, flags, Mode::empty())
            .map_err(|e| fail("open", dir, name, e))?;
        read_into(fd.as_fd(), buf, expect).map_err(|e| fail("read", dir, name, e))
    }

    #[inline]
    fn remove(&self, dir: &MetaDir, name: &CStr) -> Result<(), BackendError> {
        rustix::fs::unlinkat(dir.fd("remove", name)?, name, AtFlags::empty())
            .map_err(|e| fail("remove", dir, name, e))
    }

    fn mkdir(&self, dir: &MetaDir, name: &CStr) -> Result<(), BackendError> {
        rustix::fs::mkdirat(dir.fd("mkdir", name)?, name, Mode::from(0o755))
            .map_err(|e| fail("mkdir", dir, name, e))
    }

    fn rmdir(&self, dir: &MetaDir, name: &CStr) -> Result<(), BackendError> {
        rustix::fs::unlinkat(dir.fd("rmdir", name)?, name, AtFlags::REMOVEDIR)
            .map_err(|e| fail("rmdir", dir, name, e))
    }

    fn read_dir(
        &self,
        dir: &MetaDir,
        buf: &mut DirBuffer,
        each: &mut dyn FnMut(&CStr, EntryKind),
    ) -> Result<(), BackendError> {
        list(dir.fd("list", c".")?, &dir.path, buf, each)
    }
}

/// Calls `each` for every entry of the open directory `fd` (at `path`) but "." and "..".
pub(crate) fn list(
    fd: BorrowedFd<'_>,
    path: &Path,
    buf: &mut DirBuffer,
    each: &mut dyn FnMut(&CStr, EntryKind),
) -> Result<(), BackendError> {
    let list_err = |e: Errno| meta_error("list", path.to_path_buf(), e.into());
    rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(0)).map_err(list_err)?;
    let mut entries = RawDir::new(fd, buf.space());
    while let Some(entry) = entries.next() {
        let entry = entry.map_err(list_err)?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        each(name, EntryKind::of(entry.file_type()));
    }
    Ok(())
}
