//! A fio job as an iolab workload: [`plan_jobs`] turns resolved [`FioJob`]s into
//! [`FioPlan`]s (a [`DataSpec`] and where it runs), refusing what iolab would run
//! differently from fio, and saying in [`FioPlan::notes`] where it runs the same work
//! by another means (libaio on io_uring, fdatasync as fsync).

use std::path::PathBuf;

use iolab_core::pattern::VERIFY_MIN_BLOCK;
use iolab_core::spec::{BackendKind, CacheMode, DataSpec, Layout, RandomKind, RwKind, TargetSpec};
use iolab_core::units::{ByteCount, TimeSpan};

use super::error::FioError;
use super::job::{DEFAULT_FILENAME_FORMAT, Engine, FioJob, FioRw};

/// One job, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct FioPlan {
    pub job: FioJob,
    pub spec: DataSpec,
    pub target: TargetSpec,
    /// fio's reporting group (a new one at every stonewall or new_group).
    pub group: u32,
    /// Wait this long before starting (fio's startdelay).
    pub start_delay: Option<TimeSpan>,
    /// Where iolab runs the same work by other means, printed before the job runs.
    pub notes: Vec<String>,
}

/// Plans every job, in order. `seed` is used for jobs with `randrepeat=0` and no
/// `randseed` (fio seeds those from the clock).
pub fn plan_jobs(jobs: &[FioJob], seed: u64) -> Result<Vec<FioPlan>, FioError> {
    if jobs.is_empty() {
        return Err(FioError::at(
            "command line",
            "no job to run: give a job file or --name=NAME with its options",
        ));
    }
    let mut plans = Vec::with_capacity(jobs.len());
    let mut group = 0;
    for (i, job) in jobs.iter().enumerate() {
        if i > 0 {
            let prev = &jobs[i - 1].name;
            let waits = job.stonewall || job.wait_for.as_deref() == Some(prev.as_str());
            if !waits {
                return Err(FioError::option(
                    &job.at,
                    &job.name,
                    "stonewall",
                    format!(
                        "fio would run this job at the same time as [{prev}]; iolab runs one job at a time: add stonewall (or wait_for={prev}) to [{}]",
                        job.name
                    ),
                ));
            }
            if job.stonewall || job.new_group {
                group += 1;
            }
        }
        plans.push(plan_job(job, group, seed)?);
    }
    Ok(plans)
}

