//! The plain enums of a data workload ([`super::DataSpec`]): access pattern, backend,
//! layout, placement, random generator, cache policy, data pattern.

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// Access pattern, in fio's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RwKind {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    Randread,
    /// Random writes.
    Randwrite,
    /// Sequential mixed reads and writes (--rwmix-read sets the share of reads); reads
    /// and writes each go on from their own last offset, as fio's do.
    Rw,
    /// Random mixed reads and writes (--rwmix-read sets the share of reads).
    Randrw,
    /// Sequential trims: BLKDISCARD on a device, a punched hole in a file.
    Trim,
    /// Random trims.
    Randtrim,
    /// Sequential trim-then-write pairs: each block is trimmed, then written (fio's
    /// trimwrite).
    Trimwrite,
    /// Trim-then-write pairs at random blocks (fio's randtrimwrite).
    Randtrimwrite,
}

impl RwKind {
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwKind::Randread
                | RwKind::Randwrite
                | RwKind::Randrw
                | RwKind::Randtrim
                | RwKind::Randtrimwrite
        )
    }
    /// Issues reads.
    pub fn reads(self) -> bool {
        matches!(
            self,
            RwKind::Read | RwKind::Randread | RwKind::Rw | RwKind::Randrw
        )
    }
    /// Issues writes.
    pub fn writes(self) -> bool {
        matches!(
            self,
            RwKind::Write
                | RwKind::Randwrite
                | RwKind::Rw
                | RwKind::Randrw
                | RwKind::Trimwrite
                | RwKind::Randtrimwrite
        )
    }
    /// Issues trims (discards).
    pub fn trims(self) -> bool {
        matches!(
            self,
            RwKind::Trim | RwKind::Randtrim | RwKind::Trimwrite | RwKind::Randtrimwrite
        )
    }
    /// Changes what the target holds: writes or trims.
    pub fn modifies(self) -> bool {
        self.writes() || self.trims()
    }
    /// The target must hold data before the phase: reads read it, trims discard it (fio
    /// lays files out for both).
    pub fn needs_data(self) -> bool {
        self.reads() || matches!(self, RwKind::Trim | RwKind::Randtrim)
    }
    pub fn is_mixed(self) -> bool {
        matches!(self, RwKind::Rw | RwKind::Randrw)
    }
    /// The share of reads in percent, given the --rwmix-read setting.
    pub fn read_percent(self, rwmix_read: u8) -> u8 {
        match self {
            RwKind::Read | RwKind::Randread => 100,
            RwKind::Write | RwKind::Randwrite => 0,
            RwKind::Rw | RwKind::Randrw => rwmix_read,
            RwKind::Trim | RwKind::Randtrim | RwKind::Trimwrite | RwKind::Randtrimwrite => 0,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            RwKind::Read => "read",
            RwKind::Write => "write",
            RwKind::Randread => "randread",
            RwKind::Randwrite => "randwrite",
            RwKind::Rw => "rw",
            RwKind::Randrw => "randrw",
            RwKind::Trim => "trim",
            RwKind::Randtrim => "randtrim",
            RwKind::Trimwrite => "trimwrite",
            RwKind::Randtrimwrite => "randtrimwrite",
        }
    }
}

/// How the I/O reaches storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// pread/pwrite, one I/O at a time per thread (fio's psync).
    Psync,
    /// lseek, then read/write, one I/O at a time per thread: fio's sync engine and IOR's
    /// POSIX backend, two system calls per I/O.
    Sync,
    /// Linux io_uring, --queue-depth I/Os in flight per thread.
    Uring,
    /// Completes every I/O at once without touching storage (measures iolab itself).
    Null,
    /// An NBD export through libnbd (loaded at run time), --queue-depth commands in
    /// flight per thread; the export is given with --nbd-uri.
    Nbd,
    /// NFS in user space through libnfs (loaded at run time), on the export of
    /// --nfs-url: synchronous calls at queue depth 1, asynchronous ones deeper.
    Nfs,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Psync => "psync",
            BackendKind::Sync => "sync",
            BackendKind::Uring => "uring",
            BackendKind::Null => "null",
            BackendKind::Nbd => "nbd",
            BackendKind::Nfs => "nfs",
        }
    }
}

/// Where each worker's data lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// One file per worker (N-N).
    FilePerThread,
    /// One file shared by all workers (N-1); see --placement.
    Shared,
}

/// How workers share one file (N-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Each worker owns one contiguous region.
    Segmented,
    /// Blocks are interleaved across workers: block k of worker w is at (k*W + w)
    /// (IOR-hard style).
    Strided,
}

/// How random offsets are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum RandomKind {
    /// Independent uniform draws (blocks may repeat or be missed).
    Uniform,
    /// A permutation: every block touched exactly once per pass.
    FullCoverage,
}

/// What the page cache holds when a phase that reads starts (buffered I/O only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMode {
    /// Drop this run's files from the page cache first (fio's invalidate=1).
    Cold,
    /// Read the data once, untimed, so the phase is served from the page cache.
    Hot,
    /// Leave the page cache as it is.
    Keep,
}

/// What written blocks hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum DataPattern {
    /// iolab's: pseudo-random with every 4 KiB distinct (nothing for compression or
    /// deduplication to gain); self-describing checked blocks with --verify.
    #[default]
    Iolab,
    /// IOR's `--dataPacketType=timestamp`: every transfer holds the same 8-byte words
    /// `rank << 32 | seed + i` (the seed is IOR's -G signature); --verify checks every word
    /// as IOR's -R and -W do. For runs that must do IOR's work byte for byte.
    IorTimestamp,
    /// Zeros (fio's zero_buffers): the most a compressing or deduplicating target can
    /// gain.
    Zeros,
    /// fio's default data: each I/O buffer filled once with fio's random words, then
    /// before every write each 512-byte block stamped with its file offset and the time
    /// (fio's scramble_buffers). Blocks differ, but a compressor finds most of each
    /// write again in the others, as in fio's files.
    Fio,
    /// fio's data with scramble_buffers=0: each I/O buffer filled once with fio's random
    /// words and written as it is every time.
    FioUnscrambled,
}

impl DataPattern {
    /// fio's buffers: filled once per I/O slot and reused by every write.
    pub fn is_fio(self) -> bool {
        matches!(self, DataPattern::Fio | DataPattern::FioUnscrambled)
    }
}
