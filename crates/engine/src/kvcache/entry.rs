//! A cache entry's bytes, as kv-cache.py lays them: a `.npy` file (numpy's v1.0
//! header, [`npy_header`], then the float16 array `(layers, 2, tokens, kv_heads,
//! head_dim)`, its bytes iolab's data: data.rs) on the storage tier, the same bytes in a
//! buffer on the CPU tier.
//! [`EntryIo`] is one worker's means to move them: a storage entry is streamed in
//! transfer-size pieces through the worker's one [`IoBackend`] (psync, io_uring or null,
//! set up once and lent each entry's file; O_DIRECT where asked), each piece stamped by
//! the [`Clock`] into a [`Recorder`] (histograms, per-second timeline, errors); a CPU
//! entry is copied through one buffer.

use std::path::Path;
use std::sync::Arc;

mod data;
mod object;

use iolab_backend::buffer::BufferPool;
use iolab_backend::files::{DataFile, OpenSpec};
use iolab_backend::object::ObjectBackend;
use iolab_backend::{
    BackendError, BackendOptions, Completion, IoBackend, IoDir, IoRequest, ReusedBackend,
    capabilities_of,
};
use iolab_core::kvcache::ModelShape;
use iolab_core::result::{ErrorRecord, OpKind};
use iolab_core::rng::mix;
use iolab_core::spec::BackendKind;
use iolab_core::units::Nanos;

use crate::clock::Clock;
use crate::error::EngineError;
use crate::plan::INTERVAL;
use crate::recorder::{Recorder, WorkerMeasure};
use data::EntryData;

/// The payload from which numpy's `tofile` reserves the array's bytes before writing
/// them (`npy_fallocate`: `fallocate(KEEP_SIZE)` past the header, from 16 MiB), which
/// kv-cache.py's `np.save` does for every entry that large.
const NUMPY_FALLOCATE_FROM: u64 = 16 << 20;

/// numpy's `.npy` v1.0 header for a float16 array of `tokens` tokens: magic, version,
/// length, the dict, padded with spaces and a newline to a multiple of 64 bytes.
pub fn npy_header(shape: &ModelShape, tokens: u64) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '<f2', 'fortran_order': False, 'shape': ({}, 2, {}, {}, {}), }}",
        shape.layers,
        tokens,
        shape.kv_heads,
        shape.head_dim()
    );
    let unpadded = 10 + dict.len() + 1;
    let total = unpadded.div_ceil(64) * 64;
    let mut h = Vec::with_capacity(total);
    h.extend_from_slice(b"\x93NUMPY\x01\x00");
    h.extend_from_slice(&((total - 10) as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.resize(total - 1, b' ');
    h.push(b'\n');
    h
}

/// Time spans of one storage operation: the whole of it and its device part (the
/// reads; the fsync of a write).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spans {
    pub total: Nanos,
    pub device: Nanos,
}

/// How a worker reaches the storage tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntrySetup {
    pub backend: BackendKind,
    /// Bytes per read and write (at most 1 GiB, a multiple of 4 KiB).
    pub transfer: u64,
    pub direct: bool,
    /// Draws the worker's data base and, with each entry's name, its data (data.rs).
    pub seed: u64,
}

/// One worker's storage I/O, memory buffer, clock and recorder.
pub struct EntryIo<'c> {
    setup: EntrySetup,
    /// The CPU tier's copies go through it.
    pool: BufferPool,
    /// What entries are made of.
    data: EntryData,
    pub clock: &'c dyn Clock,
    /// Its timeline's start, and the recorder of its I/Os since it was last taken.
    start: Nanos,
    rec: Recorder,
    done: Vec<Completion>,
    /// The storage tier's backend: set up by this worker's thread at its first entry
    /// (an io_uring ring belongs to the thread that made it), then lent each file.
    backend: Option<ReusedBackend>,
    /// True once the run is over: a streaming entry stops at its next piece.
    pub over: &'c dyn Fn() -> bool,
    /// The storage tier is a bucket (object.rs): entries are objects named by their path.
    objects: Option<Box<dyn ObjectBackend>>,
    /// The storage tier is a block device (checked by the target's guard): entries are
    /// runs of blocks at their offsets, nothing is created, truncated or removed.
    on_device: bool,
}

