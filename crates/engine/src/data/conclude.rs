//! After a data workload's timed phase: [`ReadyJob::conclude`] records which files now
//! hold complete data (so later reads reuse them) and, for `--verify` writes, runs the
//! read-back phase that checks every block written.

use iolab_comm::Comm;
use iolab_core::result::{PhaseKind, PhaseResult};
use iolab_core::spec::{CacheMode, DataSpec, Layout, Placement, RandomKind, RwKind};

use super::{ReadyJob, params_of, run_workers};
use crate::assemble::{PhaseMeta, assemble};
use crate::clock::Clock;
use crate::error::EngineError;
use crate::layout::set_cache_state;
use crate::phase::Env;
use crate::plan::{DataPlan, DataTarget, PlanContext, plan_data};
use crate::target::{PreparedTarget, agree};
use crate::workdir::{FileInfo, VerifyInfo};

impl ReadyJob<'_> {
    /// What follows the timed phase, in which each worker (by global index) completed
    /// `completed` I/Os and all ranks together had `errors`: the files' records and the
    /// verify phase, if one runs. Collective.
    pub(crate) fn conclude<C: Clock>(
        &self,
        env: &Env<'_>,
        clock: &C,
        completed: &[u64],
        errors: u64,
        interrupted: bool,
    ) -> Result<Option<PhaseResult>, EngineError> {
        // Files with a hole before the workers' region, or filled in turns with others,
        // hold no prefix of data a later read could reuse: no record for them.
        if self.opts.fio.start_offset.get() == 0
            && self.opts.fio.offset_increment.get() == 0
            && self.opts.fio.files_per_worker <= 1
        {
            record_complete_files(env.comm, &self.plan, self.target, completed, errors)?;
        }
        // An image iolab has written (its layout included) is known as iolab's, as it is
        // now; never before anything was written.
        if self.spec.writes_target() && !self.opts.fio.verify_existing {
            self.target.mark_written();
        }
        let spec = &self.spec;
        if spec.verify
            && spec.rw.writes()
            && !spec.rw.is_mixed()
            && !self.opts.no_verify_pass
            && !interrupted
            && errors == 0
        {
            return verify_pass(env, clock, self, completed).map(Some);
        }
        Ok(None)
    }
}

/// After a write phase, records which files now hold complete data so later reads can
/// reuse them.
fn record_complete_files(
    comm: &dyn Comm,
    plan: &DataPlan,
    target: &PreparedTarget,
    completed: &[u64],
    errors: u64,
) -> Result<(), EngineError> {
    // An image file's record is an attribute valid while no one writes it again (a
    // write since, a trim included, voids it); a work directory's files have sidecars.
    let image = matches!(target, PreparedTarget::Device { check, writable: true } if !check.is_block_device);
    let workdir = target.workdir();
    if workdir.is_none() && !image {
        return Ok(());
    }
    let spec = &plan.spec;
    if spec.rw.trims() && !spec.rw.writes() {
        // Trimmed files hold holes now, not the data a later read could reuse.
        if let Some(w) = workdir {
            for f in &plan.owned_files {
                w.clear_file_info(&f.path);
            }
        }
        return Ok(());
    }
    if !spec.rw.writes() || spec.rw.is_mixed() || errors > 0 {
        return Ok(());
    }
    let verify = VerifyInfo::of(spec);
    let shares =
        crate::plan::shares(spec, &target.data_target(), plan.total_workers).unwrap_or_default();
    let result = (|| {
        for (i, f) in plan.owned_files.iter().enumerate() {
            let global = (comm.rank() * plan.spec.threads) as usize + i;
            let size = written_prefix(spec, plan, f.size, global, completed, &shares);
            let info = FileInfo { size, verify };
            match workdir {
                Some(w) if size > 0 => w.set_file_info(&f.path, &info)?,
                None if size > 0 => iolab_backend::device::record_image(
                    &f.path,
                    &serde_json::to_string(&info).unwrap_or_default(),
                ),
                _ => {}
            }
        }
        Ok(())
    })();
    agree(comm, result)
}

/// How many bytes from the start of an owned file hold data after a write phase that
/// completed `completed` blocks per worker: sequential writes (time-based or cut short
/// by a stonewall) fill a prefix; a random phase fills it only if every block was
/// written (full coverage, share done).
fn written_prefix(
    spec: &DataSpec,
    plan: &DataPlan,
    file_size: u64,
    global: usize,
    completed: &[u64],
    shares: &[u64],
) -> u64 {
    let bs = plan.block_size;
    let all_done =
        shares.len() == completed.len() && completed.iter().zip(shares).all(|(c, s)| c >= s);
    if spec.rw.is_random() {
        let full = spec.random == RandomKind::FullCoverage && all_done;
        return if full { file_size } else { 0 };
    }
    match (spec.layout, spec.placement) {
        (Layout::FilePerThread, _) => {
            (completed.get(global).copied().unwrap_or(0) * bs).min(file_size)
        }
        // Interleaved blocks: every worker wrote its first `min` blocks.
        (Layout::Shared, Placement::Strided) => {
            let min = completed.iter().copied().min().unwrap_or(0);
            (min * plan.total_workers as u64 * bs).min(file_size)
        }
        // Contiguous regions: only a file every worker finished is a prefix.
        (Layout::Shared, Placement::Segmented) => {
            if all_done {
                file_size
            } else {
                0
            }
        }
    }
}

fn verify_pass<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    job: &ReadyJob<'_>,
    completed: &[u64],
) -> Result<PhaseResult, EngineError> {
    let (spec, target, plan, alignment, opts) = (
        &job.spec,
        &job.data_target,
        &job.plan,
        job.alignment,
        job.opts,
    );
    let comm = env.comm;
    let mut read = spec.clone();
    read.rw = if spec.rw.is_random() {
        RwKind::Randread
    } else {
        RwKind::Read
    };
    read.runtime = None;
    read.stonewall = None;
    read.wear_out = false;
    read.fsync_at_end = false;
    read.fsync_every = None;
    read.rate_iops = None;
    read.read_shift = Some(0);
    read.cache = CacheMode::Cold;
    let ctx = PlanContext {
        rank: comm.rank(),
        ranks: comm.size(),
        read_shift: 0,
        ..PlanContext::default()
    };
    let mut rplan = plan_data(&read, target, &ctx)?;
    // The same blocks as the write: same shares, and writes that looped or were cut
    // short are replayed by count with the same seeds.
    rplan.workers = plan.workers.clone();
    rplan.files = plan.files.clone();
    let warnings = if *target == DataTarget::Null {
        Vec::new()
    } else {
        agree(comm, set_cache_state(&rplan.files, &read))?
    };
    let counts: Vec<u64> = rplan
        .workers
        .iter()
        .map(|w| completed.get(w.global as usize).copied().unwrap_or(0))
        .collect();
    let run = run_workers(env, clock, "verify", &rplan, alignment, counts)?;
    let mut params = params_of(&read, comm.size());
    params.extend(opts.params.clone());
    Ok(assemble(
        PhaseMeta {
            name: "verify".into(),
            kind: Some(PhaseKind::Data),
            params,
            repetition: opts.repetition,
            spec: serde_json::to_value(&read).unwrap_or_default(),
            warnings,
        },
        &run,
    ))
}
