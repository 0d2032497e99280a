//! LLM inference's KV cache offload, as MLPerf Storage v3.0's reference (kv-cache.py)
//! runs it: simulated users ([`users`]) issue requests that [`serve`] turns into reads
//! and writes of cache entries ([`entry`]) in a tiered cache ([`cache`]: CPU memory,
//! then a directory: the engine's), measured in one tally per trial that its workers
//! record into ([`tally`]); [`run`] is one trial on one rank, [`run_kvcache`] every
//! trial on every rank with the figures on rank 0. The figures are defined in
//! iolab_core::kvcache.

pub mod autoscale;
pub mod bucket;
pub mod conversation;
pub mod join;
pub mod live;
pub mod outcome;
pub mod run;
pub mod serve;
pub mod tally;
pub mod users;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use iolab_comm::{Comm, CommExt};
use iolab_core::SpecError;
use iolab_core::kvcache::{KvCacheFigures, KvModel, WorstRank};
use iolab_core::result::Timeline;
use iolab_core::spec::KvCacheSettings;
use iolab_core::units::{ByteCount, Nanos};
use iolab_engine::{Available, Clock, ranks_on_this_host};

use crate::AiError;

/// The tiers and the entries' I/O are the engine's.
pub use iolab_engine::kvcache::{cache, entry};

/// The storage tier on an S3 bucket: how each worker gets its client, and the run's
/// prefix in the bucket (`<prefix>iolab-<token>/`, made by `start_s3`).
pub struct ObjectTier<'a> {
    pub factory: iolab_engine::ObjectFactory<'a>,
    pub prefix: String,
    /// --keep: the objects left at a trial's end stay.
    pub keep: bool,
}

/// Where the storage tier is: files under the work directory, objects in a bucket, or
/// runs of blocks on a block device (checked by the target's guard: `path`, `size`
/// bytes, shared by the ranks in equal parts).
#[derive(Clone, Copy)]
pub struct Storage<'a> {
    pub workdir: &'a Path,
    pub objects: Option<&'a ObjectTier<'a>>,
    pub device: Option<(&'a Path, u64)>,
    /// With `--serve`: where this rank counts its running trial's figures.
    pub live: Option<&'a live::KvLive>,
    /// The bytes each rank's storage tier may hold ([`storage_limit`]).
    pub limit: u64,
}

/// Where one rank's trial keeps its storage tier.
pub struct Tier<'a> {
    /// The rank's directory, its objects' key prefix, or the device.
    pub dir: PathBuf,
    pub objects: Option<&'a ObjectTier<'a>>,
    /// On a device: this rank's share, (start, bytes).
    pub device: Option<(u64, u64)>,
    pub live: Option<&'a live::KvLive>,
    /// The bytes it may hold.
    pub limit: u64,
}

/// The block size entries are aligned to on a device (O_DIRECT's).
pub const DEVICE_BLOCK: u64 = 4096;

impl<'a> Storage<'a> {
    /// The storage tier in files under `workdir`, `limit` bytes on each rank.
    pub fn files(workdir: &'a Path, limit: u64) -> Storage<'a> {
        Storage {
            workdir,
            objects: None,
            device: None,
            live: None,
            limit,
        }
    }
}

/// One trial's figures, all ranks.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TrialFigures {
    pub figures: KvCacheFigures,
    pub timeline: Timeline,
    pub issued: u64,
    pub dropped: u64,
    /// Requests being served when the duration ended: stopped before their next cache
    /// operation, not counted.
    pub cut: u64,
    /// What the conversations' table did (started, evicted, turns lost, most held).
    pub conversations: conversation::ConversationCounts,
    /// Wall-clock start, milliseconds since the Unix epoch (rank 0's clock).
    pub started_at_ms: i64,
    /// The storage tier's whole-entry latencies (for the stored phase).
    #[serde(skip)]
    pub storage: tally::TierTally,
}

