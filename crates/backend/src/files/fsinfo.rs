//! What a path's file system tells: the alignment direct I/O needs there (reported or
//! tried), its type and whether it is remote, the client cache in front of it, and its
//! free space and inodes.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use rustix::fs::StatxFlags;

/// The alignment direct I/O needs on `path` (an existing file, device or directory):
/// statx's DIOALIGN where the kernel reports it (Linux 6.1+), else 4096, the safe choice.
/// File systems report it for regular files only (ext4, xfs: not for a directory), so a
/// directory is asked through an unnamed file made in it (`O_TMPFILE`, gone at close:
/// nothing is left in the directory): 512 on an ext4 over a disk of 512-byte sectors,
/// where fio's 512-byte direct I/O runs.
pub fn direct_io_alignment(path: &Path) -> u64 {
    if crate::libnbd::is_uri(path) {
        return NBD_ALIGNMENT;
    }
    reported_direct_io_alignment(path).unwrap_or(DIRECT_IO_FALLBACK)
}

/// An NBD export's: no page cache to bypass, and servers take 512-byte sectors (PTS's
/// 0.5 KiB latency cells among them).
const NBD_ALIGNMENT: u64 = 512;

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
    if crate::libnbd::is_uri(path) {
        return NBD_ALIGNMENT;
    }
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
    (RAMFS_MAGIC, "ramfs"),
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

/// Bytes available to this user on the file system holding `path`. ramfs reports no
/// capacity but holds its files in memory without a limit: what it can take is the
/// memory left to this process (MemAvailable, or its cgroup's room when less). None when another file system reports no capacity (some FUSE
/// file systems), where a free-space check cannot be made and must not refuse the run.
pub fn fs_free(path: &Path) -> io::Result<Option<u64>> {
    let st = rustix::fs::statvfs(path)?;
    if st.f_blocks > 0 {
        return Ok(Some(st.f_bavail.saturating_mul(st.f_frsize)));
    }
    #[allow(clippy::unnecessary_cast)]
    let ramfs = rustix::fs::statfs(path)?.f_type as i64 == RAMFS_MAGIC;
    Ok(if ramfs {
        crate::process::memory_room(Path::new("/"))
    } else {
        None
    })
}

/// The one free-space check every workload makes before it writes: the bytes free on
/// the file system holding `path` when `need` bytes do not fit in them, None when they
/// fit or the file system reports no capacity (some FUSE file systems), where no check
/// can be made and none may refuse a run. The caller's error names what to change.
pub fn space_short(path: &Path, need: u64) -> io::Result<Option<u64>> {
    Ok(fs_free(path)?.filter(|&free| need > free))
}

/// statfs f_type of ramfs.
const RAMFS_MAGIC: i64 = 0x8584_58F6;

/// Free inodes on the file system holding `path` (None if it does not count them).
pub fn fs_free_inodes(path: &Path) -> io::Result<Option<u64>> {
    let st = rustix::fs::statvfs(path)?;
    Ok(if st.f_files == 0 {
        None
    } else {
        Some(st.f_favail)
    })
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

    #[test]
    fn space_short_says_the_free_bytes_only_when_the_need_does_not_fit() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(space_short(dir.path(), 0).unwrap(), None);
        assert_eq!(space_short(dir.path(), 4096).unwrap(), None);
        let free = space_short(dir.path(), u64::MAX)
            .unwrap()
            .expect("no file system holds u64::MAX bytes");
        let st = rustix::fs::statvfs(dir.path()).unwrap();
        // Other writers move the figure while the test runs: within 1 GiB of statvfs's.
        assert!(free.abs_diff(st.f_bavail * st.f_frsize) < 1 << 30, "{free}");
        assert!(space_short(&dir.path().join("missing"), 1).is_err());
    }
}
