//! Getting every rank's targets ready: [`prepare_targets`] assigns targets to ranks and
//! has each rank prepare its own: a work directory iolab owns inside a directory target,
//! a guarded block device (refused if it holds a file system or is in use, unless
//! allowed), or nothing for the null backend. [`TargetSet`] holds them;
//! [`cleanup_targets`] removes what iolab wrote and nothing else.

use std::path::{Path, PathBuf};

use iolab_backend::device::inspect_device;
use iolab_comm::{Comm, CommExt};
use iolab_core::SpecError;
use iolab_core::spec::{BackendKind, TargetEntry};

use super::assign::{AssignedTarget, assign};
use iolab_engine::{EngineError, PreparedTarget, agree, check_ranks_agree, shared_run_token};

/// A target this rank runs.
#[derive(Debug)]
pub struct LocalTarget {
    /// Its index in [`TargetSet::all`].
    pub index: usize,
    pub target: AssignedTarget,
    pub prepared: PreparedTarget,
    /// Direct-I/O alignment of the target.
    pub alignment: u64,
    /// Files iolab created on it (removed at cleanup).
    pub files: Vec<PathBuf>,
}

/// All targets of a run, and this rank's own.
#[derive(Debug)]
pub struct TargetSet {
    /// Every target of every rank, in the order results list them.
    pub all: Vec<AssignedTarget>,
    pub local: Vec<LocalTarget>,
}

/// What preparing targets may do to them.
#[derive(Clone, Copy, Debug)]
pub struct PrepareOptions {
    pub backend: BackendKind,
    /// Something will be written (a device holding data is refused then).
    pub writes: bool,
    pub allow_destroy: bool,
    /// The run asks for direct I/O: the alignment is tried on the target where the kernel
    /// does not report it (FUSE mounts), as `iolab run` does.
    pub direct: bool,
}

/// Assigns targets to ranks and prepares this rank's. Collective: every rank calls it
/// with the same entries.
pub fn prepare_targets(
    comm: &dyn Comm,
    entries: &[TargetEntry],
    opts: PrepareOptions,
) -> Result<TargetSet, EngineError> {
    check_ranks_agree(comm, "the target list", &entries)?;
    let topo = comm.topology();
    let all = agree(comm, assign(entries, &topo).map_err(EngineError::from))?;
    if opts.backend != BackendKind::Null {
        agree(comm, check_distinct(&all, comm.host()))?;
    }
    let mut local = prepare_local(comm, &all, opts);
    if !comm.all_ok(local.is_ok()) && local.is_ok() {
        // Another rank failed: give back what this rank set up.
        for t in local.unwrap_or_default() {
            discard(t.prepared);
        }
        local = Ok(Vec::new());
    }
    let local = agree(comm, local)?;
    Ok(TargetSet { all, local })
}

/// Refuses two targets of this host that are one directory or device under two
/// spellings (`d1` and `./d1`, `/dev/sdb` and its /dev/disk/by-id name): measured twice
/// at once, each would report half of what it does.
fn check_distinct(all: &[AssignedTarget], host: &str) -> Result<(), EngineError> {
    let mut seen: Vec<(std::path::PathBuf, &TargetEntry)> = Vec::new();
    for t in all.iter().filter(|t| t.host == host) {
        let real = std::fs::canonicalize(&t.entry.path).unwrap_or_else(|_| t.entry.path.clone());
        if let Some((_, first)) = seen.iter().find(|(p, _)| *p == real) {
            return Err(refuse(
                &t.entry,
                format!(
                    "{} is {} of target {} ({}); list each target once",
                    t.entry.path.display(),
                    if first.path == t.entry.path {
                        "also the path"
                    } else {
                        "the same place as the path"
                    },
                    first.id,
                    first.path.display()
                ),
            ));
        }
        seen.push((real, &t.entry));
    }
    Ok(())
}

