//! [`WorkDir`]: the directory iolab writes in, `<--dir>/iolab-work`, marked as its own by
//! a marker file and locked for a run's whole life: an exclusive `flock` on `.lock`
//! (atomic; released by the kernel when the process ends; held across hosts on NFS,
//! where Linux maps it to a byte-range lock), or on an export reached through libnfs
//! (no flock there) a `.lock` created exclusively and removed at the end. Its calls go
//! through [`iolab_backend::vfs`], to the kernel or to libnfs. A run's ranks on other hosts that share
//! the directory recognise the run's token in the lock and join it; any other run is
//! refused. Cleanup removes only the files iolab lists, their sidecars, the marker and
//! lock, and then the directory if it is empty: nothing else. A sidecar ([`FileInfo`]) records what a data file holds, so a
//! later read can reuse kept files instead of laying them out again.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use iolab_backend::vfs as fs;
use iolab_core::spec::{DataPattern, DataSpec};
use serde::{Deserialize, Serialize};

use crate::error::EngineError;

mod lock;
pub use lock::LockOwner;
use lock::Locked;

pub const WORKDIR_NAME: &str = "iolab-work";
pub const MARKER: &str = ".iolab-workdir";

const MARKER_TEXT: &str = "This directory was created by iolab (https://github.com/iolab/iolab).\n\
Every file in it was written by iolab; iolab removes them when a run ends (unless --keep).\n\
Do not put files of your own here.\n";

/// What a data file holds, recorded beside it after it was written in full.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileInfo {
    /// Bytes written from offset 0 without holes.
    pub size: u64,
    /// None: pseudo-random data; Some: verify blocks of this size and seed.
    pub verify: Option<VerifyInfo>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyInfo {
    pub seed: u64,
    pub block_size: u64,
    /// IOR's timestamp words rather than iolab's checked blocks.
    #[serde(default)]
    pub pattern: DataPattern,
}

impl VerifyInfo {
    /// What a file written by `spec` holds when a reader can check it: iolab's verify
    /// blocks under --verify, IOR's timestamp words always (IOR's -R checks files an
    /// earlier run wrote without checking them itself). fio's reused buffers hold
    /// nothing a reader could check.
    pub fn of(spec: &DataSpec) -> Option<VerifyInfo> {
        let checkable = spec.pattern != DataPattern::Iolab && !spec.pattern.is_fio();
        (spec.verify || checkable).then_some(VerifyInfo {
            seed: spec.seed,
            block_size: spec.block_size.get(),
            pattern: spec.pattern,
        })
    }
}

pub(crate) const LOCK: &str = ".lock";

/// Whether `name` is one of the work directory's own files: its lock, its marker, or a
/// record beside a data file (`.NAME.iolab`).
pub fn is_reserved_name(name: &str) -> bool {
    name == LOCK || name == MARKER || (name.starts_with('.') && name.ends_with(".iolab"))
}

#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
    /// The lock while this process holds the directory.
    lock: Option<lock::Held>,
    /// Files this process created here, so cleanup after a failure removes them too.
    created: std::sync::Mutex<Vec<PathBuf>>,
    /// Data files this run planned here (new or reused): never stale for this run.
    used: std::sync::Mutex<Vec<PathBuf>>,
}

fn sidecar(file: &Path) -> PathBuf {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.with_file_name(format!(".{name}.iolab"))
}

impl WorkDir {
    /// Refuses `need` bytes the directory's file system has no room for
    /// ([`iolab_backend::files::space_short`]; one that cannot tell is not refused).
    pub fn check_space(&self, need: u64) -> Result<(), EngineError> {
        match iolab_backend::files::space_short(self.path(), need) {
            Ok(Some(free)) => Err(EngineError::NoSpace {
                path: self.path().to_path_buf(),
                need: iolab_core::units::ByteCount(need).human(),
                free: iolab_core::units::ByteCount(free).human(),
            }),
            _ => Ok(()),
        }
    }

    /// Creates `<base>/iolab-work`, or adopts one iolab created before, and (with an
    /// `owner`) locks it for this run, so no other run can use it at the same time.
    pub fn create_or_adopt(base: &Path, owner: Option<&LockOwner>) -> Result<WorkDir, EngineError> {
        WorkDir::create_or_adopt_named(base, WORKDIR_NAME, owner)
    }