fn plan_job(job: &FioJob, group: u32, seed: u64) -> Result<FioPlan, FioError> {
    let refuse = |key: &str, m: String| FioError::option(&job.at, &job.name, key, m);
    let mut notes = Vec::new();
    if job.bs_read != job.bs_write && matches!(job.rw, FioRw::ReadWrite | FioRw::RandRw) {
        return Err(refuse(
            "bs",
            format!(
                "different read and write block sizes ({} and {}) are not supported in a mixed job",
                job.bs_read, job.bs_write
            ),
        ));
    }
    if job.nrfiles > 1 {
        return Err(refuse(
            "nrfiles",
            format!(
                "{} files per job are not supported: iolab gives each job one file",
                job.nrfiles
            ),
        ));
    }
    if job.offset != 0 {
        return Err(refuse(
            "offset",
            "a start offset is not supported; drop offset=".into(),
        ));
    }
    if job.loops > 1 {
        return Err(refuse(
            "loops",
            "repeating a job is not supported; use a larger size or time_based".into(),
        ));
    }
    if job.ramp_time.is_some() {
        return Err(refuse(
            "ramp_time",
            "a ramp time is not supported: iolab measures from the first I/O; drop it (or make runtime longer)".into(),
        ));
    }
    if let Some(f) = &job.filename_format
        && f != DEFAULT_FILENAME_FORMAT
    {
        return Err(refuse(
            "filename_format",
            format!("only fio's default {DEFAULT_FILENAME_FORMAT} is supported, not {f}"),
        ));
    }
    let rw = match job.rw {
        FioRw::Read => RwKind::Read,
        FioRw::Write => RwKind::Write,
        FioRw::RandRead => RwKind::Randread,
        FioRw::RandWrite => RwKind::Randwrite,
        FioRw::ReadWrite => RwKind::Rw,
        FioRw::RandRw => RwKind::Randrw,
    };
    let block = if rw.writes() && !rw.reads() {
        job.bs_write
    } else {
        job.bs_read
    };
    let (backend, queue_depth) = match job.engine {
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
    };
    if job.fdatasync.is_some() && job.fsync.is_none() {
        notes.push("fdatasync is issued as fsync".into());
    }
    if job.verify.is_some() && block < VERIFY_MIN_BLOCK {
        return Err(refuse(
            "verify",
            format!("needs a block size of at least {VERIFY_MIN_BLOCK} bytes, not {block}"),
        ));
    }
    let mut target = TargetSpec::default();
    let shared = match &job.filename {
        Some(f) if f.contains(':') => {
            return Err(refuse(
                "filename",
                "several files (a:b) are not supported".into(),
            ));
        }
        Some(f) => {
            let path = match &job.directory {
                Some(d) if !f.starts_with('/') => PathBuf::from(d).join(f),
                _ => PathBuf::from(f),
            };
            target.device = Some(path);
            true
        }
        None => {
            target.dir = Some(PathBuf::from(job.directory.as_deref().unwrap_or(".")));
            false
        }
    };
    if shared && job.numjobs > 1 {
        notes.push(format!(
            "the {} jobs share {} as fio's would, but each works on its own segment of it (fio's each cover all of it)",
            job.numjobs,
            job.filename.as_deref().unwrap_or_default()
        ));
    }
    let size = job.size.or(job.filesize);
    if size.is_none() && !shared {
        return Err(refuse(
            "size",
            "is needed for files in a directory (fio refuses a job without it too)".into(),
        ));
    }
    let (runtime, stonewall) = match (job.runtime, job.time_based) {
        (Some(r), true) => (Some(r), None),
        (Some(r), false) => (None, Some(r)),
        (None, true) => {
            return Err(refuse("time_based", "needs a runtime".into()));
        }
        (None, false) => (None, None),
    };
    let spec = DataSpec {
        rw,
        rwmix_read: job.rwmix_read,
        block_size: ByteCount(block),
        threads: job.numjobs,
        queue_depth,
        backend,
        submit_batch: job.iodepth_batch_submit.clamp(1, queue_depth.max(1)),
        size: size.map(|s| ByteCount(if shared { s * job.numjobs as u64 } else { s })),
        runtime,
        stonewall,
        layout: if shared {
            Layout::Shared
        } else {
            Layout::FilePerThread
        },
        random: if job.norandommap {
            RandomKind::Uniform
        } else {
            RandomKind::FullCoverage
        },
        seed: match (job.randseed, job.randrepeat) {
            (Some(s), _) => s,
            (None, true) => iolab_core::spec::DEFAULT_SEED,
            (None, false) => seed,
        },
        direct: job.direct,
        sync: job.sync,
        fsync_at_end: job.end_fsync || job.fsync_on_close,
        fsync_every: job.fsync.or(job.fdatasync),
        cache: if job.invalidate {
            CacheMode::Cold
        } else {
            CacheMode::Keep
        },
        verify: job.verify.is_some(),
        ..DataSpec::default()
    };
    let spec = if shared {
        // A shared file's size is the whole file: every job's share of it.
        DataSpec {
            total_size: spec.size,
            size: None,
            ..spec
        }
    } else {
        spec
    };
    spec.validate()
        .map_err(|e| refuse(fio_key(&e.option), e.reason))?;
    Ok(FioPlan {
        job: job.clone(),
        spec,
        target,
        group,
        start_delay: job.startdelay,
        notes,
    })
}

/// fio's name for the iolab option a spec check names.
fn fio_key(option: &str) -> &str {
    match option {
        "--block-size" => "bs",
        "--threads" => "numjobs",
        "--queue-depth" => "iodepth",
        "--submit-batch" => "iodepth_batch_submit",
        "--size" | "--total-size" => "size",
        "--fsync-every" => "fsync",
        other => other.trim_start_matches("--"),
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
