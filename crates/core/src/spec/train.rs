//! AI training I/O (`iolab train`): [`TrainSpec`] is what the user asked for (a preset of
//! MLPerf Storage's, DLIO's options, each overriding the preset), [`TrainConfig`] the
//! workload it resolves to, every figure concrete. The presets are DLIO's workload files
//! `unet3d_{a100,h100}`, `resnet50_*` and `cosmoflow_*` (DLIO 2.0.0, MLPerf Storage v2.0).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::error::SpecError;
use crate::units::{ByteCount, TimeSpan};

mod presets;
use presets::preset_values;

/// A dataset's file format, as DLIO names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TrainFormat {
    /// numpy's .npz: a stored (uncompressed) zip of x.npy (the samples) and y.npy.
    Npz,
    /// TensorFlow's TFRecord: length-prefixed tf.train.Example records with CRCs.
    Tfrecord,
    /// HDF5: DLIO writes it with h5py; iolab does not (refused by name).
    Hdf5,
}

impl TrainFormat {
    pub fn extension(self) -> &'static str {
        match self {
            TrainFormat::Npz => "npz",
            TrainFormat::Tfrecord => "tfrecord",
            TrainFormat::Hdf5 => "hdf5",
        }
    }
}

/// How samples reach the accelerators: DLIO's two data loaders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LoaderKind {
    /// PyTorch's DataLoader: one global (shuffled) sample list, a contiguous slice per
    /// accelerator; batch k built whole by reader thread k mod threads; each sample read
    /// opens and reads its whole file.
    Pytorch,
    /// tf.data (`TFRecordDataset(num_parallel_reads=read_threads)`): files dealt
    /// round-robin to accelerators; `read_threads` files interleaved a record at a time
    /// in file order, 2 x `read_threads` more opened and read ahead, each file by its
    /// own thread; batched, `prefetch` + `computation_threads` batches held ahead.
    Tensorflow,
}

/// DLIO's shuffle setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ShuffleKind {
    Off,
    /// Shuffled by --seed (the same order on every run).
    Seed,
    /// Shuffled differently on every run.
    Random,
}

/// MLPerf Storage's training workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TrainPreset {
    Unet3d,
    Resnet50,
    Cosmoflow,
}

/// The accelerator a preset's computation_time is measured on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AcceleratorKind {
    A100,
    H100,
}

/// `iolab train`: the workload as asked. Every `Option` left out comes from --preset,
/// else from DLIO's default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct TrainSpec {
    /// MLPerf Storage's workload: unet3d, resnet50 or cosmoflow (DLIO's configs).
    #[arg(long)]
    pub preset: Option<TrainPreset>,

    /// The accelerator whose computation_time the preset uses.
    #[arg(long, value_enum, default_value_t = AcceleratorKind::H100)]
    pub accelerator: AcceleratorKind,

    /// Scales the preset's number of files (samples, record sizes and batch stay), so a
    /// preset fits a laptop: 0.01 is a hundredth of the dataset.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,

    /// Where the dataset is: DLIO's data_folder (files under train/).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// File format [default: npz, or the preset's].
    #[arg(long, value_enum)]
    pub format: Option<TrainFormat>,

    /// Training files (DLIO's num_files_train) [default: 8].
    #[arg(long)]
    pub files: Option<u64>,

    /// Samples in each file [default: 1].
    #[arg(long)]
    pub samples_per_file: Option<u64>,

    /// Mean bytes of a sample (DLIO's record_length; a fraction is allowed, as resnet50's
    /// 114660.07) [default: 65536].
    #[arg(long, value_parser = parse_length)]
    pub record_length: Option<f64>,

    /// Standard deviation of a sample's bytes [default: 0].
    #[arg(long, value_parser = parse_length)]
    pub record_length_stdev: Option<f64>,

    /// Subfolders of train/ the files are spread over (DLIO's num_subfolders_train).
    #[arg(long)]
    pub subfolders: Option<u32>,

    /// The data loader whose order and sharding is followed [default: pytorch for npz,
    /// tensorflow for tfrecord].
    #[arg(long, value_enum)]
    pub loader: Option<LoaderKind>,

    /// Samples per step and accelerator [default: 1].
    #[arg(long)]
    pub batch_size: Option<u64>,

    /// Reader threads per accelerator [default: 1].
    #[arg(long)]
    pub read_threads: Option<u32>,

    /// Batches prefetched per accelerator (DLIO's prefetch_size) [default: 2].
    #[arg(long)]
    pub prefetch: Option<u32>,

    /// The tensorflow loader's parallel map over batches (DLIO's computation_threads):
    /// batches it holds ahead besides --prefetch [default: 8 for resnet50, else 1].
    #[arg(long)]
    pub computation_threads: Option<u32>,

    /// Simulated compute per step, a sleep as DLIO's [default: 0].
    #[arg(long)]
    pub computation_time: Option<TimeSpan>,

    /// Standard deviation of the compute per step [default: 0].
    #[arg(long)]
    pub computation_time_stdev: Option<TimeSpan>,

    /// Passes over the dataset [default: 1].
    #[arg(long)]
    pub epochs: Option<u32>,

    /// Steps per epoch, fewer than the dataset gives (DLIO's total_training_steps).
    #[arg(long)]
    pub steps: Option<u64>,

    /// File order shuffling [default: off].
    #[arg(long, value_enum)]
    pub file_shuffle: Option<ShuffleKind>,

    /// Sample order shuffling [default: off].
    #[arg(long, value_enum)]
    pub sample_shuffle: Option<ShuffleKind>,

    /// The tensorflow loader's shuffle buffer, in samples [default: 1024].
    #[arg(long)]
    pub shuffle_size: Option<u64>,

    /// The seed of the shuffles and of the generated sizes (DLIO's seed).
    #[arg(long, default_value_t = 123)]
    pub seed: u64,

    /// Bytes per read system call while a file is read (numpy and TFRecordDataset read
    /// 256 KiB at a time).
    #[arg(long, default_value = "256KiB")]
    pub transfer_size: ByteCount,

    /// Read with O_DIRECT (DLIO's npz_odirect reader), bypassing the page cache.
    #[arg(long)]
    pub direct: bool,

    /// Simulated accelerators in this process (threads); under MPI each rank runs this
    /// many, so the job has ranks x this.
    #[arg(long, default_value_t = 1)]
    pub accelerators: u32,

    /// The AU an epoch must reach, in % [default: the preset's, else 90].
    #[arg(long)]
    pub au_threshold: Option<f64>,
}

