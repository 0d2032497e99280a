//! AI training I/O (`iolab train`): [`TrainSpec`] is what the user asked for (a preset of
//! MLPerf Storage's, DLIO's options, each overriding the preset), [`TrainConfig`] the
//! workload it resolves to, every figure concrete. The presets are DLIO's workload files:
//! MLPerf Storage v2.0's and v3.0's ([`presets`]), v3.0's categories in [`mode`], parquet's
//! columns in [`parquet`].

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::error::SpecError;
use crate::spec::BackendKind;
use crate::units::{ByteCount, TimeSpan};

mod config;
mod mode;
mod parquet;
mod presets;
mod threads;
pub use config::MAX_READ_THREADS;
pub use mode::MlperfMode;
pub use parquet::{ParquetColumn, ParquetDtype, ParquetSchema, read_columns};
pub use presets::{DLRM_READ, preset_accelerators};
pub use threads::{
    DLIO_AUTO_READ_THREADS_CAP, DLIO_AUTO_WRITE_THREADS_CAP, MAX_WRITE_THREADS, ThreadsKind,
    ThreadsSizing,
};

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
    /// v3.0's retinanet ".jpeg": raw random bytes (dim1 x dim2), not a JPEG bitstream,
    /// as DLIO writes them for its PyTorch loader; read whole per sample.
    Jpeg,
    /// Apache Parquet (dlrm, flux): row groups of the config's columns.
    Parquet,
}

impl TrainFormat {
    pub fn extension(self) -> &'static str {
        match self {
            TrainFormat::Npz => "npz",
            TrainFormat::Tfrecord => "tfrecord",
            TrainFormat::Hdf5 => "hdf5",
            TrainFormat::Jpeg => "jpeg",
            TrainFormat::Parquet => "parquet",
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
    /// v3.0: jpeg files, closed and open on b200/mi355.
    Retinanet,
    /// v3.0 whatif: parquet, 200 columns.
    Dlrm,
    /// v3.0 whatif: parquet, five list columns.
    Flux,
}

/// The accelerator a preset's computation_time is measured on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AcceleratorKind {
    A100,
    H100,
    /// v3.0's closed and open accelerators.
    B200,
    Mi355,
}

/// `iolab train`: the workload as asked. Every `Option` left out comes from --preset,
/// else from DLIO's default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct TrainSpec {
    /// MLPerf Storage's workload (DLIO's configs): v2.0's unet3d, resnet50, cosmoflow;
    /// v3.0's unet3d, retinanet (closed/open on b200, mi355), dlrm, flux (whatif).
    #[arg(long)]
    pub preset: Option<TrainPreset>,

    /// The accelerator whose computation_time, batch and AU the preset uses (v3.0:
    /// b200 and mi355 closed/open; h100 and a100 whatif only).
    #[arg(long, value_enum, default_value_t = AcceleratorKind::H100)]
    pub accelerator: AcceleratorKind,

    /// MLPerf Storage v3.0's category with a preset: closed, open or whatif [default:
    /// closed for unet3d and retinanet on b200/mi355, else whatif].
    #[arg(long, value_enum)]
    pub mode: Option<MlperfMode>,

    /// Parquet: the columns read: `all` (DLIO's reader: every row group read whole),
    /// `config` (the config's `read: true` columns, each read on its own) or a comma
    /// list of names [default: all].
    #[arg(long, value_name = "all|config|NAMES")]
    pub columns: Option<String>,

    /// Parquet: rows per row group [default: the preset's, else 1024 as DLIO's].
    #[arg(long)]
    pub row_group_size: Option<u64>,

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

    /// Reader threads per accelerator [default: 1]. A 1 is sized as v3.0 DLIO sizes it:
    /// min(the host's CPUs / its accelerators, 8 or DLIO_MAX_AUTO_THREADS).
    #[arg(long)]
    pub read_threads: Option<u32>,

    /// Take a --read-threads of 1 as one thread, not sized as v3.0 DLIO sizes it.
    #[arg(long)]
    pub exact_read_threads: bool,

    /// `train datagen`: writer threads per accelerator (DLIO's write_threads) [default:
    /// 1]. A 1 is sized as v3.0 DLIO sizes it: min(the host's CPUs / its accelerators,
    /// 32 or DLIO_MAX_AUTO_THREADS).
    #[arg(long)]
    pub write_threads: Option<u32>,

    /// Take a --write-threads of 1 as one thread, not sized as v3.0 DLIO sizes it.
    #[arg(long)]
    pub exact_write_threads: bool,

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

    /// How `train run` and `train search` read: psync (one pread at a time, as numpy
    /// and TensorFlow), uring (io_uring, --queue-depth reads in flight per reader
    /// thread), null (no storage: the loader's own ceiling, not a storage figure).
    #[arg(long, value_enum, default_value_t = BackendKind::Psync)]
    pub backend: BackendKind,

    /// Reads in flight per reader thread (--backend uring only).
    #[arg(long, default_value_t = 1)]
    pub queue_depth: u32,
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

