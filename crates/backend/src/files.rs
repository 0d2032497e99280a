//! Files as storage sees them: [`DataFile`] opens with the flags a workload needs
//! (O_DIRECT, O_SYNC), preallocates, syncs, trims and drops its cached pages; opened on
//! an NBD URI, it is a connection to that export ([`crate::libnbd::Export`]) and its untimed
//! reads, writes, flushes and trims go there. Free functions empty the page cache. What a path's file system tells (direct-I/O
//! alignment, type, client cache, free space) is in `fsinfo.rs`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{Advice, FallocateFlags};

use crate::error::BackendError;

mod fsinfo;
mod on_nfs;
pub use fsinfo::{
    ClientCache, client_cache, direct_io_alignment, fs_free, fs_free_inodes, fs_type, is_remote_fs,
    space_short, tried_direct_io_alignment,
};

/// How to open a data file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenSpec {
    pub write: bool,
    pub create: bool,
    pub truncate: bool,
    pub direct: bool,
    pub sync: bool,
}

/// What a data file is open on.
#[derive(Debug)]
enum Storage {
    Local(File),
    /// An NBD export (a block device reached through libnbd).
    Nbd(crate::libnbd::Export),
    /// A file on an NFS export, reached through libnfs (see `files/on_nfs.rs`).
    Nfs(crate::nfs::NfsFile),
}

/// An open data file (or block device, or NBD export, or file on an NFS export).
#[derive(Debug)]
pub struct DataFile {
    storage: Storage,
    path: PathBuf,
    direct: bool,
    block_device: bool,
}

impl DataFile {
    /// Opens `path`, never through a symbolic link as its last component (O_NOFOLLOW):
    /// a link planted in a work directory must not send writes elsewhere. Device paths
    /// are resolved beforehand ([`crate::device::inspect_device`]). An NBD URI
    /// ([`crate::libnbd::is_uri`]) connects to the export instead.
    pub fn open(path: &Path, spec: OpenSpec) -> Result<Self, BackendError> {
        if crate::nfs::is_nfs_path(path) {
            return Self::open_nfs(path, spec);
        }
        if crate::libnbd::is_uri(path) {
            let export = crate::libnbd::Export::connect(&path.to_string_lossy())?;
            return Ok(DataFile {
                storage: Storage::Nbd(export),
                path: path.to_path_buf(),
                direct: spec.direct,
                block_device: true,
            });
        }
        let mut flags = libc::O_NOFOLLOW;
        if spec.direct {
            flags |= libc::O_DIRECT;
        }
        if spec.sync {
            flags |= libc::O_SYNC;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(spec.write)
            .create(spec.create)
            .truncate(spec.truncate)
            .custom_flags(flags)
            .mode(0o644)
            .open(path)
            .map_err(|source| {
                if spec.direct && source.raw_os_error() == Some(libc::EINVAL) {
                    BackendError::DirectUnsupported {
                        path: path.to_path_buf(),
                        source,
                    }
                } else {
                    BackendError::Open {
                        path: path.to_path_buf(),
                        source,
                    }
                }
            })?;
        let block_device = file
            .metadata()
            .map(|m| m.file_type().is_block_device())
            .unwrap_or(false);
        Ok(DataFile {
            storage: Storage::Local(file),
            path: path.to_path_buf(),
            direct: spec.direct,
            block_device,
        })
    }

    /// The local file, or the error for an NBD export, which has none.
    fn file(&self, op: &'static str) -> Result<&File, BackendError> {
        match &self.storage {
            Storage::Local(f) => Ok(f),
            Storage::Nbd(_) | Storage::Nfs(_) => {
                Err(self.file_err(op, io::Error::from_raw_os_error(libc::EINVAL)))
            }
        }
    }

    /// The NBD export this is open on, if it is one.
    pub fn export(&self) -> Option<&crate::libnbd::Export> {
        match &self.storage {
            Storage::Nbd(e) => Some(e),
            _ => None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_direct(&self) -> bool {
        self.direct
    }

    pub fn is_block_device(&self) -> bool {
        self.block_device
    }

    /// The descriptor of a local file or device (None for an NBD or NFS export).
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        match &self.storage {
            Storage::Local(f) => Some(f.as_fd()),
            Storage::Nbd(_) | Storage::Nfs(_) => None,
        }
    }

    /// The descriptors of `files`, or the error of a backend that reaches only local
    /// files and devices (not an NBD export).
    pub(crate) fn fds<'f>(
        files: &'f [DataFile],
        backend: &'static str,
    ) -> Result<Vec<BorrowedFd<'f>>, BackendError> {
        files
            .iter()
            .map(|f| match &f.storage {
                Storage::Local(file) => Ok(file.as_fd()),
                Storage::Nfs(_) => Err(BackendError::NfsNotLocal {
                    backend,
                    path: f.path.clone(),
                }),
                Storage::Nbd(_) => Err(BackendError::NotLocal {
                    backend,
                    path: f.path.clone(),
                }),
            })
            .collect()
    }