fn never() -> bool {
    false
}

const BLOCK: usize = 4096;

/// A piece of an entry on its way: which file, where, how long.
struct Piece<'p> {
    path: &'p Path,
    offset: u64,
    len: usize,
}

/// What streaming an entry through a lent backend uses besides the backend.
struct Stream<'s> {
    clock: &'s dyn Clock,
    rec: &'s mut Recorder,
    done: &'s mut Vec<Completion>,
    over: &'s dyn Fn() -> bool,
    direct: bool,
    data: &'s EntryData,
}

impl<'c> EntryIo<'c> {
    /// A worker's entry I/O whose per-second timeline starts at `start`.
    pub fn new(
        setup: EntrySetup,
        clock: &'c dyn Clock,
        start: Nanos,
    ) -> Result<EntryIo<'c>, EngineError> {
        let t = setup.transfer;
        let pool = BufferPool::new(1, t, BLOCK as u64)
            .map_err(|e| EngineError::Setup(format!("a transfer buffer of {t} bytes: {e}")))?;
        Ok(EntryIo {
            data: EntryData::new(setup.seed),
            setup,
            pool,
            clock,
            start,
            rec: Recorder::new(start, INTERVAL),
            done: Vec::with_capacity(1),
            backend: None,
            over: &never,
            objects: None,
            on_device: false,
        })
    }

    fn transfer(&self) -> usize {
        self.pool.get(0).len()
    }

    /// What the storage tier's I/Os measured: per-I/O latencies of reads, writes and
    /// fsyncs, the per-second timeline, the errors.
    pub fn finish(self) -> WorkerMeasure {
        self.rec.finish()
    }

    /// What the storage tier's I/Os measured since the last take, the recorder left new
    /// (nothing held): a worker hands it on after each entry, so that none keeps
    /// latencies that grow with the run. Merged in order, the takes hold the counts,
    /// latencies and timeline (quiet stretches too) [`EntryIo::finish`] would have.
    pub fn take_measure(&mut self) -> WorkerMeasure {
        std::mem::replace(&mut self.rec, Recorder::new(self.start, INTERVAL)).finish()
    }

    /// The entry's file opened (none on a backend that touches no storage).
    fn open(&self, path: &Path, write: bool) -> Result<Vec<DataFile>, EngineError> {
        if !capabilities_of(self.setup.backend, 1).touches_storage {
            return Ok(Vec::new());
        }
        let spec = OpenSpec {
            write,
            create: write && !self.on_device,
            truncate: write && !self.on_device,
            direct: self.setup.direct,
            ..OpenSpec::default()
        };
        Ok(vec![DataFile::open(path, spec)?])
    }

    /// Runs `f` with the worker's backend lent `files`, and the rest it streams with.
    fn with_backend<R>(
        &mut self,
        files: &[DataFile],
        f: impl FnOnce(&mut dyn IoBackend, &mut Stream<'_>) -> Result<R, EngineError>,
    ) -> Result<R, EngineError> {
        if self.backend.is_none() {
            let opts = BackendOptions {
                queue_depth: 1,
                block_size: self.setup.transfer,
                alignment: BLOCK as u64,
                submit_batch: 1,
                write_window: 0,
            };
            self.backend = Some(ReusedBackend::open(self.setup.backend, opts)?);
        }
        let backend = self.backend.as_mut().expect("opened above");
        let mut stream = Stream {
            clock: self.clock,
            rec: &mut self.rec,
            done: &mut self.done,
            over: self.over,
            direct: self.setup.direct,
            data: &self.data,
        };
        backend.with_files(files, |b| f(b, &mut stream))?
    }

    /// Writes an entry of `header` + `payload` bytes as a new file at `path`: streamed
    /// in transfer-size writes, then fsynced. `from`: a CPU-tier entry's bytes being
    /// demoted (else generated). A write that fails or is cut removes what it wrote.
    pub fn write_file(
        &mut self,
        path: &Path,
        offset: u64,
        header: &[u8],
        payload: u64,
        from: Option<&Arc<Vec<u8>>>,
    ) -> Result<Spans, EngineError> {
        if self.objects.is_some() {
            return self.put_object(path, header, payload, from);
        }
        let entry = Entry {
            path,
            offset,
            header,
            total: header.len() as u64 + payload,
            from,
        };
        let r = self.write_whole(&entry);
        if r.is_err() && !self.on_device {
            let _ = std::fs::remove_file(path);
        }
        r
    }

    fn write_whole(&mut self, entry: &Entry<'_>) -> Result<Spans, EngineError> {
        let total = entry.total;
        let t0 = self.clock.now();
        let files = self.open(entry.path, true)?;
        let payload = total - entry.header.len() as u64;
        if let Some(file) = files.first()
            && !self.on_device
            && entry.offset == 0
            && payload >= NUMPY_FALLOCATE_FROM
        {
            file.reserve_keep_size(entry.header.len() as u64, payload)?;
        }
        self.with_backend(&files, |b, s| s.write_pieces(b, entry))?;
        let t1 = self.clock.now();
        if let Some(file) = files.first() {
            if self.setup.direct && !self.on_device && !total.is_multiple_of(BLOCK as u64) {
                file.set_len(total)?;
            }
            file.fsync()?;
        }
        let t2 = self.clock.now();
        if !files.is_empty() {
            self.rec.record(OpKind::Fsync, t2.saturating_sub(t1), 0, t2);
        }
        Ok(Spans {
            total: t2.saturating_sub(t0),
            device: t2.saturating_sub(t1),
        })
    }

    /// Reads an entry's file whole, `size` bytes (after dropping its cached pages, as
    /// the reference's fadvise DONTNEED); returns the bytes read.
    pub fn read_file(
        &mut self,
        path: &Path,
        offset: u64,
        size: u64,
    ) -> Result<(u64, Spans), EngineError> {
        if self.objects.is_some() {
            return self.get_object(path, size);
        }
        let t0 = self.clock.now();
        let files = self.open(path, false)?;
        if let Some(file) = files.first()
            && !self.setup.direct
        {
            let _ = file.advise_dont_need();
        }
        let t1 = self.clock.now();
        let at = self.with_backend(&files, |b, s| s.read_pieces(b, path, offset, size))?;
        let t2 = self.clock.now();
        Ok((
            at,
            Spans {
                total: t2.saturating_sub(t0),
                device: t2.saturating_sub(t1),
            },
        ))
    }

    /// A CPU-tier entry's bytes made (those its file at `path` would hold): header +
    /// payload made in the buffer and copied from it.
    pub fn fill_memory(
        &mut self,
        path: &Path,
        header: &[u8],
        payload: u64,
    ) -> Result<Vec<u8>, EngineError> {
        let total = header.len() + payload as usize;
        let mut v = Vec::new();
        v.try_reserve_exact(total).map_err(|_| {
            EngineError::Setup(format!(
                "{total} bytes for a CPU-tier entry could not be allocated"
            ))
        })?;
        let first = self.data.first(path, 0);
        let t = self.transfer();
        while v.len() < total {
            // As a file's pieces: a run that is over stops filling (an entry of
            // gigabytes made after the end held memory and the wind-down).
            if (self.over)() {
                return Err(EngineError::Interrupted);
            }
            let n = (total - v.len()).min(t);
            let buf = &mut self.pool.get_mut(0)[..n];
            self.data.fill(buf, first, v.len() as u64, header);
            v.extend_from_slice(buf);
        }
        Ok(v)
    }

    /// Reads a CPU-tier entry: its bytes copied out through the buffer.
    pub fn read_memory(&mut self, data: &[u8]) -> u64 {
        let t = self.transfer();
        for c in data.chunks(t) {
            self.pool.get_mut(0)[..c.len()].copy_from_slice(c);
        }
        std::hint::black_box(self.pool.get(0));
        data.len() as u64
    }
}

