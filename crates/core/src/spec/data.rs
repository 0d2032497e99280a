//! Data workloads: [`DataSpec`] and [`TargetSpec`] (where a workload runs); the plain
//! enums it uses are in `data_kinds.rs`. Defaults are written once, in the clap
//! attributes, and `Default` is derived from them so the two cannot drift apart.
//! [`DataSpec::validate`] is in `data_validate.rs`, the size, offset and pace checks in
//! `data_access.rs`.

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::access::{Distribution, RateProcess, SizeMix, ThinkCount};
use crate::units::{ByteCount, CpuList, TimeSpan};

/// The most one read or write moves on Linux (MAX_RW_COUNT, 2 GiB - 4 KiB): a larger
/// I/O would come back short every time.
pub const MAX_IO_SIZE: u64 = 0x7fff_f000;

/// The seed used when none is given: runs are reproducible by default.
pub const DEFAULT_SEED: u64 = 0x10_1AB;

pub use super::data_kinds::*;

/// A data workload. Fields mirror the `iolab run` flags one to one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct DataSpec {
    /// Access pattern.
    #[arg(long, value_enum, default_value_t = RwKind::Read)]
    pub rw: RwKind,

    /// Percentage of reads in a mixed workload (rw, randrw).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub rwmix_read: u8,

    /// Size of each I/O (4KiB, 1MiB, 47008...).
    #[arg(short = 'b', long, default_value = "4KiB")]
    pub block_size: ByteCount,

    /// Size of each write of a mixed workload (rw, randrw) when it differs from
    /// --block-size, which then sizes its reads (fio's bs=READ,WRITE). One must be a
    /// multiple of the other.
    #[arg(long, value_name = "SIZE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_block_size: Option<ByteCount>,

    /// Draw each I/O's size from a mix instead of one --block-size: shares in percent
    /// (4KiB/10:64KiB/50:32KiB/40, fio's bssplit) or a range (4KiB-64KiB: every multiple
    /// of its start, each as likely, fio's bsrange). Every size must be a multiple of the
    /// smallest.
    #[arg(long, value_name = "MIX", conflicts_with = "block_size")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_sizes: Option<SizeMix>,

    /// The writes' own mix in a mixed workload (rw, randrw); --block-sizes (or
    /// --block-size) then sizes its reads.
    #[arg(long, value_name = "MIX", conflicts_with = "write_block_size")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_block_sizes: Option<SizeMix>,

    /// Random offsets are multiples of this [default: the smallest I/O size] (fio's
    /// blockalign).
    #[arg(long, value_name = "SIZE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_align: Option<ByteCount>,

    /// Worker threads (per rank under MPI).
    #[arg(short = 't', long, default_value_t = 1)]
    pub threads: u32,

    /// I/Os in flight per thread (io_uring; psync always has one).
    #[arg(short = 'q', long, default_value_t = 1)]
    pub queue_depth: u32,

    /// I/O backend.
    #[arg(long, value_enum, default_value_t = BackendKind::Psync)]
    pub backend: BackendKind,

    /// I/Os gathered before they are handed to the kernel (io_uring); 1 submits each at
    /// once, like fio's default iodepth_batch_submit=1.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub submit_batch: u32,

    /// Data per thread [default: 1GiB; a device's size split across threads].
    #[arg(short = 's', long, conflicts_with = "total_size")]
    pub size: Option<ByteCount>,

    /// Data for all threads of all ranks together, split evenly.
    #[arg(long)]
    pub total_size: Option<ByteCount>,

    /// Run for this long, looping over the data (time based). Without it a run stops
    /// when every thread has done its share.
    #[arg(long)]
    pub runtime: Option<TimeSpan>,

    /// Stop a size-based phase at this deadline even if shares remain (IOR -D).
    #[arg(long)]
    pub stonewall: Option<TimeSpan>,

    /// After the stonewall, every worker continues until it has done as much as the
    /// worker that did the most (IO500 wear-out).
    #[arg(long)]
    pub wear_out: bool,

    /// One file per thread (N-N) or one shared file (N-1).
    #[arg(long, value_enum, default_value_t = Layout::FilePerThread)]
    pub layout: Layout,

    /// Placement of workers in a shared file.
    #[arg(long, value_enum, default_value_t = Placement::Segmented)]
    pub placement: Placement,

    /// How random offsets are drawn.
    #[arg(long, value_enum, default_value_t = RandomKind::Uniform)]
    pub random: RandomKind,

    /// Where random offsets fall when not evenly (fio's random_distribution): zipf:1.2,
    /// pareto:0.9, normal:5, zoned:60/10:30/20:10/70 (shares of the I/Os on parts of the
    /// data, in percent) or zoned_abs:60/1GiB:40/3GiB.
    #[arg(long, value_name = "DIST")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distribution: Option<Distribution>,

    /// Seed for offsets, mixes and data; the same seed gives the same run.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,

    /// Direct I/O (O_DIRECT), bypassing the page cache.
    #[arg(long)]
    pub direct: bool,

    /// Synchronous writes (O_SYNC).
    #[arg(long)]
    pub sync: bool,

    /// fsync each file when its writes are done (timed, part of the phase).
    #[arg(long)]
    pub fsync_at_end: bool,

    /// fsync after every N writes.
    #[arg(long, value_name = "N")]
    pub fsync_every: Option<u64>,

    /// Preallocate files before writing them (fallocate), as fio does by default.
    #[arg(long)]
    pub preallocate: bool,

    /// Page cache state before a phase that reads (buffered I/O).
    #[arg(long, value_enum, default_value_t = CacheMode::Cold)]
    pub cache: CacheMode,

    /// Empty the whole machine's page cache before a phase that reads (needs root; says
    /// so and drops only this run's files otherwise).
    #[arg(long)]
    pub drop_caches: bool,

    /// Write self-checking blocks and check them on read; mismatches fail the run.
    #[arg(long)]
    pub verify: bool,

    /// What written blocks hold (and --verify checks): iolab's pattern, or IOR's
    /// timestamp words with the low 32 bits of --seed as IOR's -G signature, zeros, or
    /// fio's reused buffers (with or without fio's per-write stamps).
    #[arg(long, value_enum, default_value_t = DataPattern::Iolab)]
    pub pattern: DataPattern,

    /// Written data compresses by this ratio (2: to half its size; vdbench's compratio):
    /// each --compress-chunk holds random bytes first, then zeros with a unique word every
    /// 512 bytes, sized so every compressor stores 1/RATIO (fio's
    /// buffer_compress_percentage). The ratio the data really has is measured and
    /// reported beside it.
    #[arg(long, value_name = "RATIO")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compress_ratio: Option<f64>,

    /// The unit --compress-ratio builds its data in (fio's buffer_compress_chunk, whose
    /// default is 512 bytes) [default: 4KiB].
    #[arg(long, value_name = "SIZE", requires = "compress_ratio")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compress_chunk: Option<ByteCount>,

    /// Written data deduplicates by this ratio at --dedupe-unit (2: every other unit a
    /// copy; vdbench's dedupratio, fio's dedupe_percentage): 1 - 1/RATIO of the units are
    /// copies of earlier units of the same worker, drawn among all of them, and no unit at
    /// another alignment repeats. Measured and reported beside it.
    #[arg(long, value_name = "RATIO")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_ratio: Option<f64>,

    /// The unit --dedupe-ratio copies (the block a deduplicating target compares; a
    /// multiple of 512 bytes, at most the block size) [default: 4KiB, or the block size
    /// when smaller].
    #[arg(long, value_name = "SIZE", requires = "dedupe_ratio")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_unit: Option<ByteCount>,

    /// Every write carries this pattern repeated from its first byte (fio's
    /// buffer_pattern): 0x and hex digits (0xdeadbeef), or a quoted string ("abc").
    #[arg(long, value_name = "PATTERN")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_pattern: Option<String>,

    /// Read what another rank wrote: shift the data a rank reads by this many ranks
    /// (0 = its own; IOR -C / -Q). Under MPI the default shifts to the next node when
    /// every rank works in the same --dir; with {host} or {rank} in it, 0.
    #[arg(long)]
    pub read_shift: Option<u32>,

    /// Limit the rate of all workers together (I/Os per second), reads and writes
    /// together.
    #[arg(long, value_name = "IOPS")]
    pub rate_iops: Option<u64>,

    /// Limit the reads of a mixed workload (rw, randrw) to this many per second, all
    /// workers together (each direction its own limit, as fio's rate_iops=R,W).
    #[arg(long, value_name = "IOPS", conflicts_with = "rate_iops")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_rate_iops: Option<u64>,

    /// Limit the writes of a mixed workload to this many per second, all workers
    /// together.
    #[arg(long, value_name = "IOPS", conflicts_with = "rate_iops")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_rate_iops: Option<u64>,

    /// Limit the bytes per second of all workers together (100MiB: 100 MiB/s), reads and
    /// writes together.
    #[arg(long, value_name = "SIZE", conflicts_with_all = ["rate_iops", "read_rate_iops", "write_rate_iops"])]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<ByteCount>,

    /// Limit the bytes per second read in a mixed workload (rw, randrw), all workers
    /// together (fio's rate=R,W).
    #[arg(long, value_name = "SIZE", conflicts_with_all = ["rate", "rate_iops", "read_rate_iops", "write_rate_iops"])]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_rate: Option<ByteCount>,

    /// Limit the bytes per second written in a mixed workload, all workers together.
    #[arg(long, value_name = "SIZE", conflicts_with_all = ["rate", "rate_iops", "read_rate_iops", "write_rate_iops"])]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_rate: Option<ByteCount>,

    /// Fail the phase when a worker moves less than its part of this many bytes per
    /// second (each direction that moves, over each --rate-cycle, after 2 s), as fio's
    /// rate_min does.
    #[arg(long, value_name = "SIZE", conflicts_with = "rate_iops_min")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_min: Option<ByteCount>,

    /// Fail the phase when a worker completes less than its part of this many I/Os per
    /// second (fio's rate_iops_min).
    #[arg(long, value_name = "IOPS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_iops_min: Option<u64>,

    /// The window --rate-min and --rate-iops-min average over [default: 1s] (fio's
    /// rate_cycle).
    #[arg(long, value_name = "TIME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_cycle: Option<TimeSpan>,

    /// How paced I/Os are spaced: evenly, or as a Poisson process of the same mean rate.
    #[arg(long, value_enum, default_value_t = RateProcess::Linear)]
    pub rate_process: RateProcess,

    /// Pause this long after every --think-every I/Os, once those in flight completed
    /// (fio's thinktime); the pauses are part of the phase's time.
    #[arg(long, value_name = "TIME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think_time: Option<TimeSpan>,

    /// Spend this much of each --think-time busy on the CPU instead of asleep (fio's
    /// thinktime_spin).
    #[arg(long, value_name = "TIME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think_spin: Option<TimeSpan>,

    /// I/Os between two pauses of --think-time (fio's thinktime_blocks).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub think_every: u64,

    /// Whether --think-every counts completed or issued I/Os (fio's
    /// thinktime_blocks_type).
    #[arg(long, value_enum, default_value_t = ThinkCount::Complete)]
    pub think_count: ThinkCount,

    /// Pause after this much time of I/O instead (fio's thinktime_iotime); with
    /// --think-every too, whichever comes first.
    #[arg(long, value_name = "TIME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think_io_time: Option<TimeSpan>,

    /// Pin worker threads to these CPUs, round robin (0-7,16-23).
    #[arg(long)]
    pub cpus: Option<CpuList>,

    /// Run this long before measuring (fio's ramp_time): what completes meanwhile is not
    /// counted, and a --runtime counts from its end.
    #[arg(long, value_name = "TIME")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp: Option<TimeSpan>,

    /// Stop the phase once it is steady (fio's ss): iops:5% (every per-interval IOPS
    /// sample of the window within 5 % of the window's mean), bw:2%, iops_slope:0.1%,
    /// bw_slope:1% (the least-squares slope per interval), or a limit in ops/s or B/s
    /// without %. The verdict and the window are reported either way.
    #[arg(long, value_name = "RULE")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<crate::steady::SteadyRule>,

    /// The window --steady-state judges (fio's ss_dur) [default: 30s].
    #[arg(long, value_name = "TIME", requires = "steady_state")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_window: Option<TimeSpan>,

    /// One sample per this much time (fio 3.33's: 1 s) [default: 1s].
    #[arg(long, value_name = "TIME", requires = "steady_state")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_interval: Option<TimeSpan>,

    /// Samples start this long after the phase (fio's ss_ramp; --ramp is never judged
    /// either).
    #[arg(long, value_name = "TIME", requires = "steady_state")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_ramp: Option<TimeSpan>,
}