    /// [`WorkDir::create_or_adopt`] for a work directory of another name: the mdtest
    /// front-end works in mdtest's own `<-d>/test-dir.<iteration>-0`, marked and locked
    /// as `iolab-work` is, so its tree lies at mdtest's depth.
    pub fn create_or_adopt_named(
        base: &Path,
        name: &str,
        owner: Option<&LockOwner>,
    ) -> Result<WorkDir, EngineError> {
        check_base(base)?;
        let path = base.join(checked_name(name)?);
        // A run that ends removes the directory while it holds the lock; one that opened
        // the old lock file then finds it gone and starts again.
        for _ in 0..20 {
            check_not_a_link(&path)?;
            match fs::create_dir(&path) {
                Ok(()) => {
                    if let Err(e) = fs::write(&path.join(MARKER), MARKER_TEXT.as_bytes()) {
                        // Leave nothing behind: the directory is ours and still empty.
                        let _ = fs::remove_file(&path.join(MARKER));
                        let _ = fs::remove_dir(&path);
                        return Err(EngineError::workdir("cannot write", path.join(MARKER), e));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    if !wait_for_marker(&path)? {
                        continue;
                    }
                }
                Err(e) => return Err(EngineError::workdir("cannot create", &path, e)),
            }
            let mut wd = WorkDir::at(path.clone());
            let Some(owner) = owner else {
                return Ok(wd);
            };
            match lock::take_lock(&wd.path, owner)? {
                Locked::Held(file) => wd.lock = Some(file),
                Locked::ByThisRun => {}
                Locked::Vanished => continue,
            }
            return Ok(wd);
        }
        Err(EngineError::WorkDirBusy {
            path: path.clone(),
            holder: "runs that keep removing and creating it".into(),
            lock: path.join(LOCK),
        })
    }

    /// Opens the work directory another rank created.
    pub fn open(base: &Path) -> Result<WorkDir, EngineError> {
        WorkDir::open_named(base, WORKDIR_NAME)
    }

    /// [`WorkDir::open`] for a work directory of another name.
    pub fn open_named(base: &Path, name: &str) -> Result<WorkDir, EngineError> {
        check_base(base)?;
        let path = base.join(checked_name(name)?);
        check_not_a_link(&path)?;
        if !wait_for_marker(&path)? {
            return Err(EngineError::workdir(
                "missing",
                &path,
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "the work directory this run's first rank on the host created is not there (is --dir on a shared file system that another run cleaned up?)",
                ),
            ));
        }
        Ok(WorkDir::at(path))
    }