/// An entry being written: its file and where in it, its header, its size, its bytes
/// if demoted.
struct Entry<'e> {
    path: &'e Path,
    offset: u64,
    header: &'e [u8],
    total: u64,
    from: Option<&'e Arc<Vec<u8>>>,
}

impl Stream<'_> {
    /// One I/O of `p` through the backend (its data in slot 0 from `buf_offset`),
    /// recorded; the bytes it moved. A failed I/O is counted and returned.
    fn io(
        &mut self,
        backend: &mut dyn IoBackend,
        dir: IoDir,
        p: &Piece<'_>,
        buf_offset: u32,
    ) -> Result<usize, EngineError> {
        let t0 = self.clock.now();
        backend.push(IoRequest {
            file: 0,
            dir,
            offset: p.offset,
            len: p.len as u32,
            slot: 0,
            buf_offset,
            ioprio: 0,
        })?;
        backend.submit(1)?;
        self.done.clear();
        backend.reap(self.done);
        let at = self.clock.now();
        let op = if dir == IoDir::Read {
            OpKind::Read
        } else {
            OpKind::Write
        };
        let result = self.done.first().map_or(-libc_eio(), |c| c.result);
        if result < 0 {
            let e = io_error(op, p, std::io::Error::from_raw_os_error(-result));
            self.rec.error(error_record(op, p, &e));
            return Err(e.into());
        }
        self.rec
            .record(op, at.saturating_sub(t0), result as u64, at);
        Ok(result as usize)
    }

    /// Writes the entry's pieces, each whole (a short write continues where it ended).
    fn write_pieces(&mut self, b: &mut dyn IoBackend, e: &Entry<'_>) -> Result<(), EngineError> {
        let first = self.data.first(e.path, e.offset);
        let t = b.buffers().slot_size() as u64;
        let mut at = 0u64;
        while at < e.total {
            if (self.over)() {
                return Err(EngineError::Interrupted);
            }
            let n = (e.total - at).min(t) as usize;
            let buf = b.buffers().get_mut(0);
            match e.from {
                Some(data) => buf[..n].copy_from_slice(&data[at as usize..at as usize + n]),
                None => self.data.fill(&mut buf[..n], first, at, e.header),
            }
            // O_DIRECT writes whole blocks; the file is cut to its size afterwards.
            let len = if self.direct {
                n.div_ceil(BLOCK) * BLOCK
            } else {
                n
            };
            let mut put = 0usize;
            while put < len {
                let p = Piece {
                    path: e.path,
                    offset: e.offset + at + put as u64,
                    len: len - put,
                };
                put += self.io(b, IoDir::Write, &p, put as u32)?;
            }
            at += n as u64;
        }
        Ok(())
    }

    /// Reads `size` bytes of `path` in pieces; the bytes read.
    fn read_pieces(
        &mut self,
        b: &mut dyn IoBackend,
        path: &Path,
        base: u64,
        size: u64,
    ) -> Result<u64, EngineError> {
        let t = b.buffers().slot_size() as u64;
        let mut at = 0u64;
        while at < size {
            if (self.over)() {
                return Err(EngineError::Interrupted);
            }
            let n = (size - at).min(t) as usize;
            let len = if self.direct {
                n.div_ceil(BLOCK) * BLOCK
            } else {
                n
            };
            let p = Piece {
                path,
                offset: base + at,
                len,
            };
            let got = self.io(b, IoDir::Read, &p, 0)?.min(n);
            if got == 0 {
                let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
                return Err(io_error(OpKind::Read, &p, eof).into());
            }
            at += got as u64;
        }
        Ok(at)
    }
}

