//! One accelerator's data loader, in DLIO's two shapes. [`Assignment`] is what an
//! accelerator reads in an epoch; [`start`] spawns its reader threads and returns the
//! [`Batches`] the accelerator takes in order.
//! - PyTorch (`torch.utils.data.DataLoader`, DLIO's index sampler): batch k is built
//!   whole by reader thread k mod threads, each keeping at most ceil(prefetch /
//!   threads) batches ahead; a sample's read opens its file, reads it whole and closes
//!   it (DLIO's on-demand npz reader: `np.load(file)['x']`).
//! - TensorFlow (`TFRecordDataset(files, num_parallel_reads=threads)`): the
//!   accelerator's files are read by `threads` interleaved readers, each from start to
//!   end; samples are batched as they arrive, `prefetch` batches ahead.
//!
//! Every read is one pread of `transfer_size` bytes (numpy and TensorFlow read 256 KiB
//! at a time), timed into the accelerator's histogram.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use iolab_backend::buffer::BufferPool;
use iolab_backend::files::{DataFile, OpenSpec};
use iolab_core::LatencyHistogram;
use iolab_core::spec::TrainConfig;

use crate::train::TrainError;

/// What one accelerator reads in an epoch.
#[derive(Clone, Debug)]
pub enum Assignment {
    /// Batches of samples, each sample a file index (the whole file is read for it).
    Indexed { batches: Vec<Vec<usize>> },
    /// Files read once each, `samples` samples in each.
    Files { files: Vec<usize>, samples: u64 },
}

/// Counters an accelerator's readers add to while they run (read by the live view).
#[derive(Default, Debug)]
pub struct ReadCounters {
    pub bytes: AtomicU64,
    pub reads: AtomicU64,
}

/// A batch as it reaches the accelerator.
#[derive(Clone, Copy, Debug, Default)]
pub struct Batch {
    pub samples: u64,
}

/// The batches of one accelerator's epoch, in order.
pub struct Batches {
    kind: Source,
    next: usize,
}

enum Source {
    Indexed(Vec<Receiver<Result<Batch, TrainError>>>),
    Samples {
        rx: Receiver<Result<u64, TrainError>>,
        batch: u64,
        /// Samples received beyond the last batch taken.
        pending: u64,
    },
}

impl Batches {
    /// Waits for the next batch; None when the readers have nothing more.
    pub fn next_batch(&mut self) -> Option<Result<Batch, TrainError>> {
        let k = self.next;
        self.next += 1;
        match &mut self.kind {
            Source::Indexed(rxs) => {
                let n = rxs.len();
                rxs[k % n].recv().ok()
            }
            Source::Samples { rx, batch, pending } => {
                while *pending < *batch {
                    match rx.recv() {
                        Ok(Ok(n)) => *pending += n,
                        Ok(Err(e)) => return Some(Err(e)),
                        Err(_) => return None,
                    }
                }
                *pending -= *batch;
                Some(Ok(Batch { samples: *batch }))
            }
        }
    }
}

/// Reads whole files in `transfer_size` preads into one aligned buffer.
pub struct FileReader {
    pool: BufferPool,
    transfer: usize,
    direct: bool,
}

impl FileReader {
    pub fn new(cfg: &TrainConfig) -> Result<FileReader, TrainError> {
        let pool = BufferPool::new(1, cfg.transfer_size, 4096)
            .map_err(|e| TrainError::Setup(e.to_string()))?;
        Ok(FileReader {
            pool,
            transfer: cfg.transfer_size as usize,
            direct: cfg.direct,
        })
    }

    /// Opens `path`, reads it to its end, closes it; calls `progress` with the bytes
    /// read so far after each read. Returns the bytes read.
    pub fn read_whole(
        &mut self,
        path: &Path,
        hist: &mut LatencyHistogram,
        counters: &ReadCounters,
        stop: &AtomicBool,
        mut progress: impl FnMut(u64),
    ) -> Result<u64, TrainError> {
        let file = DataFile::open(
            path,
            OpenSpec {
                direct: self.direct,
                ..OpenSpec::default()
            },
        )
        .map_err(|e| TrainError::Io(e.to_string()))?;
        let mut offset = 0u64;
        let buf = self.pool.get_mut(0);
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let t = Instant::now();
            let n = file
                .read_at(&mut buf[..self.transfer], offset)
                .map_err(|e| TrainError::Io(e.to_string()))?;
            hist.record(t.elapsed().as_nanos() as u64);
            counters.reads.fetch_add(1, Ordering::Relaxed);
            if n == 0 {
                break;
            }
            counters.bytes.fetch_add(n as u64, Ordering::Relaxed);
            offset += n as u64;
            progress(offset);
            if n < self.transfer {
                // Short: the end of the file (the next pread would return 0).
                break;
            }
        }
        Ok(offset)
    }
}

