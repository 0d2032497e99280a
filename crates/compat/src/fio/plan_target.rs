//! Where a fio job runs: the backend and queue depth of its engine, its directory or
//! shared file (`filename`), the bytes each clone moves, and fio's strided zones, each
//! refused in one line naming the option when iolab would run it differently; its
//! files' names (`filename_format`); and [`FioPlan::at_target`], the spec once the
//! target's size is known.

use std::path::PathBuf;

use iolab_core::spec::{BackendKind, DataSpec, TargetSpec};
use iolab_core::units::ByteCount;

use super::error::FioError;
use super::job::{Engine, FioJob, FioOffset};
use super::plan::{FioPlan, Refusal};

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
    // fio joins the directory in force when the filename was given, to an absolute
    // name too ("d" and "/x" make d//x, which is d/x).
    target.device = Some(match &job.filename_dir {
        Some(d) => PathBuf::from(d).join(f.trim_start_matches('/')),
        None => PathBuf::from(f),
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

impl FioPlan {
    /// The spec and start offset once the target is known: `device_size` is the size of
    /// the file or device `filename` names (None: new files in a directory, where a
    /// percentage offset is 0 as for a file fio creates). A device job without a size
    /// covers it from the offset to its end.
    /// The third value is the bytes between consecutive clones' starts (fio's
    /// offset_increment).
    pub fn at_target(&self, device_size: Option<u64>) -> Result<(DataSpec, u64, u64), FioError> {
        // Whole I/Os of one size, or whole units of drawn sizes.
        let block = self.spec.grain();
        let offset = self.offset.bytes(device_size.unwrap_or(0), block);
        let increment = self.increment(device_size, block)?;
        // The start of the last clone's region, where a share of the file is capped.
        let last = offset + increment * u64::from(self.spec.threads.max(1) - 1);
        let mut spec = self.spec.clone();
        if let (Some(size), Some(p)) = (device_size, self.job.size_percent) {
            // fio: N% of the file's size, no more than what lies after the offset, in
            // whole blocks (of the smaller size).
            let share = (u128::from(size) * u128::from(p) / 100) as u64;
            let unit = spec.unit().max(1);
            let bytes = share.min(size.saturating_sub(offset)) / unit * unit;
            if increment > 0 && share.min(size.saturating_sub(last)) / unit * unit != bytes {
                return Err(self.job.refusal(
                    "offset_increment",
                    format!(
                        "the last clone's {p}% from {last} passes the end of {} ({size} bytes): fio would give it less than the others, iolab gives every clone the same size",
                        self.job.filename.as_deref().unwrap_or_default()
                    ),
                ));
            }
            if bytes < spec.largest_io() {
                return Err(self.job.refusal(
                    "size",
                    format!(
                        "{p}% of {} ({size} bytes) after the offset {offset} is less than one block",
                        self.job.filename.as_deref().unwrap_or_default()
                    ),
                ));
            }
            // With offset_increment every clone moves the share in its own region.
            let clones = if increment > 0 {
                u64::from(spec.threads.max(1))
            } else {
                1
            };
            spec.total_size = Some(ByteCount(bytes * clones));
            spec.size = None;
            return Ok((spec, offset, increment));
        }
        if let Some(size) = device_size
            && spec.total_size.is_none()
            && spec.size.is_none()
            && offset > 0
        {
            if offset >= size {
                return Err(self.job.refusal(
                    "offset",
                    format!(
                        "{offset} is past the end of {} ({size} bytes)",
                        self.job.filename.as_deref().unwrap_or_default()
                    ),
                ));
            }
            spec.total_size = Some(ByteCount((size - offset) / block * block));
        }
        Ok((spec, offset, increment))
    }

    /// fio's offset_increment in bytes: a percentage is of the file's size (0 for new
    /// files in a directory, as for the files fio creates); it must be whole blocks,
    /// where fio would align each clone's start up to one.
    fn increment(&self, device_size: Option<u64>, block: u64) -> Result<u64, FioError> {
        let refuse = |m: String| self.job.refusal("offset_increment", m);
        let bytes = match self.offset_increment {
            FioOffset::Bytes(b) => b,
            FioOffset::Percent(p) => {
                (u128::from(device_size.unwrap_or(0)) * u128::from(p) / 100) as u64
            }
        };
        if !bytes.is_multiple_of(block) {
            let what = match self.offset_increment {
                FioOffset::Percent(p) => format!("{p}% ({bytes} bytes)"),
                FioOffset::Bytes(b) => b.to_string(),
            };
            return Err(refuse(format!(
                "{what} is not a multiple of the block size {block}: iolab moves whole blocks from each clone's start"
            )));
        }
        if bytes > 0
            && device_size.is_some()
            && self.job.size.is_none()
            && self.job.size_percent.is_none()
        {
            return Err(refuse(format!(
                "without size each clone would run to the end of {}, every one a different length: give size=",
                self.job.filename.as_deref().unwrap_or_default()
            )));
        }
        Ok(bytes)
    }
}

/// fio's filename_format as a name template for the engine: `$jobname` is the job's
/// name, `$jobnum` the clone's number, `$filenum` the file's. The name stays inside
/// iolab's work directory: no absolute path, no `..`.
pub fn file_name_template(format: &str, job: &str) -> Result<String, String> {
    if format.contains("$clientuid") {
        return Err("$clientuid (fio's client/server mode) is not supported".into());
    }
    let name = format
        .replace("$jobname", job)
        .replace("$jobnum", "{worker}")
        .replace("$filenum", "{file}");
    let escapes = name.starts_with('/')
        || name.is_empty()
        || name
            .split('/')
            .any(|c| c == ".." || c == "." || c.is_empty());
    if escapes {
        return Err(format!(
            "'{name}' is not a file name inside the directory: iolab keeps its files in DIR/iolab-work, so no absolute path, '..' or empty part"
        ));
    }
    Ok(name)
}

/// Whether two jobs in a directory name the same files.
pub(super) fn same_files(a: &FioPlan, b: &FioPlan) -> bool {
    a.target.device.is_none()
        && b.target.device.is_none()
        && a.target.dir == b.target.dir
        && a.file_names == b.file_names
}