/// EIO: a backend that reaped no completion for the one I/O it was given.
fn libc_eio() -> i32 {
    5
}

fn path_hash(path: &Path) -> u64 {
    let bytes = path.as_os_str().as_encoded_bytes();
    let words: Vec<u64> = bytes.iter().map(|&b| u64::from(b)).collect();
    mix(&words)
}

fn io_error(op: OpKind, p: &Piece<'_>, source: std::io::Error) -> BackendError {
    BackendError::Io {
        op: if op == OpKind::Read { "read" } else { "write" },
        path: p.path.to_path_buf(),
        offset: p.offset,
        len: p.len as u64,
        source,
    }
}

fn error_record(op: OpKind, p: &Piece<'_>, e: &BackendError) -> ErrorRecord {
    ErrorRecord {
        rank: 0,
        host: String::new(),
        op,
        path: p.path.display().to_string(),
        offset: Some(p.offset),
        errno: e.errno(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::kvcache::KvModel;

    #[test]
    fn the_header_is_numpys() {
        let h = npy_header(&KvModel::Llama31_8b.shape(), 1000);
        assert_eq!(h.len(), 128);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(u16::from_le_bytes([h[8], h[9]]), 118);
        let text = String::from_utf8_lossy(&h[10..]);
        assert!(
            text.starts_with(
                "{'descr': '<f2', 'fortran_order': False, 'shape': (32, 2, 1000, 8, 128), }"
            ),
            "{text}"
        );
        assert!(text.ends_with(" \n"));
    }

    /// Taken after each entry and merged in order, a worker's measure is the one it
    /// would have finished with: its counts, latencies and timeline, the quiet stretches
    /// between its entries included.
    #[test]
    fn measures_taken_entry_by_entry_add_up_to_the_whole() {
        use crate::FakeClock;
        let dir = tempfile::tempdir().unwrap();
        let setup = EntrySetup {
            backend: BackendKind::Psync,
            transfer: 65536,
            direct: false,
            seed: 1,
        };
        let run = |take: bool| {
            let clock = FakeClock::new(Nanos(1000));
            let mut io = EntryIo::new(setup, &clock, Nanos::ZERO).unwrap();
            let mut m = WorkerMeasure::default();
            for (i, payload) in [300_000u64, 70_000, 1_000_000].into_iter().enumerate() {
                let path = dir.path().join(format!("e{i}.npy"));
                io.write_file(&path, 0, &[b' '; 128], payload, None)
                    .unwrap();
                io.read_file(&path, 0, 128 + payload).unwrap();
                if take {
                    m.merge(&io.take_measure());
                }
                clock.sleep(Nanos::from_millis(700 * (i as u64 + 1)));
            }
            m.merge(&io.finish());
            m
        };
        let (whole, taken) = (run(false), run(true));
        assert_eq!(taken.timeline, whole.timeline);
        // The waits between entries (0.7 s, 1.4 s) are kept as the whole's are.
        let gaps = &taken.timeline.silences.gaps;
        assert!(
            gaps[0].1 - gaps[0].0 >= Nanos::from_millis(1400),
            "{gaps:?}"
        );
        assert_eq!(whole.ops.len(), 3);
        for (op, m) in &whole.ops {
            let t = &taken.ops[op];
            assert_eq!((t.count, t.errors), (m.count, m.errors), "{op:?}");
            assert_eq!(t.histogram, m.histogram, "{op:?}");
        }
        // Pieces of 64 KiB: 5, 2 and 16 of each entry of 128 + 300,000, 70,000 and
        // 1,000,000 bytes.
        assert_eq!(taken.ops[&OpKind::Write].count.ops, 5 + 2 + 16);
    }
}
