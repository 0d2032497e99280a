//! A training reader's reads through an [`IoBackend`]: [`SampleReader::read_file`]
//! opens a file, issues the byte ranges its format's read plan names (psync one at a
//! time, io_uring `queue_depth` in flight, null touching nothing: the loader's own
//! ceiling), stamps each I/O's issue and completion by the [`Clock`] into a
//! [`Recorder`] (histogram, per-second timeline), and closes the file, as DLIO's
//! readers open, read whole and close a file per sample. A reader thread sets up its
//! backend (one io_uring ring) once, at its first file, and lends it each file; a
//! [`ReaderPool`] keeps the backends of one epoch's reader threads for the next's.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use iolab_backend::files::{DataFile, OpenSpec};
use iolab_backend::{
    BackendError, BackendOptions, Completion, IoBackend, IoDir, IoRequest, ReusedBackend,
};
use iolab_core::result::{ErrorRecord, OpCount, OpKind};
use iolab_core::spec::BackendKind;
use iolab_core::units::Nanos;

use crate::clock::Clock;
use crate::error::EngineError;
use crate::recorder::{Recorder, WorkerMeasure};
use crate::worker::INTERVAL;

/// How a reader thread reaches storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReaderSetup {
    pub backend: BackendKind,
    /// Reads in flight at once per reader thread (psync: 1).
    pub queue_depth: u32,
    /// The largest read of a plan (numpy's and TensorFlow's 256 KiB).
    pub transfer: u64,
    pub direct: bool,
}

/// One reader thread's reads, and what they measured.
pub struct SampleReader {
    setup: ReaderSetup,
    rec: Recorder,
    done: Vec<Completion>,
    /// Per slot: the read's offset, length and issue time.
    slots: Vec<(u64, u64, Nanos)>,
    /// The thread's backend (one io_uring ring), set up at its first file and reused,
    /// and its buffers' size (set up again for a plan whose reads pass it: a parquet
    /// footer or row group).
    backend: Option<(ReusedBackend, u64)>,
}

/// Reader backends kept from one epoch's reader threads to the next's (as DLIO's
/// PyTorch loader keeps its workers: `persistent_workers`): an io_uring ring with its
/// registered buffers costs a set-up and a tear-down (the buffers zeroed, pinned and
/// freed), which on short epochs of page-cache-hot files outweighed the reads.
#[derive(Default)]
pub struct ReaderPool {
    idle: Mutex<Vec<(ReusedBackend, u64)>>,
}

impl ReaderPool {
    /// The backends it keeps.
    #[cfg(test)]
    pub(crate) fn kept(&self) -> usize {
        self.idle.lock().map(|i| i.len()).unwrap_or(0)
    }
}

/// One file's reads, issued through a backend lent the file.
struct Reads<'r, C: Clock> {
    clock: &'r C,
    path: &'r Path,
    plan: &'r [(u64, u64)],
    stop: &'r AtomicBool,
    rec: &'r mut Recorder,
    done: &'r mut Vec<Completion>,
    slots: &'r mut [(u64, u64, Nanos)],
    /// Takes each completed read's bytes, in completion order.
    keep: Option<&'r mut Vec<u8>>,
    /// Each read's length rounded up to this (O_DIRECT's 4 KiB, else 1): a file's last
    /// read asks for whole blocks and the kernel returns what is left, as DLIO's
    /// npz_odirect reader reads.
    round_to: u64,
}

impl<C: Clock> Reads<'_, C> {
    /// Issues the plan's reads in order, up to the queue depth in flight.
    fn run(
        &mut self,
        backend: &mut dyn IoBackend,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, EngineError> {
        let depth = backend.capabilities().max_queue_depth.max(1);
        let depth = depth.min(self.slots.len() as u32);
        let mut next = 0usize;
        let mut free: Vec<u32> = (0..depth).rev().collect();
        let mut bytes = 0u64;
        let reads = self.plan;
        while next < reads.len() || backend.in_flight() > 0 {
            while next < reads.len() && !free.is_empty() && !self.stop.load(Ordering::Relaxed) {
                let slot = free.pop().expect("a free slot");
                let (offset, len) = reads[next];
                let len = len.next_multiple_of(self.round_to);
                next += 1;
                self.slots[slot as usize] = (offset, len, self.clock.now());
                backend.push(IoRequest {
                    file: 0,
                    dir: IoDir::Read,
                    offset,
                    len: len as u32,
                    slot,
                    buf_offset: 0,
                    ioprio: 0,
                })?;
            }
            if backend.in_flight() == 0 {
                break;
            }
            backend.submit(1)?;
            self.done.clear();
            backend.reap(self.done);
            let at = self.clock.now();
            for c in self.done.iter() {
                let (offset, len, issued) = self.slots[c.slot as usize];
                free.push(c.slot);
                if c.result < 0 {
                    let e = io_error(self.path, offset, len, c.result);
                    self.rec.error(error_record(self.path, offset, &e));
                    return Err(e.into());
                }
                let n = c.result as u64;
                self.rec
                    .record(OpKind::Read, at.saturating_sub(issued), n, at);
                if let Some(k) = self.keep.as_deref_mut() {
                    k.extend_from_slice(&backend.buffers().get(c.slot)[..n as usize]);
                }
                bytes += n;
                progress(bytes);
            }
        }
        Ok(bytes)
    }
}