    fn file_err(&self, op: &'static str, source: io::Error) -> BackendError {
        BackendError::File {
            op,
            path: self.path.clone(),
            source,
        }
    }

    /// Size in bytes (a block device's capacity for a device).
    pub fn len(&self) -> Result<u64, BackendError> {
        if let Some(e) = self.export() {
            return Ok(e.size());
        }
        if let Some(f) = self.nfs() {
            return self.nfs_len(f);
        }
        let file = self.file("size")?;
        if self.block_device {
            let end = rustix::fs::seek(file, rustix::fs::SeekFrom::End(0))
                .map_err(|e| self.file_err("size", e.into()))?;
            return Ok(end);
        }
        file.metadata()
            .map(|m| m.len())
            .map_err(|e| self.file_err("stat", e))
    }

    pub fn is_empty(&self) -> Result<bool, BackendError> {
        Ok(self.len()? == 0)
    }

    pub fn set_len(&self, len: u64) -> Result<(), BackendError> {
        if let Some(f) = self.nfs() {
            return f
                .conn
                .ftruncate(f.fh, len)
                .map_err(|e| self.file_err("truncate", e));
        }
        self.file("truncate")?
            .set_len(len)
            .map_err(|e| self.file_err("truncate", e))
    }

    /// Reserves `len` bytes on storage (fallocate), so writes do not allocate.
    pub fn allocate(&self, len: u64) -> Result<(), BackendError> {
        // NFSv3 has no ALLOCATE: the layout's writes allocate.
        if len == 0 || self.block_device || self.nfs().is_some() {
            return Ok(());
        }
        rustix::fs::fallocate(self.file("fallocate")?, FallocateFlags::empty(), 0, len)
            .map_err(|e| self.file_err("fallocate", e.into()))
    }

    /// Reserves `len` bytes at `offset` without changing the file's size
    /// (`fallocate(KEEP_SIZE)`), as numpy's `tofile` does before writing an array of 16 MiB
    /// or more. Where the file system cannot (EOPNOTSUPP), nothing is reserved and the
    /// writes allocate: numpy ignores that failure too. A file only: a device, an NBD or
    /// NFS export is left alone.
    pub fn reserve_keep_size(&self, offset: u64, len: u64) -> Result<(), BackendError> {
        let Storage::Local(file) = &self.storage else {
            return Ok(());
        };
        if len == 0 || self.block_device {
            return Ok(());
        }
        match rustix::fs::fallocate(file, FallocateFlags::KEEP_SIZE, offset, len) {
            Err(e) if e == rustix::io::Errno::OPNOTSUPP => Ok(()),
            r => r.map_err(|e| self.file_err("fallocate(KEEP_SIZE)", e.into())),
        }
    }

