//! [`WorkDir`]: the directory iolab writes in, `<--dir>/iolab-work`, marked as its own by
//! a marker file and guarded per host by a lock file. Cleanup removes only the files
//! iolab lists, their sidecars, the marker and lock, and then the directory if it is
//! empty: nothing else. A sidecar ([`FileInfo`]) records what a data file holds, so a
//! later read can reuse kept files instead of laying them out again.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::EngineError;

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
}

#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
    lock: Option<PathBuf>,
    /// Files this process created here, so cleanup after a failure removes them too.
    created: std::sync::Mutex<Vec<PathBuf>>,
}

fn sidecar(file: &Path) -> PathBuf {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.with_file_name(format!(".{name}.iolab"))
}

fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

impl WorkDir {
    /// Creates `<base>/iolab-work`, or adopts one iolab created before, and (with
    /// `host`) takes that host's lock so two runs from one host cannot collide.
    pub fn create_or_adopt(base: &Path, host: Option<&str>) -> Result<WorkDir, EngineError> {
        check_base(base)?;
        let path = base.join(WORKDIR_NAME);
        match fs::create_dir(&path) {
            Ok(()) => {
                if let Err(e) = fs::write(path.join(MARKER), MARKER_TEXT) {
                    // Leave nothing behind: the directory is ours and still empty.
                    let _ = fs::remove_file(path.join(MARKER));
                    let _ = fs::remove_dir(&path);
                    return Err(EngineError::workdir("cannot write", path.join(MARKER), e));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => wait_for_marker(&path)?,
            Err(e) => return Err(EngineError::workdir("cannot create", &path, e)),
        }
        let mut wd = WorkDir::at(path);
        if let Some(host) = host {
            match wd.take_lock(host) {
                Ok(lock) => wd.lock = Some(lock),
                Err(e) => {
                    // A directory we just made and cannot use is removed again.
                    let _ = WorkDir::at(wd.path.clone()).remove_if_empty();
                    return Err(e);
                }
            }
        }
        Ok(wd)
    }

    /// Opens the work directory another rank created.
    pub fn open(base: &Path) -> Result<WorkDir, EngineError> {
        check_base(base)?;
        let path = base.join(WORKDIR_NAME);
        wait_for_marker(&path)?;
        Ok(WorkDir::at(path))
    }

    fn at(path: PathBuf) -> WorkDir {
        WorkDir {
            path,
            lock: None,
            created: std::sync::Mutex::new(Vec::new()),
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

    fn take_lock(&self, host: &str) -> Result<PathBuf, EngineError> {
        let lock = self.path.join(format!(".lock-{host}"));
        for _ in 0..2 {
            match OpenOptions::new().write(true).create_new(true).open(&lock) {
                Ok(mut f) => {
                    let _ = writeln!(f, "{}", std::process::id());
                    return Ok(lock);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let holder = fs::read_to_string(&lock).unwrap_or_default();
                    match holder.trim().parse::<u32>() {
                        Ok(pid) if pid_alive(pid) => {
                            return Err(EngineError::WorkDirBusy {
                                path: self.path.clone(),
                                holder: format!("pid {pid} on {host}"),
                                lock,
                            });
                        }
                        // The run that held it is gone: take over its lock.
                        _ => {
                            let _ = fs::remove_file(&lock);
                        }
                    }
                }
                Err(e) => return Err(EngineError::workdir("cannot create", &lock, e)),
            }
        }
        Err(EngineError::WorkDirBusy {
            path: self.path.clone(),
            holder: "another run".into(),
            lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// What `file` (in this directory) is known to hold, if iolab recorded it.
    pub fn file_info(&self, file: &Path) -> Option<FileInfo> {
        let text = fs::read_to_string(sidecar(file)).ok()?;
        let info: FileInfo = serde_json::from_str(&text).ok()?;
        let actual = fs::metadata(file).ok()?.len();
        (actual >= info.size).then_some(info)
    }

    /// Records what `file` holds after it was written in full.
    pub fn set_file_info(&self, file: &Path, info: &FileInfo) -> Result<(), EngineError> {
        let text = serde_json::to_string(info).expect("FileInfo serializes");
        fs::write(sidecar(file), text)
            .map_err(|e| EngineError::workdir("cannot write", sidecar(file), e))
    }

    /// Forgets what `file` holds (before it is overwritten).
    pub fn clear_file_info(&self, file: &Path) {
        let _ = fs::remove_file(sidecar(file));
    }

    /// Removes the given files (which must lie in this directory) and their sidecars.
    /// Files that are already gone are fine.
    pub fn remove_files(&self, files: &[PathBuf]) -> Result<(), EngineError> {
        for f in files {
            if f.parent() != Some(self.path.as_path()) {
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

    /// Releases this host's lock and keeps the directory and its files.
    pub fn release(mut self) {
        if let Some(lock) = self.lock.take() {
            let _ = fs::remove_file(lock);
        }
    }

    /// Releases the lock and removes the marker and the directory if nothing else is
    /// left in it. Returns whether the directory is gone.
    pub fn remove_if_empty(mut self) -> bool {
        if let Some(lock) = self.lock.take() {
            let _ = fs::remove_file(lock);
        }
        let others = fs::read_dir(&self.path)
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        let n = e.file_name();
                        let n = n.to_string_lossy();
                        n != MARKER && !n.starts_with(".lock-")
                    })
                    .count()
            })
            .unwrap_or(1);
        let locks_left = fs::read_dir(&self.path)
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with(".lock-"))
            })
            .unwrap_or(true);
        if others > 0 || locks_left {
            return false;
        }
        let _ = fs::remove_file(self.path.join(MARKER));
        fs::remove_dir(&self.path).is_ok()
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            let _ = fs::remove_file(lock);
        }
    }
}

fn check_base(base: &Path) -> Result<(), EngineError> {
    match fs::metadata(base) {
        Ok(m) if m.is_dir() => Ok(()),
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
/// another host) is creating; a directory without one is not ours.
fn wait_for_marker(path: &Path) -> Result<(), EngineError> {
    for _ in 0..50 {
        if path.join(MARKER).exists() {
            return Ok(());
        }
        if !path.exists() {
            return Err(EngineError::workdir(
                "missing",
                path,
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "the work directory another rank should have created is not there (is --dir on a shared file system?)",
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(EngineError::ForeignWorkDir {
        path: path.to_path_buf(),
        marker: MARKER,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_marks_and_cleans_up_only_its_own() {
        let base = tempfile::tempdir().unwrap();
        let wd = WorkDir::create_or_adopt(base.path(), Some("h")).unwrap();
        assert!(wd.path().join(MARKER).exists());
        let f = wd.join("data.0.0");
        fs::write(&f, b"x").unwrap();
        wd.set_file_info(
            &f,
            &FileInfo {
                size: 1,
                verify: None,
            },
        )
        .unwrap();
        assert_eq!(
            wd.file_info(&f),
            Some(FileInfo {
                size: 1,
                verify: None
            })
        );
        // A stray file of the user's stops the directory from being removed.
        fs::write(wd.join("users-notes.txt"), b"mine").unwrap();
        wd.remove_files(&[f.clone(), base.path().join("outside")])
            .unwrap();
        assert!(!f.exists());
        assert!(!wd.remove_if_empty());
        assert!(
            base.path()
                .join(WORKDIR_NAME)
                .join("users-notes.txt")
                .exists()
        );
    }

    #[test]
    fn an_empty_workdir_is_removed() {
        let base = tempfile::tempdir().unwrap();
        let wd = WorkDir::create_or_adopt(base.path(), Some("h")).unwrap();
        assert!(wd.remove_if_empty());
        assert!(!base.path().join(WORKDIR_NAME).exists());
    }

    #[test]
    fn refuses_a_directory_it_did_not_create() {
        let base = tempfile::tempdir().unwrap();
        fs::create_dir(base.path().join(WORKDIR_NAME)).unwrap();
        let err = WorkDir::open(base.path()).unwrap_err().to_string();
        assert!(err.contains("was not created by iolab"), "{err}");
    }

    #[test]
    fn a_second_run_on_the_same_host_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let _first = WorkDir::create_or_adopt(base.path(), Some("h")).unwrap();
        let err = WorkDir::create_or_adopt(base.path(), Some("h"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("in use by another iolab run"), "{err}");
    }

    #[test]
    fn a_stale_lock_is_taken_over() {
        let base = tempfile::tempdir().unwrap();
        let wd = WorkDir::create_or_adopt(base.path(), None).unwrap();
        fs::write(wd.join(".lock-h"), "999999999\n").unwrap();
        let again = WorkDir::create_or_adopt(base.path(), Some("h")).unwrap();
        assert_eq!(
            fs::read_to_string(again.join(".lock-h")).unwrap().trim(),
            std::process::id().to_string()
        );
    }

    #[test]
    fn missing_base_is_named() {
        let err = WorkDir::create_or_adopt(Path::new("/nonexistent/x"), None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--dir /nonexistent/x does not exist; create it first or choose another directory"
        );
    }
}
