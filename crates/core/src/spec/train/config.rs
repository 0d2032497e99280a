//! What a resolved [`TrainConfig`] checks on its own ([`TrainConfig::validate`]) and the
//! figures it gives (reader threads, samples, steps per epoch, dataset bytes).

use super::{LoaderKind, TrainConfig, TrainFormat};
use crate::error::SpecError;
use crate::spec::BackendKind;

/// The largest mean (and standard deviation) of a sample iolab takes: DLIO's largest
/// preset sample is unet3d's 140 MiB.
const MAX_RECORD_LENGTH: f64 = (1u64 << 40) as f64;

/// The most files a dataset has: 64 times DLIO's largest preset (cosmoflow, 524288).
const MAX_FILES: u64 = 1 << 25;

/// The largest training file iolab takes, so that a file's bytes and the loader's memory
/// figures stay well inside u64.
const MAX_FILE_BYTES: f64 = (1u64 << 50) as f64;

/// The most reader threads an accelerator runs.
pub const MAX_READ_THREADS: u32 = 256;

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

    /// Writer threads of one accelerator in `train datagen`: `write_threads` for the
    /// formats whose v3.0 DLIO generator writes a rank's files through its thread pool
    /// (npz, jpeg: data_generator.py's `_generate_files`); one for tfrecord, parquet and
    /// hdf5, whose generators write a rank's files in one loop whatever `write_threads`
    /// is (tf_generator.py:58, parquet_generator.py:308, hdf5_generator.py:83 at
    /// cbe20010).
    pub fn writer_threads(&self) -> u32 {
        match self.format {
            TrainFormat::Npz | TrainFormat::Jpeg => self.write_threads,
            TrainFormat::Tfrecord | TrainFormat::Parquet | TrainFormat::Hdf5 => 1,
        }
    }

    /// The checks that need no dataset and no job size.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.validate_shape()?;
        self.validate_run()?;
        self.validate_reads()
    }

    /// The dataset's shape: batch, files, samples and their sizes.
    fn validate_shape(&self) -> Result<(), SpecError> {
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
        Ok(())
    }

    /// The run's threads, accelerators, epochs, steps, transfers, AU threshold and the
    /// dataset's subfolders.
    fn validate_run(&self) -> Result<(), SpecError> {
        if self.read_threads == 0 || self.read_threads > MAX_READ_THREADS {
            return Err(SpecError::new(
                "--read-threads",
                format!("must be between 1 and {MAX_READ_THREADS}"),
            ));
        }
        if self.write_threads == 0 || self.write_threads > super::MAX_WRITE_THREADS {
            return Err(SpecError::new(
                "--write-threads",
                format!("must be between 1 and {}", super::MAX_WRITE_THREADS),
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

    /// The readers' backend and queue depth.
    fn validate_reads(&self) -> Result<(), SpecError> {
        if !matches!(
            self.backend,
            BackendKind::Psync | BackendKind::Uring | BackendKind::Null
        ) {
            return Err(SpecError::new(
                "--backend",
                "training reads local files: use psync, uring or null",
            ));
        }
        if self.queue_depth == 0 || self.queue_depth > 1024 {
            return Err(SpecError::new("--queue-depth", "must be 1 to 1024"));
        }
        if self.queue_depth > 1 && self.backend != BackendKind::Uring {
            return Err(SpecError::new(
                "--queue-depth",
                "more than 1 read in flight needs --backend uring",
            ));
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
        let whole = match self.format {
            TrainFormat::Parquet => whole.min(self.parquet_batches()),
            _ => whole,
        };
        self.steps.map_or(whole, |s| s.min(whole))
    }

    /// The batches v3.0 DLIO's parquet loader gives an accelerator: each of its
    /// `read_threads` workers reads files `w, w + threads, ...` of the whole list and
    /// drops its last partial batch (every accelerator reads every file).
    pub fn parquet_batches(&self) -> u64 {
        let threads = u64::from(self.read_threads.max(1));
        let batch = self.batch_size.max(1);
        (0..threads.min(self.files))
            .map(|w| {
                let files = self.files / threads + u64::from(w < self.files % threads);
                files.saturating_mul(self.samples_per_file) / batch
            })
            .sum()
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
