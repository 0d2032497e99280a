//! How much a fio job moves apart from its region's size: fio's `io_size` (`io_limit`),
//! as fio 3.33's backend.c runs it (`keep_running`, `io_bytes_exceeded`): passes over
//! the region, the last one cut short; and the jobs that move less than they say:
//! `create_only` (no I/O) and `verify_only` (the read-back alone, no writes).

use iolab_core::spec::{DataSpec, RwKind};

use super::error::FioError;
use super::job::{FioJob, FioOffset};
use super::plan::{FioPlan, Refusal};

/// fio's io_size for a job, refused where iolab cannot count it as fio does.
pub(super) fn io_size_of(
    job: &FioJob,
    spec: &DataSpec,
    notes: &mut Vec<String>,
) -> Result<Option<u64>, Refusal> {
    let Some(bytes) = job.io_size else {
        return Ok(None);
    };
    if job.time_based {
        notes.push(
            "io_size has no effect on a time-based job: it runs its runtime, as fio's does".into(),
        );
        return Ok(None);
    }
    // iolab counts I/Os where fio counts bytes: the same only with one size.
    if spec.has_size_mix() || spec.write_block_size.is_some() {
        return Err((
            "io_size",
            "with several block sizes (bs=R,W, bssplit, bsrange) is not supported: iolab counts the I/Os of one size".into(),
        ));
    }
    if spec.rw.trims() && spec.rw.writes() {
        return Err((
            "io_size",
            "with trimwrite is not supported (fio counts a trim and its write apart)".into(),
        ));
    }
    if job.number_ios.is_some() {
        return Err((
            "io_size",
            "with number_ios is not supported: give one of them".into(),
        ));
    }
    if job.verify_only {
        return Err((
            "io_size",
            "with verify_only is not supported: iolab checks a kept file's whole record".into(),
        ));
    }
    Ok(Some(bytes))
}

/// fio's create_only (filesetup.c: the job is done once its files are set up): the
/// files are made and laid out as for the job, and it issues no I/O, whatever its
/// runtime, ramp or verify; its report entry shows nothing done.
pub(super) fn create_only(plan: &mut FioPlan) {
    if !plan.job.files.create_only {
        return;
    }
    plan.spec.runtime = None;
    plan.spec.stonewall = None;
    plan.spec.steady_state = None;
    plan.settings.ramp = None;
    plan.io_size = None;
    plan.settings.number_ios = Some(0);
    plan.no_verify_pass = true;
    plan.notes.push(
        "create_only: the files are made and laid out as fio sets them up, and no I/O runs".into(),
    );
}

impl FioPlan {
    /// The passes each clone makes over its region of `region` bytes and the I/Os it
    /// issues in all (None: every pass whole), for `spec`'s block size: fio's loops
    /// with its io_size. fio runs `loops` passes, each until the region is done or
    /// `io_size × loops` bytes are issued since the start, then more passes while less
    /// than `io_size` is done (by a block at least).
    pub fn passes(&self, spec: &DataSpec, region: u64) -> Result<(u32, Option<u64>), FioError> {
        let Some(io) = self.io_size else {
            return Ok((self.settings.loops, None));
        };
        let bs = spec.unit().max(1);
        let region = region / bs * bs;
        if region == 0 {
            return Ok((1, Some(0)));
        }
        let loops = u64::from(self.settings.loops.max(1));
        // Issuing stops at the first I/O that reaches the limit.
        let limit = io.saturating_mul(loops).div_ceil(bs).saturating_mul(bs);
        let (mut issued, mut passes, mut left) = (0u64, 0u64, loops);
        loop {
            // Whole passes are counted at once (an io_size of many regions is billions of
            // passes): as many as the loops left, or the limit and io_size, allow.
            if limit - issued >= region {
                let whole = (limit - issued) / region;
                let k = if left > 0 {
                    let k = left.min(whole);
                    left -= k;
                    k
                } else if issued < io && io - issued >= bs {
                    whole.min((io - issued - bs) / region + 1)
                } else {
                    break;
                };
                issued += k * region;
                passes += k;
                continue;
            }
            if left > 0 {
                left -= 1;
            } else if issued >= io || io - issued < bs {
                break;
            }
            let n = limit - issued;
            if n == 0 {
                if left == 0 {
                    break;
                }
                // Nothing more can be issued: the loops left move nothing.
                left = 0;
                continue;
            }
            issued += n;
            passes += 1;
        }
        let passes = u32::try_from(passes.max(1)).map_err(|_| {
            self.job.refusal(
                "io_size",
                format!(
                    "{io} bytes over a region of {region} make {passes} passes, more than {}",
                    u32::MAX
                ),
            )
        })?;
        Ok((passes, Some(issued / bs)))
    }
}

/// fio's verify_only (backend.c `do_dry_run`): a write job's writes are not issued and
/// do_verify's read-back alone checks the blocks, here those an earlier `iolab fio` run
/// of the job wrote with verify and kept. Returns the direction the job runs in (a read
/// in the write's order) and whether it checks kept files only.
pub(super) fn verify_only_of(
    job: &FioJob,
    rw: RwKind,
    notes: &mut Vec<String>,
) -> Result<(RwKind, bool), Refusal> {
    if !job.verify_only {
        return Ok((rw, false));
    }
    let refused = |m: &str| Err(("verify_only", m.to_string()));
    if job.verify.is_none() || !job.do_verify {
        if !rw.writes() {
            notes.push(
                "verify_only has no effect on a job that reads without verify, as in fio".into(),
            );
            return Ok((rw, false));
        }
        return refused(
            "needs verify= (and do_verify=1): without them fio skips the job's writes and checks nothing",
        );
    }
    if job.time_based {
        return refused(
            "does not run with time_based, as fio's documentation says: a time-based write leaves no fixed set of blocks to check",
        );
    }
    if rw.trims() || rw.is_mixed() {
        return refused(
            "is supported for a job that only writes or only reads: iolab keeps no record of the blocks a mixed or trim job wrote",
        );
    }
    if job.nrfiles > 1
        || !matches!(job.offset, FioOffset::Bytes(0))
        || !matches!(job.offset_increment, FioOffset::Bytes(0))
    {
        return refused(
            "with nrfiles, offset or offset_increment is not supported: iolab records a file's verify blocks only when one clone writes it from its start",
        );
    }
    notes.push(
        "verify_only: nothing is written or laid out; the blocks an earlier iolab fio run of this job wrote with verify (its files kept with --keep, or its filename) are read back and checked, and the files stay; fio also counts the writes it skips in its write figures, with a runtime of 0, where iolab shows none"
            .into(),
    );
    let read = if rw.is_random() {
        RwKind::Randread
    } else {
        RwKind::Read
    };
    Ok((read, true))
}