    fn at(path: PathBuf) -> WorkDir {
        WorkDir {
            path,
            lock: None,
            created: std::sync::Mutex::new(Vec::new()),
            used: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Notes that this process is about to create `file` here.
    pub fn note_created(&self, file: &Path) {
        let mut c = self.created.lock().unwrap_or_else(|e| e.into_inner());
        if !c.iter().any(|p| p == file) {
            c.push(file.to_path_buf());
        }
    }

    /// Files this process created here.
    pub fn created(&self) -> Vec<PathBuf> {
        self.created
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Notes that this run uses `file` (laid out anew or reused).
    pub fn note_used(&self, file: &Path) {
        let mut u = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if !u.iter().any(|p| p == file) {
            u.push(file.to_path_buf());
        }
    }

    /// Files this process created or used here.
    pub fn used(&self) -> Vec<PathBuf> {
        let mut all = self.created();
        for f in self.used.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            if !all.contains(f) {
                all.push(f.clone());
            }
        }
        all
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// What `file` (in this directory) is known to hold, if iolab recorded it.
    pub fn file_info(&self, file: &Path) -> Option<FileInfo> {
        let text = fs::read_to_string(&sidecar(file)).ok()?;
        let info: FileInfo = serde_json::from_str(&text).ok()?;
        let actual = fs::metadata(file).ok()?.len;
        (actual >= info.size).then_some(info)
    }

    /// Records what `file` holds after it was written in full.
    pub fn set_file_info(&self, file: &Path, info: &FileInfo) -> Result<(), EngineError> {
        let text = serde_json::to_string(info).expect("FileInfo serializes");
        fs::write(&sidecar(file), text.as_bytes())
            .map_err(|e| EngineError::workdir("cannot write", sidecar(file), e))
    }

    /// Forgets what `file` holds (before it is overwritten).
    pub fn clear_file_info(&self, file: &Path) {
        let _ = fs::remove_file(&sidecar(file));
    }

    /// Removes the given files (which must lie in this directory or a directory iolab made
    /// in it) and their sidecars.
    /// Files that are already gone are fine.
    pub fn remove_files(&self, files: &[PathBuf]) -> Result<(), EngineError> {
        for f in files {
            let inside = f.starts_with(&self.path)
                && f != &self.path
                && !f.components().any(|c| c == std::path::Component::ParentDir);
            if !inside {
                // Not ours to delete: a planning bug, never a user's file.
                continue;
            }
            for p in [f.clone(), sidecar(f)] {
                match fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(EngineError::workdir("cannot remove", p, e)),
                }
            }
        }
        Ok(())
    }

    /// Removes the directories inside this one that `files` lie in (`ior-easy/`), when
    /// they are empty: what iolab made for IOR's file names.
    pub fn remove_empty_dirs_of(&self, files: &[PathBuf]) {
        for f in files {
            let mut dir = f.parent();
            while let Some(d) = dir {
                if d == self.path || !d.starts_with(&self.path) || fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
    }

    /// Whether this process holds the directory's lock (and so tidies it at the end).
    pub fn holds_lock(&self) -> bool {
        self.lock.is_some()
    }

    /// Removes iolab's data files (`data.shared`, `data.rR.tT`) and their sidecars that
    /// are not in `keep`: what earlier runs with other layouts or more threads left.
    /// Returns the names removed.
    pub fn remove_stale(&self, keep: &[String]) -> Vec<String> {
        let Ok(entries) = fs::read_dir(&self.path) else {
            return Vec::new();
        };
        let mut removed = Vec::new();
        for e in entries {
            let name = e.name.clone();
            if !is_data_file_name(&name) || keep.contains(&name) {
                continue;
            }
            if e.is_file && fs::remove_file(&e.path).is_ok() {
                let _ = fs::remove_file(&sidecar(&e.path));
                removed.push(name);
            }
        }
        removed.sort();
        removed
    }

    /// What iolab recorded `file` holds and the size it has now (None: it is gone), for
    /// a file iolab wrote before (with a sidecar).
    pub fn recorded(&self, file: &Path) -> Option<(FileInfo, Option<u64>)> {
        let text = fs::read_to_string(&sidecar(file)).ok()?;
        let info: FileInfo = serde_json::from_str(&text).ok()?;
        let actual = fs::symlink_metadata(file).ok().map(|m| m.len);
        Some((info, actual))
    }

    /// Removes a directory tree iolab created inside this work directory.
    pub fn remove_tree(&self, dir: &Path) -> Result<(), EngineError> {
        if !dir.starts_with(&self.path) || dir == self.path {
            return Ok(());
        }
        match fs::remove_dir_all(dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(EngineError::workdir("cannot remove", dir, e)),
        }
    }

    /// Releases the lock and keeps the directory and its files.
    pub fn release(mut self) {
        self.lock = None;
    }

    /// Removes the marker, the lock and the directory if nothing else is left in it,
    /// and releases the lock. Only the process holding the lock removes anything.
    /// Returns whether the directory is gone.
    pub fn remove_if_empty(mut self) -> bool {
        let Some(lock) = self.lock.take() else {
            return false;
        };
        let others = fs::read_dir(&self.path)
            .map(|d| {
                d.iter()
                    .filter(|e| e.name != MARKER && e.name != LOCK)
                    .count()
            })
            .unwrap_or(1);
        if others > 0 {
            return false;
        }
        // The lock goes first, while still held: a run waiting on it finds it gone.
        let _ = fs::remove_file(&self.path.join(LOCK));
        let _ = fs::remove_file(&self.path.join(MARKER));
        let gone = fs::remove_dir(&self.path).is_ok();
        lock.gone();
        gone
    }
}

/// The names iolab gives data files (engine::plan): `data.shared` and `data.r<R>.t<T>`.
pub fn is_data_file_name(name: &str) -> bool {
    if name == "data.shared" {
        return true;
    }
    let Some(rest) = name.strip_prefix("data.r") else {
        return false;
    };
    let Some((r, t)) = rest.split_once(".t") else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(r) && digits(t)
}

/// A work directory's name is one plain path component: never `..`, a `/` or empty.
fn checked_name(name: &str) -> Result<&str, EngineError> {
    let plain = !name.is_empty() && name != "." && name != ".." && !name.contains('/');
    if plain && !name.contains('\0') {
        Ok(name)
    } else {
        Err(EngineError::Setup(format!(
            "{name:?} is not a work directory name (one path component)"
        )))
    }
}

/// A link where the work directory belongs is never followed (it could point anywhere).
fn check_not_a_link(path: &Path) -> Result<(), EngineError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_symlink => Err(EngineError::WorkDirLink {
            path: path.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

fn check_base(base: &Path) -> Result<(), EngineError> {
    match fs::metadata(base) {
        Ok(m) if m.is_dir => Ok(()),
        Ok(_) => Err(EngineError::TargetNotDir {
            path: base.to_path_buf(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(EngineError::TargetMissing {
            path: base.to_path_buf(),
        }),
        Err(e) => Err(EngineError::workdir("cannot access", base, e)),
    }
}

/// Waits up to a few seconds for the marker of a directory another process (maybe on
/// another host) is creating; a directory without one is not ours. False: the directory
/// went away meanwhile (a run that ended removed it).
fn wait_for_marker(path: &Path) -> Result<bool, EngineError> {
    for _ in 0..50 {
        if fs::exists(&path.join(MARKER)) {
            return Ok(true);
        }
        if !fs::exists(path) {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(EngineError::ForeignWorkDir {
        path: path.to_path_buf(),
        marker: MARKER,
    })
}

#[cfg(test)]
mod tests;
