//! [`ReusedBackend`]: one backend a thread keeps across many short-lived files, as a
//! training reader opens, reads whole and closes a file per sample. Its io_uring ring
//! (or psync's buffer) is set up once; each file set is lent to it for one closure
//! ([`ReusedBackend::with_files`]), after which every I/O it pushed has completed and
//! the backend no longer holds the files' descriptors.

use std::os::fd::{AsRawFd, BorrowedFd};

use iolab_core::spec::BackendKind;

use crate::error::BackendError;
use crate::files::DataFile;
use crate::null::NullBackend;
use crate::psync::PsyncBackend;
use crate::uring::UringBackend;
use crate::{BackendOptions, Completion, IoBackend, open_backend};

pub struct ReusedBackend {
    inner: Inner,
}

enum Inner {
    Uring(Box<UringBackend<'static>>),
    Psync(Box<PsyncBackend<'static>>),
    Null(NullBackend),
    /// A backend with no descriptors to lend (nbd, nfs): opened per file set.
    PerFiles(BackendKind, BackendOptions),
}

impl ReusedBackend {
    /// Sets up a backend of `kind` with no files yet. io_uring's ring is made (and
    /// registered) by the calling thread, the one that must use it.
    pub fn open(kind: BackendKind, opts: BackendOptions) -> Result<ReusedBackend, BackendError> {
        let inner =
            match kind {
                BackendKind::Uring => Inner::Uring(Box::new(UringBackend::new(&[], opts)?)),
                BackendKind::Psync | BackendKind::Sync => Inner::Psync(Box::new(
                    PsyncBackend::new(&[], opts, kind == BackendKind::Sync)?,
                )),
                BackendKind::Null => Inner::Null(NullBackend::new(opts)?),
                other => Inner::PerFiles(other, opts),
            };
        Ok(ReusedBackend { inner })
    }

    /// As [`ReusedBackend::open`], but the backend may move from thread to thread
    /// between file sets (io_uring: a plain ring, not a single-issuer one), so a pool
    /// can keep it beyond the life of the thread that made it.
    pub fn open_movable(
        kind: BackendKind,
        opts: BackendOptions,
    ) -> Result<ReusedBackend, BackendError> {
        match kind {
            BackendKind::Uring => Ok(ReusedBackend {
                inner: Inner::Uring(Box::new(UringBackend::movable(opts)?)),
            }),
            other => Self::open(other, opts),
        }
    }

    /// Runs `f` with the backend reaching `files` (request `file` i is `files[i]`). When
    /// it returns, or unwinds, every request `f` pushed has completed (those it left
    /// unreaped are dropped) and the backend holds none of the files' descriptors.
    pub fn with_files<R>(
        &mut self,
        files: &[DataFile],
        f: impl FnOnce(&mut dyn IoBackend) -> R,
    ) -> Result<R, BackendError> {
        match &mut self.inner {
            Inner::Uring(ring) => {
                let fds = DataFile::fds(files, "uring")?;
                let devices = files.iter().map(DataFile::is_block_device).collect();
                ring.lend_files(fds.iter().map(|fd| fd.as_raw_fd()).collect(), devices);
                let lent = Lent(ring.as_mut());
                Ok(f(&mut *lent.0))
            }
            Inner::Psync(psync) => {
                let fds = DataFile::fds(files, "psync")?;
                let devices = files.iter().map(DataFile::is_block_device).collect();
                // SAFETY: the descriptors are borrowed from `files` only until `Lent` is
                // dropped at the end of this arm (also when `f` unwinds), which takes
                // them back out of the backend; psync completes every I/O inside its
                // `submit`, so no I/O outlives the borrow.
                let fds: Vec<BorrowedFd<'static>> = unsafe {
                    fds.into_iter()
                        .map(|fd| BorrowedFd::borrow_raw(fd.as_raw_fd()))
                        .collect()
                };
                psync.lend_files(fds, devices);
                let lent = Lent(psync.as_mut());
                Ok(f(&mut *lent.0))
            }
            Inner::Null(null) => {
                let r = f(null);
                drain(null);
                Ok(r)
            }
            Inner::PerFiles(kind, opts) => {
                let mut backend = open_backend(*kind, files, *opts)?;
                let r = f(backend.as_mut());
                drain(backend.as_mut());
                Ok(r)
            }
        }
    }
}

/// A backend that holds a file set it must give back.
trait LendsFiles: IoBackend {
    /// Forgets the lent descriptors (every I/O has completed).
    fn take_back_files(&mut self);
}

impl LendsFiles for UringBackend<'static> {
    fn take_back_files(&mut self) {
        UringBackend::take_back_files(self);
    }
}

