//! One accelerator's data loader, in DLIO's two shapes. [`Assignment`] is what an
//! accelerator reads in an epoch; [`start`] spawns its reader threads and returns the
//! [`Batches`] the accelerator takes in order.
//! - PyTorch (`torch.utils.data.DataLoader`, DLIO's index sampler): batch k is built
//!   whole by reader thread k mod threads, each keeping at most ceil(prefetch /
//!   threads) batches ahead; a sample's read opens its file, reads it whole and closes
//!   it (DLIO's on-demand npz reader: `np.load(file)['x']`).
//! - TensorFlow (`TFRecordDataset(files, num_parallel_reads=threads)` as DLIO builds
//!   it): tf.data's deterministic parallel interleave, a record from each of `threads`
//!   current files in turn, 2 x `threads` future files opened and read ahead, each
//!   open file read start to end by its own thread holding 3 records ready; batched,
//!   `prefetch` + `computation_threads` (the parallel map's) batches ahead.
//!
//! A file is read as its format's read plan says (npz, TFRecord: start to end in
//! `transfer_size` reads, numpy's and TensorFlow's 256 KiB), through the engine's
//! `SampleReader` (an `IoBackend`), each read timed into the reader's recorder.

use iolab_core::spec::{BackendKind, TrainConfig, TrainFormat};
use iolab_core::units::Nanos;
use iolab_engine::MonotonicClock;
use iolab_engine::train::{ReaderPool, ReaderSetup, SampleReader, WorkerMeasure};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use crate::AiError;
use crate::train::{format, rowgroups};

/// What one accelerator reads in an epoch.
#[derive(Clone, Debug)]
pub enum Assignment {
    /// Batches of samples, each sample a file index (the whole file is read for it).
    Indexed { batches: Vec<Vec<usize>> },
    /// Files read once each, `samples` samples in each.
    Files { files: Vec<usize>, samples: u64 },
    /// Parquet files read row group by row group, every one of them by every
    /// accelerator (v3.0 DLIO's parquet loader: `rowgroups`).
    RowGroups { files: Vec<usize> },
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
    Indexed(Vec<Receiver<Result<Batch, AiError>>>),
    Samples {
        rx: Receiver<Result<u64, AiError>>,
        batch: u64,
        /// Samples received beyond the last batch taken.
        pending: u64,
    },
}