/// A byte length with an optional fraction (DLIO's 114660.07) or a unit (1MiB).
fn parse_length(s: &str) -> Result<f64, String> {
    if let Ok(v) = s.trim().parse::<f64>() {
        return Ok(v);
    }
    s.parse::<ByteCount>()
        .map(|b| b.get() as f64)
        .map_err(|e| e.to_string())
}

fn one_thread() -> u32 {
    1
}

impl Default for TrainSpec {
    fn default() -> Self {
        crate::spec::command_line_defaults()
    }
}

/// The workload a [`TrainSpec`] resolves to: DLIO's settings, every one concrete.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    pub preset: Option<TrainPreset>,
    pub accelerator: AcceleratorKind,
    pub format: TrainFormat,
    pub files: u64,
    pub samples_per_file: u64,
    pub record_length: f64,
    pub record_length_stdev: f64,
    pub subfolders: u32,
    pub loader: LoaderKind,
    pub batch_size: u64,
    pub read_threads: u32,
    pub prefetch: u32,
    /// tf.data's map parallelism (DLIO's computation_threads; absent in runs stored
    /// before it was modelled: 1).
    #[serde(default = "one_thread")]
    pub computation_threads: u32,
    pub computation_time: f64,
    pub computation_time_stdev: f64,
    pub epochs: u32,
    pub steps: Option<u64>,
    pub file_shuffle: ShuffleKind,
    pub sample_shuffle: ShuffleKind,
    pub shuffle_size: u64,
    pub seed: u64,
    pub transfer_size: u64,
    pub direct: bool,
    pub accelerators: u32,
    pub au_threshold: f64,
}

fn secs(t: Option<TimeSpan>) -> Option<f64> {
    t.map(|t| t.as_secs_f64())
}

