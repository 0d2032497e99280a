//! A training dataset on disk as DLIO lays it out: `<data-dir>/train/img_*_of_N.<ext>`,
//! optionally in subfolders. [`Dataset::open`] lists it as DLIO's main.py does (sorted
//! by file name, the first `files` taken) whoever wrote it; [`DatasetMarker`] is what
//! iolab leaves beside a dataset it wrote, so that it rewrites only its own.

use std::path::{Path, PathBuf};

use iolab_core::SpecError;
use iolab_core::spec::{TrainConfig, TrainFormat};
use serde::{Deserialize, Serialize};

use crate::AiError;

/// The marker iolab writes in a data directory it generated.
pub const MARKER: &str = ".iolab-dataset";

/// What the marker records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetMarker {
    pub generator: String,
    pub format: TrainFormat,
    pub files: u64,
    pub samples_per_file: u64,
    pub record_length: f64,
    pub record_length_stdev: f64,
    pub seed: u64,
}

/// The training files, in the order DLIO lists them.
#[derive(Clone, Debug)]
pub struct Dataset {
    pub dir: PathBuf,
    pub files: Vec<PathBuf>,
    /// Each file's bytes, by index.
    pub sizes: Vec<u64>,
}

impl Dataset {
    pub fn total_bytes(&self) -> u64 {
        self.sizes.iter().sum()
    }

    /// Lists `dir/train` as DLIO does and keeps the first `cfg.files` files; refuses a
    /// directory holding fewer, naming what it found.
    pub fn open(dir: &Path, cfg: &TrainConfig) -> Result<Dataset, AiError> {
        let train = dir.join("train");
        let ext = cfg.format.extension();
        let entries = list(&train).map_err(|e| {
            AiError::Spec(SpecError::new(
                "--data-dir",
                format!(
                    "{} cannot be read ({e}): generate a dataset there first (iolab train datagen)",
                    train.display()
                ),
            ))
        })?;
        let mut files: Vec<PathBuf> = Vec::new();
        let dirs: Vec<&PathBuf> = entries.iter().filter(|p| p.is_dir()).collect();
        if !dirs.is_empty() {
            for d in dirs {
                if let Ok(inner) = list(d) {
                    files.extend(inner.into_iter().filter(|p| has_ext(p, ext)));
                }
            }
            files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
        } else {
            files.extend(entries.into_iter().filter(|p| has_ext(p, ext)));
            files.sort();
        }
        if (files.len() as u64) < cfg.files {
            return Err(AiError::Spec(SpecError::new(
                "--data-dir",
                format!(
                    "{} holds {} .{ext} files, fewer than the {} the workload reads: generate them first (iolab train datagen with the same options)",
                    train.display(),
                    files.len(),
                    cfg.files
                ),
            )));
        }
        files.truncate(cfg.files as usize);
        let sizes = files
            .iter()
            .map(|f| std::fs::metadata(f).map(|m| m.len()))
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|e| AiError::Setup(format!("{}: {e}", train.display())))?;
        Ok(Dataset {
            dir: dir.to_path_buf(),
            files,
            sizes,
        })
    }
}

fn has_ext(p: &Path, ext: &str) -> bool {
    p.is_file()
        && p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(ext))
}

fn list(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        out.push(e?.path());
    }
    out.sort();
    Ok(out)
}