    /// Discards `len` bytes at `offset` (BLKDISCARD on a device, a punched hole in a
    /// file; see [`trim_range`]), outside the timed path: a purge.
    pub fn discard(&self, offset: u64, len: u64) -> Result<(), BackendError> {
        let trimmed = match &self.storage {
            Storage::Nbd(e) => e.trim(offset, len),
            Storage::Nfs(_) => Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
            Storage::Local(f) => {
                trim_range(f.as_fd(), self.block_device, offset, len).map_err(Into::into)
            }
        };
        trimmed.map_err(|source| BackendError::Io {
            op: "trim",
            path: self.path.clone(),
            offset,
            len,
            source,
        })
    }

    /// fsync, or an NBD export's flush.
    pub fn fsync(&self) -> Result<(), BackendError> {
        match &self.storage {
            Storage::Nbd(e) => e.flush(),
            Storage::Nfs(f) => f.conn.fsync(f.fh).map_err(|e| self.file_err("fsync", e)),
            Storage::Local(f) => rustix::fs::fsync(f).map_err(|e| self.file_err("fsync", e.into())),
        }
    }

    /// Drops this file's pages from the page cache (works without root). Dirty pages
    /// are written back first: the kernel keeps dirty and under-writeback pages through
    /// DONTNEED, so a read right after a buffered write would otherwise hit memory.
    /// An NBD or NFS export has no pages here (libnfs keeps no cache): nothing to drop.
    pub fn drop_cache(&self) -> Result<(), BackendError> {
        let Storage::Local(file) = &self.storage else {
            return Ok(());
        };
        if !self.block_device {
            rustix::fs::fdatasync(file).map_err(|e| self.file_err("fdatasync", e.into()))?;
        }
        rustix::fs::fadvise(file, 0, None, Advice::DontNeed)
            .map_err(|e| self.file_err("fadvise(DONTNEED)", e.into()))
    }

    /// Tells the kernel how the file will be read (`posix_fadvise` RANDOM: no
    /// readahead; SEQUENTIAL: more of it), as fio does by default (fadvise_hint=1).
    pub fn advise_access(&self, random: bool) -> Result<(), BackendError> {
        let advice = if random {
            Advice::Random
        } else {
            Advice::Sequential
        };
        let Storage::Local(file) = &self.storage else {
            return Ok(());
        };
        rustix::fs::fadvise(file, 0, None, advice).map_err(|e| self.file_err("fadvise", e.into()))
    }

    /// Advises the kernel that this file's cached pages are not needed
    /// (`posix_fadvise(DONTNEED)` alone, as fio's loop_cache_invalidate: clean pages
    /// go, dirty ones stay until written back).
    pub fn advise_dont_need(&self) -> Result<(), BackendError> {
        let Storage::Local(file) = &self.storage else {
            return Ok(());
        };
        rustix::fs::fadvise(file, 0, None, Advice::DontNeed)
            .map_err(|e| self.file_err("fadvise(DONTNEED)", e.into()))
    }

