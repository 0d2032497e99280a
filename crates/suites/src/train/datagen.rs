//! `iolab train datagen`: writes a dataset as v3.0 DLIO's generators do: file `i` by the
//! job's accelerator `i mod accelerators`, each accelerator's files by its
//! `write_threads` threads ([`Writers`], sized by [`super::writers::sized_writers`]);
//! sizes drawn as DLIO draws them: two dimensions per file from
//! N(int(sqrt(record_length)), stdev / 2 / sqrt(record_length)), a sample being dim1 x
//! dim2 bytes. The data is pseudo-random from the seed and the file's index alone,
//! whichever thread writes it; CRCs are computed as the bytes stream out, so each file
//! is written once from start to end (an npz's first header, which carries its CRC, is
//! written again at the end, as Python's zipfile does). The writing is a write phase on
//! the engine ([`run_file_phase`]): a worker per writer thread, each write through its
//! backend, timed into its recorder.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use iolab_backend::files::OpenSpec;
use iolab_comm::Comm;
use iolab_compat::dlio::{file_name, subfolder};
use iolab_core::SpecError;
use iolab_core::result::PhaseResult;
use iolab_core::spec::{BackendKind, TrainConfig};
use iolab_core::units::Nanos;
use iolab_engine::train::{FileIo, FileOps, FilePhaseSpec, run_file_phase};
use iolab_engine::{Clock, EngineError, Env, MonotonicClock};

use crate::AiError;
use crate::train::dataset::{DatasetMarker, MARKER};
use crate::train::format::{self, CHUNK, Sink};
use crate::train::writers::{WRITE_BUFFER, Writers};

pub use crate::train::format::{dimension, dims, file_len};

/// What a generation wrote, all ranks together on rank 0 (this rank's elsewhere).
#[derive(Clone, Debug)]
pub struct GenOutcome {
    pub files: u64,
    pub bytes: u64,
    pub writes: u64,
    pub elapsed: Nanos,
    pub interrupted: bool,
    /// The write phase (every rank's on rank 0), its `format` and `write_threads` among
    /// its parameters, `files` and `files_per_sec` among its figures.
    pub phase: PhaseResult,
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
fn prepare_dir(dir: &Path, cfg: &TrainConfig) -> Result<(), AiError> {
    let marker = dir.join(MARKER);
    let refuse = |why: String| AiError::Spec(SpecError::new("--data-dir", why));
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
        std::fs::create_dir_all(d).map_err(|e| AiError::Setup(format!("{}: {e}", d.display())))?;
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
        .map_err(|e| AiError::Setup(format!("{}: {e}", marker.display())))
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

/// Writes at increasing offsets from the backend's buffer, which the format's bytes
/// are put into until a chunk is full (each write call timed by the engine).
struct Out<'o, 'f, C: Clock> {
    ops: &'o mut FileOps<'f, C>,
    pending: usize,
    offset: u64,
    writes: u64,
    stop: &'o AtomicBool,
}

fn io_error(e: EngineError) -> AiError {
    AiError::Io(e.to_string())
}

impl<C: Clock> Sink for Out<'_, '_, C> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), AiError> {
        let at = self.pending;
        self.ops.buffer()[at..at + bytes.len()].copy_from_slice(bytes);
        self.pending += bytes.len();
        if self.pending >= CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AiError> {
        if self.pending == 0 {
            return Ok(());
        }
        self.ops
            .write(self.pending as u64, self.offset)
            .map_err(io_error)?;
        self.writes += 1;
        self.offset += self.pending as u64;
        self.pending = 0;
        Ok(())
    }