impl Default for DataSpec {
    fn default() -> Self {
        crate::spec::command_line_defaults()
    }
}

impl DataSpec {
    /// Whether a run of this spec writes its target: its writes, or the layout of
    /// --verify's checkable blocks that its reads need first.
    pub fn writes_target(&self) -> bool {
        self.rw.modifies() || self.verify
    }

    /// The size of each read (`IoDir` order: read, then write) and of each write, when
    /// not drawn from a mix (then see [`sizes`](Self::sizes)).
    pub fn io_sizes(&self) -> [u64; 2] {
        let read = self.block_size.get();
        [read, self.write_block_size.map_or(read, ByteCount::get)]
    }

    /// The unit shares and offsets are counted in: the smallest I/O size of either
    /// direction (the block size, unless a mixed workload's writes are smaller or sizes
    /// are drawn from a mix), or --block-align when smaller.
    pub fn unit(&self) -> u64 {
        let [r, w] = self.sizes();
        let smallest = r.smallest.min(w.smallest);
        self.block_align.map_or(smallest, |a| a.get().min(smallest))
    }

    /// How many [`unit`](Self::unit)s a read and a write each cover (`IoDir` order),
    /// their smallest when drawn from a mix.
    pub fn spans(&self) -> [u64; 2] {
        let unit = self.unit().max(1);
        self.sizes().map(|s| s.smallest / unit)
    }