impl TrainSpec {
    /// The workload, every setting concrete, or the first option that cannot run.
    pub fn resolve(&self) -> Result<TrainConfig, SpecError> {
        if !(self.scale > 0.0 && self.scale.is_finite()) {
            return Err(SpecError::new("--scale", "must be a number above 0"));
        }
        let p = self.preset.map(preset_values);
        let format = self
            .format
            .or(p.as_ref().map(|p| p.format))
            .unwrap_or(TrainFormat::Npz);
        if format == TrainFormat::Hdf5 {
            return Err(SpecError::new(
                "--format",
                "iolab does not write or read hdf5 (no well-kept pure-Rust HDF5 crate; the hdf5 crates need libhdf5): use npz or tfrecord",
            ));
        }
        let files_base = self.files.or(p.as_ref().map(|p| p.files)).unwrap_or(8);
        // --scale scales a preset's file count; explicit --files are taken as given.
        let files = if self.files.is_none() && self.preset.is_some() {
            ((files_base as f64 * self.scale).round() as u64).max(1)
        } else {
            files_base
        };
        let compute = secs(self.computation_time)
            .or(p.as_ref().map(|p| match self.accelerator {
                AcceleratorKind::A100 => p.compute_a100,
                AcceleratorKind::H100 => p.compute_h100,
            }))
            .unwrap_or(0.0);
        let default_loader = match format {
            TrainFormat::Tfrecord => LoaderKind::Tensorflow,
            _ => LoaderKind::Pytorch,
        };
        let cfg = TrainConfig {
            preset: self.preset,
            accelerator: self.accelerator,
            format,
            files,
            samples_per_file: self
                .samples_per_file
                .or(p.as_ref().map(|p| p.samples_per_file))
                .unwrap_or(1),
            record_length: self
                .record_length
                .or(p.as_ref().map(|p| p.record_length))
                .unwrap_or(65536.0),
            record_length_stdev: self
                .record_length_stdev
                .or(p.as_ref().map(|p| p.record_length_stdev))
                .unwrap_or(0.0),
            subfolders: self.subfolders.unwrap_or(0),
            loader: self
                .loader
                .or(p.as_ref().map(|p| p.loader))
                .unwrap_or(default_loader),
            batch_size: self
                .batch_size
                .or(p.as_ref().map(|p| p.batch_size))
                .unwrap_or(1),
            read_threads: self
                .read_threads
                .or(p.as_ref().map(|p| p.read_threads))
                .unwrap_or(1),
            prefetch: self.prefetch.unwrap_or(2),
            computation_threads: self
                .computation_threads
                .or(p.as_ref().map(|p| p.computation_threads))
                .unwrap_or(1),
            computation_time: compute,
            computation_time_stdev: secs(self.computation_time_stdev).unwrap_or(0.0),
            epochs: self
                .epochs
                .unwrap_or(if self.preset.is_some() { 5 } else { 1 }),
            steps: self.steps,
            file_shuffle: self
                .file_shuffle
                .or(p.as_ref().map(|p| p.shuffle))
                .unwrap_or(ShuffleKind::Off),
            sample_shuffle: self
                .sample_shuffle
                .or(p.as_ref().map(|p| p.shuffle))
                .unwrap_or(ShuffleKind::Off),
            shuffle_size: self
                .shuffle_size
                .or(p.as_ref().map(|p| p.shuffle_size))
                .unwrap_or(1024),
            seed: self.seed,
            transfer_size: self.transfer_size.get(),
            direct: self.direct,
            accelerators: self.accelerators,
            au_threshold: self
                .au_threshold
                .or(p.as_ref().map(|p| p.au))
                .unwrap_or(90.0),
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

/// The largest mean (and standard deviation) of a sample iolab takes: DLIO's largest
/// preset sample is unet3d's 140 MiB.
const MAX_RECORD_LENGTH: f64 = (1u64 << 40) as f64;

/// The most files a dataset has: 64 times DLIO's largest preset (cosmoflow, 524288).
const MAX_FILES: u64 = 1 << 25;

/// The largest training file iolab takes, so that a file's bytes and the loader's memory
/// figures stay well inside u64.
const MAX_FILE_BYTES: f64 = (1u64 << 50) as f64;

impl TrainConfig {
    /// Reader threads of one accelerator: `read_threads` for PyTorch's workers; for
    /// tf.data's parallel interleave one per open file, the `read_threads` current
    /// files and the 2 x `read_threads` future ones it opens ahead
    /// (kDefaultCyclePrefetchFactor; traced: 24 files open per DLIO resnet50 rank).
    pub fn reader_threads(&self) -> u32 {
        match self.loader {
            LoaderKind::Pytorch => self.read_threads,
            LoaderKind::Tensorflow => self.read_threads.saturating_mul(3),
        }
    }

    /// The checks that need no dataset and no job size.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.batch_size == 0 {
            return Err(SpecError::new("--batch-size", "must be at least 1"));
        }
        if self.files == 0 {
            return Err(SpecError::new("--files", "must be at least 1"));
        }
        // Sizes and plans go file by file: 2^64-1 files looped for hours, deaf to Ctrl-C.
        if self.files > MAX_FILES {
            return Err(SpecError::new(
                "--files",
                format!(
                    "{} files are more than the {MAX_FILES} iolab lays out (DLIO's largest preset has 524288; lower --files or --scale)",
                    self.files
                ),
            ));
        }
        if self.samples_per_file == 0 {
            return Err(SpecError::new("--samples-per-file", "must be at least 1"));
        }
        if !(self.record_length >= 1.0 && self.record_length <= MAX_RECORD_LENGTH) {
            return Err(SpecError::new(
                "--record-length",
                "must be at least 1 byte and at most 1TiB",
            ));
        }
        if !(self.record_length_stdev >= 0.0 && self.record_length_stdev <= MAX_RECORD_LENGTH) {
            return Err(SpecError::new(
                "--record-length-stdev",
                "must be 0 or more bytes and at most 1TiB",
            ));
        }
        // A file's bytes are counted in u64 (npz members, the loader's memory).
        if self.samples_per_file as f64 * self.record_length > MAX_FILE_BYTES {
            return Err(SpecError::new(
                "--samples-per-file",
                format!(
                    "{} samples of {} bytes make a file larger than 1PiB",
                    self.samples_per_file, self.record_length
                ),
            ));
        }
        if self.read_threads == 0 || self.read_threads > 256 {
            return Err(SpecError::new(
                "--read-threads",
                "must be between 1 and 256",
            ));
        }
        if self.computation_threads == 0 || self.computation_threads > 256 {
            return Err(SpecError::new(
                "--computation-threads",
                "must be between 1 and 256",
            ));
        }
        if self.accelerators == 0 || self.accelerators > 1024 {
            return Err(SpecError::new(
                "--accelerators",
                "must be between 1 and 1024",
            ));
        }
        if self.epochs == 0 {
            return Err(SpecError::new("--epochs", "must be at least 1"));
        }
        if self.steps == Some(0) {
            return Err(SpecError::new("--steps", "must be at least 1"));
        }
        if self.transfer_size == 0 || self.transfer_size > crate::spec::MAX_IO_SIZE {
            return Err(SpecError::new(
                "--transfer-size",
                "must be between 1 byte and 2GiB - 4KiB",
            ));
        }
        if self.direct && !self.transfer_size.is_multiple_of(4096) {
            return Err(SpecError::new(
                "--transfer-size",
                "must be a multiple of 4KiB with --direct",
            ));
        }
        if !(0.0..=100.0).contains(&self.au_threshold) {
            return Err(SpecError::new(
                "--au-threshold",
                "must be between 0 and 100",
            ));
        }
        if self.subfolders > 100_000 {
            return Err(SpecError::new("--subfolders", "must be at most 100000"));
        }
        Ok(())
    }

    /// Samples in the dataset.
    pub fn total_samples(&self) -> u64 {
        self.files.saturating_mul(self.samples_per_file)
    }

    /// Steps every accelerator takes per epoch when `accelerators` read the dataset:
    /// DLIO's floor(samples / batch / accelerators), capped by --steps. Zero means the
    /// dataset is smaller than one batch per accelerator.
    pub fn steps_per_epoch(&self, accelerators: u64) -> u64 {
        let whole = self.total_samples() / self.batch_size / accelerators.max(1);
        self.steps.map_or(whole, |s| s.min(whole))
    }

    /// Refuses a job whose accelerators would not get one batch each.
    pub fn check_job(&self, accelerators: u64) -> Result<(), SpecError> {
        if self.steps_per_epoch(accelerators) == 0 {
            return Err(SpecError::new(
                "--batch-size",
                format!(
                    "the dataset's {} samples ({} files x {}) are fewer than one batch of {} for each of the {} accelerators: lower --batch-size or add files",
                    self.total_samples(),
                    self.files,
                    self.samples_per_file,
                    self.batch_size,
                    accelerators
                ),
            ));
        }
        if let Some(s) = self.steps {
            let whole = self.total_samples() / self.batch_size / accelerators.max(1);
            if s > whole {
                return Err(SpecError::new(
                    "--steps",
                    format!(
                        "the dataset has enough samples for {whole} steps per accelerator, not {s}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The dataset's bytes as DLIO counts them (files x samples x record_length).
    pub fn dataset_bytes(&self) -> f64 {
        self.total_samples() as f64 * self.record_length
    }
}