    /// Reads exactly `buf.len()` bytes at `offset` (outside the timed path: layout and
    /// checks). A short read is an error naming the offset.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<(), BackendError> {
        let file = match &self.storage {
            Storage::Nbd(e) => return e.pread(buf, offset),
            Storage::Nfs(f) => return self.nfs_read_exact(f, buf, offset),
            Storage::Local(f) => f,
        };
        file.read_exact_at(buf, offset)
            .map_err(|source| BackendError::Io {
                op: "read",
                path: self.path.clone(),
                offset,
                len: buf.len() as u64,
                source,
            })
    }

    /// Reads up to `buf.len()` bytes at `offset`, as one pread: fewer at the end of the
    /// file (0 past it). A sequential reader of whole files (iolab train) loops on it.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize, BackendError> {
        let file = match &self.storage {
            Storage::Nbd(e) => {
                let n = e.size().saturating_sub(offset).min(buf.len() as u64) as usize;
                return e.pread(&mut buf[..n], offset).map(|()| n);
            }
            Storage::Nfs(f) => {
                return f
                    .conn
                    .pread(f.fh, buf, offset)
                    .map_err(|source| BackendError::Io {
                        op: "read",
                        path: self.path.clone(),
                        offset,
                        len: buf.len() as u64,
                        source,
                    });
            }
            Storage::Local(f) => f,
        };
        loop {
            match file.read_at(buf, offset) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) if self.direct && source.raw_os_error() == Some(libc::EINVAL) => {
                    return Err(BackendError::Unaligned {
                        op: "read",
                        path: self.path.clone(),
                        offset,
                        len: buf.len() as u64,
                        align: direct_io_alignment(&self.path),
                    });
                }
                Err(source) => {
                    return Err(BackendError::Io {
                        op: "read",
                        path: self.path.clone(),
                        offset,
                        len: buf.len() as u64,
                        source,
                    });
                }
            }
        }
    }

    /// Writes all of `buf` at `offset` (outside the timed path: layout).
    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<(), BackendError> {
        let file = match &self.storage {
            Storage::Nbd(e) => return e.pwrite(buf, offset),
            Storage::Nfs(f) => return self.nfs_write_all(f, buf, offset),
            Storage::Local(f) => f,
        };
        file.write_all_at(buf, offset).map_err(|source| {
            if self.direct && source.raw_os_error() == Some(libc::EINVAL) {
                BackendError::Unaligned {
                    op: "write",
                    path: self.path.clone(),
                    offset,
                    len: buf.len() as u64,
                    align: direct_io_alignment(&self.path),
                }
            } else {
                BackendError::Io {
                    op: "write",
                    path: self.path.clone(),
                    offset,
                    len: buf.len() as u64,
                    source,
                }
            }
        })
    }
}

/// BLKDISCARD, `_IO(0x12, 119)`: discard a byte range of a block device.
const BLKDISCARD: libc::c_ulong = 0x1277;

/// Discards `len` bytes at `offset`: BLKDISCARD on a block device (as fio's trim does;
/// EOPNOTSUPP when the device cannot discard), a punched hole that keeps the size on a
/// file (`fallocate(PUNCH_HOLE | KEEP_SIZE)`; EOPNOTSUPP where the file system cannot).
/// Either way the range reads back as zeros afterwards on devices that promise it, and
/// a file gives its blocks back to the file system.
#[inline]
pub fn trim_range(
    fd: BorrowedFd<'_>,
    block_device: bool,
    offset: u64,
    len: u64,
) -> Result<(), rustix::io::Errno> {
    if block_device {
        let range: [u64; 2] = [offset, len];
        // SAFETY: BLKDISCARD reads two u64 (start, length) from the pointer, which points
        // at a live array of two u64 for the duration of the call; the fd is borrowed, so
        // open.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), BLKDISCARD, range.as_ptr()) };
        if rc == 0 {
            Ok(())
        } else {
            Err(
                rustix::io::Errno::from_io_error(&io::Error::last_os_error())
                    .unwrap_or(rustix::io::Errno::IO),
            )
        }
    } else {
        rustix::fs::fallocate(
            fd,
            FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
            offset,
            len,
        )
    }
}

/// How the page cache was emptied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheDrop {
    /// All clean caches of the machine (root: /proc/sys/vm/drop_caches).
    All,
    /// Only the given files' pages (fadvise); the reason the global drop failed.
    FilesOnly { reason: String },
}

/// Empties the page cache before a read phase: the whole machine's clean caches when
/// permitted, else the pages of `files` only. Dirty data is written back first.
pub fn drop_caches(files: &[&DataFile]) -> Result<CacheDrop, BackendError> {
    rustix::fs::sync();
    let global = std::fs::write("/proc/sys/vm/drop_caches", b"3\n");
    for f in files {
        f.drop_cache()?;
    }
    Ok(match global {
        Ok(()) => CacheDrop::All,
        Err(e) => CacheDrop::FilesOnly {
            reason: format!("/proc/sys/vm/drop_caches: {e}"),
        },
    })
}

