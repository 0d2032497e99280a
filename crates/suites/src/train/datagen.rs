//! `iolab train datagen`: writes a dataset as DLIO's generators do (file `i` by writer
//! `i mod writers`, every rank's threads writers), sizes drawn as DLIO draws them: two
//! dimensions per file from N(int(sqrt(record_length)), stdev / 2 / sqrt(record_length)),
//! a sample being dim1 x dim2 bytes. The data is pseudo-random; CRCs are computed as the
//! bytes stream out, so each file is written once from start to end (an npz's first
//! header, which carries its CRC, is written again at the end, as Python's zipfile does).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use iolab_backend::files::{DataFile, OpenSpec};
use iolab_comm::{Comm, CommExt};
use iolab_compat::dlio::{file_name, subfolder};
use iolab_core::spec::TrainConfig;
use iolab_core::units::Nanos;
use iolab_core::{LatencyHistogram, SpecError};

use crate::train::TrainError;
use crate::train::dataset::{DatasetMarker, MARKER};
use crate::train::format::{self, CHUNK, Sink};

pub use crate::train::format::{dimension, dims, file_len};

/// What a generation wrote, all ranks together on rank 0 (this rank's elsewhere).
#[derive(Clone, Debug)]
pub struct GenOutcome {
    pub files: u64,
    pub bytes: u64,
    pub writes: u64,
    pub elapsed: Nanos,
    pub histogram: LatencyHistogram,
    pub interrupted: bool,
}

/// File `index`'s path under `dir`.
pub fn file_path(dir: &Path, cfg: &TrainConfig, index: u64) -> PathBuf {
    let mut p = dir.join("train");
    if let Some(sub) = subfolder(index, cfg.subfolders) {
        p.push(sub);
    }
    p.push(file_name(index, cfg.files, cfg.format.extension()));
    p
}

/// Checks the data directory and takes it: new or empty, or one iolab generated (its
/// marker). Files of an earlier generation that this one does not rewrite are removed,
/// so DLIO's sorted listing sees only this dataset.
fn prepare_dir(dir: &Path, cfg: &TrainConfig) -> Result<(), TrainError> {
    let marker = dir.join(MARKER);
    let refuse = |why: String| TrainError::Spec(SpecError::new("--data-dir", why));
    if dir.exists() {
        let entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| refuse(format!("{} cannot be read: {e}", dir.display())))?
            .filter_map(Result::ok)
            .collect();
        if !entries.is_empty() && !marker.exists() {
            return Err(refuse(format!(
                "{} holds files iolab did not write (no {MARKER} marker); iolab writes a dataset only into a new or empty directory, or one it generated",
                dir.display()
            )));
        }
        if marker.exists() {
            remove_old_files(&dir.join("train"));
        }
    }
    let subdirs: Vec<PathBuf> = (0..cfg.files.min(u64::from(cfg.subfolders.max(1))))
        .map(|i| file_path(dir, cfg, i).parent().unwrap().to_path_buf())
        .collect();
    // DLIO lists valid/ as well (and fails without it): its generator makes both.
    let top = [dir.join("train"), dir.join("valid")];
    for d in subdirs.iter().chain(top.iter()) {
        std::fs::create_dir_all(d)
            .map_err(|e| TrainError::Setup(format!("{}: {e}", d.display())))?;
    }
    let m = DatasetMarker {
        generator: format!("iolab {}", env!("CARGO_PKG_VERSION")),
        format: cfg.format,
        files: cfg.files,
        samples_per_file: cfg.samples_per_file,
        record_length: cfg.record_length,
        record_length_stdev: cfg.record_length_stdev,
        seed: cfg.seed,
    };
    std::fs::write(&marker, serde_json::to_vec_pretty(&m).unwrap_or_default())
        .map_err(|e| TrainError::Setup(format!("{}: {e}", marker.display())))
}

/// The dataset's bytes once written: every file's exact length.
pub fn dataset_bytes(cfg: &TrainConfig) -> u64 {
    (0..cfg.files).map(|i| file_len(cfg, i)).sum()
}

/// Bytes of the dataset files an earlier iolab generation left in `train` (replaced by
/// a new generation, so their space counts as free).
fn old_files_bytes(train: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(train) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| {
            let p = e.path();
            match e.metadata() {
                Ok(m) if m.is_dir() => old_files_bytes(&p),
                Ok(m) if is_dataset_file(&p) => m.len(),
                _ => 0,
            }
        })
        .sum()
}

/// Refuses a dataset that does not fit in the free space under `dir` (counting the
/// files of an earlier iolab generation there, which it replaces), before anything is
/// written.
pub fn check_space(dir: &Path, cfg: &TrainConfig) -> Result<(), SpecError> {
    let need = dataset_bytes(cfg);
    let on = dir.ancestors().find(|a| a.exists()).unwrap_or(dir);
    let mine = if dir.join(MARKER).exists() {
        old_files_bytes(&dir.join("train"))
    } else {
        0
    };
    let short = iolab_backend::files::space_short(on, need.saturating_sub(mine))
        .map_err(|e| SpecError::new("--data-dir", format!("{}: {e}", dir.display())))?;
    if let Some(free) = short {
        let gib = |b: u64| b as f64 / 1073741824.0;
        return Err(SpecError::new(
            "--files",
            format!(
                "{} files need {:.2} GiB, more than the {:.2} GiB free in {}: lower --files or --scale",
                cfg.files,
                gib(need),
                gib(free.saturating_add(mine)),
                on.display()
            ),
        ));
    }
    Ok(())
}