impl SampleReader {
    /// A reader whose per-second timeline starts at `start` (the epoch's start).
    pub fn new(setup: ReaderSetup, start: Nanos) -> SampleReader {
        let depth = setup.queue_depth.max(1) as usize;
        SampleReader {
            setup,
            rec: Recorder::new(start, INTERVAL),
            done: Vec::with_capacity(depth),
            slots: vec![(0, 0, Nanos::ZERO); depth],
            backend: None,
        }
    }

    /// A reader as [`SampleReader::new`], on a backend the pool kept, if it has one.
    pub fn with_pool(setup: ReaderSetup, start: Nanos, pool: &ReaderPool) -> SampleReader {
        let mut reader = SampleReader::new(setup, start);
        reader.backend = pool.idle.lock().ok().and_then(|mut idle| idle.pop());
        reader
    }

    /// What the reads measured, as [`SampleReader::finish`]; the backend goes back to
    /// the pool for the next epoch's readers.
    pub fn finish_to(mut self, pool: &ReaderPool) -> WorkerMeasure {
        if let (Some(b), Ok(mut idle)) = (self.backend.take(), pool.idle.lock()) {
            idle.push(b);
        }
        self.finish()
    }

    /// Reads `reads` (offset, length) of `path` in order, keeping up to the queue depth
    /// in flight; `progress` is told the bytes read so far after each completion.
    /// Returns the bytes read. A read that fails is counted and returned.
    pub fn read_file<C: Clock>(
        &mut self,
        clock: &C,
        path: &Path,
        reads: &[(u64, u64)],
        stop: &AtomicBool,
        mut progress: impl FnMut(u64),
    ) -> Result<u64, EngineError> {
        let to = ReadsTo {
            progress: &mut progress,
            keep: None,
        };
        self.read_into(clock, path, reads, stop, to)
    }

    /// Reads `len` bytes at `offset` of `path` as one read, timed and counted as
    /// [`SampleReader::read_file`]'s, and returns what it read (a parquet footer, which
    /// says where the rest lies). The null backend returns zeros.
    pub fn read_bytes<C: Clock>(
        &mut self,
        clock: &C,
        path: &Path,
        (offset, len): (u64, u64),
        stop: &AtomicBool,
    ) -> Result<Vec<u8>, EngineError> {
        let mut kept = Vec::with_capacity(len as usize);
        let plan = [(offset, len)];
        let to = ReadsTo {
            progress: &mut |_| {},
            keep: Some(&mut kept),
        };
        self.read_into(clock, path, &plan, stop, to)?;
        Ok(kept)
    }

    /// Reads `first` of `path` and then, with the file still open, the range `then`
    /// names from those bytes, in reads of at most `block` bytes (a parquet footer as
    /// pyarrow reads it: the 64 KiB tail, then the whole metadata when it is longer, on
    /// one open). Returns both reads' bytes (the second empty when `then` names none).
    pub fn read_bytes_then<C: Clock>(
        &mut self,
        clock: &C,
        path: &Path,
        (first, block): ((u64, u64), u64),
        stop: &AtomicBool,
        then: impl FnOnce(&[u8]) -> Option<(u64, u64)>,
    ) -> Result<(Vec<u8>, Vec<u8>), EngineError> {
        let (mut head, mut rest) = (Vec::new(), Vec::new());
        let block = block.max(first.1).max(1).next_multiple_of(4096);
        let files = self.open_for(path, block)?;
        let (setup, rec, done, slots) =
            (self.setup, &mut self.rec, &mut self.done, &mut self.slots);
        let backend = &mut self.backend.as_mut().expect("opened by open_for").0;
        let round_to = if setup.direct { 4096 } else { 1 };
        backend.with_files(&files, |b| {
            let plan = [first];
            let mut reads = Reads {
                clock,
                path,
                plan: &plan,
                stop,
                rec: &mut *rec,
                done: &mut *done,
                slots: &mut slots[..],
                keep: Some(&mut head),
                round_to,
            };
            reads.run(b, &mut |_| {})?;
            let Some((start, len)) = then(&head) else {
                return Ok(0);
            };
            let plan: Vec<(u64, u64)> = (0..len)
                .step_by(block as usize)
                .map(|at| (start + at, block.min(len - at)))
                .collect();
            let mut reads = Reads {
                clock,
                path,
                plan: &plan,
                stop,
                rec,
                done,
                slots: &mut slots[..],
                keep: Some(&mut rest),
                round_to,
            };
            reads.run(b, &mut |_| {})
        })??;
        Ok((head, rest))
    }