impl LendsFiles for PsyncBackend<'static> {
    fn take_back_files(&mut self) {
        PsyncBackend::take_back_files(self);
    }
}

/// Gives the files back when the borrow ends, after every pushed I/O has completed.
struct Lent<'r, B: LendsFiles + ?Sized>(&'r mut B);

impl<B: LendsFiles + ?Sized> Drop for Lent<'_, B> {
    fn drop(&mut self) {
        drain(self.0);
        self.0.take_back_files();
    }
}

/// Waits for every in-flight request and drops its completion.
fn drain(b: &mut (impl IoBackend + ?Sized)) {
    let mut sink: Vec<Completion> = Vec::new();
    while b.in_flight() > 0 {
        if b.submit(1).is_err() {
            break;
        }
        b.reap(&mut sink);
        sink.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::OpenSpec;
    use crate::{IoDir, IoRequest};

    fn read_all(b: &mut dyn IoBackend, len: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let mut done = Vec::new();
        let mut off = 0;
        while off < len {
            let n = 4096.min(len - off);
            b.push(IoRequest {
                file: 0,
                dir: IoDir::Read,
                offset: off,
                len: n as u32,
                slot: 0,
                buf_offset: 0,
                ioprio: 0,
            })
            .unwrap();
            b.submit(1).unwrap();
            done.clear();
            b.reap(&mut done);
            assert_eq!(done.len(), 1);
            let got = done[0].result as usize;
            out.extend_from_slice(&b.buffers().get(0)[..got]);
            off += n;
        }
        out
    }

    #[test]
    fn one_backend_reads_file_after_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut kinds = vec![BackendKind::Psync, BackendKind::Sync];
        if crate::uring_available().is_ok() {
            kinds.push(BackendKind::Uring);
        }
        let opts = BackendOptions {
            queue_depth: 2,
            block_size: 4096,
            alignment: 4096,
            submit_batch: 1,
            write_window: 0,
        };
        for kind in kinds {
            let mut backend = ReusedBackend::open(kind, opts).unwrap();
            for i in 0..3u8 {
                let path = dir.path().join(format!("f{i}"));
                let data: Vec<u8> = (0..5000u32).map(|k| (k as u8).wrapping_add(i)).collect();
                std::fs::write(&path, &data).unwrap();
                let file = [DataFile::open(&path, OpenSpec::default()).unwrap()];
                let got = backend
                    .with_files(&file, |b| read_all(b, data.len() as u64))
                    .unwrap();
                assert_eq!(got, data, "{kind:?} file {i}");
            }
        }
        // The null backend reads nothing and needs no file.
        let mut null = ReusedBackend::open(BackendKind::Null, opts).unwrap();
        let n = null.with_files(&[], |b| read_all(b, 8192).len()).unwrap();
        assert_eq!(n, 8192);
    }

    #[test]
    fn io_left_in_flight_completes_before_the_files_are_given_back() {
        if crate::uring_available().is_err() {
            eprintln!("skipped: io_uring is not available here");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 8192]).unwrap();
        let opts = BackendOptions {
            queue_depth: 2,
            block_size: 4096,
            alignment: 4096,
            submit_batch: 8,
            write_window: 0,
        };
        let mut backend = ReusedBackend::open(BackendKind::Uring, opts).unwrap();
        let file = [DataFile::open(&path, OpenSpec::default()).unwrap()];
        backend
            .with_files(&file, |b| {
                for slot in 0..2 {
                    let req = IoRequest {
                        file: 0,
                        dir: IoDir::Read,
                        offset: u64::from(slot) * 4096,
                        len: 4096,
                        slot,
                        buf_offset: 0,
                        ioprio: 0,
                    };
                    b.push(req).unwrap();
                }
                assert_eq!(b.in_flight(), 2);
            })
            .unwrap();
        // Both were drained: the next file set starts with every slot free.
        let got = backend.with_files(&file, |b| read_all(b, 8192)).unwrap();
        assert_eq!(got, vec![7u8; 8192]);
    }
}
