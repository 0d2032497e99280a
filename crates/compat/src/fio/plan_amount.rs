//! How much a fio job moves apart from its region's size: fio's `io_size` (`io_limit`),
//! as fio 3.33's backend.c runs it (`keep_running`, `io_bytes_exceeded`): passes over
//! the region, the last one cut short.

use iolab_core::spec::DataSpec;

use super::job::FioJob;
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
    plan.ramp = None;
    plan.io_size = None;
    plan.number_ios = Some(0);
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
    pub fn passes(&self, spec: &DataSpec, region: u64) -> (u32, Option<u64>) {
        let Some(io) = self.io_size else {
            return (self.loops, None);
        };
        let bs = spec.unit().max(1);
        let region = region / bs * bs;
        let loops = u64::from(self.loops.max(1));
        // Issuing stops at the first I/O that reaches the limit.
        let limit = io.saturating_mul(loops).div_ceil(bs).saturating_mul(bs);
        let (mut issued, mut passes, mut left) = (0u64, 0u32, loops);
        loop {
            if left > 0 {
                left -= 1;
            } else if issued >= io || io - issued < bs {
                break;
            }
            let n = region.min(limit.saturating_sub(issued));
            if n == 0 {
                if left == 0 {
                    break;
                }
                continue;
            }
            issued += n;
            passes += 1;
        }
        (passes.max(1), Some(issued / bs))
    }
}