impl Batches {
    /// Waits for the next batch; None when the readers have nothing more.
    pub fn next_batch(&mut self) -> Option<Result<Batch, AiError>> {
        let k = self.next;
        self.next += 1;
        match &mut self.kind {
            Source::Indexed(rxs) => {
                // torch's DataLoader takes its workers' batches in turn, skipping a
                // worker that is done (an iterable dataset's workers may hold unequal
                // numbers of batches).
                let mut i = k;
                while !rxs.is_empty() {
                    i %= rxs.len();
                    match rxs[i].recv() {
                        Ok(b) => {
                            self.next = i + 1;
                            return Some(b);
                        }
                        Err(_) => {
                            rxs.remove(i);
                        }
                    }
                }
                self.next = i;
                None
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

/// The buffer of one of a reader thread's read slots: its largest read rounded up to 4
/// KiB, at least `transfer_size` (jpeg: the largest file plus one; parquet: a row group
/// whole, or with --columns a column chunk, by the layout the config describes).
pub fn read_slot(cfg: &TrainConfig, largest_file: u64) -> u64 {
    let largest = match cfg.format {
        TrainFormat::Parquet => rowgroups::largest_read(cfg),
        _ => format::read_buffer(cfg, largest_file),
    };
    largest.next_multiple_of(4096).max(cfg.transfer_size).max(1)
}

/// The read buffers one reader thread holds: a [`read_slot`] per read in flight (psync:
/// one; io_uring and null: the queue depth), and a parquet worker's for each of its
/// row-group fetchers (DLIO's 64).
pub fn reader_buffers(cfg: &TrainConfig, largest_file: u64) -> u64 {
    let slots = match cfg.backend {
        BackendKind::Psync | BackendKind::Sync => 1,
        _ => cfg.queue_depth.max(1),
    };
    let fetchers = match cfg.format {
        TrainFormat::Parquet => rowgroups::PREFETCH as u64,
        _ => 1,
    };
    (u64::from(slots) * fetchers).saturating_mul(read_slot(cfg, largest_file))
}

/// Reads a file whole as its format's read plan says, through the engine's reader (an
/// `IoBackend`, timed into its recorder); `progress` is told the bytes read so far
/// after each read, and the live counters follow each read.
fn read_whole(
    reader: &mut SampleReader,
    shared: &ReaderShared<'_>,
    path: &Path,
    len: u64,
    mut progress: impl FnMut(u64),
) -> Result<u64, AiError> {
    let plan = format::read_plan(shared.cfg, len);
    let mut last = 0;
    reader
        .read_file(&MonotonicClock, path, &plan.reads, shared.stop, |at| {
            shared.counters.reads.fetch_add(1, Ordering::Relaxed);
            shared
                .counters
                .bytes
                .fetch_add(at - last, Ordering::Relaxed);
            last = at;
            progress(at);
        })
        .map_err(|e| AiError::Io(e.to_string()))
}

/// What the reader threads share.
pub struct ReaderShared<'a> {
    pub cfg: &'a TrainConfig,
    pub files: &'a [PathBuf],
    /// Each file's bytes, by index.
    pub sizes: &'a [u64],
    pub counters: &'a ReadCounters,
    pub stop: &'a AtomicBool,
    /// How the readers reach storage, and when the epoch started (their timelines').
    pub setup: ReaderSetup,
    pub start: Nanos,
    /// Each reader's measure (latencies, timeline), merged in at its end.
    pub measure: &'a Mutex<Option<WorkerMeasure>>,
    /// The accelerator's reader backends, kept across its epochs.
    pub pool: &'a ReaderPool,
}

impl ReaderShared<'_> {
    pub(crate) fn reader(&self) -> SampleReader {
        SampleReader::with_pool(self.setup, self.start, self.pool)
    }

    pub(crate) fn merge(&self, reader: SampleReader) {
        let m = reader.finish_to(self.pool);
        if let Ok(mut all) = self.measure.lock() {
            match all.as_mut() {
                Some(a) => a.merge(&m),
                None => *all = Some(m),
            }
        }
    }
}

/// Spawns the readers of one accelerator's epoch in `scope`.
pub fn start<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    shared: Arc<ReaderShared<'env>>,
    assignment: Assignment,
) -> Result<Batches, AiError> {
    match assignment {
        Assignment::Indexed { batches } => start_indexed(scope, shared, batches),
        Assignment::RowGroups { files } => start_rowgroups(scope, shared, files),
        Assignment::Files { files, samples } => start_files(scope, shared, files, samples),
    }
}

/// The map-style loader's readers: each thread its share of the batches, in order.
fn start_indexed<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    shared: Arc<ReaderShared<'env>>,
    batches: Vec<Vec<usize>>,
) -> Result<Batches, AiError> {
    let batches = Arc::new(batches);
    spawn_batch_readers(scope, shared, move |shared, t, threads, tx| {
        indexed_reader(shared, &batches, t, threads, tx)
    })
}

/// The parquet loader's readers: each thread the row groups of its files.
fn start_rowgroups<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    shared: Arc<ReaderShared<'env>>,
    files: Vec<usize>,
) -> Result<Batches, AiError> {
    let files = Arc::new(files);
    spawn_batch_readers(scope, shared, move |shared, t, threads, tx| {
        let mine = rowgroups::worker_files(&files, t, threads);
        rowgroups::rowgroup_reader(shared, &mine, tx)
    })
}

