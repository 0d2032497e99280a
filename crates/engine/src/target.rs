//! Getting a target ready on every rank: [`prepare_target`] resolves `{host}`/`{rank}` in
//! `--dir`, has one rank per host and directory create (or adopt) the work directory,
//! guards block devices, and makes all ranks agree on the outcome ([`agree`]) so one
//! rank's failure is every rank's error. [`finish_target`] is its end.

use std::path::{Path, PathBuf};

use iolab_backend::device::{DeviceCheck, inspect_device, mark_as_image};
use iolab_comm::{Comm, CommExt};
use iolab_core::spec::{BackendKind, TargetSpec};

use crate::error::EngineError;
use crate::plan::DataTarget;
use crate::workdir::{LockOwner, WorkDir};

mod finish;
pub use finish::finish_target;

/// A target ready for work.
#[derive(Debug)]
pub enum PreparedTarget {
    Dir {
        base: PathBuf,
        workdir: WorkDir,
    },
    Device {
        check: DeviceCheck,
        /// Checked for writing (nothing foreign on it, or --allow-destroy): only then may
        /// a phase write it, its layout included.
        writable: bool,
    },
    /// The null backend: nothing on storage is touched.
    Null,
}

impl PreparedTarget {
    pub fn data_target(&self) -> DataTarget {
        match self {
            PreparedTarget::Dir { workdir, .. } => DataTarget::Dir(workdir.path().to_path_buf()),
            PreparedTarget::Device { check, .. } => DataTarget::Device {
                path: check.path.clone(),
                size: check.size,
            },
            PreparedTarget::Null => DataTarget::Null,
        }
    }

    pub fn workdir(&self) -> Option<&WorkDir> {
        match self {
            PreparedTarget::Dir { workdir, .. } => Some(workdir),
            _ => None,
        }
    }

    /// After a phase wrote it: a regular file standing in for a device, prepared for
    /// writing, is marked as iolab's image as it is now (its size and modification time:
    /// anyone else's later write voids the mark).
    pub fn mark_written(&self) {
        if let PreparedTarget::Device {
            check,
            writable: true,
        } = self
            && !check.is_block_device
        {
            mark_as_image(&check.path);
        }
    }

    /// A directory target a rank prepares on its own (`iolab targets`): the work
    /// directory in `base` created or adopted, and locked for the run whose token is
    /// `run` ([`shared_run_token`]) from `host`.
    pub fn own_dir(base: &Path, run: &str, host: &str) -> Result<PreparedTarget, EngineError> {
        let owner = LockOwner {
            run: run.to_string(),
            host: host.to_string(),
        };
        let workdir = WorkDir::create_or_adopt(base, Some(&owner))?;
        Ok(PreparedTarget::Dir {
            base: base.to_path_buf(),
            workdir,
        })
    }

    /// A device, image file or NBD export as `check` found it; with `writes`, refused
    /// when in use, or when it holds data and `allow_destroy` is not given (as `iolab run
    /// --device` refuses it).
    pub fn checked_device(
        check: DeviceCheck,
        writes: bool,
        allow_destroy: bool,
    ) -> Result<PreparedTarget, EngineError> {
        if writes {
            guard_device(&check, allow_destroy)?;
        }
        Ok(PreparedTarget::Device {
            check,
            writable: writes,
        })
    }

    /// A one-line description: "/scratch/x", "device /dev/nvme0n1", "null backend".
    pub fn describe(&self) -> String {
        match self {
            PreparedTarget::Dir { base, .. } => base.display().to_string(),
            PreparedTarget::Device { check, .. } if iolab_backend::nbd::is_uri(&check.path) => {
                format!("NBD export {}", check.path.display())
            }
            PreparedTarget::Device { check, .. } => format!("device {}", check.path.display()),
            PreparedTarget::Null => "null backend (no storage)".to_string(),
        }
    }
}

/// Replaces `{host}` and `{rank}` in a path.
pub fn resolve_placeholders(path: &Path, host: &str, rank: u32) -> PathBuf {
    let s = path.to_string_lossy();
    if !s.contains('{') {
        return path.to_path_buf();
    }
    PathBuf::from(
        s.replace("{host}", host)
            .replace("{rank}", &rank.to_string()),
    )
}

