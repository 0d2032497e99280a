//! v3.0 DLIO's parquet loader (`TorchIterableDataset` over
//! `ParquetReaderFileIterable`): each of an accelerator's `read_threads` workers takes
//! files `w, w + threads, ...` of the WHOLE list (every accelerator reads every file:
//! DLIO does not split parquet files across ranks), reads every file's footer first
//! (pyarrow's 64 KiB tail, and the rest of the metadata when it is longer), one at a
//! time, then its row groups across all its files through a sliding window of
//! [`PREFETCH`] reads in flight, each on a fetcher thread that opens the file, reads
//! the row group and closes it, as DLIO's `_fetch_rg_file` does: one read from its first
//! to its last chunk (the whole row group, every column), or with `--columns` each chosen
//! column chunk on its own. A worker hands on a batch each time `batch_size` rows are
//! in, in queue order, and drops its last partial batch, as DLIO's iterator does.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, SyncSender, channel};
use std::sync::{Condvar, Mutex};

use iolab_compat::dlio::parquet::{FOOTER_READ, group_reads, metadata_range, read_footer};
use iolab_core::spec::{BackendKind, TrainConfig};
use iolab_engine::MonotonicClock;
use iolab_engine::train::SampleReader;

use crate::AiError;
use crate::train::format;
use crate::train::loader::{Batch, ReaderShared};

/// A file's row groups as a reader takes them: each group's rows and its reads.
type GroupPlan = Vec<(u64, Vec<(u64, u64)>)>;

/// Row-group reads a worker keeps in flight: ParquetReaderFileIterable's 64
/// `prefetch_workers` threads under TorchIterableDataset's `prefetch_window` of 64.
pub(crate) const PREFETCH: usize = 64;

/// The files a worker reads: `w, w + threads, ...` of `files`.
pub(crate) fn worker_files(files: &[usize], w: usize, threads: usize) -> Vec<usize> {
    files
        .iter()
        .skip(w)
        .step_by(threads.max(1))
        .copied()
        .collect()
}

/// One worker: footers of all its files, then their row groups, a batch sent per
/// `batch_size` rows.
pub(crate) fn rowgroup_reader(
    shared: &ReaderShared<'_>,
    files: &[usize],
    tx: SyncSender<Result<Batch, AiError>>,
) {
    let mut reader = shared.reader();
    if let Err(e) = read_files(shared, &mut reader, files, &tx) {
        let _ = tx.send(Err(e));
    }
    shared.merge(reader);
}

fn read_files(
    shared: &ReaderShared<'_>,
    reader: &mut SampleReader,
    files: &[usize],
    tx: &SyncSender<Result<Batch, AiError>>,
) -> Result<(), AiError> {
    let mut queue: Vec<GroupRead> = Vec::new();
    let meta_hint = format::parquet_metadata_len(shared.cfg).unwrap_or(0);
    for &f in files {
        if shared.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let file = (shared.files[f].as_path(), shared.sizes[f]);
        let plan = file_plan(shared, reader, file, meta_hint)?;
        queue.extend(plan.into_iter().map(|(rows, reads)| GroupRead {
            file: f,
            rows,
            reads,
        }));
    }
    let batch = shared.cfg.batch_size.max(1);
    let mut rows_in = 0u64;
    let mut closed = false;
    fetch_in_order(shared, &queue, &mut |rows| {
        rows_in += rows;
        while rows_in >= batch && !closed {
            closed = tx.send(Ok(Batch { samples: batch })).is_err();
            rows_in -= batch;
        }
        !closed
    })
}

/// One row group's reads, as the worker's queue holds them.
struct GroupRead {
    file: usize,
    rows: u64,
    reads: Vec<(u64, u64)>,
}

/// The row groups in flight and the next one to take, shared by a worker's fetchers.
struct Window {
    /// (next row group to take, row groups the worker has consumed, stopped).
    at: Mutex<(usize, usize, bool)>,
    moved: Condvar,
}

impl Window {
    /// The next row group to read once it is within `PREFETCH` of the consumed ones;
    /// None when the queue is done or the worker stopped.
    fn take(&self, len: usize, stop: &AtomicBool) -> Option<usize> {
        let mut at = self.at.lock().ok()?;
        loop {
            if at.2 || at.0 >= len || stop.load(Ordering::Relaxed) {
                return None;
            }
            if at.0 < at.1 + PREFETCH {
                at.0 += 1;
                return Some(at.0 - 1);
            }
            at = self.moved.wait(at).ok()?;
        }
    }

    fn update(&self, f: impl FnOnce(&mut (usize, usize, bool))) {
        if let Ok(mut at) = self.at.lock() {
            f(&mut at);
        }
        self.moved.notify_all();
    }
}

