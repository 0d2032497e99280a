//! Typed figures a phase carries beside its operations, one struct per workload that
//! has its own: [`TrainEpochFigures`] (an `iolab train` epoch), [`CheckpointFigures`]
//! (`iolab checkpoint`'s writes or reads) and [`KvCacheFigures`] (an `iolab kvcache`
//! trial), under [`PhaseFigures`]. Each is defined in docs/figures.md; reports format
//! them as stored.

use serde::{Deserialize, Serialize};

use crate::kvcache::KvCacheFigures;
use crate::units::{ByteCount, BytesPerSec, Nanos};

/// A phase's own figures, by the workload that measured them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "workload", rename_all = "kebab-case")]
pub enum PhaseFigures {
    TrainEpoch(TrainEpochFigures),
    Checkpoint(CheckpointFigures),
    /// A trial of `iolab kvcache` (boxed: its latencies per tier make it large).
    KvCache(Box<KvCacheFigures>),
}

impl PhaseFigures {
    pub fn train_epoch(&self) -> Option<&TrainEpochFigures> {
        match self {
            PhaseFigures::TrainEpoch(f) => Some(f),
            _ => None,
        }
    }

    pub fn checkpoint(&self) -> Option<&CheckpointFigures> {
        match self {
            PhaseFigures::Checkpoint(f) => Some(f),
            _ => None,
        }
    }

    pub fn kvcache(&self) -> Option<&KvCacheFigures> {
        match self {
            PhaseFigures::KvCache(f) => Some(f),
            _ => None,
        }
    }
}

/// One training epoch, all accelerators of the job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainEpochFigures {
    /// DLIO's AU: the mean of the accelerators' measured compute over their time, the
    /// first step left out.
    pub au_percent: f64,
    /// The same over the asked compute (docs/figures.md "AU").
    #[serde(default)]
    pub au_nominal_percent: f64,
    pub au_min_percent: f64,
    pub au_threshold_percent: f64,
    pub samples_per_sec: f64,
    /// DLIO's I/O figure: samples/s x record length, in MiB/s.
    pub dlio_mib_per_sec: f64,
    pub accelerators: u64,
    pub steps: u64,
    pub samples: u64,
    /// Per step, mean over all accelerators' steps: the wait for a batch, the compute.
    pub load_mean: Nanos,
    pub compute_mean: Nanos,
    /// Per step, the compute as the clock measured it (the sleep and its overshoot).
    #[serde(default)]
    pub compute_measured_mean: Nanos,
    /// The first step (loader start, wait and compute), the accelerators' mean.
    pub first_step_mean: Nanos,
    /// The wait for a batch per step, p50 and p99 over all accelerators' steps.
    pub load_p50: Nanos,
    pub load_p99: Nanos,
    /// Per step, mean time an accelerator waited at the step's meeting for the slowest.
    #[serde(default)]
    pub step_wait_mean: Nanos,
    /// CPU time of all ranks per sample.
    pub cpu_per_sample: Nanos,
}

/// A checkpoint workload's writes or its reads, over its checkpoints.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointFigures {
    pub checkpoints: u64,
    /// One checkpoint's bytes, all simulated ranks.
    pub checkpoint_bytes: ByteCount,
    /// A checkpoint's duration (its slowest rank's), mean over the checkpoints.
    pub duration_mean: Nanos,
    /// Each checkpoint's bytes over its duration, mean over the checkpoints.
    pub throughput_mean: BytesPerSec,
    /// The slowest rank's own time, mean over the checkpoints.
    pub slowest_rank_mean: Nanos,
    pub simulated_ranks: u64,
}
