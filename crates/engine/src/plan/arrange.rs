//! Where every worker's blocks live in the files of a data plan: the end of the regions
//! in a shared file or device (fio's offset_increment included), and each worker's files,
//! offsets and shares.

use std::path::PathBuf;

use iolab_core::SpecError;
use iolab_core::rng::mix;
use iolab_core::spec::{DataSpec, Placement};
use iolab_core::units::ByteCount;

use super::{BlockOwners, DataTarget, FilePlan, PlanContext, WorkerPlan};

/// The end of the workers' regions in a shared file or device: the offset and every
/// share one after another, or with fio's offset_increment each worker's share at its
/// own start, which must be a multiple of the block size and, in a shared file, leave
/// the regions apart.
pub(super) fn placement_end(
    spec: &DataSpec,
    ctx: &PlanContext,
    blocks: &[u64],
    shared: bool,
    total_blocks: u64,
) -> Result<u64, SpecError> {
    let bs = spec.unit();
    let inc = ctx.offset_increment;
    if inc == 0 {
        return Ok(ctx.start_offset + total_blocks * bs);
    }
    let bad = |m: String| SpecError::new("offset_increment", m);
    if !inc.is_multiple_of(bs) {
        return Err(bad(format!(
            "{inc} is not a multiple of the block size {}",
            spec.block_size
        )));
    }
    if shared && spec.placement == Placement::Strided {
        return Err(bad(
            "needs regions, not strided blocks, in a shared file".into()
        ));
    }
    if shared && let Some(big) = blocks.iter().map(|b| b * bs).find(|b| *b > inc) {
        return Err(bad(format!(
            "{} between the workers' starts is less than a worker's share ({}): their regions of the shared file would overlap",
            ByteCount(inc),
            ByteCount(big)
        )));
    }
    blocks
        .iter()
        .enumerate()
        .try_fold(0u64, |end, (w, b)| {
            (w as u64)
                .checked_mul(inc)
                .and_then(|s| s.checked_add(b * bs))
                .and_then(|e| e.checked_add(ctx.start_offset))
                .map(|e| end.max(e))
        })
        .ok_or_else(|| bad("places the workers' regions past the largest file size".into()))
}

/// Where every worker's blocks live: the inputs of [`plan_data`] once shares are known.
pub(super) struct Arrangement<'a> {
    pub(super) spec: &'a DataSpec,
    pub(super) target: &'a DataTarget,
    pub(super) ctx: &'a PlanContext,
    pub(super) blocks: &'a [u64],
    /// The first block of each worker's share in a shared file.
    pub(super) prefix: Vec<u64>,
    /// Where the workers' regions end in a shared file (its size).
    pub(super) end: u64,
    pub(super) shared: bool,
    pub(super) files_per_worker: u32,
}

impl Arrangement<'_> {
    pub(super) fn path(&self, name: String) -> PathBuf {
        match self.target {
            DataTarget::Dir(dir) => dir.join(name),
            DataTarget::Device { path, .. } => path.clone(),
            DataTarget::Null => PathBuf::from(name),
        }
    }

    pub(super) fn strided(&self) -> bool {
        self.shared && self.spec.placement == Placement::Strided
    }

    /// Where worker `w`'s region starts after the offset: `w * offset_increment`, or
    /// in a shared file without one right after the regions before it.
    pub(super) fn region_start(&self, w: usize) -> u64 {
        let inc = self.ctx.offset_increment;
        if inc > 0 || !self.shared {
            w as u64 * inc
        } else {
            self.prefix[w] * self.spec.unit()
        }
    }

    /// The files worker `global` works on.
    pub(super) fn worker_files(&self, global: u32) -> Vec<FilePlan> {
        let bs = self.spec.unit();
        let offset = self.ctx.start_offset;
        if self.shared {
            let total_workers = self.blocks.len() as u64;
            return vec![FilePlan {
                path: self.path(self.ctx.names.shared()),
                id: 0,
                size: self.end,
                owners: if self.strided() {
                    BlockOwners::Strided {
                        workers: total_workers,
                    }
                } else {
                    BlockOwners::Segmented {
                        starts: (0..total_workers as usize)
                            .map(|w| self.region_start(w) / bs)
                            .collect(),
                    }
                },
            }];
        }
        let n = self.files_per_worker;
        let threads = self.spec.threads;
        (0..n)
            .map(|k| FilePlan {
                path: self.path(self.ctx.names.per_worker(global, threads, k, n)),
                // One file per worker: the worker's index (k is 0).
                id: global as u64 * n as u64 + k as u64,
                size: offset
                    + self.ctx.offset_increment * u64::from(global)
                    + self.blocks[global as usize] / n as u64 * bs,
                owners: BlockOwners::One(global as u64),
            })
            .collect()
    }

    /// This rank's files and workers.
    pub(super) fn workers(&self) -> (Vec<FilePlan>, Vec<WorkerPlan>) {
        let ctx = self.ctx;
        let ranks = ctx.ranks.max(1);
        let threads = self.spec.threads;
        let total_workers = ranks * threads;
        let bs = self.spec.unit();
        let shift = if self.spec.rw.reads() {
            ctx.read_shift % ranks
        } else {
            0
        };
        let owner_rank = match ctx.read_from {
            Some(from) if self.spec.rw.reads() => from % ranks,
            _ => (ctx.rank + shift) % ranks,
        };
        let mut files: Vec<FilePlan> = Vec::new();
        let mut workers = Vec::new();
        for thread in 0..threads {
            let global = ctx.rank * threads + thread;
            let owner = owner_rank * threads + thread;
            let fps = self.worker_files(owner);
            let count = fps.len() as u32;
            let file = match files.iter().position(|f| f.path == fps[0].path) {
                Some(i) => i,
                None => {
                    files.extend(fps);
                    files.len() - count as usize
                }
            };
            let (base, stride) = if self.strided() {
                (owner as u64 * bs, total_workers as u64 * bs)
            } else {
                (self.region_start(owner as usize), bs)
            };
            let cpu = self
                .spec
                .cpus
                .as_ref()
                .map(|c| c.0[(thread as usize) % c.0.len()]);
            workers.push(WorkerPlan {
                thread,
                global,
                owner,
                file,
                files: count,
                base: ctx.start_offset + base,
                stride,
                blocks: self.blocks[owner as usize],
                seed: mix(&[self.spec.seed, owner as u64]),
                cpu,
            });
        }
        (files, workers)
    }
}
