//! A work directory's lock: an exclusive `flock` on `.lock`, the holder's name written in
//! it right after it is taken, and the same run's ranks on other hosts recognised by the
//! run's token in that name. On an NFS export reached through libnfs (no flock there) the
//! lock is the file itself, created exclusively (O_EXCL, atomic on NFSv3 and v4) and
//! removed when the run ends; one left by a run that was killed names its holder.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use iolab_backend::process::UnsharedFile;

use super::LOCK;
use crate::error::EngineError;

/// Who takes a work directory's lock: a run (the same token on all its ranks) from a host.
#[derive(Clone, Debug)]
pub struct LockOwner {
    pub run: String,
    pub host: String,
}

impl LockOwner {
    /// The lock file's content, written right after the lock is taken.
    fn describe(&self) -> String {
        format!(
            "pid {} on {} run {}\n",
            std::process::id(),
            self.host,
            self.run
        )
    }
}

/// A lock this process holds: an open, flock-ed file (unshared: a worker's private
/// descriptor table keeps no copy that would hold it past the run), or a lock file it
/// created exclusively, removed when dropped.
#[derive(Debug)]
pub(super) enum Held {
    Flock(#[allow(dead_code)] UnsharedFile),
    Created(PathBuf),
}

impl Held {
    /// Lets the lock go after its file was removed (by the directory's cleanup): dropping
    /// it then must not remove a lock file another run has created since.
    pub(super) fn gone(mut self) {
        if let Held::Created(p) = &mut self {
            std::mem::take(p);
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Held::Created(p) = self
            && !p.as_os_str().is_empty()
        {
            let _ = iolab_backend::vfs::remove_file(p);
        }
    }
}

/// What taking the lock found.
pub(super) enum Locked {
    Held(Held),
    /// Another process of this run holds it (a rank on another host sharing the directory).
    ByThisRun,
    /// The directory or its lock was removed while we took it: start again.
    Vanished,
}

/// Takes the lock of the work directory at `path` for `owner`.
pub(super) fn take_lock(path: &Path, owner: &LockOwner) -> Result<Locked, EngineError> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let lock = path.join(LOCK);
    if iolab_backend::nfs::is_nfs_path(path) {
        return take_created(path, owner);
    }
    let file = match UnsharedFile::open(|| {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&lock)
    }) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Locked::Vanished),
        Err(e) => return Err(EngineError::workdir("cannot create", &lock, e)),
    };
    // The holder writes its name right after taking the lock and removes the file as
    // it ends: no name yet means "just starting" or "just ended", so look again (the
    // lock may be free by then) rather than report a holder we cannot name.
    let mut holder = String::new();
    let mut attempt = 0;
    let locked = loop {
        match file.try_lock() {
            Ok(()) => break Ok(()),
            Err(fs::TryLockError::WouldBlock) => {
                holder = fs::read_to_string(&lock).unwrap_or_default();
                attempt += 1;
                if !holder.trim().is_empty() || attempt >= 100 {
                    break Err(fs::TryLockError::WouldBlock);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => break Err(e),
        }
    };
    match locked {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            if holder.trim().ends_with(&format!(" run {}", owner.run)) {
                return Ok(Locked::ByThisRun);
            }
            let holder = holder
                .trim()
                .split(" run ")
                .next()
                .filter(|h| !h.is_empty())
                .unwrap_or("another run")
                .to_string();
            return Err(EngineError::WorkDirBusy {
                path: path.to_path_buf(),
                holder,
                lock,
            });
        }
        Err(fs::TryLockError::Error(e)) => {
            return Err(EngineError::workdir("cannot lock", &lock, e));
        }
    }
    // The file we locked must still be the one at that name (a run that ended may
    // have removed it after we opened it).
    let same = match (file.metadata(), fs::symlink_metadata(&lock)) {
        (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
        _ => false,
    };
    if !same {
        return Ok(Locked::Vanished);
    }
    let text = owner.describe();
    file.set_len(0)
        .and_then(|()| {
            use std::os::unix::fs::FileExt;
            file.write_all_at(text.as_bytes(), 0)
        })
        .map_err(|e| EngineError::workdir("cannot write", &lock, e))?;
    Ok(Locked::Held(Held::Flock(file)))
}

/// The lock of a work directory on an NFS export: `.lock` created exclusively.
fn take_created(path: &Path, owner: &LockOwner) -> Result<Locked, EngineError> {
    use iolab_backend::vfs;
    let lock = path.join(LOCK);
    match vfs::create_new(&lock, owner.describe().as_bytes()) {
        Ok(()) => Ok(Locked::Held(Held::Created(lock))),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let holder = vfs::read_to_string(&lock).unwrap_or_default();
            if holder.trim().ends_with(&format!(" run {}", owner.run)) {
                return Ok(Locked::ByThisRun);
            }
            let holder = holder
                .trim()
                .split(" run ")
                .next()
                .filter(|h| !h.is_empty())
                .map(|h| {
                    format!(
                        "{h} (or a run that was killed: then remove {})",
                        lock.display()
                    )
                })
                .unwrap_or_else(|| "another run".into());
            Err(EngineError::WorkDirBusy {
                path: path.to_path_buf(),
                holder,
                lock,
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Locked::Vanished),
        Err(e) => Err(EngineError::workdir("cannot create", &lock, e)),
    }
}