    /// The largest I/O of either direction: what a buffer holds.
    pub fn largest_io(&self) -> u64 {
        let [r, w] = self.sizes();
        r.largest.max(w.largest)
    }

    /// The share of reads in percent.
    pub fn read_percent(&self) -> u8 {
        self.rw.read_percent(self.rwmix_read)
    }

    /// A short name for the workload: "randread-4KiB", "write-1MiB".
    pub fn name(&self) -> String {
        if self.has_size_mix() {
            let [r, w] = self.sizes();
            return format!(
                "{}-{}..{}",
                self.rw.name(),
                ByteCount(r.smallest.min(w.smallest)),
                ByteCount(r.largest.max(w.largest))
            );
        }
        match self.write_block_size {
            Some(w) if w != self.block_size => {
                format!("{}-r{}-w{}", self.rw.name(), self.block_size, w)
            }
            _ => format!("{}-{}", self.rw.name(), self.block_size),
        }
    }

    /// The steady-state stop asked for: its rule, window, interval and the time not
    /// judged (the longer of --ramp and --steady-ramp).
    pub fn steady(&self) -> Option<crate::steady::SteadySpec> {
        let rule = self.steady_state?;
        let ramp = match (self.ramp, self.steady_ramp) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        Some(crate::steady::SteadySpec {
            rule,
            window: self.steady_window.unwrap_or(TimeSpan::from_secs(30)),
            interval: self.steady_interval.unwrap_or(TimeSpan::from_secs(1)),
            ramp,
        })
    }

