//! Files as storage sees them: [`DataFile`] opens with the flags a workload needs
//! (O_DIRECT, O_SYNC), preallocates, syncs and drops its cached pages; free functions
//! report a path's direct-I/O alignment, file system type and free space, and empty the
//! page cache.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{Advice, FallocateFlags, StatxFlags};

use crate::error::BackendError;

/// How to open a data file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenSpec {
    pub write: bool,
    pub create: bool,
    pub truncate: bool,
    pub direct: bool,
    pub sync: bool,
}

/// An open data file (or block device).
#[derive(Debug)]
pub struct DataFile {
    file: File,
    path: PathBuf,
    direct: bool,
    block_device: bool,
}

impl DataFile {
    /// Opens `path`, never through a symbolic link as its last component (O_NOFOLLOW):
    /// a link planted in a work directory must not send writes elsewhere. Device paths
    /// are resolved beforehand ([`crate::device::inspect_device`]).
    pub fn open(path: &Path, spec: OpenSpec) -> Result<Self, BackendError> {
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
            file,
            path: path.to_path_buf(),
            direct: spec.direct,
            block_device,
        })
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

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
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
        if self.block_device {
            let end = rustix::fs::seek(&self.file, rustix::fs::SeekFrom::End(0))
                .map_err(|e| self.file_err("size", e.into()))?;
            return Ok(end);
        }
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| self.file_err("stat", e))
    }

    pub fn is_empty(&self) -> Result<bool, BackendError> {
        Ok(self.len()? == 0)
    }

    pub fn set_len(&self, len: u64) -> Result<(), BackendError> {
        self.file
            .set_len(len)
            .map_err(|e| self.file_err("truncate", e))
    }

    /// Reserves `len` bytes on storage (fallocate), so writes do not allocate.
    pub fn allocate(&self, len: u64) -> Result<(), BackendError> {
        if len == 0 || self.block_device {
            return Ok(());
        }
        rustix::fs::fallocate(&self.file, FallocateFlags::empty(), 0, len)
            .map_err(|e| self.file_err("fallocate", e.into()))
    }

    /// Discards `len` bytes at `offset` (BLKDISCARD on a device, a punched hole in a
    /// file; see [`trim_range`]), outside the timed path: a purge.
    pub fn discard(&self, offset: u64, len: u64) -> Result<(), BackendError> {
        trim_range(self.as_fd(), self.block_device, offset, len).map_err(|e| BackendError::Io {
            op: "trim",
            path: self.path.clone(),
            offset,
            len,
            source: e.into(),
        })
    }

    pub fn fsync(&self) -> Result<(), BackendError> {
        rustix::fs::fsync(&self.file).map_err(|e| self.file_err("fsync", e.into()))
    }

    /// Drops this file's pages from the page cache (works without root). Dirty pages
    /// are written back first: the kernel keeps dirty and under-writeback pages through
    /// DONTNEED, so a read right after a buffered write would otherwise hit memory.
    pub fn drop_cache(&self) -> Result<(), BackendError> {
        if !self.block_device {
            rustix::fs::fdatasync(&self.file).map_err(|e| self.file_err("fdatasync", e.into()))?;
        }
        rustix::fs::fadvise(&self.file, 0, None, Advice::DontNeed)
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
        rustix::fs::fadvise(&self.file, 0, None, advice)
            .map_err(|e| self.file_err("fadvise", e.into()))
    }

    /// Advises the kernel that this file's cached pages are not needed
    /// (`posix_fadvise(DONTNEED)` alone, as fio's loop_cache_invalidate: clean pages
    /// go, dirty ones stay until written back).
    pub fn advise_dont_need(&self) -> Result<(), BackendError> {
        rustix::fs::fadvise(&self.file, 0, None, Advice::DontNeed)
            .map_err(|e| self.file_err("fadvise(DONTNEED)", e.into()))
    }

    /// Reads exactly `buf.len()` bytes at `offset` (outside the timed path: layout and
    /// checks). A short read is an error naming the offset.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<(), BackendError> {
        self.file
            .read_exact_at(buf, offset)
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
        loop {
            match self.file.read_at(buf, offset) {
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
        self.file.write_all_at(buf, offset).map_err(|source| {
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

/// The alignment direct I/O needs on `path` (an existing file, device or directory):
/// statx's DIOALIGN where the kernel reports it (Linux 6.1+), else 4096, the safe choice.
/// File systems report it for regular files only (ext4, xfs: not for a directory), so a
/// directory is asked through an unnamed file made in it (`O_TMPFILE`, gone at close:
/// nothing is left in the directory): 512 on an ext4 over a disk of 512-byte sectors,
/// where fio's 512-byte direct I/O runs.
pub fn direct_io_alignment(path: &Path) -> u64 {
    reported_direct_io_alignment(path).unwrap_or(DIRECT_IO_FALLBACK)
}

/// The alignment assumed when neither the kernel nor a try tells.
const DIRECT_IO_FALLBACK: u64 = 4096;

/// The smallest and largest sizes [`tried_direct_io_alignment`] tries.
const DIRECT_IO_TRIES: [u64; 4] = [512, 1024, 2048, 4096];

/// [`direct_io_alignment`] for a run that asked for direct I/O: where the kernel reports
/// no DIOALIGN (FUSE: ceph-fuse and weed mount report none and take no `O_TMPFILE`), the
/// smallest of 512, 1024, 2048 and 4096 bytes that a direct I/O at offset 0 takes (fio
/// checks nothing and lets the file system answer; on ceph-fuse it takes 512-byte direct
/// I/O). A directory is tried with a 512-byte-to-4-KiB direct write into an unnamed file,
/// or, where the file system has none, into a file iolab makes for the try
/// (`.iolab-dio-probe.<pid>`, created exclusively, so never a user's) and removes at
/// once; an existing file with a direct read of its first bytes (nothing is written). A
/// file system that takes none of them, or refuses direct I/O, gets 4096.
pub fn tried_direct_io_alignment(path: &Path) -> u64 {
    reported_direct_io_alignment(path)
        .or_else(|| try_direct_io(path))
        .unwrap_or(DIRECT_IO_FALLBACK)
}

fn reported_direct_io_alignment(path: &Path) -> Option<u64> {
    let of = |stx: rustix::fs::Statx| {
        (stx.stx_mask & StatxFlags::DIOALIGN.bits() != 0)
            .then(|| u64::from(stx.stx_dio_offset_align.max(stx.stx_dio_mem_align)))
            .filter(|a| *a != 0)
    };
    let at = |dir: BorrowedFd<'_>, p: &Path, flags| {
        rustix::fs::statx(dir, p, flags, StatxFlags::DIOALIGN)
            .ok()
            .and_then(of)
    };
    if let Some(a) = at(rustix::fs::CWD, path, rustix::fs::AtFlags::empty()) {
        return Some(a);
    }
    if !path.is_dir() {
        return None;
    }
    let probe = unnamed_file(path).ok()?;
    at(
        probe.as_fd(),
        Path::new(""),
        rustix::fs::AtFlags::EMPTY_PATH,
    )
}

fn unnamed_file(dir: &Path) -> rustix::io::Result<rustix::fd::OwnedFd> {
    rustix::fs::open(
        dir,
        rustix::fs::OFlags::TMPFILE | rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
}

/// The smallest size of [`DIRECT_IO_TRIES`] a direct I/O at offset 0 of `path` takes.
fn try_direct_io(path: &Path) -> Option<u64> {
    use rustix::fs::OFlags;
    let meta = std::fs::symlink_metadata(path).ok()?;
    let mut pool =
        crate::buffer::BufferPool::new(1, DIRECT_IO_FALLBACK, DIRECT_IO_FALLBACK).ok()?;
    let buf = pool.get_mut(0);
    if meta.is_file() {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECT | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .ok()?;
        return DIRECT_IO_TRIES
            .into_iter()
            .find(|&n| rustix::io::pread(&fd, &mut buf[..n as usize], 0).is_ok());
    }
    if !meta.is_dir() {
        return None;
    }
    let first = |fd: &rustix::fd::OwnedFd| {
        DIRECT_IO_TRIES
            .into_iter()
            .find(|&n| rustix::io::pwrite(fd, &buf[..n as usize], 0).is_ok())
    };
    let direct = |fd: &rustix::fd::OwnedFd| {
        let flags = rustix::fs::fcntl_getfl(fd).ok()?;
        rustix::fs::fcntl_setfl(fd, flags | OFlags::DIRECT).ok()
    };
    if let Ok(fd) = unnamed_file(path) {
        direct(&fd)?;
        return first(&fd);
    }
    let name = path.join(format!(".iolab-dio-probe.{}", std::process::id()));
    let fd = rustix::fs::open(
        &name,
        OFlags::CREATE
            | OFlags::EXCL
            | OFlags::RDWR
            | OFlags::DIRECT
            | OFlags::NOFOLLOW
            | OFlags::CLOEXEC,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .ok()?;
    // Made by this call (O_EXCL): removed whatever the try gives.
    let found = first(&fd);
    drop(fd);
    let _ = std::fs::remove_file(&name);
    found
}

/// Known file system magic numbers (statfs f_type) and their names.
const FS_MAGIC: &[(i64, &str)] = &[
    (0xEF53, "ext4"),
    (0x5846_5342, "xfs"),
    (0x0102_1994, "tmpfs"),
    (0x6969, "nfs"),
    (0x9123_683E, "btrfs"),
    (0x2FC1_2FC1, "zfs"),
    (0x0BD0_0BD0, "lustre"),
    (0x1983_0326, "beegfs"),
    (0x00C3_6400, "ceph"),
    (0x6573_5546, "fuse"),
    (0x794C_7630, "overlay"),
    (0x4750_4653, "gpfs"),
    (0x5346_544E, "ntfs"),
    (0x4D44, "vfat"),
    (0xFF53_4D42, "cifs"),
    (0x6165_6673, "aufs"),
];

/// Whether a file system, as [`fs_type`] names it, is a client of servers elsewhere
/// (network and parallel file systems, and FUSE, whose daemon may be one): its mount
/// shares this client, not necessarily a device.
pub fn is_remote_fs(name: &str) -> bool {
    matches!(
        name,
        "nfs" | "lustre" | "beegfs" | "ceph" | "fuse" | "gpfs" | "cifs"
    )
}

/// The type of file system `path` is on ("ext4", "tmpfs", ...; "0x1234abcd" if unknown).
pub fn fs_type(path: &Path) -> io::Result<String> {
    let st = rustix::fs::statfs(path)?;
    #[allow(clippy::unnecessary_cast)]
    let magic = st.f_type as i64;
    Ok(FS_MAGIC
        .iter()
        .find(|(m, _)| *m == magic)
        .map(|(_, n)| n.to_string())
        .unwrap_or_else(|| format!("{magic:#x}")))
}

/// A file system client that keeps file data in a cache of its own, in user space: the
/// kernel's page cache controls (drop_caches, fadvise) do not reach it, and for some
/// clients direct I/O does not go past it either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientCache {
    /// The file system and its client, as a user knows them.
    pub file_system: &'static str,
    pub client: &'static str,
    /// What the cache is.
    pub what: &'static str,
    /// Whether direct I/O (O_DIRECT) goes past the cache to the servers.
    pub direct_bypasses: bool,
    /// Whether writes, O_DIRECT ones too, return once in a write buffer of the client's
    /// own, the data sent to the servers only at close or fsync.
    pub direct_writes_buffered: bool,
}

/// Clients with such a cache, by their mount's type in /proc/self/mountinfo. Measured
/// here (docs/real-systems.md): ceph-fuse 16.2 serves buffered reads from its object
/// cache after drop_caches (its hit counters grow) and sends O_DIRECT reads to the OSDs
/// (they do not); weed mount 4.48's direct reads speed up as its chunk cache fills, and
/// its direct writes return at once and are uploaded at close (64 MiB of O_DIRECT writes to
/// a volume server capped at 20 MiB/s: writes 0.11 s, close 3.09 s).
const CLIENT_CACHES: &[(&str, ClientCache)] = &[
    (
        "fuse.ceph-fuse",
        ClientCache {
            file_system: "CephFS",
            client: "ceph-fuse",
            what: "its object cache (client_oc_size, 200 MiB by default)",
            direct_bypasses: true,
            direct_writes_buffered: false,
        },
    ),
    (
        "fuse.seaweedfs",
        ClientCache {
            file_system: "SeaweedFS",
            client: "weed mount",
            what: "its chunk cache (in memory and in its -cacheDir)",
            direct_bypasses: false,
            direct_writes_buffered: true,
        },
    ),
];

/// The user-space client cache of the file system `path` is on, if its client has one.
pub fn client_cache(path: &Path) -> Option<ClientCache> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let path = std::fs::canonicalize(path).ok()?;
    client_cache_in(&table, &path)
}

fn client_cache_in(mountinfo: &str, path: &Path) -> Option<ClientCache> {
    let mounts = iolab_core::mountinfo::parse(mountinfo);
    let mount = iolab_core::mountinfo::find_mount(&mounts, path)?;
    CLIENT_CACHES
        .iter()
        .find(|(fs_type, _)| *fs_type == mount.fs_type)
        .map(|(_, cache)| *cache)
}

/// Bytes available to this user on the file system holding `path`, or None when it
/// reports no capacity at all (ramfs, some FUSE file systems), where a free-space check
/// cannot be made and must not refuse the run.
pub fn fs_free(path: &Path) -> io::Result<Option<u64>> {
    let st = rustix::fs::statvfs(path)?;
    Ok(if st.f_blocks == 0 {
        None
    } else {
        Some(st.f_bavail.saturating_mul(st.f_frsize))
    })
}

/// Free inodes on the file system holding `path` (None if it does not count them).
pub fn fs_free_inodes(path: &Path) -> io::Result<Option<u64>> {
    let st = rustix::fs::statvfs(path)?;
    Ok(if st.f_files == 0 {
        None
    } else {
        Some(st.f_favail)
    })
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
    fn client_caches_by_mount_type() {
        let table = "\
22 1 252:0 / / rw - ext4 /dev/vda rw
40 22 0:38 / /mnt/ceph rw,nosuid - fuse.ceph-fuse ceph-fuse rw,user_id=0
41 22 0:39 / /mnt/sw rw - fuse.seaweedfs 127.0.0.1:8888:/ rw
42 22 0:40 / /mnt/other rw - fuse.sshfs host:/ rw
";
        let at = |p: &str| client_cache_in(table, Path::new(p));
        assert_eq!(at("/mnt/ceph/a/b").unwrap().client, "ceph-fuse");
        assert!(at("/mnt/ceph").unwrap().direct_bypasses);
        assert_eq!(at("/mnt/sw/x").unwrap().client, "weed mount");
        assert!(!at("/mnt/sw/x").unwrap().direct_bypasses);
        assert_eq!(at("/mnt/other/x"), None);
        assert_eq!(at("/mnt/cephx"), None);
        assert_eq!(at("/var/tmp"), None);
    }

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
                f.file.as_raw_fd(),
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

    #[test]
    fn reports_file_system_facts() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!fs_type(dir.path()).unwrap().is_empty());
        let st = rustix::fs::statvfs(dir.path()).unwrap();
        let free = fs_free(dir.path())
            .unwrap()
            .expect("a tempdir's file system has a size");
        assert_eq!(free, st.f_bavail * st.f_frsize);
        assert!(st.f_blocks >= st.f_bavail && free > 0);
        let p = dir.path().join("a");
        std::fs::write(&p, b"x").unwrap();
        let align = direct_io_alignment(&p);
        assert!(align.is_power_of_two() && align >= 1, "{align}");
        // A directory's is its files' (asked through an unnamed file, which leaves
        // nothing behind).
        assert_eq!(direct_io_alignment(dir.path()), align);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }
}