/// Makes every rank return the same verdict: Ok where all ranks are Ok; otherwise, with
/// several ranks, an error naming the first rank that failed and its host (rank 0's own
/// included), on every rank (only rank 0 prints it: a failure is said once). An
/// interruption stays one on every rank, for its exit code.
pub fn agree<T>(comm: &dyn Comm, result: Result<T, EngineError>) -> Result<T, EngineError> {
    agree_or_undo(comm, result, drop)
}

/// Like [`agree`], but when this rank succeeded and another did not, `undo` gets this
/// rank's value (to remove what it created) before the error is returned.
pub fn agree_or_undo<T>(
    comm: &dyn Comm,
    result: Result<T, EngineError>,
    undo: impl FnOnce(T),
) -> Result<T, EngineError> {
    if comm.all_ok(result.is_ok()) {
        return result;
    }
    // Every rank takes part in this one collective, failed or not.
    let mine = (
        comm.host().to_string(),
        result.as_ref().err().map(|e| e.to_string()),
    );
    let all: Vec<(String, Option<String>)> = comm.all_gather(&mine).unwrap_or_default();
    let first_failed = || {
        let (rank, host, message) = all
            .into_iter()
            .enumerate()
            .find_map(|(r, (host, m))| m.map(|m| (r as u32, host, m)))
            .unwrap_or((0, String::new(), "unknown failure".to_string()));
        EngineError::Rank {
            rank,
            host,
            message,
        }
    };
    match result {
        Err(e) if matches!(e, EngineError::Interrupted) || comm.size() == 1 => Err(e),
        Err(_) => Err(first_failed()),
        Ok(value) => {
            undo(value);
            Err(first_failed())
        }
    }
}

/// This process's candidate for the run's lock token (rank 0's is the one used): unique
/// across hosts, processes and time.
pub(crate) fn run_token(comm: &dyn Comm) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{}:{}:{nanos}", comm.host(), std::process::id())
}

/// The run's lock token on every rank: rank 0's [`run_token`] (collective).
pub fn shared_run_token(comm: &dyn Comm) -> String {
    let tokens = comm.all_gather(&run_token(comm)).unwrap_or_default();
    tokens.into_iter().next().unwrap_or_default()
}

/// Refuses to write a device or image that is in use (mounted, swap, held, backing a
/// loop device: never, whatever the flags) or that holds a signature or data (unless
/// `allow_destroy`); marks an image file iolab may write as its own.
fn guard_device(check: &DeviceCheck, allow_destroy: bool) -> Result<(), EngineError> {
    if let Some(why) = &check.in_use {
        return Err(EngineError::DeviceBusy {
            path: check.path.clone(),
            why: why.clone(),
        });
    }
    if !allow_destroy && let Some(what) = check.holds() {
        return Err(EngineError::DeviceRefused {
            path: check.path.clone(),
            what,
        });
    }
    Ok(())
}

/// The device a run works on: `--device`, or the export of `--nbd-uri` (a device reached
/// through a backend that reaches exports, and only through one).
fn device_of(spec: &TargetSpec, backend: BackendKind) -> Result<Option<PathBuf>, EngineError> {
    let refuse =
        |flag: &str, why: String| Err(EngineError::Spec(iolab_core::SpecError::new(flag, why)));
    let reaches_export = iolab_backend::capabilities_of(backend, 1).reaches_export;
    match (&spec.nbd_uri, &spec.device) {
        (Some(uri), _) if !iolab_backend::nbd::is_uri(Path::new(uri)) => refuse(
            "--nbd-uri",
            format!(
                "'{uri}' is not an NBD URI: give nbd+unix:///?socket=SOCKET or nbd://HOST[:PORT][/EXPORT]"
            ),
        ),
        (Some(_), _) if !reaches_export => refuse(
            "--nbd-uri",
            format!(
                "an NBD export is reached with --backend nbd, not --backend {}",
                backend.name()
            ),
        ),
        (Some(uri), _) => Ok(Some(PathBuf::from(uri))),
        (None, Some(dev)) if iolab_backend::nbd::is_uri(dev) && !reaches_export => refuse(
            "--device",
            format!(
                "{} is an NBD URI: give it with --backend nbd --nbd-uri",
                dev.display()
            ),
        ),
        (None, dev) if reaches_export => refuse(
            &format!("--backend {}", backend.name()),
            format!(
                "it works on an NBD export{}: give it with --nbd-uri nbd+unix:///?socket=SOCKET or --nbd-uri nbd://HOST[:PORT]",
                dev.as_ref()
                    .map_or(String::new(), |d| format!(", not on {}", d.display()))
            ),
        ),
        (None, dev) => Ok(dev.clone()),
    }
}