/// Spawns a torch DataLoader's `read_threads` workers in `scope`, worker t running
/// `work(shared, t, threads, tx)` and sending its batches on `tx`, a channel holding
/// torch's prefetch_factor = ceil(prefetch_size / workers) batches per worker (one of
/// them possibly in progress); the accelerator takes the workers' batches in turn.
fn spawn_batch_readers<'scope, 'env, W>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    shared: Arc<ReaderShared<'env>>,
    work: W,
) -> Result<Batches, AiError>
where
    W: Fn(&ReaderShared<'env>, usize, usize, SyncSender<Result<Batch, AiError>>)
        + Clone
        + Send
        + 'scope,
{
    let threads = shared.cfg.read_threads.max(1) as usize;
    let per_thread = (shared.cfg.prefetch as usize).div_ceil(threads).max(1);
    let mut rxs = Vec::with_capacity(threads);
    for t in 0..threads {
        let (tx, rx) = sync_channel(per_thread - 1);
        rxs.push(rx);
        let (shared, work) = (shared.clone(), work.clone());
        std::thread::Builder::new()
            .name(format!("iolab-reader{t}"))
            .spawn_scoped(scope, move || work(&shared, t, threads, tx))
            .map_err(|e| AiError::Setup(format!("a reader thread: {e}")))?;
    }
    Ok(Batches {
        kind: Source::Indexed(rxs),
        next: 0,
    })
}

/// tf.data's loader: a thread per open file, fed by the interleave thread.
fn start_files<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    shared: Arc<ReaderShared<'env>>,
    files: Vec<usize>,
    samples: u64,
) -> Result<Batches, AiError> {
    let threads = shared.cfg.read_threads.max(1) as usize;
    let batch = shared.cfg.batch_size;
    // What tf.data holds ahead of the accelerator: `prefetch` batches and the
    // parallel map's `computation_threads` (DLIO's
    // `batch().map(num_parallel_calls=computation_threads).prefetch(prefetch)`).
    let ahead = u64::from(shared.cfg.prefetch) + u64::from(shared.cfg.computation_threads);
    let (tx, rx) = sync_channel((ahead.max(1) * batch) as usize);
    // One thread per open file, as tf.data's parallel interleave: `threads`
    // current files and 2 x `threads` future ones.
    let workers = (shared.cfg.reader_threads() as usize)
        .min(files.len())
        .max(1);
    let (jobs_tx, jobs_rx) = sync_channel::<Job>(workers);
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    for t in 0..workers {
        let shared = shared.clone();
        let jobs_rx = jobs_rx.clone();
        std::thread::Builder::new()
            .name(format!("iolab-reader{t}"))
            .spawn_scoped(scope, move || file_worker(&shared, &jobs_rx, samples))
            .map_err(|e| AiError::Setup(format!("a reader thread: {e}")))?;
    }
    let files: Vec<PathBuf> = files.iter().map(|&f| shared.files[f].clone()).collect();
    let stop = shared.stop;
    std::thread::Builder::new()
        .name("iolab-interleave".into())
        .spawn_scoped(scope, move || {
            interleave(&files, threads, stop, jobs_tx, tx)
        })
        .map_err(|e| AiError::Setup(format!("the interleave thread: {e}")))?;
    Ok(Batches {
        kind: Source::Samples {
            rx,
            batch,
            pending: 0,
        },
        next: 0,
    })
}

/// tf.data's parallel interleave opens `kDefaultCyclePrefetchFactor` (2) x cycle_length
/// future files ahead of the cycle (traced: DLIO's resnet50 rank holds 24 files open
/// with 8 reader threads); [`TrainConfig::reader_threads`] counts a thread for each.
const FUTURE_PER_CURRENT: usize = 2;

/// Records each open file's reader holds ready (tf.data's per-iterator prefetch:
/// 2 x block_length + 1).
const PER_FILE_AHEAD: usize = 3;

/// One file for a reader thread: its path, and where each sample goes once read.
struct Job {
    path: PathBuf,
    tx: SyncSender<Result<(), AiError>>,
}

/// A reader thread: takes files in the order the interleave starts them, reads each
/// whole, sends a unit per sample as the sample's bytes arrive; dropping the sender at
/// the file's end tells the interleave the file is done.
fn file_worker(shared: &ReaderShared<'_>, jobs: &Mutex<Receiver<Job>>, samples: u64) {
    let mut reader = shared.reader();
    loop {
        let job = match jobs.lock().map(|j| j.recv()) {
            Ok(Ok(job)) => job,
            _ => break,
        };
        let len = std::fs::metadata(&job.path).map(|m| m.len()).unwrap_or(0);
        let mut sent = 0u64;
        let mut closed = false;
        let send_to = |done: u64, sent: &mut u64, closed: &mut bool| {
            while *sent < done && !*closed {
                *closed = job.tx.send(Ok(())).is_err();
                *sent += 1;
            }
        };
        let r = read_whole(&mut reader, shared, &job.path, len, |at| {
            // A sample is complete once its share of the file has been read.
            let done = (at.min(len) * samples).checked_div(len).unwrap_or(samples);
            send_to(done, &mut sent, &mut closed);
        });
        match r {
            Ok(_) => send_to(samples, &mut sent, &mut closed),
            Err(e) => {
                let _ = job.tx.send(Err(e));
                break;
            }
        }
    }
    shared.merge(reader);
}

