//! Whole-file writes and reads through a worker's backend: [`FileIo`] is what a worker
//! of a checkpoint or dataset-generation phase holds (its backend, set up once, and its
//! recorder); [`FileIo::with_file`] opens a file and lends it as [`FileOps`], whose
//! writes and reads go through the `IoBackend` from the backend's own buffer (slot 0)
//! and are stamped by the [`Clock`] into the recorder.

use std::path::Path;

use iolab_backend::files::{DataFile, OpenSpec};
use iolab_backend::{
    BackendError, BackendOptions, Completion, IoBackend, IoDir, IoRequest, ReusedBackend,
};
use iolab_core::result::{ErrorRecord, OpKind};
use iolab_core::spec::BackendKind;
use iolab_core::units::Nanos;

use crate::clock::Clock;
use crate::error::EngineError;
use crate::recorder::{Recorder, WorkerMeasure};
use crate::worker::INTERVAL;

/// One worker's file I/O.
pub struct FileIo<'c, C: Clock> {
    clock: &'c C,
    backend: ReusedBackend,
    rec: Recorder,
    done: Vec<Completion>,
    /// The largest single write or read.
    buffer: u64,
}

impl<'c, C: Clock> FileIo<'c, C> {
    /// A worker's I/O on `kind` with a buffer of `buffer` bytes, its timeline starting
    /// at `start` (the phase's).
    pub fn new(
        clock: &'c C,
        kind: BackendKind,
        buffer: u64,
        start: Nanos,
    ) -> Result<Self, EngineError> {
        let opts = BackendOptions {
            queue_depth: 1,
            block_size: buffer.max(1),
            alignment: 4096,
            submit_batch: 1,
            write_window: 0,
        };
        Ok(FileIo {
            clock,
            backend: ReusedBackend::open(kind, opts)?,
            rec: Recorder::new(start, INTERVAL),
            done: Vec::with_capacity(1),
            buffer: buffer.max(1),
        })
    }

    /// The buffer writes take their bytes from (filled by the caller before timing).
    pub fn fill_buffer(&mut self, fill: impl FnOnce(&mut [u8])) -> Result<(), EngineError> {
        self.backend
            .with_files(&[], |b| fill(b.buffers().get_mut(0)))
            .map_err(EngineError::from)
    }

    /// Opens `path` as `open` says and runs `f` on it; the file is closed after.
    pub fn with_file<R>(
        &mut self,
        path: &Path,
        open: OpenSpec,
        f: impl FnOnce(&mut FileOps<'_, C>) -> Result<R, EngineError>,
    ) -> Result<R, EngineError> {
        let file = [DataFile::open(path, open)?];
        let (clock, rec, done, buffer) = (self.clock, &mut self.rec, &mut self.done, self.buffer);
        self.backend.with_files(&file, |backend| {
            f(&mut FileOps {
                clock,
                backend,
                rec,
                done,
                file: &file[0],
                buffer,
            })
        })?
    }

    /// Starts the timeline again at `start` (the phase's start, known once released).
    pub(crate) fn restart(&mut self, start: Nanos) {
        self.rec = Recorder::new(start, INTERVAL);
    }

    /// Records a failure unless an I/O already recorded it.
    pub fn note_error(&mut self, e: &EngineError) {
        if self.rec.error_count() == 0 {
            let op = if self.rec.count(OpKind::Read).ops > 0 {
                OpKind::Read
            } else {
                OpKind::Write
            };
            self.rec
                .error(crate::train::file_phase::error_record(op, e));
        }
    }

    /// Operations and bytes so far, by kind.
    pub fn count(&self, op: OpKind) -> iolab_core::result::OpCount {
        self.rec.count(op)
    }

    /// What the I/O measured: latencies, counts, per-second timeline, errors.
    pub fn finish(self) -> WorkerMeasure {
        self.rec.finish()
    }
}

/// One open file's writes and reads.
pub struct FileOps<'f, C: Clock> {
    clock: &'f C,
    backend: &'f mut dyn IoBackend,
    rec: &'f mut Recorder,
    done: &'f mut Vec<Completion>,
    file: &'f DataFile,
    buffer: u64,
}

impl<C: Clock> FileOps<'_, C> {
    /// The buffer writes take their bytes from.
    pub fn buffer(&mut self) -> &mut [u8] {
        self.backend.buffers().get_mut(0)
    }

    /// Writes the buffer's first `len` bytes at `offset` (a short write is continued).
    pub fn write(&mut self, len: u64, offset: u64) -> Result<(), EngineError> {
        let mut at = 0;
        while at < len {
            let n = self.io(IoDir::Write, at, len - at, offset + at)?;
            if n == 0 {
                let zero = std::io::Error::from(std::io::ErrorKind::WriteZero);
                return Err(self.fail(OpKind::Write, offset + at, len - at, zero));
            }
            at += n;
        }
        Ok(())
    }

    /// Copies `bytes` into the buffer and writes them at `offset`.
    pub fn write_bytes(&mut self, bytes: &[u8], offset: u64) -> Result<(), EngineError> {
        self.buffer()[..bytes.len()].copy_from_slice(bytes);
        self.write(bytes.len() as u64, offset)
    }

    /// Reads `len` bytes at `offset` into the buffer; returns the bytes read (fewer at
    /// the file's end).
    pub fn read(&mut self, len: u64, offset: u64) -> Result<u64, EngineError> {
        self.io(IoDir::Read, 0, len, offset)
    }

    /// Flushes the file to storage (fsync).
    pub fn fsync(&mut self) -> Result<(), EngineError> {
        self.file.fsync().map_err(EngineError::from)
    }

    /// One I/O of `len` bytes from `buf_offset` in the buffer, timed and recorded.
    fn io(
        &mut self,
        dir: IoDir,
        buf_offset: u64,
        len: u64,
        offset: u64,
    ) -> Result<u64, EngineError> {
        assert!(buf_offset + len <= self.buffer, "an I/O within the buffer");
        let op = if dir == IoDir::Write {
            OpKind::Write
        } else {
            OpKind::Read
        };
        let issued = self.clock.now();
        self.backend.push(IoRequest {
            file: 0,
            dir,
            offset,
            len: len as u32,
            slot: 0,
            buf_offset: buf_offset as u32,
            ioprio: 0,
        })?;
        self.done.clear();
        while self.done.is_empty() {
            self.backend.submit(1)?;
            self.backend.reap(self.done);
        }
        let at = self.clock.now();
        let result = self.done[0].result;
        if result < 0 {
            let source = std::io::Error::from_raw_os_error(-result);
            return Err(self.fail(op, offset, len, source));
        }
        let n = result as u64;
        self.rec.record(op, at.saturating_sub(issued), n, at);
        Ok(n)
    }

    /// Records a failed I/O and returns its error, naming the file and the offset.
    fn fail(&mut self, op: OpKind, offset: u64, len: u64, source: std::io::Error) -> EngineError {
        let errno = source.raw_os_error();
        let e = BackendError::Io {
            op: if op == OpKind::Write { "write" } else { "read" },
            path: self.file.path().to_path_buf(),
            offset,
            len,
            source,
        };
        self.rec.error(ErrorRecord {
            rank: 0,
            host: String::new(),
            op,
            path: self.file.path().display().to_string(),
            offset: Some(offset),
            errno,
            message: e.to_string(),
        });
        e.into()
    }
}