    /// The compress chunk's size (4 KiB unless given).
    pub fn compress_chunk(&self) -> u64 {
        self.compress_chunk.map_or(4096, ByteCount::get)
    }

    /// The unit --dedupe-ratio copies: --dedupe-unit, else 4 KiB or the smallest write
    /// when smaller.
    pub fn dedupe_unit(&self) -> u64 {
        self.dedupe_unit
            .map_or_else(|| 4096.min(self.sizes()[1].smallest), ByteCount::get)
    }
}

/// Where a workload runs: a directory (iolab works in a subdirectory it creates and
/// marks as its own) or a block device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct TargetSpec {
    /// Directory to work in; {host} and {rank} are replaced per rank.
    #[arg(short = 'd', long, value_name = "DIR", conflicts_with = "device")]
    pub dir: Option<PathBuf>,

    /// Block device (or image file) to work on directly. Its contents are destroyed.
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<PathBuf>,

    /// An NBD export to work on as a block device, through --backend nbd:
    /// nbd+unix:///?socket=SOCKET or nbd://HOST[:PORT][/EXPORT]. Its contents are
    /// destroyed; one whose first or last MiB holds data is refused unless --allow-destroy.
    #[arg(long, value_name = "URI", conflicts_with_all = ["dir", "device"])]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nbd_uri: Option<String>,
    /// An NFS export to work on through libnfs, with --backend nfs:
    /// nfs://HOST/EXPORT[?version=3|4&nfsport=N&mountport=N]; --dir is then a directory
    /// inside the export (default: its top).
    #[arg(long, value_name = "URL", conflicts_with_all = ["device", "nbd_uri"])]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nfs_url: Option<String>,

    /// Allow writing to a device that holds a file system signature or is mounted.
    #[arg(long)]
    pub allow_destroy: bool,

    /// Keep the files iolab wrote (they are removed at the end by default).
    #[arg(long)]
    pub keep: bool,

    /// Create the last level of --dir when it is missing (the parent must exist), as
    /// IO500 creates its datadir. Set by commands, not a flag; {host} and {rank} in --dir
    /// always do.
    #[arg(skip)]
    #[serde(skip)]
    pub create_dir: bool,
}

#[cfg(test)]
#[path = "data_tests.rs"]
mod tests;