fn is_dataset_file(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(format::is_dataset_name)
}

/// Removes the dataset files an earlier iolab generation left (names `img_*_of_*.npz`
/// or `.tfrecord`, and their emptied subfolders).
fn remove_old_files(train: &Path) {
    let Ok(entries) = std::fs::read_dir(train) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            remove_old_files(&p);
            let _ = std::fs::remove_dir(&p);
        } else if is_dataset_file(&p) {
            let _ = std::fs::remove_file(&p);
        }
    }
}

/// Buffered writes at increasing offsets, each write call timed.
struct Out<'a> {
    file: DataFile,
    pending: Vec<u8>,
    offset: u64,
    hist: &'a mut LatencyHistogram,
    writes: u64,
    stop: &'a AtomicBool,
}

impl Sink for Out<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), TrainError> {
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TrainError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let t = Instant::now();
        self.file
            .write_all_at(&self.pending, self.offset)
            .map_err(|e| TrainError::Io(e.to_string()))?;
        self.hist.record(t.elapsed().as_nanos() as u64);
        self.writes += 1;
        self.offset += self.pending.len() as u64;
        self.pending.clear();
        Ok(())
    }

    fn rewrite(&mut self, bytes: &[u8], offset: u64) -> Result<(), TrainError> {
        self.file
            .write_all_at(bytes, offset)
            .map_err(|e| TrainError::Io(e.to_string()))
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Writes file `index`; returns its bytes and write calls.
fn write_file(
    dir: &Path,
    cfg: &TrainConfig,
    index: u64,
    hist: &mut LatencyHistogram,
    stop: &AtomicBool,
) -> Result<(u64, u64), TrainError> {
    let path = file_path(dir, cfg, index);
    let file = DataFile::open(
        &path,
        OpenSpec {
            write: true,
            create: true,
            truncate: true,
            ..OpenSpec::default()
        },
    )
    .map_err(|e| TrainError::Io(e.to_string()))?;
    let mut out = Out {
        file,
        pending: Vec::with_capacity(CHUNK + 4096),
        offset: 0,
        hist,
        writes: 0,
        stop,
    };
    format::write_body(cfg, index, &mut out)?;
    out.flush()?;
    Ok((out.offset, out.writes))
}

/// Writes this rank's share of the dataset with `threads` writers; rank 0 returns every
/// rank's totals. Collective.
pub fn generate(
    comm: &dyn Comm,
    dir: &Path,
    cfg: &TrainConfig,
    threads: u32,
    interrupt: &AtomicBool,
) -> Result<GenOutcome, TrainError> {
    let prepared = if comm.rank() == 0 {
        prepare_dir(dir, cfg)
    } else {
        Ok(())
    };
    let ok = comm.all_ok(prepared.is_ok());
    prepared?;
    if !ok {
        return Err(TrainError::Setup(
            "another rank could not prepare the data directory".into(),
        ));
    }
    let writers = u64::from(comm.size()) * u64::from(threads.max(1));
    let started = Instant::now();
    let results: Vec<Result<(u64, u64, u64, LatencyHistogram), TrainError>> =
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads.max(1))
                .map(|t| {
                    s.spawn(move || {
                        let me = u64::from(comm.rank()) * u64::from(threads.max(1)) + u64::from(t);
                        let mut hist = LatencyHistogram::new();
                        let (mut files, mut bytes, mut writes) = (0, 0, 0);
                        let mut i = me;
                        while i < cfg.files {
                            let (b, w) = write_file(dir, cfg, i, &mut hist, interrupt)?;
                            files += 1;
                            bytes += b;
                            writes += w;
                            i += writers;
                        }
                        Ok((files, bytes, writes, hist))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(TrainError::Setup("a writer thread panicked".into()))
                    })
                })
                .collect()
        });
    let mut hist = LatencyHistogram::new();
    let (mut files, mut bytes, mut writes) = (0u64, 0u64, 0u64);
    let mut first_err = None;
    for r in results {
        match r {
            Ok((f, b, w, h)) => {
                files += f;
                bytes += b;
                writes += w;
                hist.merge(&h);
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    let elapsed = Nanos(started.elapsed().as_nanos() as u64);
    let all_ok = comm.all_ok(first_err.is_none());
    if let Some(e) = first_err {
        return Err(e);
    }
    if !all_ok {
        return Err(TrainError::Io(
            "another rank failed to write its files".into(),
        ));
    }
    let files = comm.all_sum(files);
    let bytes = comm.all_sum(bytes);
    let writes = comm.all_sum(writes);
    let elapsed = Nanos(comm.all_max(elapsed.0));
    let hists = comm
        .gather(0, &hist.to_bytes().unwrap_or_default())
        .map_err(|e| TrainError::Setup(e.to_string()))?;
    let mut merged = LatencyHistogram::new();
    for h in hists {
        if let Ok(h) = LatencyHistogram::from_bytes(&h) {
            merged.merge(&h);
        }
    }
    Ok(GenOutcome {
        files,
        bytes,
        writes,
        elapsed,
        histogram: if comm.rank() == 0 { merged } else { hist },
        interrupted: interrupt.load(Ordering::Relaxed),
    })
}