/// Checks the CPU tier's budget and the workers' buffers against the memory this host
/// has, before anything is allocated or written. The cache holds no more than that: the
/// CPU tier never more than its budget (its entries, those being filled, and those being
/// demoted until their write has ended: the engine's cache/cpu.rs), an entry on the
/// storage tier only a buffer's worth at a time.
pub fn check_memory(settings: &KvCacheSettings, comm: &dyn Comm) -> Result<(), SpecError> {
    let ranks = u64::from(ranks_on_this_host(comm));
    // Each worker's: one for the CPU tier's copies, one for the storage tier's backend.
    let buffers = 2 * u64::from(settings.workers()) * settings.transfer_size.0;
    let need = (settings.cpu_memory.0 + buffers) * ranks;
    if let Some(have) = Available::read(Path::new("/")).bytes()
        && need as f64 > 0.8 * have as f64
    {
        return Err(SpecError::new(
            "--cpu-memory",
            format!(
                "{} for the CPU tier and {} of transfer buffers ({} rank(s) on this host) is more than 80% of the {} available",
                settings.cpu_memory.human(),
                ByteCount(buffers).human(),
                ranks,
                ByteCount(have).human()
            ),
        ));
    }
    Ok(())
}

/// Refuses a backend this kernel cannot give (io_uring), before anything is written.
pub fn check_backend(settings: &KvCacheSettings) -> Result<(), SpecError> {
    if settings.backend == iolab_core::spec::BackendKind::Uring
        && let Err(why) = iolab_backend::uring_available()
    {
        return Err(SpecError::new(
            "--backend",
            format!("uring is not available here ({why}); use psync"),
        ));
    }
    Ok(())
}

/// The storage tier's capacity in `dir`: --storage-capacity, else 95 % of its free
/// space (as kv-cache.py), shared by this host's ranks.
pub fn storage_limit(settings: &KvCacheSettings, dir: &Path, ranks: u32) -> Result<u64, SpecError> {
    let on = dir.ancestors().find(|a| a.exists()).unwrap_or(dir);
    let free = iolab_backend::files::fs_free(on)
        .map_err(|e| SpecError::new("--dir", format!("{}: {e}", dir.display())))?;
    if let (Some(c), Some(f)) = (settings.storage_capacity, free)
        && c.0 > f
    {
        return Err(SpecError::new(
            "--storage-capacity",
            format!(
                "{} is more than the {} free in {}",
                c.human(),
                ByteCount(f).human(),
                dir.display()
            ),
        ));
    }
    let limit = match (settings.storage_capacity, free) {
        (Some(c), _) => c.0,
        (None, Some(f)) => (0.95 * f as f64) as u64 / u64::from(ranks.max(1)),
        (None, None) => u64::MAX,
    };
    // The largest entry the model makes must fit (the longest context).
    let largest = largest_entry(settings.model);
    if limit < largest {
        return Err(SpecError::new(
            "--dir",
            format!(
                "{} has room for {} of cache, less than one {} entry of 25,000 tokens ({}): free space or lower --storage-capacity's need",
                dir.display(),
                ByteCount(limit).human(),
                settings.model.name(),
                ByteCount(largest).human()
            ),
        ));
    }
    Ok(limit)
}

/// The longest context a request has (the coding profile's, users.rs): the largest
/// entry the model makes.
const LONGEST_CONTEXT: u64 = 25_000;

/// The bytes of the largest entry `model` makes: its `.npy` header and the longest
/// context's KV blocks (kv-cache.py's cap too: its coding users' context_range ends at
/// 25,000 tokens; llama3.1-70b-instruct 8,192,000,128 bytes, 7.63 GiB).
pub fn largest_entry(model: KvModel) -> u64 {
    let shape = model.shape();
    entry::npy_header(&shape, LONGEST_CONTEXT).len() as u64
        + LONGEST_CONTEXT * shape.bytes_per_token()
}

/// Each rank's share of a device of `size` bytes: (start, bytes), whole blocks.
fn device_share(size: u64, ranks: u32, rank: u32) -> (u64, u64) {
    let each = size / u64::from(ranks.max(1)) / DEVICE_BLOCK * DEVICE_BLOCK;
    (u64::from(rank) * each, each)
}

/// Refuses a device whose share per rank (or --storage-capacity, when less) cannot hold
/// the model's largest entry (the longest context with its header, in whole blocks),
/// before anything is written: else the first such entry would fail its write.
pub fn check_device_share(
    settings: &KvCacheSettings,
    size: u64,
    ranks: u32,
) -> Result<(), SpecError> {
    let (_, share) = device_share(size, ranks, 0);
    let need = largest_entry(settings.model).div_ceil(DEVICE_BLOCK) * DEVICE_BLOCK;
    let (option, room) = match settings.storage_capacity {
        Some(c) if c.0 < share => ("--storage-capacity", c.0),
        _ => ("--device", share),
    };
    if room >= need {
        return Ok(());
    }
    Err(SpecError::new(
        option,
        format!(
            "gives each of {ranks} rank(s) {} of the device, less than one {} entry of {LONGEST_CONTEXT} tokens ({}): use a larger device or fewer ranks",
            ByteCount(room).human(),
            settings.model.name(),
            ByteCount(need).human()
        ),
    ))
}