    fn rewrite(&mut self, bytes: &[u8], offset: u64) -> Result<(), AiError> {
        // Only after the last flush: the buffer holds nothing pending.
        debug_assert_eq!(self.pending, 0);
        self.ops.write_bytes(bytes, offset).map_err(io_error)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Writes file `index` through `io`; returns its bytes and write calls (the npz
/// header's rewrite not counted).
fn write_file<C: Clock>(
    io: &mut FileIo<'_, C>,
    dir: &Path,
    cfg: &TrainConfig,
    index: u64,
    stop: &AtomicBool,
) -> Result<(u64, u64), AiError> {
    let path = file_path(dir, cfg, index);
    let open = OpenSpec {
        write: true,
        create: true,
        truncate: true,
        ..OpenSpec::default()
    };
    let mut written = Ok((0, 0));
    io.with_file(&path, open, |ops| {
        let mut out = Out {
            ops,
            pending: 0,
            offset: 0,
            writes: 0,
            stop,
        };
        written = format::write_body(cfg, index, &mut out)
            .and_then(|()| out.flush())
            .map(|()| (out.offset, out.writes));
        Ok(())
    })
    .map_err(io_error)?;
    written
}

/// Writes this rank's share of the dataset with its [`Writers`] (`cfg.write_threads`
/// per accelerator), a write phase on the engine; rank 0 returns every rank's totals and
/// the phase. Collective.
pub fn generate(
    comm: &dyn Comm,
    dir: &Path,
    cfg: &TrainConfig,
    interrupt: &AtomicBool,
) -> Result<GenOutcome, AiError> {
    let prepared = if comm.rank() == 0 {
        prepare_dir(dir, cfg)
    } else {
        Ok(())
    };
    let ok = comm.all_ok(prepared.is_ok());
    prepared?;
    if !ok {
        return Err(AiError::Setup(
            "another rank could not prepare the data directory".into(),
        ));
    }
    let writers = Writers::new(cfg, comm.rank(), comm.size());
    let spec = FilePhaseSpec {
        name: "train-datagen".into(),
        spec: serde_json::to_value(cfg).unwrap_or_default(),
        backend: BackendKind::Psync,
        buffer: WRITE_BUFFER,
        workers: writers.workers(),
    };
    let env = Env::new(comm, interrupt);
    let failed = std::sync::Mutex::new(None);
    let (bytes, writes) = (AtomicU64::new(0), AtomicU64::new(0));
    let run = run_file_phase(
        &env,
        &MonotonicClock,
        &spec,
        |_, _| Ok(()),
        |t, io| {
            let mut files = 0;
            while !interrupt.load(Ordering::Relaxed) {
                let Some(i) = writers.next(t, cfg.files) else {
                    break;
                };
                match write_file(io, dir, cfg, i, interrupt) {
                    Ok((b, w)) => {
                        bytes.fetch_add(b, Ordering::Relaxed);
                        writes.fetch_add(w, Ordering::Relaxed);
                    }
                    Err(e) => {
                        let message = e.to_string();
                        if let Ok(mut f) = failed.lock() {
                            f.get_or_insert(e);
                        }
                        return Err(EngineError::Setup(message));
                    }
                }
                files += 1;
            }
            Ok(files)
        },
    )
    .map_err(|e| AiError::Setup(e.to_string()))?;
    if let Some(e) = failed.into_inner().ok().flatten() {
        return Err(e);
    }
    if run.errors > 0 {
        let first = run.result.errors.first().map(|e| e.message.clone());
        return Err(AiError::Io(first.unwrap_or_else(|| {
            "another rank failed to write its files".into()
        })));
    }
    let files = comm.all_sum(run.completed.iter().sum());
    let phase = with_figures(run.result, cfg, files);
    Ok(GenOutcome {
        files,
        bytes: comm.all_sum(bytes.into_inner()),
        writes: comm.all_sum(writes.into_inner()),
        elapsed: phase.elapsed,
        interrupted: run.interrupted,
        phase,
    })
}

/// The write phase as stored: `format` and `write_threads` among its parameters, the
/// `files` written and `files_per_sec` among its figures.
fn with_figures(mut phase: PhaseResult, cfg: &TrainConfig, files: u64) -> PhaseResult {
    let params = [
        ("format", cfg.format.extension().to_string()),
        ("write_threads", cfg.write_threads.to_string()),
    ];
    phase.params.extend(params.map(|(k, v)| (k.to_string(), v)));
    phase.extra.insert("files".into(), files as f64);
    let per_sec = files as f64 / phase.elapsed.as_secs_f64().max(1e-9);
    phase.extra.insert("files_per_sec".into(), per_sec);
    phase
}