fn psync() -> BackendKind {
    BackendKind::Psync
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
    /// v3.0's category (None without a preset, and in runs stored before v3.0).
    #[serde(default)]
    pub mode: Option<MlperfMode>,
    /// Parquet's columns and row groups (None for the other formats).
    #[serde(default)]
    pub parquet: Option<ParquetSchema>,
    /// Parquet: the columns read, each on its own; None reads row groups whole (DLIO).
    #[serde(default)]
    pub read_columns: Option<Vec<String>>,
    pub format: TrainFormat,
    pub files: u64,
    pub samples_per_file: u64,
    pub record_length: f64,
    pub record_length_stdev: f64,
    pub subfolders: u32,
    pub loader: LoaderKind,
    pub batch_size: u64,
    /// The threads each accelerator reads with: as asked, or sized from 1 (below).
    pub read_threads: u32,
    /// How a read_threads of 1 was sized as v3.0 DLIO sizes it (None: taken as asked;
    /// runs stored before the sizing have none).
    #[serde(default)]
    pub read_threads_sizing: Option<ThreadsSizing>,
    /// --exact-read-threads: a read_threads of 1 is one thread.
    #[serde(default)]
    pub exact_read_threads: bool,
    /// DLIO's write_threads (`train datagen`): as asked, or sized from 1 as v3.0 DLIO
    /// sizes it (absent in runs stored before: 1); the threads an accelerator writes
    /// with are [`TrainConfig::writer_threads`].
    #[serde(default = "one_thread")]
    pub write_threads: u32,
    /// How a write_threads of 1 was sized (None: taken as asked, or not a datagen).
    #[serde(default)]
    pub write_threads_sizing: Option<ThreadsSizing>,
    /// --exact-write-threads: a write_threads of 1 is one thread.
    #[serde(default)]
    pub exact_write_threads: bool,
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
    /// How the readers read (absent in runs stored before it was a choice: psync).
    #[serde(default = "psync")]
    pub backend: BackendKind,
    #[serde(default = "one_thread")]
    pub queue_depth: u32,
}

fn secs(t: Option<TimeSpan>) -> Option<f64> {
    t.map(|t| t.as_secs_f64())
}

/// A setting as given, else the preset's, else `default`.
fn preset_or<T>(
    given: Option<T>,
    preset: Option<&presets::PresetValues>,
    of: impl FnOnce(&presets::PresetValues) -> T,
    default: T,
) -> T {
    given.or_else(|| preset.map(of)).unwrap_or(default)
}

impl TrainSpec {
    /// --data-dir, which every command on a dataset needs.
    pub fn data_dir(&self) -> Result<&std::path::Path, SpecError> {
        self.data_dir.as_deref().ok_or_else(|| {
            SpecError::new(
                "--data-dir",
                "is required: where the dataset is (DLIO's data_folder)",
            )
        })
    }

