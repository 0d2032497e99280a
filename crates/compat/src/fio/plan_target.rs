//! Where a fio job runs: the backend and queue depth of its engine, its directory or
//! shared file (`filename`), the bytes each clone moves, and fio's strided zones, each
//! refused in one line naming the option when iolab would run it differently.

use std::path::PathBuf;

use iolab_core::spec::{BackendKind, TargetSpec};

use super::job::{Engine, FioJob, FioOffset};
use super::plan::Refusal;

/// fio's zonemode=strided as fio 3.33 sets it up (init.c): zonesize is needed,
/// zonerange defaults to it, and several files turn it off. Without zonemode=strided
/// the zone sizes change nothing (fio's default zonemode is none).
pub(super) fn zones_of(
    job: &FioJob,
    block: u64,
    notes: &mut Vec<String>,
) -> Result<Option<(u64, u64, u64)>, Refusal> {
    let a = &job.access;
    if !a.zonemode_strided {
        if a.zonesize + a.zonerange + a.zoneskip > 0 {
            notes.push(
                "zonesize, zonerange and zoneskip have no effect without zonemode=strided (fio's default zonemode is none)"
                    .into(),
            );
        }
        return Ok(None);
    }
    if a.zonesize == 0 {
        return Err((
            "zonesize",
            "must be given with zonemode=strided, as fio requires".into(),
        ));
    }
    if job.nrfiles > 1 {
        notes.push("zonemode=strided has no effect with several files, as in fio".into());
        return Ok(None);
    }
    if job.seq_add != 0 || job.seq_nr > 1 {
        return Err((
            "zonemode",
            "strided zones with rw=...:N are not supported".into(),
        ));
    }
    let range = if a.zonerange == 0 {
        a.zonesize
    } else {
        a.zonerange
    };
    for (key, v) in [
        ("zonesize", a.zonesize),
        ("zonerange", range),
        ("zoneskip", a.zoneskip),
    ] {
        if v % block != 0 {
            return Err((
                key,
                format!(
                    "{v} bytes is not a multiple of the block size {block}: iolab moves whole blocks"
                ),
            ));
        }
    }
    notes.push(format!(
        "zonemode=strided: zones of {range} bytes from the start of each clone's share of the file (fio's from the start of the file), {} moved in each, {} skipped after each",
        a.zonesize, a.zoneskip
    ));
    Ok(Some((range, a.zonesize, a.zoneskip)))
}

/// The backend and queue depth an engine runs on.
pub(super) fn engine_of(job: &FioJob, notes: &mut Vec<String>) -> (BackendKind, u32) {
    match job.engine {
        Engine::Psync | Engine::Sync => {
            if job.iodepth > 1 {
                notes.push(format!(
                    "iodepth={} has no effect with the {} engine: one I/O at a time per job, as in fio",
                    job.iodepth,
                    job.engine.fio_name()
                ));
            }
            if job.engine == Engine::Sync {
                (BackendKind::Sync, 1)
            } else {
                (BackendKind::Psync, 1)
            }
        }
        Engine::IoUring => (BackendKind::Uring, job.iodepth),
        Engine::Libaio => {
            notes.push("ioengine=libaio runs on io_uring (the same queue depth in flight)".into());
            (BackendKind::Uring, job.iodepth)
        }
        Engine::Null => (BackendKind::Null, job.iodepth),
    }
}

/// Where the job runs, and whether it is one file its clones share (`filename`).
pub(super) fn target_of(
    job: &FioJob,
    notes: &mut Vec<String>,
) -> Result<(TargetSpec, bool), Refusal> {
    let mut target = TargetSpec::default();
    if job.directory.as_deref().is_some_and(|d| d.contains(':')) {
        return Err((
            "directory",
            "several directories (a:b) are not supported".into(),
        ));
    }
    let Some(f) = &job.filename else {
        target.dir = Some(PathBuf::from(job.directory.as_deref().unwrap_or(".")));
        return Ok((target, false));
    };
    if f.contains(':') {
        return Err(("filename", "several files (a:b) are not supported".into()));
    }
    if job.nrfiles > 1 {
        return Err((
            "nrfiles",
            format!(
                "{} files with one filename are not supported: leave filename out to have fio's {} files per job in the directory",
                job.nrfiles, job.nrfiles
            ),
        ));
    }
    target.device = Some(match &job.directory {
        Some(d) if !f.starts_with('/') => PathBuf::from(d).join(f),
        _ => PathBuf::from(f),
    });
    // With offset_increment each clone has its own region in fio too.
    if job.numjobs > 1 && job.offset_increment == FioOffset::Bytes(0) {
        notes.push(format!(
            "the {} jobs share {f} as fio's would, but each works on its own segment of it (fio's each cover all of it)",
            job.numjobs
        ));
    }
    Ok((target, true))
}

/// Bytes per clone (None: the file's or device's size), checked against the offset.
pub(super) fn size_of(job: &FioJob, shared: bool, block: u64) -> Result<Option<u64>, Refusal> {
    let files = u64::from(job.nrfiles.max(1));
    let size = match (job.size, job.filesize) {
        (Some(s), Some(f)) if s != f.saturating_mul(files) => {
            return Err((
                "filesize",
                format!(
                    "an I/O size ({s}) other than the files' size ({files} x {f}) is not supported: give size or filesize"
                ),
            ));
        }
        (s, f) => s.or(f.map(|f| f.saturating_mul(files))),
    };
    if let Some(p) = job.size_percent
        && !shared
    {
        return Err((
            "size",
            format!(
                "{p}% is a share of an existing file or device: give filename= (new files in a directory have no size yet)"
            ),
        ));
    }
    if size.is_none() && !shared {
        return Err((
            "size",
            "is needed for files in a directory (fio refuses a job without it too)".into(),
        ));
    }
    if let FioOffset::Bytes(b) = job.offset
        && !b.is_multiple_of(block)
    {
        return Err((
            "offset",
            format!(
                "{b} is not a multiple of the block size {block}: iolab moves whole blocks from the offset on"
            ),
        ));
    }
    Ok(size)
}
