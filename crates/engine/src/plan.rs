//! From intent to this rank's work: [`plan_data`] turns a [`DataSpec`], a [`DataTarget`]
//! and the topology into a [`DataPlan`]: the files this rank opens ([`FilePlan`]) and, per
//! worker, which blocks of which file it owns ([`WorkerPlan`]). Shares add up to the
//! total exactly; a read can be shifted to data another rank wrote (cache avoidance) or
//! limited to what a stonewalled write got done.

use std::path::PathBuf;

use iolab_core::SpecError;
use iolab_core::rng::mix;
use iolab_core::spec::{DataSpec, Layout, Placement};
use iolab_core::units::{ByteCount, GIB};

/// Where data goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataTarget {
    /// Files in this work directory.
    Dir(PathBuf),
    /// A block device (or image file) of this size, used directly.
    Device { path: PathBuf, size: u64 },
    /// Nowhere: the null backend.
    Null,
}

/// One file this rank opens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePlan {
    pub path: PathBuf,
    /// Identifies the file in verify blocks: the owning worker for file-per-thread, 0 for
    /// a shared file or device.
    pub id: u64,
    /// Bytes the workload covers in it.
    pub size: u64,
    /// Whose data each block is (IOR's pattern holds the writer's rank).
    pub owners: BlockOwners,
}

/// Which worker's data a block of a file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockOwners {
    /// All of it: a file per worker.
    One(u64),
    /// Block k belongs to worker k mod `workers` (IOR's -b = -t shared file).
    Strided { workers: u64 },
    /// Worker w owns the blocks from `starts[w]` on (a shared file in regions).
    Segmented { starts: Vec<u64> },
}

impl FilePlan {
    /// The worker whose data the block at `offset` is, with blocks of `block_size`.
    pub fn owner_at(&self, offset: u64, block_size: u64) -> u64 {
        let block = offset / block_size.max(1);
        match &self.owners {
            BlockOwners::One(w) => *w,
            BlockOwners::Strided { workers } => block % (*workers).max(1),
            BlockOwners::Segmented { starts } => {
                starts.partition_point(|s| *s <= block).saturating_sub(1) as u64
            }
        }
    }
}

/// One worker's share: block b of it lives at `base + b * stride` in `files[file]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerPlan {
    pub thread: u32,
    /// Index of this worker among all workers of all ranks.
    pub global: u32,
    /// The worker whose data this one works on (itself unless reads are shifted).
    pub owner: u32,
    pub file: usize,
    pub base: u64,
    pub stride: u64,
    /// Blocks in the share.
    pub blocks: u64,
    pub seed: u64,
    pub cpu: Option<usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DataPlan {
    pub spec: DataSpec,
    pub rank: u32,
    pub ranks: u32,
    pub block_size: u64,
    pub total_workers: u32,
    pub files: Vec<FilePlan>,
    pub workers: Vec<WorkerPlan>,
    /// Files this rank writes in full before a read (it owns their data).
    pub owned_files: Vec<FilePlan>,
    /// Bytes in all shares of all ranks together.
    pub total_bytes: u64,
    /// Time-based: workers loop over their share until the runtime is over.
    pub looping: bool,
}

/// Placement inputs that do not come from the spec.
#[derive(Clone, Debug, Default)]
pub struct PlanContext {
    pub rank: u32,
    pub ranks: u32,
    /// Shift reads by this many ranks (0: each rank reads its own data).
    pub read_shift: u32,
    /// Blocks each worker (by global index) completed in an earlier stonewalled phase:
    /// this phase then works on exactly those.
    pub written_blocks: Option<Vec<u64>>,
    /// What the files are called.
    pub names: FileNames,
    /// The rank whose data this rank reads (IOR -Z), instead of `read_shift`.
    pub read_from: Option<u32>,
}

/// The names of data files in the work directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FileNames {
    /// iolab's: `data.r<rank>.t<thread>` per worker, `data.shared` for one file.
    #[default]
    Iolab,
    /// IOR's for `-o BASE`: `BASE.%08d` (the worker's global index, IOR's rank) with -F,
    /// `BASE` for a shared file. BASE is relative to the work directory and may name a
    /// subdirectory (`ior-easy/ior_file_easy`).
    Ior(String),
}

impl FileNames {
    fn shared(&self) -> String {
        match self {
            FileNames::Iolab => "data.shared".into(),
            FileNames::Ior(base) => base.clone(),
        }
    }

    fn per_worker(&self, global: u32, threads: u32) -> String {
        match self {
            FileNames::Iolab => format!("data.r{}.t{}", global / threads, global % threads),
            FileNames::Ior(base) => format!("{base}.{global:08}"),
        }
    }
}