/// What the reader threads share.
pub struct ReaderShared<'a> {
    pub cfg: &'a TrainConfig,
    pub files: &'a [PathBuf],
    pub counters: &'a ReadCounters,
    pub stop: &'a AtomicBool,
    /// Each reader's histogram, merged in at its end.
    pub hist: &'a Mutex<LatencyHistogram>,
}

/// Spawns the readers of one accelerator's epoch in `scope`.
pub fn start<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    shared: Arc<ReaderShared<'env>>,
    assignment: Assignment,
) -> Result<Batches, TrainError> {
    let threads = shared.cfg.read_threads.max(1) as usize;
    match assignment {
        Assignment::Indexed { batches } => {
            // torch: prefetch_factor = ceil(prefetch_size / workers) batches per worker,
            // one of them possibly in progress.
            let per_thread = (shared.cfg.prefetch as usize).div_ceil(threads).max(1);
            let batches = Arc::new(batches);
            let mut rxs = Vec::with_capacity(threads);
            for t in 0..threads {
                let (tx, rx) = sync_channel(per_thread - 1);
                rxs.push(rx);
                let shared = shared.clone();
                let batches = batches.clone();
                std::thread::Builder::new()
                    .name(format!("iolab-reader{t}"))
                    .spawn_scoped(scope, move || {
                        indexed_reader(&shared, &batches, t, threads, tx)
                    })
                    .map_err(|e| TrainError::Setup(format!("a reader thread: {e}")))?;
            }
            Ok(Batches {
                kind: Source::Indexed(rxs),
                next: 0,
            })
        }
        Assignment::Files { files, samples } => {
            let batch = shared.cfg.batch_size;
            let depth = (shared.cfg.prefetch.max(1) as u64 * batch) as usize;
            let (tx, rx) = sync_channel(depth);
            let files = Arc::new(files);
            for t in 0..threads {
                let tx = tx.clone();
                let shared = shared.clone();
                let files = files.clone();
                std::thread::Builder::new()
                    .name(format!("iolab-reader{t}"))
                    .spawn_scoped(scope, move || {
                        file_reader(&shared, &files, samples, t, threads, tx)
                    })
                    .map_err(|e| TrainError::Setup(format!("a reader thread: {e}")))?;
            }
            Ok(Batches {
                kind: Source::Samples {
                    rx,
                    batch,
                    pending: 0,
                },
                next: 0,
            })
        }
    }
}

fn indexed_reader(
    shared: &ReaderShared<'_>,
    batches: &[Vec<usize>],
    t: usize,
    threads: usize,
    tx: SyncSender<Result<Batch, TrainError>>,
) {
    with_reader(shared, &tx, |reader, hist| {
        let mut k = t;
        'batches: while k < batches.len() {
            for &f in &batches[k] {
                if shared.stop.load(Ordering::Relaxed) {
                    break 'batches;
                }
                if let Err(e) =
                    reader.read_whole(&shared.files[f], hist, shared.counters, shared.stop, |_| {})
                {
                    let _ = tx.send(Err(e));
                    break 'batches;
                }
            }
            let b = Batch {
                samples: batches[k].len() as u64,
            };
            if tx.send(Ok(b)).is_err() {
                break;
            }
            k += threads;
        }
    });
}

fn file_reader(
    shared: &ReaderShared<'_>,
    files: &[usize],
    samples: u64,
    t: usize,
    threads: usize,
    tx: SyncSender<Result<u64, TrainError>>,
) {
    with_reader(shared, &tx, |reader, hist| {
        let mut k = t;
        while k < files.len() {
            if shared.stop.load(Ordering::Relaxed) {
                break;
            }
            let f = files[k];
            let len = std::fs::metadata(&shared.files[f])
                .map(|m| m.len())
                .unwrap_or(0);
            // A sample is complete once its share of the file has been read.
            let mut sent = 0u64;
            let mut closed = false;
            let r = reader.read_whole(&shared.files[f], hist, shared.counters, shared.stop, |at| {
                let done = (at.min(len) * samples).checked_div(len).unwrap_or(samples);
                if done > sent && !closed {
                    if tx.send(Ok(done - sent)).is_err() {
                        closed = true;
                    }
                    sent = done;
                }
            });
            match r {
                Ok(_) if sent < samples && !closed => {
                    closed = tx.send(Ok(samples - sent)).is_err();
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    break;
                }
            }
            if closed {
                break;
            }
            k += threads;
        }
    });
}

/// Runs a reader thread's `body` with its file reader and its latency histogram, which
/// is merged into the accelerator's at the end; a reader that cannot be set up sends
/// its error down `tx` instead.
fn with_reader<T>(
    shared: &ReaderShared<'_>,
    tx: &SyncSender<Result<T, TrainError>>,
    body: impl FnOnce(&mut FileReader, &mut LatencyHistogram),
) {
    let mut hist = LatencyHistogram::new();
    match FileReader::new(shared.cfg) {
        Ok(mut reader) => body(&mut reader, &mut hist),
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    }
    if let Ok(mut h) = shared.hist.lock() {
        h.merge(&hist);
    }
}