/// Empties the whole machine's clean page cache (dentries and inodes too), after writing
/// dirty data back: IO500's `drop-caches` (`echo 3 > /proc/sys/vm/drop_caches`).
pub fn drop_whole_page_cache() -> Result<(), String> {
    rustix::fs::sync();
    std::fs::write("/proc/sys/vm/drop_caches", b"3\n")
        .map_err(|e| format!("/proc/sys/vm/drop_caches: {}", crate::error::describe(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_create_size_and_sync() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let f = DataFile::open(
            &p,
            OpenSpec {
                write: true,
                create: true,
                ..OpenSpec::default()
            },
        )
        .unwrap();
        f.write_all_at(b"hello", 4096).unwrap();
        assert_eq!(f.len().unwrap(), 4101);
        f.fsync().unwrap();
        f.drop_cache().unwrap();
        let mut buf = [0u8; 5];
        f.read_exact_at(&mut buf, 4096).unwrap();
        assert_eq!(&buf, b"hello");
        let err = f.read_exact_at(&mut buf, 4100).unwrap_err().to_string();
        assert!(err.contains("read of 5 bytes at offset 4100"), "{err}");
    }

    #[test]
    fn reserving_keeps_the_size_and_takes_the_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let spec = OpenSpec {
            write: true,
            create: true,
            ..OpenSpec::default()
        };
        let f = DataFile::open(&p, spec).unwrap();
        f.write_all_at(&[7u8; 128], 0).unwrap();
        f.reserve_keep_size(128, 4 << 20).unwrap();
        let meta = std::fs::metadata(&p).unwrap();
        assert_eq!(meta.len(), 128, "KEEP_SIZE left the size alone");
        use std::os::unix::fs::MetadataExt;
        let fs = fs_type(dir.path()).unwrap();
        // 512-byte blocks: the 4 MiB reserved past the header, on a file system that can.
        assert!(
            meta.blocks() * 512 >= 4 << 20 || fs == "nfs",
            "{} bytes allocated on {fs}",
            meta.blocks() * 512
        );
    }

    /// Pages of `f`'s first `len` bytes in the page cache (mincore).
    fn resident_pages(f: &DataFile, len: usize) -> usize {
        use std::os::fd::AsRawFd;
        let page = 4096;
        let mut present = vec![0u8; len.div_ceil(page)];
        // SAFETY: a read-only shared mapping of an open file, only passed to mincore and
        // unmapped before return; `present` has one byte per page of it.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.fd().unwrap().as_raw_fd(),
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            assert_eq!(libc::mincore(p, len, present.as_mut_ptr()), 0);
            libc::munmap(p, len);
        }
        present.iter().filter(|b| **b & 1 != 0).count()
    }

    #[test]
    fn dropping_the_cache_of_freshly_written_data_empties_it() {
        // tmpfs keeps its pages in memory whatever is asked: use a disk-backed directory.
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        if fs_type(dir.path()).unwrap() == "tmpfs" {
            eprintln!("SKIPPED: /var/tmp is tmpfs, whose pages cannot be dropped");
            return;
        }
        let f = DataFile::open(
            &dir.path().join("f"),
            OpenSpec {
                write: true,
                create: true,
                ..OpenSpec::default()
            },
        )
        .unwrap();
        let len = 32 << 20;
        let chunk = vec![0x5au8; 1 << 20];
        for off in (0..len).step_by(chunk.len()) {
            f.write_all_at(&chunk, off as u64).unwrap();
        }
        assert!(resident_pages(&f, len) > 0, "a buffered write is cached");
        // Dirty pages, not yet written back: a bare DONTNEED keeps them.
        f.drop_cache().unwrap();
        let left = resident_pages(&f, len);
        assert!(
            left * 100 <= len / 4096,
            "{left} of {} pages still cached",
            len / 4096
        );
    }

    #[test]
    fn opening_a_missing_file_names_it() {
        let err = DataFile::open(Path::new("/nonexistent/iolab/x"), OpenSpec::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("cannot open /nonexistent/iolab/x: No such file or directory"),
            "{err}"
        );
    }
}