/// Per-worker shares in blocks, adding up to the total exactly.
pub fn shares(spec: &DataSpec, target: &DataTarget, workers: u32) -> Result<Vec<u64>, SpecError> {
    let bs = spec.block_size.get();
    let w = workers as u64;
    let per = |bytes: u64| bytes / bs;
    let blocks: Vec<u64> = if let Some(size) = spec.size {
        vec![per(size.get()); workers as usize]
    } else {
        let total = match (spec.total_size, target) {
            (Some(t), _) => t.get(),
            (None, DataTarget::Device { size, .. }) => *size,
            (None, _) => GIB * w,
        };
        let total_blocks = per(total);
        if total_blocks < w {
            return Err(SpecError::new(
                if spec.total_size.is_some() {
                    "--total-size"
                } else {
                    "--size"
                },
                format!(
                    "{} holds {total_blocks} blocks of {} but {workers} workers need at least one each",
                    ByteCount(total),
                    spec.block_size
                ),
            ));
        }
        (0..w)
            .map(|i| total_blocks / w + u64::from(i < total_blocks % w))
            .collect()
    };
    Ok(blocks)
}

pub fn plan_data(
    spec: &DataSpec,
    target: &DataTarget,
    ctx: &PlanContext,
) -> Result<DataPlan, SpecError> {
    spec.validate()?;
    let ranks = ctx.ranks.max(1);
    let threads = spec.threads;
    let total_workers = ranks * threads;
    let bs = spec.block_size.get();
    let mut blocks = shares(spec, target, total_workers)?;
    if let Some(written) = &ctx.written_blocks {
        if written.len() != blocks.len() {
            return Err(SpecError::new(
                "--threads",
                format!(
                    "this phase has {} workers but the phase whose data it reads had {}; use the same --threads and ranks",
                    blocks.len(),
                    written.len()
                ),
            ));
        }
        blocks = written.clone();
    }
    // Sizes add up across workers: more than 16 EiB in all does not fit in any count.
    let total_blocks = blocks
        .iter()
        .try_fold(0u64, |a, b| a.checked_add(*b))
        .filter(|t| t.checked_mul(bs).is_some())
        .ok_or_else(|| {
            SpecError::new(
                if spec.size.is_some() { "--size" } else { "--total-size" },
                format!(
                    "{} workers together would move more than {}, the most any file system or device holds",
                    total_workers,
                    ByteCount(u64::MAX).human()
                ),
            )
        })?;
    if let DataTarget::Device { path, size } = target
        && total_blocks * bs > *size
    {
        return Err(SpecError::new(
            "--size",
            format!(
                "the workload needs {} but {} holds {}",
                ByteCount(total_blocks * bs).human(),
                path.display(),
                ByteCount(*size).human()
            ),
        ));
    }
    let shift = if spec.rw.reads() {
        ctx.read_shift % ranks
    } else {
        0
    };
    let owner_rank = match ctx.read_from {
        Some(from) if spec.rw.reads() => from % ranks,
        _ => (ctx.rank + shift) % ranks,
    };

    let file_path = |name: String| -> PathBuf {
        match target {
            DataTarget::Dir(dir) => dir.join(name),
            DataTarget::Device { path, .. } => path.clone(),
            DataTarget::Null => PathBuf::from(name),
        }
    };
    let shared =
        matches!(spec.layout, Layout::Shared) || matches!(target, DataTarget::Device { .. });
    let prefix: Vec<u64> = blocks
        .iter()
        .scan(0u64, |acc, b| {
            let start = *acc;
            *acc += b;
            Some(start)
        })
        .collect();
    let strided = shared && spec.placement == Placement::Strided;
    let worker_file = |global: u32| -> FilePlan {
        if shared {
            FilePlan {
                path: file_path(ctx.names.shared()),
                id: 0,
                size: total_blocks * bs,
                owners: if strided {
                    BlockOwners::Strided {
                        workers: total_workers as u64,
                    }
                } else {
                    BlockOwners::Segmented {
                        starts: prefix.clone(),
                    }
                },
            }
        } else {
            FilePlan {
                path: file_path(ctx.names.per_worker(global, threads)),
                id: global as u64,
                size: blocks[global as usize] * bs,
                owners: BlockOwners::One(global as u64),
            }
        }
    };

    let mut files: Vec<FilePlan> = Vec::new();
    let mut workers = Vec::new();
    for thread in 0..threads {
        let global = ctx.rank * threads + thread;
        let owner = owner_rank * threads + thread;
        let fp = worker_file(owner);
        let file = match files.iter().position(|f| f.path == fp.path) {
            Some(i) => i,
            None => {
                files.push(fp);
                files.len() - 1
            }
        };
        let (base, stride) = if strided {
            (owner as u64 * bs, total_workers as u64 * bs)
        } else if shared {
            (prefix[owner as usize] * bs, bs)
        } else {
            (0, bs)
        };
        let cpu = spec
            .cpus
            .as_ref()
            .map(|c| c.0[(thread as usize) % c.0.len()]);
        workers.push(WorkerPlan {
            thread,
            global,
            owner,
            file,
            base,
            stride,
            blocks: blocks[owner as usize],
            seed: mix(&[spec.seed, owner as u64]),
            cpu,
        });
    }
    let owned_files = if shared {
        // One rank lays out a shared file (or prepares a device) for everyone.
        if ctx.rank == 0 {
            vec![worker_file(0)]
        } else {
            Vec::new()
        }
    } else {
        (0..threads)
            .map(|t| worker_file(ctx.rank * threads + t))
            .collect()
    };
    Ok(DataPlan {
        spec: spec.clone(),
        rank: ctx.rank,
        ranks,
        block_size: bs,
        total_workers,
        files,
        workers,
        owned_files,
        total_bytes: total_blocks * bs,
        looping: spec.runtime.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::spec::RwKind;
    use proptest::prelude::{prop_assert, prop_assert_eq, proptest};

    fn spec(threads: u32) -> DataSpec {
        DataSpec {
            threads,
            block_size: ByteCount::kib(4),
            size: Some(ByteCount::kib(64)),
            ..DataSpec::default()
        }
    }

    fn ctx(rank: u32, ranks: u32) -> PlanContext {
        PlanContext {
            rank,
            ranks,
            ..PlanContext::default()
        }
    }

    #[test]
    fn file_per_thread_gives_each_worker_its_file() {
        let p = plan_data(&spec(2), &DataTarget::Dir("/w".into()), &ctx(1, 2)).unwrap();
        assert_eq!(p.total_workers, 4);
        assert_eq!(p.files.len(), 2);
        assert_eq!(p.files[0].path, PathBuf::from("/w/data.r1.t0"));
        assert_eq!(p.files[1].size, 65536);
        assert_eq!(p.workers[1].global, 3);
        assert_eq!(
            (p.workers[1].base, p.workers[1].stride, p.workers[1].blocks),
            (0, 4096, 16)
        );
        assert_eq!(p.total_bytes, 4 * 65536);
        assert_eq!(p.owned_files, p.files);
    }

    #[test]
    fn shared_segmented_and_strided_placement() {
        let mut s = spec(2);
        s.layout = Layout::Shared;
        let seg = plan_data(&s, &DataTarget::Dir("/w".into()), &ctx(1, 2)).unwrap();
        assert_eq!(seg.files.len(), 1);
        assert_eq!(seg.files[0].size, 4 * 65536);
        assert_eq!(seg.workers[0].base, 2 * 65536);
        assert_eq!(seg.workers[1].base, 3 * 65536);
        s.placement = Placement::Strided;
        let st = plan_data(&s, &DataTarget::Dir("/w".into()), &ctx(1, 2)).unwrap();
        assert_eq!(
            (st.workers[0].base, st.workers[0].stride),
            (2 * 4096, 4 * 4096)
        );
        assert!(
            plan_data(&s, &DataTarget::Dir("/w".into()), &ctx(1, 2))
                .unwrap()
                .owned_files
                .is_empty()
        );
    }

    #[test]
    fn reads_can_be_shifted_to_another_ranks_data() {
        let mut s = spec(1);
        s.rw = RwKind::Read;
        let c = PlanContext {
            rank: 0,
            ranks: 4,
            read_shift: 2,
            ..PlanContext::default()
        };
        let p = plan_data(&s, &DataTarget::Dir("/w".into()), &c).unwrap();
        assert_eq!(p.workers[0].owner, 2);
        assert_eq!(p.files[0].path, PathBuf::from("/w/data.r2.t0"));
        assert_eq!(p.owned_files[0].path, PathBuf::from("/w/data.r0.t0"));
        s.rw = RwKind::Write;
        assert_eq!(
            plan_data(&s, &DataTarget::Dir("/w".into()), &c)
                .unwrap()
                .workers[0]
                .owner,
            0
        );
    }

    #[test]
    fn ior_names_and_whose_data_each_block_is() {
        // IOR -F -o ior-easy/ior_file_easy: BASE.%08d by rank; rank 1 reads rank 2's.
        let mut s = spec(1);
        s.rw = RwKind::Read;
        let c = PlanContext {
            rank: 1,
            ranks: 3,
            read_shift: 1,
            names: FileNames::Ior("ior-easy/ior_file_easy".into()),
            ..PlanContext::default()
        };
        let p = plan_data(&s, &DataTarget::Dir("/w".into()), &c).unwrap();
        assert_eq!(
            p.files[0].path,
            PathBuf::from("/w/ior-easy/ior_file_easy.00000002")
        );
        assert_eq!(p.files[0].owner_at(3 * 4096, 4096), 2);
        assert_eq!(
            p.owned_files[0].path,
            PathBuf::from("/w/ior-easy/ior_file_easy.00000001")
        );
        // One shared file named BASE: strided blocks go round the 3 workers, segmented
        // regions follow the shares.
        s.layout = Layout::Shared;
        s.placement = Placement::Strided;
        let c = PlanContext {
            names: FileNames::Ior("ior-hard/file".into()),
            ..c
        };
        let p = plan_data(&s, &DataTarget::Dir("/w".into()), &c).unwrap();
        let f = &p.files[0];
        assert_eq!(f.path, PathBuf::from("/w/ior-hard/file"));
        let owners: Vec<u64> = (0..7).map(|b| f.owner_at(b * 4096, 4096)).collect();
        assert_eq!(owners, [0, 1, 2, 0, 1, 2, 0]);
        s.placement = Placement::Segmented;
        let c = PlanContext {
            written_blocks: Some(vec![2, 3, 1]),
            ..c
        };
        let f = plan_data(&s, &DataTarget::Dir("/w".into()), &c)
            .unwrap()
            .files[0]
            .clone();
        let owners: Vec<u64> = (0..6).map(|b| f.owner_at(b * 4096, 4096)).collect();
        assert_eq!(owners, [0, 0, 1, 1, 1, 2]);
    }

    #[test]
    fn a_rank_reads_the_rank_it_is_told_to_read_instead_of_a_shift() {
        let mut s = spec(1);
        s.rw = RwKind::Read;
        let c = PlanContext {
            rank: 0,
            ranks: 4,
            read_shift: 1,
            read_from: Some(2),
            names: FileNames::Ior("f".into()),
            ..PlanContext::default()
        };
        let p = plan_data(&s, &DataTarget::Dir("/w".into()), &c).unwrap();
        assert_eq!(p.files[0].path, PathBuf::from("/w/f.00000002"));
        // A write writes its own, whatever it is told to read.
        s.rw = RwKind::Write;
        let p = plan_data(&s, &DataTarget::Dir("/w".into()), &c).unwrap();
        assert_eq!(p.files[0].path, PathBuf::from("/w/f.00000000"));
    }

    #[test]
    fn written_blocks_limit_a_following_read() {
        let c = PlanContext {
            rank: 0,
            ranks: 1,
            read_shift: 0,
            written_blocks: Some(vec![5, 9]),
            ..PlanContext::default()
        };
        let p = plan_data(&spec(2), &DataTarget::Dir("/w".into()), &c).unwrap();
        assert_eq!(p.workers[0].blocks, 5);
        assert_eq!(p.workers[1].blocks, 9);
        assert_eq!(p.total_bytes, 14 * 4096);
    }

    #[test]
    fn device_too_small_is_refused() {
        let t = DataTarget::Device {
            path: "/dev/x".into(),
            size: 65536,
        };
        let err = plan_data(&spec(2), &t, &ctx(0, 1)).unwrap_err();
        assert_eq!(err.option, "--size");
        let mut s = spec(2);
        s.size = None;
        let p = plan_data(&s, &t, &ctx(0, 1)).unwrap();
        assert_eq!(p.total_bytes, 65536);
        assert_eq!(p.workers[1].base, 32768);
    }

    #[test]
    fn too_small_a_total_is_named() {
        let mut s = spec(4);
        s.size = None;
        s.total_size = Some(ByteCount::kib(8));
        let err = plan_data(&s, &DataTarget::Dir("/w".into()), &ctx(0, 1)).unwrap_err();
        assert_eq!(err.option, "--total-size");
    }

    proptest! {
        #[test]
        fn plan_shares_add_up_to_the_total(total_kib in 64u64..100_000, threads in 1u32..16, ranks in 1u32..5) {
            let s = DataSpec {
                threads,
                block_size: ByteCount::kib(4),
                total_size: Some(ByteCount::kib(total_kib)),
                ..DataSpec::default()
            };
            let target = DataTarget::Dir("/w".into());
            let Ok(sh) = shares(&s, &target, threads * ranks) else { return Ok(()) };
            prop_assert_eq!(sh.iter().sum::<u64>(), total_kib / 4);
            prop_assert!(sh.iter().max().unwrap() - sh.iter().min().unwrap() <= 1);
            // Segmented regions of a shared file tile it without gaps or overlap.
            let mut shared = s.clone();
            shared.layout = Layout::Shared;
            let mut regions = Vec::new();
            for rank in 0..ranks {
                let p = plan_data(&shared, &target, &ctx(rank, ranks)).unwrap();
                for w in &p.workers { regions.push((w.base, w.blocks * 4096)); }
            }
            regions.sort();
            let mut end = 0;
            for (base, len) in regions { prop_assert_eq!(base, end); end = base + len; }
            prop_assert_eq!(end, total_kib / 4 * 4096);
        }
    }
}