/// Reads the queue's row groups as DLIO's sliding window does: up to `PREFETCH` in
/// flight, each on a fetcher thread that opens the file, reads the row group and closes
/// it; `consume` takes each group's rows in queue order (false: stop).
fn fetch_in_order(
    shared: &ReaderShared<'_>,
    queue: &[GroupRead],
    consume: &mut dyn FnMut(u64) -> bool,
) -> Result<(), AiError> {
    let window = Window {
        at: Mutex::new((0, 0, false)),
        moved: Condvar::new(),
    };
    let (done_tx, done_rx) = channel::<(usize, Result<(), AiError>)>();
    std::thread::scope(|scope| {
        for t in 0..PREFETCH.min(queue.len()) {
            let (window, done_tx) = (&window, done_tx.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("iolab-rg-fetch{t}"))
                .spawn_scoped(scope, move || fetcher(shared, queue, window, done_tx));
            if let Err(e) = spawned {
                window.update(|at| at.2 = true);
                return Err(AiError::Setup(format!("a row-group fetcher thread: {e}")));
            }
        }
        drop(done_tx);
        let mut ready = vec![false; queue.len()];
        let mut next = 0;
        while next < queue.len() {
            let Ok((i, result)) = done_rx.recv() else {
                break;
            };
            if let Err(e) = result {
                window.update(|at| at.2 = true);
                return Err(e);
            }
            ready[i] = true;
            while next < queue.len() && ready[next] {
                let go_on = consume(queue[next].rows);
                next += 1;
                window.update(|at| {
                    at.1 = next;
                    at.2 |= !go_on;
                });
                if !go_on {
                    return Ok(());
                }
            }
        }
        Ok(())
    })
}

/// One fetcher: takes row groups off the window and reads each through a reader of
/// its own (its file opened for it, as DLIO's `_fetch_rg_file` opens one per read).
fn fetcher(
    shared: &ReaderShared<'_>,
    queue: &[GroupRead],
    window: &Window,
    done: Sender<(usize, Result<(), AiError>)>,
) {
    let mut reader = shared.reader();
    while let Some(i) = window.take(queue.len(), shared.stop) {
        let g = &queue[i];
        let mut last = 0;
        let result = reader
            .read_file(
                &MonotonicClock,
                &shared.files[g.file],
                &g.reads,
                shared.stop,
                |at| {
                    count(shared, at - last);
                    last = at;
                },
            )
            .map(|_| ())
            .map_err(|e| AiError::Io(e.to_string()));
        if done.send((i, result)).is_err() {
            break;
        }
    }
    shared.merge(reader);
}

/// The largest single read a parquet reader makes of files laid out as `cfg` says: the
/// footer's 64 KiB, a row group whole, or with `--columns` one column chunk.
pub(crate) fn largest_read(cfg: &TrainConfig) -> u64 {
    let columns = cfg.read_columns.as_deref();
    let groups = format::parquet_chunks(cfg)
        .map(|c| c.groups)
        .unwrap_or_default();
    groups
        .iter()
        .flat_map(|(_, c)| group_reads(c, columns, columns.is_none()))
        .map(|r| r.1)
        .max()
        .unwrap_or(0)
        .max(FOOTER_READ)
}

/// Adds one read of `bytes` to the live counters.
fn count(shared: &ReaderShared<'_>, bytes: u64) {
    shared.counters.reads.fetch_add(1, Ordering::Relaxed);
    shared.counters.bytes.fetch_add(bytes, Ordering::Relaxed);
}

/// Reads a file's footer as pyarrow does (one open: the last 64 KiB, then the whole
/// metadata when it is longer, in one read of up to `meta_hint` bytes: the length of
/// the metadata iolab writes for the config) and plans its row groups' reads. The null
/// backend reads nothing back: it plans by the layout iolab writes.
fn file_plan(
    shared: &ReaderShared<'_>,
    reader: &mut SampleReader,
    (path, len): (&Path, u64),
    meta_hint: u64,
) -> Result<GroupPlan, AiError> {
    let io = |e: iolab_engine::EngineError| AiError::Io(e.to_string());
    let tail = FOOTER_READ.min(len);
    let mut meta_at = None;
    let (bytes, rest) = reader
        .read_bytes_then(
            &MonotonicClock,
            path,
            ((len - tail, tail), meta_hint),
            shared.stop,
            |bytes| {
                let last8 = bytes.get(bytes.len().saturating_sub(8)..).unwrap_or(&[]);
                meta_at = metadata_range(len, last8);
                meta_at.filter(|m| m.1 + 8 > tail)
            },
        )
        .map_err(io)?;
    count(shared, (bytes.len() + rest.len()) as u64);
    let chunks = if shared.setup.backend == BackendKind::Null {
        format::parquet_chunks(shared.cfg)?
    } else {
        let not_parquet = || {
            AiError::Io(format!(
                "{}: not a parquet file (no PAR1 footer of a length inside the file)",
                path.display()
            ))
        };
        let (start, meta_len) = meta_at.ok_or_else(not_parquet)?;
        let meta = if meta_len + 8 <= tail {
            let from = (start - (len - tail)) as usize;
            bytes.get(from..from + meta_len as usize)
        } else {
            rest.get(..meta_len as usize)
        };
        read_footer(meta.ok_or_else(not_parquet)?)
            .map_err(|e| AiError::Io(format!("{}: {e}", path.display())))?
    };
    let columns = shared.cfg.read_columns.as_deref();
    Ok(chunks
        .groups
        .iter()
        .map(|(rows, c)| (*rows, group_reads(c, columns, columns.is_none())))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_take_every_threads_th_file_of_the_whole_list() {
        let files: Vec<usize> = (0..7).collect();
        assert_eq!(worker_files(&files, 0, 3), vec![0, 3, 6]);
        assert_eq!(worker_files(&files, 2, 3), vec![2, 5]);
        assert_eq!(worker_files(&files, 0, 1), files);
        assert!(worker_files(&files, 8, 3).is_empty());
    }
}