    /// The workload, every setting concrete, or the first option that cannot run.
    pub fn resolve(&self) -> Result<TrainConfig, SpecError> {
        if !(self.scale > 0.0 && self.scale.is_finite()) {
            return Err(SpecError::new("--scale", "must be a number above 0"));
        }
        let resolved = mode::resolve_preset(self)?;
        let mode = resolved.as_ref().map(|r| r.1);
        let p = resolved.map(|r| r.0);
        let (format, record_length, parquet, read_columns) = self.format_parts(p.as_ref())?;
        let p = p.as_ref();
        let files_base = preset_or(self.files, p, |p| p.files, 8);
        // --scale scales a preset's file count; explicit --files are taken as given.
        let files = if self.files.is_none() && self.preset.is_some() {
            ((files_base as f64 * self.scale).round() as u64).max(1)
        } else {
            files_base
        };
        let compute = preset_or(secs(self.computation_time), p, |p| p.compute, 0.0);
        let default_loader = match format {
            TrainFormat::Tfrecord => LoaderKind::Tensorflow,
            _ => LoaderKind::Pytorch,
        };
        let cfg = TrainConfig {
            preset: self.preset,
            accelerator: self.accelerator,
            mode,
            parquet,
            read_columns,
            format,
            files,
            samples_per_file: preset_or(self.samples_per_file, p, |p| p.samples_per_file, 1),
            record_length,
            record_length_stdev: preset_or(
                self.record_length_stdev,
                p,
                |p| p.record_length_stdev,
                0.0,
            ),
            subfolders: self.subfolders.unwrap_or(0),
            loader: preset_or(self.loader, p, |p| p.loader, default_loader),
            batch_size: preset_or(self.batch_size, p, |p| p.batch_size, 1),
            read_threads: preset_or(self.read_threads, p, |p| p.read_threads, 1),
            // Sized with the host's CPUs and accelerators by iolab_suites::train::threads.
            read_threads_sizing: None,
            exact_read_threads: self.exact_read_threads,
            // No preset names write_threads: DLIO's default 1, sized by datagen.
            write_threads: self.write_threads.unwrap_or(1),
            write_threads_sizing: None,
            exact_write_threads: self.exact_write_threads,
            prefetch: self.prefetch.unwrap_or(2),
            computation_threads: preset_or(
                self.computation_threads,
                p,
                |p| p.computation_threads,
                1,
            ),
            computation_time: compute,
            computation_time_stdev: secs(self.computation_time_stdev).unwrap_or(0.0),
            epochs: preset_or(self.epochs, p, |p| p.epochs, 1),
            steps: self.steps,
            file_shuffle: preset_or(self.file_shuffle, p, |p| p.file_shuffle, ShuffleKind::Off),
            sample_shuffle: preset_or(
                self.sample_shuffle,
                p,
                |p| p.sample_shuffle,
                ShuffleKind::Off,
            ),
            shuffle_size: preset_or(self.shuffle_size, p, |p| p.shuffle_size, 1024),
            seed: self.seed,
            transfer_size: self.transfer_size.get(),
            direct: self.direct,
            accelerators: self.accelerators,
            au_threshold: preset_or(self.au_threshold, p, |p| p.au, 90.0),
            backend: self.backend,
            queue_depth: self.queue_depth,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

impl TrainSpec {
    /// The format and what hangs on it: the record length, parquet's schema and the
    /// columns read.
    #[allow(clippy::type_complexity)]
    fn format_parts(
        &self,
        p: Option<&presets::PresetValues>,
    ) -> Result<(TrainFormat, f64, Option<ParquetSchema>, Option<Vec<String>>), SpecError> {
        let format = self
            .format
            .or(p.map(|p| p.format))
            .unwrap_or(TrainFormat::Npz);
        if format == TrainFormat::Hdf5 {
            return Err(SpecError::new(
                "--format",
                "iolab does not write or read hdf5 (no well-kept pure-Rust HDF5 crate; the hdf5 crates need libhdf5): use npz or tfrecord",
            ));
        }
        let record_length = self
            .record_length
            .or(p.map(|p| p.record_length))
            .unwrap_or(65536.0);
        let parquet = self.parquet_schema(format, p, record_length)?;
        let read_columns = match &parquet {
            Some(s) => read_columns(self.columns.as_deref(), s)?,
            None if self.columns.is_some() => {
                return Err(SpecError::new(
                    "--columns",
                    format!("is parquet's; this workload reads {}", format.extension()),
                ));
            }
            None => None,
        };
        Ok((format, record_length, parquet, read_columns))
    }

    /// Parquet's schema: the preset's (its row group size overridden by
    /// --row-group-size), else one column of a record's bytes; None for other formats.
    fn parquet_schema(
        &self,
        format: TrainFormat,
        p: Option<&presets::PresetValues>,
        record_length: f64,
    ) -> Result<Option<ParquetSchema>, SpecError> {
        if format != TrainFormat::Parquet {
            if self.row_group_size.is_some() {
                return Err(SpecError::new(
                    "--row-group-size",
                    format!("is parquet's; this workload reads {}", format.extension()),
                ));
            }
            return Ok(None);
        }
        if self.row_group_size == Some(0) {
            return Err(SpecError::new("--row-group-size", "must be at least 1"));
        }
        let mut schema = p
            .and_then(|p| p.parquet.clone())
            .unwrap_or_else(|| ParquetSchema::single(record_length as u64, 1024));
        if let Some(r) = self.row_group_size {
            schema.row_group_size = r;
        }
        if self
            .record_length
            .is_some_and(|r| r as u64 != schema.row_bytes())
        {
            return Err(SpecError::new(
                "--record-length",
                format!(
                    "a parquet row of this workload's columns is {} bytes; drop --record-length or the preset",
                    schema.row_bytes()
                ),
            ));
        }
        Ok(Some(schema))
    }
}