/// tf.data's deterministic parallel interleave (block_length 1): a sample from each of
/// the `cycle` current files in turn; a finished file's place goes to the oldest future
/// file, and the next file of the list starts as a future one; at most `cycle` x 3
/// files open at once. Samples go to `out` one unit at a time.
fn interleave(
    files: &[PathBuf],
    cycle: usize,
    stop: &AtomicBool,
    jobs: SyncSender<Job>,
    out: SyncSender<Result<u64, AiError>>,
) {
    let mut next = 0usize;
    let start = |next: &mut usize| -> Option<Receiver<Result<(), AiError>>> {
        let path = files.get(*next)?.clone();
        *next += 1;
        let (tx, rx) = sync_channel(PER_FILE_AHEAD);
        jobs.send(Job { path, tx }).ok()?;
        Some(rx)
    };
    let mut current: Vec<Receiver<Result<(), AiError>>> =
        (0..cycle).map_while(|_| start(&mut next)).collect();
    let mut future: std::collections::VecDeque<_> = (0..cycle * FUTURE_PER_CURRENT)
        .map_while(|_| start(&mut next))
        .collect();
    let mut i = 0;
    while !current.is_empty() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        if i >= current.len() {
            i = 0;
        }
        match current[i].recv() {
            Ok(Ok(())) => {
                if out.send(Ok(1)).is_err() {
                    return;
                }
                i += 1;
            }
            Ok(Err(e)) => {
                let _ = out.send(Err(e));
                return;
            }
            Err(_) => {
                // The file is done: the oldest future file takes its place.
                match future.pop_front() {
                    Some(f) => current[i] = f,
                    None => {
                        current.remove(i);
                    }
                }
                if let Some(f) = start(&mut next) {
                    future.push_back(f);
                }
            }
        }
    }
}

