//! `iolab-faultfs`: a small fault-injecting FUSE file system for iolab's tests (and for
//! timing an HA fail-over stall by hand). It passes every operation through to a backing
//! directory, except the ones a `--fault` picks, which fail with EIO or ENOSPC, write
//! short, or stall for a while first.
//!
//! ```text
//! iolab-faultfs BACKING MOUNTPOINT [--fault OP:ACTION[:after=N][:times=M][:match=TEXT]]...
//!   OP      read, write, create, mkdir, lookup, getattr, unlink, rmdir, fsync, open
//!   ACTION  eio, enospc, short (write only: half the bytes), stall=DURATION (3s, 500ms)
//!   after   let the first N matching operations through (default 0)
//!   times   fire this many times (default: every time after `after`)
//!   match   only operations whose path contains TEXT
//! ```
//!
//! It prints `ready` once mounted and unmounts on SIGTERM or SIGINT; IOLAB_FAULTFS_TRACE=1
//! prints every operation that can fault on stderr (a read or write with its offset,
//! length, the seconds since the mount when it was taken and the calling thread's id).
//! Files are opened with FOPEN_DIRECT_IO, so every write and read reaches it (none is
//! absorbed by the page cache and failed later at writeback).

use std::ffi::OsStr;
use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use fuser::{
    Config, Errno, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    MountOption, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

mod fault;
mod state;

use fault::{Action, Fault, fail};
use state::{FaultFs, TTL, attr, errno};

impl Filesystem for FaultFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let path = match self.checked("lookup", parent, Some(name)) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        self.entry(&path, reply);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let path = match self.checked("getattr", ino, None) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        match fs::symlink_metadata(&path) {
            Ok(m) => reply.attr(&TTL, &attr(ino.0, &m)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let Some(path) = self.path(ino) else {
            return reply.error(Errno::ENOENT);
        };
        let done = (|| {
            if let Some(size) = size {
                OpenOptions::new().write(true).open(&path)?.set_len(size)?;
            }
            if let Some(mode) = mode {
                fs::set_permissions(&path, fs::Permissions::from_mode(mode & 0o7777))?;
            }
            fs::symlink_metadata(&path)
        })();
        match done {
            Ok(m) => reply.attr(&TTL, &attr(ino.0, &m)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let path = match self.checked("mkdir", parent, Some(name)) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let made = fs::create_dir(&path).and_then(|()| {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode & !umask & 0o7777))
        });
        match made {
            Ok(()) => self.entry(&path, reply),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let path = match self.checked("unlink", parent, Some(name)) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        self.removed(&path, fs::remove_file(&path), reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let path = match self.checked("rmdir", parent, Some(name)) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        self.removed(&path, fs::remove_dir(&path), reply);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        _flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let (Some(from), Some(to)) = (
            self.path(parent).map(|p| p.join(name)),
            self.path(newparent).map(|p| p.join(newname)),
        ) else {
            return reply.error(Errno::ENOENT);
        };
        match fs::rename(&from, &to) {
            Ok(()) => {
                self.forget_path(&from);
                self.forget_path(&to);
                reply.ok()
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let path = match self.checked("open", ino, None) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let bits = flags.0;
        let acc = bits & libc::O_ACCMODE;
        let opened = OpenOptions::new()
            .read(acc == libc::O_RDONLY || acc == libc::O_RDWR)
            .write(acc == libc::O_WRONLY || acc == libc::O_RDWR)
            .custom_flags(bits & (libc::O_APPEND | libc::O_TRUNC | libc::O_SYNC | libc::O_DSYNC))
            .open(&path);
        match opened {
            Ok(f) => reply.opened(self.keep(f), FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let path = match self.checked("create", parent, Some(name)) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let acc = flags & libc::O_ACCMODE;
        let made = OpenOptions::new()
            .read(acc == libc::O_RDONLY || acc == libc::O_RDWR)
            .write(true)
            .create(true)
            .truncate(flags & libc::O_TRUNC != 0)
            .custom_flags(flags & libc::O_EXCL)
            .mode(mode & !umask & 0o7777)
            .open(&path)
            .and_then(|f| Ok((fs::symlink_metadata(&path)?, f)));
        match made {
            Ok((m, f)) => {
                let a = attr(self.ino_of(&path), &m);
                reply.created(
                    &TTL,
                    &a,
                    Generation(0),
                    self.keep(f),
                    FopenFlags::FOPEN_DIRECT_IO,
                )
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let (Some(path), Some(f)) = (self.path(ino), self.file(fh)) else {
            return reply.error(Errno::EBADF);
        };
        if let Some(a) = self.io_fault("read", &path, (offset, size as usize), req.pid()) {
            return reply.error(fail(a));
        }
        let mut buf = vec![0u8; size as usize];
        let mut got = 0;
        while got < buf.len() {
            match f.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return reply.error(errno(&e)),
            }
        }
        reply.data(&buf[..got]);
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let (Some(path), Some(f)) = (self.path(ino), self.file(fh)) else {
            return reply.error(Errno::EBADF);
        };
        let data = match self.io_fault("write", &path, (offset, data.len()), req.pid()) {
            Some(Action::Short) => &data[..data.len().div_ceil(2)],
            Some(a) => return reply.error(fail(a)),
            None => data,
        };
        match f.write_all_at(data, offset) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.close(fh);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let (Some(path), Some(f)) = (self.path(ino), self.file(fh)) else {
            return reply.error(Errno::EBADF);
        };
        if let Some(a) = self.fault("fsync", &path) {
            return reply.error(fail(a));
        }
        match f.sync_all() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let Some(path) = self.path(ino) else {
            return reply.error(Errno::ENOENT);
        };
        let entries = match fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) => return reply.error(errno(&e)),
        };
        let mut all: Vec<(u64, FileType, std::ffi::OsString)> = vec![
            (ino.0, FileType::Directory, ".".into()),
            (ino.0, FileType::Directory, "..".into()),
        ];
        for e in entries.flatten() {
            let kind = match e.file_type() {
                Ok(t) if t.is_dir() => FileType::Directory,
                Ok(t) if t.is_symlink() => FileType::Symlink,
                _ => FileType::RegularFile,
            };
            all.push((self.ino_of(&e.path()), kind, e.file_name()));
        }
        for (i, (ino, kind, name)) in all.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, &name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let root = self.path(INodeNo::ROOT).unwrap_or_default();
        let Ok(c) = std::ffi::CString::new(root.as_os_str().as_encoded_bytes()) else {
            return reply.error(Errno::EINVAL);
        };
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is a valid NUL-terminated path and `s` a valid statvfs to fill.
        if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
            return reply.error(errno(&std::io::Error::last_os_error()));
        }
        reply.statfs(
            s.f_blocks,
            s.f_bfree,
            s.f_bavail,
            s.f_files,
            s.f_ffree,
            s.f_bsize as u32,
            s.f_namemax as u32,
            s.f_frsize as u32,
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut positional = Vec::new();
    let mut faults = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--fault" {
            let Some(spec) = args.get(i + 1) else {
                eprintln!(
                    "iolab-faultfs: --fault needs OP:ACTION[:after=N][:times=M][:match=TEXT]"
                );
                std::process::exit(2);
            };
            match Fault::parse(spec) {
                Ok(f) => faults.push(f),
                Err(e) => {
                    eprintln!("iolab-faultfs: {e}");
                    std::process::exit(2);
                }
            }
            i += 2;
        } else {
            positional.push(args[i].clone());
            i += 1;
        }
    }
    let [backing, mountpoint] = positional.as_slice() else {
        eprintln!(
            "usage: iolab-faultfs BACKING MOUNTPOINT [--fault OP:ACTION[:after=N][:times=M][:match=TEXT]]..."
        );
        std::process::exit(2);
    };
    let backing = match fs::canonicalize(backing) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("iolab-faultfs: {backing}: {e}");
            std::process::exit(2);
        }
    };
    let mut config = Config::default();
    config.mount_options = vec![MountOption::FSName("iolab-faultfs".into())];
    config.n_threads = Some(2);
    let session = match fuser::spawn_mount(FaultFs::new(backing, faults), mountpoint, &config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("iolab-faultfs: mounting on {mountpoint}: {e}");
            std::process::exit(1);
        }
    };
    println!("ready");
    let _ = std::io::stdout().flush();
    static STOP: AtomicBool = AtomicBool::new(false);
    let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(session);
}