/// This rank's directory for the storage tier (MLPerf's wrapper: `rank_<N>`).
pub fn rank_dir(workdir: &Path, rank: u32) -> PathBuf {
    workdir.join("kvcache").join(format!("rank_{rank}"))
}

/// Every trial on every rank; the figures on rank 0 (empty elsewhere).
pub fn run_kvcache(
    comm: &dyn Comm,
    settings: &KvCacheSettings,
    storage: &Storage<'_>,
    clock: &dyn Clock,
    stop: &AtomicBool,
) -> Result<Vec<TrialFigures>, AiError> {
    let workdir = storage.workdir;
    let share = storage
        .device
        .map(|(_, size)| device_share(size, comm.size(), comm.rank()));
    let dir = match (storage.objects, storage.device) {
        (Some(o), _) => PathBuf::from(format!("{}rank_{}", o.prefix, comm.rank())),
        (None, Some((dev, _))) => dev.to_path_buf(),
        (None, None) => rank_dir(workdir, comm.rank()),
    };
    let made = match (storage.objects, storage.device) {
        (None, None) => std::fs::create_dir_all(&dir)
            .map_err(|e| AiError::Setup(format!("{}: {e}", dir.display()))),
        _ => Ok(()),
    };
    let tier = Tier {
        dir,
        objects: storage.objects,
        device: share,
        live: storage.live,
        limit: storage.limit,
    };
    let ok = comm.all_ok(made.is_ok());
    made?;
    if !ok {
        return Err(AiError::Setup(
            "another rank could not make its directory".into(),
        ));
    }
    let seed = settings.seed + u64::from(comm.rank());
    let mut out = Vec::new();
    for _ in 0..settings.trials {
        comm.barrier();
        if let Some(live) = storage.live {
            live.begin(settings.users);
        }
        let started_at_ms = iolab_core::civil::now_ms();
        let trial = run::run_trial(settings, &tier, seed, clock, stop);
        if !comm.all_ok(trial.is_ok()) {
            trial?;
            return Err(AiError::Setup("another rank's trial failed".into()));
        }
        let trial = trial?;
        let mine = (
            trial.tally,
            trial.duration,
            trial.issued,
            trial.dropped,
            trial.counts,
            trial.conversations,
        );
        let all = comm
            .gather(0, &mine)
            .map_err(|e| AiError::Setup(format!("gathering the ranks' figures: {e}")))?;
        if comm.rank() == 0 {
            out.push(TrialFigures {
                started_at_ms,
                ..reduce(&all)
            });
        }
    }
    if storage.objects.is_none() && storage.device.is_none() {
        let _ = std::fs::remove_dir(&tier.dir);
        let _ = std::fs::remove_dir(workdir.join("kvcache"));
    }
    Ok(out)
}

type RankTrial = (
    tally::Tally,
    Nanos,
    u64,
    u64,
    [u64; 4],
    conversation::ConversationCounts,
);

/// Every rank's trial as one: tallies merged, the longest duration, the worst rank's
/// device p95s beside the merged ones.
fn reduce(all: &[RankTrial]) -> TrialFigures {
    let mut tally = tally::Tally::default();
    let mut counts = [0u64; 4];
    let (mut issued, mut dropped, mut duration) = (0, 0, Nanos::ZERO);
    let mut conversations = conversation::ConversationCounts::default();
    for (t, d, i, dr, c, conv) in all {
        tally.merge(t);
        conversations.add(conv);
        duration = duration.max(*d);
        issued += i;
        dropped += dr;
        for k in 0..4 {
            counts[k] += c[k];
        }
    }
    // Each rank is a client the criteria judge: the worst rank's device p95s.
    let p95s: Vec<(Nanos, Nanos)> = all
        .iter()
        .map(|(t, ..)| {
            (
                t.storage.read_device.percentile(95.0),
                t.storage.write_device.percentile(95.0),
            )
        })
        .collect();
    TrialFigures {
        figures: KvCacheFigures {
            worst_rank: WorstRank::of(&p95s),
            ..tally.figures(duration, counts)
        },
        timeline: tally.timeline(),
        issued,
        dropped,
        cut: tally.cut,
        conversations,
        started_at_ms: 0,
        storage: tally.storage.clone(),
    }
}

#[cfg(test)]
mod tests;