    /// `path` opened for reading (nothing for the null backend), and the reader's
    /// backend set up with slots of at least `block` bytes.
    fn open_for(&mut self, path: &Path, block: u64) -> Result<Vec<DataFile>, EngineError> {
        let files = if self.setup.backend == BackendKind::Null {
            Vec::new()
        } else {
            let spec = OpenSpec {
                direct: self.setup.direct,
                ..OpenSpec::default()
            };
            vec![DataFile::open(path, spec)?]
        };
        let block = block.max(self.setup.transfer).max(1);
        if self.backend.as_ref().is_none_or(|b| b.1 < block) {
            // The reads that fill the free slots go to the kernel in one call (`run`
            // pushes them all, then submits): on page-cache hits, two system calls for
            // a 1 MiB file of 256 KiB reads at queue depth 4 instead of five.
            let depth = self.setup.queue_depth.max(1);
            let opts = BackendOptions {
                queue_depth: depth,
                block_size: block,
                alignment: 4096,
                submit_batch: depth,
                write_window: 0,
            };
            let opened = ReusedBackend::open_movable(self.setup.backend, opts)?;
            self.backend = Some((opened, block));
        }
        Ok(files)
    }

    /// The reads of [`SampleReader::read_file`], told to `to`.
    fn read_into<C: Clock>(
        &mut self,
        clock: &C,
        path: &Path,
        reads: &[(u64, u64)],
        stop: &AtomicBool,
        to: ReadsTo<'_>,
    ) -> Result<u64, EngineError> {
        let ReadsTo { progress, keep } = to;
        // Every read fits its slot: a plan's reads may pass `transfer`.
        let block = reads
            .iter()
            .map(|r| r.1.next_multiple_of(4096))
            .max()
            .unwrap_or(0);
        let files = self.open_for(path, block)?;
        let backend = &mut self.backend.as_mut().expect("opened by open_for").0;
        let mut reads = Reads {
            clock,
            path,
            plan: reads,
            stop,
            rec: &mut self.rec,
            done: &mut self.done,
            slots: &mut self.slots,
            keep,
            round_to: if self.setup.direct { 4096 } else { 1 },
        };
        backend.with_files(&files, |b| reads.run(b, progress))?
    }

    /// Reads and bytes so far (the live view's).
    pub fn count(&self) -> OpCount {
        self.rec.count(OpKind::Read)
    }

    /// What the reads measured: latencies, counts, per-second timeline, errors.
    pub fn finish(self) -> WorkerMeasure {
        self.rec.finish()
    }
}

/// Who hears of a file's reads besides the recorder: `progress` the bytes read so far
/// after each completion, `keep` each completed read's bytes in completion order.
struct ReadsTo<'a> {
    progress: &'a mut dyn FnMut(u64),
    keep: Option<&'a mut Vec<u8>>,
}

fn io_error(path: &Path, offset: u64, len: u64, result: i32) -> BackendError {
    BackendError::Io {
        op: "read",
        path: path.to_path_buf(),
        offset,
        len,
        source: std::io::Error::from_raw_os_error(-result),
    }
}

fn error_record(path: &Path, offset: u64, e: &BackendError) -> ErrorRecord {
    let errno = match e {
        BackendError::Io { source, .. } => source.raw_os_error(),
        _ => None,
    };
    ErrorRecord {
        rank: 0,
        host: String::new(),
        op: OpKind::Read,
        path: path.display().to_string(),
        offset: Some(offset),
        errno,
        message: e.to_string(),
    }
}