fn indexed_reader(
    shared: &ReaderShared<'_>,
    batches: &[Vec<usize>],
    t: usize,
    threads: usize,
    tx: SyncSender<Result<Batch, AiError>>,
) {
    let mut reader = shared.reader();
    let mut k = t;
    'batches: while k < batches.len() {
        for &f in &batches[k] {
            if shared.stop.load(Ordering::Relaxed) {
                break 'batches;
            }
            let (path, len) = (&shared.files[f], shared.sizes[f]);
            if let Err(e) = read_whole(&mut reader, shared, path, len, |_| {}) {
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
    shared.merge(reader);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Plays the reader threads of [`interleave`]: each file is `per_file` samples;
    /// returns the order files were started in, the most open at once, and the samples
    /// the interleave passed on.
    fn drive(files: usize, cycle: usize, per_file: usize) -> (Vec<usize>, usize, u64) {
        let paths: Vec<PathBuf> = (0..files).map(|i| PathBuf::from(i.to_string())).collect();
        let stop = AtomicBool::new(false);
        let (jobs_tx, jobs_rx) = sync_channel::<Job>(files);
        let (out_tx, out_rx) = sync_channel(1);
        let open = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| interleave(&paths, cycle, &stop, jobs_tx, out_tx));
            let (open, most) = (&open, &most);
            let workers = s.spawn(move || {
                let mut started = Vec::new();
                let mut alive: Vec<std::thread::ScopedJoinHandle<'_, ()>> = Vec::new();
                // The first window's files are all taken before any is read, so the
                // most open at once does not depend on the threads' timing.
                let window = files.min(cycle * 3);
                let first: Vec<Job> = (0..window).map(|_| jobs_rx.recv().unwrap()).collect();
                let n = open.fetch_add(window, Ordering::SeqCst) + window;
                most.fetch_max(n, Ordering::SeqCst);
                for (k, job) in first.into_iter().chain(jobs_rx.iter()).enumerate() {
                    started.push(job.path.to_str().unwrap().parse::<usize>().unwrap());
                    if k >= window {
                        let n = open.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(n, Ordering::SeqCst);
                    }
                    alive.push(s.spawn(move || {
                        for _ in 0..per_file {
                            if job.tx.send(Ok(())).is_err() {
                                break;
                            }
                        }
                        // Closed before the sender drops, so the interleave's next
                        // start is counted after this one's end.
                        open.fetch_sub(1, Ordering::SeqCst);
                        drop(job);
                    }));
                }
                for h in alive {
                    h.join().unwrap();
                }
                started
            });
            let mut got = 0;
            while let Ok(Ok(n)) = out_rx.recv() {
                got += n;
            }
            let started = workers.join().unwrap();
            (started, most.load(Ordering::SeqCst), got)
        })
    }

    #[test]
    fn reader_buffers_count_a_slot_of_the_largest_read_per_read_in_flight() {
        use iolab_core::spec::{AcceleratorKind, TrainPreset, TrainSpec};
        let cfg = |preset, accelerator, backend, queue_depth| TrainConfig {
            backend,
            queue_depth,
            ..TrainSpec {
                preset: Some(preset),
                accelerator,
                ..TrainSpec::default()
            }
            .resolve()
            .unwrap()
        };
        // npz: 256 KiB reads; psync one in flight, io_uring the queue depth.
        let (h100, b200) = (AcceleratorKind::H100, AcceleratorKind::B200);
        let npz = cfg(TrainPreset::Unet3d, h100, BackendKind::Psync, 1);
        assert_eq!(reader_buffers(&npz, 140 << 20), 256 << 10);
        let npz = cfg(TrainPreset::Unet3d, h100, BackendKind::Uring, 4);
        assert_eq!(reader_buffers(&npz, 140 << 20), 1 << 20);
        // parquet (dlrm): a row group whole per slot, 4 in flight on each of a worker's
        // 64 fetchers.
        let mut dlrm = cfg(TrainPreset::Dlrm, b200, BackendKind::Uring, 4);
        let groups = format::parquet_chunks(&dlrm).unwrap().groups;
        let span = |c: &[iolab_compat::dlio::parquet::ChunkRange]| {
            let end = c.iter().map(|r| r.start + r.len).max().unwrap();
            end - c.iter().map(|r| r.start).min().unwrap()
        };
        let group = groups.iter().map(|g| span(&g.1)).max().unwrap();
        assert!(
            group > 6144 * 761,
            "a row group of 6,144 rows of 761 bytes: {group}"
        );
        let slot = group.next_multiple_of(4096);
        assert_eq!(read_slot(&dlrm, 0), slot);
        assert_eq!(reader_buffers(&dlrm, 0), 64 * 4 * slot);
        // --columns NAME: the largest chosen chunk, at least --transfer-size.
        let first = &groups[0].1[0];
        dlrm.read_columns = Some(vec![first.path.clone()]);
        let chunk = groups.iter().map(|g| g.1[0].len).max().unwrap();
        let want = chunk.next_multiple_of(4096).max(dlrm.transfer_size);
        assert_eq!(reader_buffers(&dlrm, 0), 64 * 4 * want);
        assert!(want < slot);
    }

    #[test]
    fn interleave_reads_every_sample_with_tf_datas_open_files() {
        // 2 current files and 4 future ones open at once, files started in list order,
        // every sample of every file passed on.
        let (started, most, got) = drive(20, 2, 5);
        assert_eq!(started, (0..20).collect::<Vec<_>>());
        assert_eq!(most, 6, "cycle 2 + 2 x 2 future files open at once");
        assert_eq!(got, 100);
        // Fewer files than the window: all open at once, nothing lost.
        let (started, most, got) = drive(3, 8, 7);
        assert_eq!(started, vec![0, 1, 2]);
        assert_eq!(most, 3);
        assert_eq!(got, 21);
    }
}
