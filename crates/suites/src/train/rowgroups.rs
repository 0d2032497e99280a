//! v3.0 DLIO's parquet loader (`TorchIterableDataset` over
//! `ParquetReaderFileIterable`): each of an accelerator's `read_threads` workers takes
//! files `w, w + threads, ...` of the WHOLE list (every accelerator reads every file:
//! DLIO does not split parquet files across ranks), reads every file's footer first
//! (pyarrow's 64 KiB tail, and the rest of the metadata when it is longer), then each
//! row group in order: one read from its first to its last chunk (the whole row group,
//! every column), or with `--columns` each chosen column chunk on its own. A worker
//! hands on a batch each time `batch_size` rows are in, and drops its last partial
//! batch, as DLIO's iterator does.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::mpsc::SyncSender;

use iolab_compat::dlio::parquet::{FOOTER_READ, group_reads, metadata_range, read_footer};
use iolab_core::spec::{BackendKind, TrainConfig};
use iolab_engine::MonotonicClock;
use iolab_engine::train::SampleReader;

use crate::AiError;
use crate::train::format;
use crate::train::loader::{Batch, ReaderShared};

/// A file's row groups as a reader takes them: each group's rows and its reads.
type GroupPlan = Vec<(u64, Vec<(u64, u64)>)>;

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
    let mut plans = Vec::with_capacity(files.len());
    for &f in files {
        if shared.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        plans.push(file_plan(
            shared,
            reader,
            &shared.files[f],
            shared.sizes[f],
        )?);
    }
    let batch = shared.cfg.batch_size.max(1);
    let mut rows_in = 0u64;
    let mut closed = false;
    for (&f, plan) in files.iter().zip(&plans) {
        if shared.stop.load(Ordering::Relaxed) || closed {
            return Ok(());
        }
        let reads: Vec<(u64, u64)> = plan.iter().flat_map(|g| g.1.iter().copied()).collect();
        // Where each group's bytes end, in the order its reads complete.
        let mut ends = Vec::with_capacity(plan.len());
        let mut at = 0;
        for (rows, r) in plan {
            at += r.iter().map(|x| x.1).sum::<u64>();
            ends.push((at, *rows));
        }
        let mut next = 0;
        let mut last = 0;
        let mut on_read = |done: u64| {
            count(shared, done - last);
            last = done;
            while next < ends.len() && done >= ends[next].0 {
                rows_in += ends[next].1;
                next += 1;
            }
            while rows_in >= batch && !closed {
                closed = tx.send(Ok(Batch { samples: batch })).is_err();
                rows_in -= batch;
            }
        };
        let path = &shared.files[f];
        reader
            .read_file(&MonotonicClock, path, &reads, shared.stop, &mut on_read)
            .map_err(|e| AiError::Io(e.to_string()))?;
    }
    Ok(())
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

/// Reads a file's footer as pyarrow does (the last 64 KiB; the whole metadata again
/// when it is longer) and plans its row groups' reads. The null backend reads nothing
/// back: it plans by the layout iolab writes.
fn file_plan(
    shared: &ReaderShared<'_>,
    reader: &mut SampleReader,
    path: &Path,
    len: u64,
) -> Result<GroupPlan, AiError> {
    let io = |e: iolab_engine::EngineError| AiError::Io(e.to_string());
    let tail = FOOTER_READ.min(len);
    let bytes = reader
        .read_bytes(&MonotonicClock, path, (len - tail, tail), shared.stop)
        .map_err(io)?;
    count(shared, bytes.len() as u64);
    let chunks = if shared.setup.backend == BackendKind::Null {
        format::parquet_chunks(shared.cfg)?
    } else {
        let not_parquet = || {
            AiError::Io(format!(
                "{}: not a parquet file (no PAR1 footer of a length inside the file)",
                path.display()
            ))
        };
        let last8 = bytes.get(bytes.len().saturating_sub(8)..).unwrap_or(&[]);
        let (start, meta_len) = metadata_range(len, last8).ok_or_else(not_parquet)?;
        let meta = if meta_len + 8 <= tail {
            let from = (start - (len - tail)) as usize;
            let meta = bytes.get(from..from + meta_len as usize);
            meta.ok_or_else(not_parquet)?.to_vec()
        } else {
            let m = reader
                .read_bytes(&MonotonicClock, path, (start, meta_len), shared.stop)
                .map_err(io)?;
            count(shared, m.len() as u64);
            m
        };
        read_footer(&meta).map_err(|e| AiError::Io(format!("{}: {e}", path.display())))?
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