/// A `--dir` with `{host}` or `{rank}` names a directory per node or rank that users
/// cannot create on every node beforehand: iolab creates its last level (as IO500 does
/// its datadir, and as `iolab io500` does with any --dir); the parent must exist.
fn create_last_level(base: &Path) -> Result<(), EngineError> {
    match iolab_backend::vfs::create_dir(base) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(EngineError::TargetMissing {
            path: base.parent().unwrap_or(base).to_path_buf(),
        }),
        Err(e) => Err(EngineError::workdir("cannot create", base.to_path_buf(), e)),
    }
}

/// The directory to work in: --dir, or with --nfs-url the export (mounted here, on every
/// rank) and --dir inside it. A backend that reaches NFS exports needs the URL, and the
/// URL such a backend; a workload that writes needs a URL libnfs can write over.
fn target_dir(
    comm: &dyn Comm,
    spec: &TargetSpec,
    backend: BackendKind,
    writes: bool,
) -> Result<Option<PathBuf>, EngineError> {
    let reaches_nfs = iolab_backend::capabilities_of(backend, 1).reaches_nfs;
    let Some(url) = &spec.nfs_url else {
        if reaches_nfs {
            return Err(EngineError::Spec(iolab_core::SpecError::new(
                "--nfs-url",
                format!(
                    "--backend {} works on an NFS export: give its nfs://HOST/EXPORT",
                    backend.name()
                ),
            )));
        }
        return Ok(spec.dir.clone());
    };
    if !reaches_nfs {
        return Err(EngineError::Spec(iolab_core::SpecError::new(
            "--nfs-url",
            format!(
                "--backend {} cannot reach an NFS export; use --backend nfs",
                backend.name()
            ),
        )));
    }
    if writes {
        iolab_backend::nfs::check_writable(url)?;
    }
    let root = agree(
        comm,
        iolab_backend::nfs::mount(url).map_err(EngineError::from),
    )?;
    Ok(Some(match &spec.dir {
        Some(d) => root.join(d.strip_prefix("/").unwrap_or(d)),
        None => root,
    }))
}

/// Prepares the target of a workload on every rank. `writes`: whether anything will be
/// written (a device holding data is refused then, unless allowed).
pub fn prepare_target(
    comm: &dyn Comm,
    spec: &TargetSpec,
    backend: BackendKind,
    writes: bool,
) -> Result<PreparedTarget, EngineError> {
    prepare_target_named(comm, spec, backend, writes, crate::workdir::WORKDIR_NAME)
}

/// [`prepare_target`] with a work directory of another name in the directory: the mdtest
/// front-end's is mdtest's own `test-dir.<iteration>-0`.
pub fn prepare_target_named(
    comm: &dyn Comm,
    spec: &TargetSpec,
    backend: BackendKind,
    writes: bool,
    name: &str,
) -> Result<PreparedTarget, EngineError> {
    if backend == BackendKind::Null {
        return Ok(PreparedTarget::Null);
    }
    if let Some(dev) = device_of(spec, backend)? {
        return prepare_device(comm, spec, &dev, writes);
    }
    let Some(base) = target_dir(comm, spec, backend, writes)? else {
        return Err(EngineError::Spec(iolab_core::SpecError::new(
            "--dir",
            "give a directory to work in (or --device for a block device)",
        )));
    };
    let templated = {
        let text = base.to_string_lossy();
        text.contains("{host}") || text.contains("{rank}")
    };
    let base = resolve_placeholders(&base, comm.host(), comm.rank());
    if templated || spec.create_dir {
        agree(comm, create_last_level(&base))?;
    }
    let (leader, owner) = dir_leader(comm, &base);
    let created = if leader {
        WorkDir::create_or_adopt_named(&base, name, Some(&owner)).map(Some)
    } else {
        Ok(None)
    };
    // A rank that created its directory removes it again when another rank failed.
    let undo = |w: Option<WorkDir>| {
        if let Some(w) = w {
            w.remove_if_empty();
        }
    };
    let created = agree_or_undo(comm, created, undo)?;
    comm.barrier();
    let leader = created.is_some();
    let workdir = match created {
        Some(w) => Ok(w),
        None => WorkDir::open_named(&base, name),
    };
    let workdir = agree_or_undo(comm, workdir, |w| {
        if leader {
            w.remove_if_empty();
        }
    })?;
    Ok(PreparedTarget::Dir { base, workdir })
}

