//! A job's `filename` that does not exist yet is made as fio makes it, before its phase
//! runs ([`make_missing`]): created, preallocated and, when a job of the phase reads it,
//! laid out in full; marked as iolab's own image, so a later job of the same job file
//! may write it (fio's ssd-test.fio). What iolab made is removed at the end of the run
//! unless kept ([`remove_made`]), and only while no one else has written it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use iolab_comm::CommExt;
use iolab_compat::fio::{FioError, FioOffset, FioPlan};
use iolab_engine::{EngineError, NewImage, create_image, is_missing, remove_image};

use super::{FioRunError, Run};

/// Makes the missing files the jobs (plan indices) of one phase name; adds the paths
/// this rank made to `made`.
pub(super) fn make_missing(
    run: &Run<'_>,
    jobs: &[usize],
    made: &Mutex<Vec<PathBuf>>,
) -> Result<(), FioRunError> {
    let mut paths: Vec<PathBuf> = Vec::new();
    for &i in jobs {
        if let Some(d) = &run.plans[i].target.device
            && !paths.contains(d)
        {
            paths.push(d.clone());
        }
    }
    for path in paths {
        let users: Vec<&FioPlan> = jobs
            .iter()
            .map(|&i| &run.plans[i])
            .filter(|p| p.target.device.as_ref() == Some(&path))
            .collect();
        // Decided alike on every rank: a path missing on rank 0's host.
        let here = run.is_root() && is_missing(&path);
        let missing = run.comm.broadcast(0, &here).unwrap_or(here);
        if missing {
            make_one(run, &path, &users, made)?;
        }
    }
    Ok(())
}

/// Makes `path`, which does not exist, for the jobs that name it (`users`).
fn make_one(
    run: &Run<'_>,
    path: &Path,
    users: &[&FioPlan],
    made: &Mutex<Vec<PathBuf>>,
) -> Result<(), FioRunError> {
    // verify_only checks what an earlier run wrote: a missing file has nothing.
    if users.iter().any(|p| p.settings.verify_existing) {
        return Err(FioRunError::VerifyOnly(EngineError::NothingToVerify {
            path: path.to_path_buf(),
            what: "does not exist".into(),
        }));
    }
    // allow_file_create=0: a missing file is an error, never made (fio fails the job).
    if let Some(p) = users.iter().find(|p| p.job.files.no_file_create) {
        return Err(p.job.refusal(
            "allow_file_create",
            format!(
                "0: {} does not exist and may not be made (fio fails the job with ENOENT; nothing was run)",
                path.display()
            ),
        )
        .into());
    }
    let mut image = NewImage {
        size: 0,
        lay_out: false,
        preallocate: false,
    };
    for p in users {
        image.size = image.size.max(needed(p, path)?);
        image.lay_out |= p.spec.rw.reads() || p.spec.verify || p.job.files.overwrite;
        image.preallocate |= p.spec.preallocate;
    }
    if create_image(run.comm, path, image, run.interrupt)? {
        made.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(path.to_path_buf());
    }
    if run.is_root() {
        let how = if image.lay_out {
            "laid out in full for reading"
        } else {
            "preallocated for writing"
        };
        (run.hooks.say)(&format!(
            "[{}] {} did not exist: made it ({} bytes, {how}) as fio does; it is iolab's own image from now on",
            users[0].job.name,
            path.display(),
            image.size
        ));
    }
    Ok(())
}

/// The bytes job `p` needs in a file it creates: its offset and every clone's size
/// (iolab's clones each work on their own segment of a shared file, or each from its
/// own start with offset_increment).
pub(super) fn needed(p: &FioPlan, path: &Path) -> Result<u64, FioError> {
    if let Some(pct) = p.job.size_percent {
        return Err(p.job.refusal(
            "size",
            format!(
                "{pct}% is a share of {}, which does not exist: give a size in bytes so iolab can create it as fio does",
                path.display()
            ),
        ));
    }
    let Some(total) = p.spec.total_size else {
        return Err(p.job.refusal(
            "size",
            format!(
                "is needed to create {}, which does not exist (fio needs it too)",
                path.display()
            ),
        ));
    };
    let offset = match p.offset {
        FioOffset::Bytes(b) => b,
        // A percentage of a file that does not exist yet is 0, as for fio's new files.
        FioOffset::Percent(_) => 0,
    };
    // With offset_increment the last clone's region starts (clones - 1) increments on.
    let clones = u64::from(p.spec.threads.max(1));
    let last = match p.offset_increment {
        FioOffset::Bytes(b) => b.saturating_mul(clones - 1),
        FioOffset::Percent(_) => 0,
    };
    Ok(offset + total.get().max(last.saturating_add(total.get() / clones)))
}

/// Removes the files this rank made, unless they are kept or someone else wrote them
/// since iolab did; says what it left.
pub(super) fn remove_made(run: &Run<'_>, made: &Mutex<Vec<PathBuf>>) {
    let made = made.lock().unwrap_or_else(|p| p.into_inner());
    for path in made.iter() {
        if run.keep {
            (run.hooks.say)(&format!("kept {} (iolab's image)", path.display()));
        } else if !remove_image(path) && path.exists() {
            (run.hooks.say)(&format!(
                "left {}: it changed since iolab wrote it, so it is not removed",
                path.display()
            ));
        }
    }
}
