//! The state of iolab-faultfs: the inode table (inode number to path in the backing
//! directory and back), the open files, and the faults with what fires when; plus the
//! conversions from the backing file system's metadata and errors to FUSE's.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{Errno, FileAttr, FileHandle, FileType, Generation, INodeNo, ReplyEmpty, ReplyEntry};

use crate::fault::{Action, Fault, fail};

pub(crate) const TTL: Duration = Duration::ZERO;

/// Inode numbers handed out: by number, by path, and the next free number.
type Inodes = (HashMap<u64, PathBuf>, HashMap<PathBuf, u64>, u64);

pub(crate) struct FaultFs {
    /// Inode number to path in the backing directory, and back.
    inodes: Mutex<Inodes>,
    files: Mutex<HashMap<u64, Arc<File>>>,
    next_fh: AtomicU64,
    faults: Vec<Fault>,
    /// IOLAB_FAULTFS_TRACE=1: every operation that can fault is printed on stderr.
    trace: bool,
    /// A read or write's trace line starts with the seconds since this.
    started: std::time::Instant,
}

pub(crate) fn errno(e: &std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

pub(crate) fn time(secs: i64, nanos: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nanos as u32)
    } else {
        UNIX_EPOCH
    }
}

pub(crate) fn attr(ino: u64, m: &fs::Metadata) -> FileAttr {
    let ft = m.file_type();
    let kind = if ft.is_dir() {
        FileType::Directory
    } else if ft.is_symlink() {
        FileType::Symlink
    } else {
        FileType::RegularFile
    };
    FileAttr {
        ino: INodeNo(ino),
        size: m.size(),
        blocks: m.blocks(),
        atime: time(m.atime(), m.atime_nsec()),
        mtime: time(m.mtime(), m.mtime_nsec()),
        ctime: time(m.ctime(), m.ctime_nsec()),
        crtime: time(m.ctime(), m.ctime_nsec()),
        kind,
        perm: (m.mode() & 0o7777) as u16,
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        rdev: m.rdev() as u32,
        blksize: m.blksize() as u32,
        flags: 0,
    }
}

impl FaultFs {
    pub(crate) fn new(backing: PathBuf, faults: Vec<Fault>) -> FaultFs {
        let mut by_ino = HashMap::new();
        let mut by_path = HashMap::new();
        by_ino.insert(1, backing.clone());
        by_path.insert(backing, 1);
        FaultFs {
            inodes: Mutex::new((by_ino, by_path, 2)),
            files: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            faults,
            trace: std::env::var_os("IOLAB_FAULTFS_TRACE").is_some_and(|v| v == "1"),
            started: std::time::Instant::now(),
        }
    }

    pub(crate) fn path(&self, ino: INodeNo) -> Option<PathBuf> {
        self.inodes.lock().ok()?.0.get(&ino.0).cloned()
    }

    pub(crate) fn ino_of(&self, path: &Path) -> u64 {
        let mut g = self.inodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = g.1.get(path) {
            return *i;
        }
        let i = g.2;
        g.2 += 1;
        g.0.insert(i, path.to_path_buf());
        g.1.insert(path.to_path_buf(), i);
        i
    }

    pub(crate) fn forget_path(&self, path: &Path) {
        let mut g = self.inodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = g.1.remove(path) {
            g.0.remove(&i);
        }
    }

    pub(crate) fn file(&self, fh: FileHandle) -> Option<Arc<File>> {
        self.files.lock().ok()?.get(&fh.0).cloned()
    }

    /// Closes the file behind `fh` (its last reference here).
    pub(crate) fn close(&self, fh: FileHandle) {
        if let Ok(mut g) = self.files.lock() {
            g.remove(&fh.0);
        }
    }

    pub(crate) fn keep(&self, f: File) -> FileHandle {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(fh, Arc::new(f));
        FileHandle(fh)
    }

    /// The fault that fires for a read or write of `len` bytes at `offset` now, if any;
    /// traced with its offset and length (a FUSE request's own size).
    pub(crate) fn io_fault(
        &self,
        op: &str,
        path: &Path,
        (offset, len): (u64, usize),
        pid: u32,
    ) -> Option<Action> {
        if self.trace {
            let t = self.started.elapsed().as_secs_f64();
            eprintln!(
                "iolab-faultfs: {op} {} at {offset} len {len} t {t:.6} pid {pid}",
                path.display()
            );
        }
        self.fault_untraced(op, path)
    }

    /// The fault that fires for this operation now, if any; a stall is served here.
    pub(crate) fn fault(&self, op: &str, path: &Path) -> Option<Action> {
        if self.trace {
            eprintln!("iolab-faultfs: {op} {}", path.display());
        }
        self.fault_untraced(op, path)
    }

    fn fault_untraced(&self, op: &str, path: &Path) -> Option<Action> {
        let text = path.to_string_lossy();
        for f in &self.faults {
            if f.op != op || f.matching.as_deref().is_some_and(|m| !text.contains(m)) {
                continue;
            }
            let seen = f.seen.fetch_add(1, Ordering::Relaxed) + 1;
            if seen <= f.after || f.fired.fetch_add(1, Ordering::Relaxed) >= f.times {
                continue;
            }
            if let Action::Stall(d) = f.action {
                std::thread::sleep(d);
                continue;
            }
            return Some(f.action);
        }
        None
    }

    /// The path of `ino` (or of its entry `name`) for operation `op`: ENOENT when the
    /// inode is unknown, the fault's errno when one fires.
    pub(crate) fn checked(
        &self,
        op: &str,
        ino: INodeNo,
        name: Option<&OsStr>,
    ) -> Result<PathBuf, Errno> {
        let dir = self.path(ino).ok_or(Errno::ENOENT)?;
        let path = match name {
            Some(n) => dir.join(n),
            None => dir,
        };
        match self.fault(op, &path) {
            Some(a) => Err(fail(a)),
            None => Ok(path),
        }
    }

    /// Replies to a removal and forgets the removed path's inode.
    pub(crate) fn removed(&self, path: &Path, result: std::io::Result<()>, reply: ReplyEmpty) {
        match result {
            Ok(()) => {
                self.forget_path(path);
                reply.ok()
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    pub(crate) fn entry(&self, path: &Path, reply: ReplyEntry) {
        match fs::symlink_metadata(path) {
            Ok(m) => reply.entry(&TTL, &attr(self.ino_of(path), &m), Generation(0)),
            Err(e) => reply.error(errno(&e)),
        }
    }
}