/// The device of `spec` (its placeholders resolved for this rank) inspected, and
/// guarded when the run `writes` it. Collective.
fn prepare_device(
    comm: &dyn Comm,
    spec: &TargetSpec,
    dev: &Path,
    writes: bool,
) -> Result<PreparedTarget, EngineError> {
    let dev = resolve_placeholders(dev, comm.host(), comm.rank());
    let checked = inspect_device(&dev)
        .map_err(EngineError::from)
        .and_then(|check| {
            if writes {
                guard_device(&check, spec.allow_destroy)?;
            }
            Ok(PreparedTarget::Device {
                check,
                writable: writes,
            })
        });
    agree(comm, checked)
}

/// Whether this rank creates the work directory in `base` (the lowest rank with this
/// host and directory does; the others open it), and the run's lock owner on this
/// host. Collective.
fn dir_leader(comm: &dyn Comm, base: &Path) -> (bool, LockOwner) {
    let topo = comm.topology();
    let dirs: Vec<(String, String)> = comm
        .all_gather(&(base.to_string_lossy().into_owned(), run_token(comm)))
        .unwrap_or_default();
    let owner = LockOwner {
        run: dirs.first().map(|d| d.1.clone()).unwrap_or_default(),
        host: comm.host().to_string(),
    };
    let me = comm.rank() as usize;
    let leader = (0..dirs.len())
        .find(|&r| {
            dirs.get(r).map(|d| &d.0) == dirs.get(me).map(|d| &d.0)
                && topo.ranks[r].host == topo.ranks[me].host
        })
        .unwrap_or(me)
        == me;
    (leader, owner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_comm::SingleProcess;

    #[test]
    fn placeholders_are_replaced() {
        assert_eq!(
            resolve_placeholders(Path::new("/scratch/{host}/r{rank}"), "n1", 3),
            PathBuf::from("/scratch/n1/r3")
        );
        assert_eq!(
            resolve_placeholders(Path::new("/a/b"), "n1", 3),
            PathBuf::from("/a/b")
        );
    }

    #[test]
    fn an_image_holding_data_is_refused_for_writes() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("disk.img");
        let mut data = vec![0u8; 1 << 20];
        data[4096..4100].copy_from_slice(b"mine");
        std::fs::write(&img, &data).unwrap();
        let spec = TargetSpec {
            device: Some(img.clone()),
            ..TargetSpec::default()
        };
        let comm = SingleProcess::new();
        let err = prepare_target(&comm, &spec, BackendKind::Psync, true)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "refusing to write to {}: it holds data (a non-zero byte at offset 4096; iolab writes a regular file only if it is empty, all zeros or an image iolab wrote); pass --allow-destroy to overwrite it (its contents will be lost)",
                img.display()
            )
        );
        assert_eq!(std::fs::read(&img).unwrap(), data);
        assert!(prepare_target(&comm, &spec, BackendKind::Psync, false).is_ok());
        let allowed = TargetSpec {
            allow_destroy: true,
            ..spec
        };
        assert!(prepare_target(&comm, &allowed, BackendKind::Psync, true).is_ok());
    }

    #[test]
    fn a_directory_gets_a_marked_workdir() {
        let dir = tempfile::tempdir().unwrap();
        let spec = TargetSpec {
            dir: Some(dir.path().to_path_buf()),
            ..TargetSpec::default()
        };
        let t = prepare_target(&SingleProcess::new(), &spec, BackendKind::Psync, true).unwrap();
        assert!(
            t.workdir()
                .unwrap()
                .path()
                .join(crate::workdir::MARKER)
                .exists()
        );
    }
}
