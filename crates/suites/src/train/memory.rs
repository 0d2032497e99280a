//! The memory a training job's loader holds: iolab's read buffers and DLIO's
//! ([`memory_per_accelerator`]), the batches prefetched ahead ([`prefetched`]), and the
//! pre-flight that refuses a job whose loader could not fit on the host
//! ([`check_memory`]).

use std::path::Path;

use iolab_core::SpecError;
use iolab_core::spec::{LoaderKind, TrainConfig};
use iolab_core::units::ByteCount;
use iolab_engine::Available;

use super::{Dataset, loader};

/// What one accelerator's loader holds: iolab's read buffers (each reader thread a
/// slot per read in flight, each slot its largest read: a parquet row group, a jpeg
/// file, else --transfer-size; `largest_file` the dataset's), and DLIO's (a whole file
/// per reader thread while it loads, and prefetched batches of samples).
pub fn memory_per_accelerator(cfg: &TrainConfig, largest_file: u64) -> (u64, u64) {
    let iolab =
        u64::from(cfg.reader_threads()).saturating_mul(loader::reader_buffers(cfg, largest_file));
    let file = cfg.record_length as u64 * cfg.samples_per_file;
    let dlio = (u64::from(cfg.read_threads) * file).saturating_add(prefetched(cfg));
    (iolab, dlio)
}

/// The samples a training job's loader holds ahead of one accelerator: prefetch x batch
/// x the mean sample size (the and MLPerf's memory figure for a reader).
/// For tf.data the parallel map's `computation_threads` batches count too (DLIO's
/// `batch().map(num_parallel_calls=computation_threads).prefetch(prefetch_size)`).
pub fn prefetched(cfg: &TrainConfig) -> u64 {
    (batches_ahead(cfg) as f64 * cfg.batch_size as f64 * cfg.record_length).min(u64::MAX as f64)
        as u64
}

fn batches_ahead(cfg: &TrainConfig) -> u64 {
    match cfg.loader {
        LoaderKind::Pytorch => u64::from(cfg.prefetch),
        LoaderKind::Tensorflow => u64::from(cfg.prefetch) + u64::from(cfg.computation_threads),
    }
}

/// The memory pre-flight, before anything is read: the prefetched batches a training
/// job's loader would hold for this host's accelerators (prefetch x batch x sample size
/// each), and iolab's own read buffers, against what the host can give. Either one over
/// 80 % of it is refused with the figure: iolab does not keep the samples it reads, but
/// a workload whose loader could not fit on the host is not one a host could train.
pub fn check_memory(
    cfg: &TrainConfig,
    dataset: &Dataset,
    ranks_on_host: u32,
) -> Result<(u64, u64), SpecError> {
    let largest = dataset.sizes.iter().copied().max().unwrap_or(0);
    let (mine, dlio) = memory_per_accelerator(cfg, largest);
    let accs = u64::from(cfg.accelerators) * u64::from(ranks_on_host.max(1));
    let need = mine.saturating_mul(accs);
    let held = prefetched(cfg).saturating_mul(accs);
    if let Some(have) = Available::read(Path::new("/")).bytes() {
        let limit = have as f64 * 0.8;
        if held as f64 > limit {
            return Err(SpecError::new(
                "--prefetch",
                format!(
                    "{accs} accelerators x prefetch {} x batch {} x {} samples: a loader holds {} on this host, more than 80% of the {} available: lower --prefetch, --batch-size or the accelerators",
                    match cfg.loader {
                        LoaderKind::Pytorch => cfg.prefetch.to_string(),
                        LoaderKind::Tensorflow => format!(
                            "{} + {} (the map's computation threads)",
                            cfg.prefetch, cfg.computation_threads
                        ),
                    },
                    cfg.batch_size,
                    ByteCount(cfg.record_length as u64).human(),
                    ByteCount(held).human(),
                    ByteCount(have).human()
                ),
            ));
        }
        if need as f64 > limit {
            return Err(SpecError::new(
                "--read-threads",
                format!(
                    "{accs} accelerators x {} reader threads x {} of read buffers each (a {} slot per read in flight) need {} on this host, more than 80% of the {} available: lower one of them or --queue-depth",
                    cfg.reader_threads(),
                    ByteCount(loader::reader_buffers(cfg, largest)).human(),
                    ByteCount(loader::read_slot(cfg, largest)).human(),
                    ByteCount(need).human(),
                    ByteCount(have).human()
                ),
            ));
        }
    }
    Ok((need, dlio.saturating_mul(accs)))
}