fn prepare_local(
    comm: &dyn Comm,
    all: &[AssignedTarget],
    opts: PrepareOptions,
) -> Result<Vec<LocalTarget>, EngineError> {
    let mut local = Vec::new();
    // One lock token for the whole run: rank 0's.
    let run = shared_run_token(comm);
    for (index, target) in all.iter().enumerate() {
        if target.rank != comm.rank() {
            continue;
        }
        match prepare_one(&target.entry, (&run, &target.host), opts) {
            Ok((prepared, alignment)) => local.push(LocalTarget {
                index,
                target: target.clone(),
                prepared,
                alignment,
                files: Vec::new(),
            }),
            Err(e) => {
                for t in local {
                    discard(t.prepared);
                }
                return Err(e);
            }
        }
    }
    Ok(local)
}

fn refuse(entry: &TargetEntry, reason: String) -> EngineError {
    EngineError::Spec(SpecError::new(format!("target {}", entry.id), reason))
}

/// Prepares `entry` on `host` for the run whose lock token is `run`.
fn prepare_one(
    entry: &TargetEntry,
    (run, host): (&str, &str),
    opts: PrepareOptions,
) -> Result<(PreparedTarget, u64), EngineError> {
    if opts.backend == BackendKind::Null {
        return Ok((PreparedTarget::Null, 4096));
    }
    let path = entry.path.as_path();
    // An NBD export is a device reached through a backend that reaches exports.
    let reaches_export = iolab_backend::capabilities_of(opts.backend, 1).reaches_export;
    if iolab_backend::nbd::is_uri(path) != reaches_export {
        return Err(refuse(
            entry,
            if reaches_export {
                format!(
                    "--backend {} works on NBD exports, not on {}: give nbd+unix:///?socket=SOCKET or nbd://HOST[:PORT]",
                    opts.backend.name(),
                    path.display()
                )
            } else {
                format!(
                    "{} is an NBD export: reach it with --backend nbd",
                    path.display()
                )
            },
        ));
    }
    if reaches_export {
        return Ok((
            guard(entry, path, opts)?,
            iolab_backend::files::direct_io_alignment(path),
        ));
    }
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(refuse(
                entry,
                format!(
                    "{} does not exist on {host}; create it or correct the path",
                    path.display()
                ),
            ));
        }
        Err(e) => return Err(EngineError::workdir("cannot access", path, e)),
    };
    let alignment = if opts.direct {
        iolab_backend::files::tried_direct_io_alignment(path)
    } else {
        iolab_backend::files::direct_io_alignment(path)
    };
    if meta.is_dir() {
        return Ok((PreparedTarget::own_dir(path, run, host)?, alignment));
    }
    Ok((guard(entry, path, opts)?, alignment))
}

/// The device guard of `iolab run --device`: nothing that holds data is written without
/// --allow-destroy.
fn guard(
    entry: &TargetEntry,
    path: &Path,
    opts: PrepareOptions,
) -> Result<PreparedTarget, EngineError> {
    let check = inspect_device(path)?;
    PreparedTarget::checked_device(check, opts.writes, opts.allow_destroy)
        .map_err(|e| refuse(entry, e.to_string()))
}

/// Releases a target without keeping anything iolab created.
fn discard(prepared: PreparedTarget) {
    if let PreparedTarget::Dir { workdir, .. } = prepared {
        let _ = workdir.remove_if_empty();
    }
}

/// Removes the files iolab wrote on this rank's targets (unless `keep`) and, once every
/// rank has, the work directories left empty. Collective.
pub fn cleanup_targets(comm: &dyn Comm, set: TargetSet, keep: bool) -> Result<(), EngineError> {
    let mut result = Ok(());
    let mut workdirs = Vec::new();
    for t in set.local {
        let PreparedTarget::Dir { workdir, .. } = t.prepared else {
            continue;
        };
        if keep {
            workdir.release();
            continue;
        }
        let mut files = t.files.clone();
        // What the phases planned there (noted even when one failed) and what they created.
        files.extend(workdir.used());
        if let Err(e) = workdir.remove_files(&files)
            && result.is_ok()
        {
            result = Err(e);
        }
        workdirs.push(workdir);
    }
    comm.barrier();
    for w in workdirs {
        let _ = w.remove_if_empty();
    }
    result
}
