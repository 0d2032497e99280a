//! Which samples each simulated accelerator reads in an epoch, as DLIO deals them: the
//! PyTorch sampler's sample order (shuffled per epoch by the seed, or not) cut into this
//! accelerator's batches, or the TensorFlow reader's files shuffled once and dealt
//! round-robin.

use iolab_core::rng::{Permutation, mix};
use iolab_core::spec::{ShuffleKind, TrainConfig, TrainFormat};

use crate::train::loader::Assignment;

/// DLIO's sample order for an epoch under the PyTorch sampler, and this accelerator's
/// batches of file indices.
pub(crate) fn indexed_assignment(
    cfg: &TrainConfig,
    epoch: u32,
    global: u64,
    total: u64,
) -> Assignment {
    if cfg.format == TrainFormat::Parquet {
        // v3.0 DLIO's parquet loader is an iterable dataset over the whole file list:
        // every accelerator reads every file, no sampler deals samples.
        return Assignment::RowGroups {
            files: file_order(cfg),
        };
    }
    let samples = cfg.total_samples();
    let per_acc = samples / total;
    let perm = match cfg.sample_shuffle {
        ShuffleKind::Off => None,
        ShuffleKind::Seed => Some(Permutation::new(
            samples,
            mix(&[cfg.seed, u64::from(epoch)]),
        )),
        ShuffleKind::Random => Some(Permutation::new(
            samples,
            mix(&[cfg.seed, u64::from(epoch), random_seed()]),
        )),
    };
    let start = global * per_acc;
    let steps = cfg.steps_per_epoch(total) as usize;
    let mut batches = Vec::with_capacity(steps);
    let mut cur = Vec::with_capacity(cfg.batch_size as usize);
    for i in start..start + per_acc {
        let s = perm.as_ref().map_or(i, |p| p.get(i));
        cur.push((s / cfg.samples_per_file) as usize);
        if cur.len() as u64 == cfg.batch_size {
            batches.push(std::mem::take(&mut cur));
            if batches.len() == steps {
                break;
            }
        }
    }
    Assignment::Indexed { batches }
}

fn random_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ u64::from(std::process::id())
}

/// The TensorFlow reader's files for this accelerator: the list shuffled once by the
/// seed (DLIO shuffles it before building the dataset), then dealt round-robin.
pub(crate) fn files_assignment(
    cfg: &TrainConfig,
    global: u64,
    total: u64,
    order: &[usize],
) -> Assignment {
    let files: Vec<usize> = if cfg.files >= total {
        order
            .iter()
            .enumerate()
            .filter(|(i, _)| *i as u64 % total == global)
            .map(|(_, f)| *f)
            .collect()
    } else {
        // Fewer files than accelerators: every accelerator reads every file (tf.data
        // shards the records then), keeping its share of the samples.
        order.to_vec()
    };
    Assignment::Files {
        files,
        samples: cfg.samples_per_file,
    }
}

pub(crate) fn file_order(cfg: &TrainConfig) -> Vec<usize> {
    let n = cfg.files;
    match cfg.file_shuffle {
        ShuffleKind::Off => (0..n as usize).collect(),
        s => {
            let seed = if s == ShuffleKind::Seed {
                mix(&[cfg.seed, 1])
            } else {
                random_seed()
            };
            let p = Permutation::new(n, seed);
            (0..n).map(|i| p.get(i) as usize).collect()
        }
    }
}
