//! [`PsyncBackend`]: pread/pwrite, one I/O at a time; the request completes inside
//! `submit`, so issue and completion stamps bracket exactly one system call. As the
//! `sync` backend it makes fio's sync engine's and IOR's POSIX backend's calls instead:
//! lseek to the offset, then read or write (two system calls per I/O).

use std::os::fd::BorrowedFd;

use iolab_core::spec::BackendKind;

use crate::buffer::BufferPool;
use crate::error::BackendError;
use crate::files::DataFile;
use crate::{BackendOptions, Capabilities, Completion, IoBackend, IoDir, IoRequest};

pub struct PsyncBackend<'a> {
    files: Vec<BorrowedFd<'a>>,
    /// Which files are block devices (a trim is BLKDISCARD there, a punched hole else).
    devices: Vec<bool>,
    pool: BufferPool,
    queued: Option<IoRequest>,
    done: Option<Completion>,
    /// lseek + read/write (the `sync` backend) rather than pread/pwrite.
    seek: bool,
}

impl<'a> PsyncBackend<'a> {
    pub fn new(
        files: &'a [DataFile],
        opts: BackendOptions,
        seek: bool,
    ) -> Result<Self, BackendError> {
        Ok(PsyncBackend {
            files: DataFile::fds(files, if seek { "sync" } else { "psync" })?,
            devices: files.iter().map(DataFile::is_block_device).collect(),
            pool: BufferPool::new(1, opts.slot_size(), opts.alignment)?,
            queued: None,
            done: None,
            seek,
        })
    }
}

impl PsyncBackend<'static> {
    /// Lends a backend opened over no files the descriptors `fds` (by request `file`
    /// index), until [`PsyncBackend::take_back_files`] (before they close).
    pub(crate) fn lend_files(&mut self, fds: Vec<BorrowedFd<'static>>, devices: Vec<bool>) {
        self.files = fds;
        self.devices = devices;
    }

    /// Forgets the lent descriptors (every request has completed in `submit`).
    pub(crate) fn take_back_files(&mut self) {
        self.queued = None;
        self.files.clear();
        self.devices.clear();
    }
}

impl IoBackend for PsyncBackend<'_> {
    fn kind(&self) -> BackendKind {
        if self.seek {
            BackendKind::Sync
        } else {
            BackendKind::Psync
        }
    }

    fn capabilities(&self) -> Capabilities {
        crate::capabilities_of(self.kind(), 1)
    }

    #[inline]
    fn buffers(&mut self) -> &mut BufferPool {
        &mut self.pool
    }

    #[inline]
    fn push(&mut self, req: IoRequest) -> Result<(), BackendError> {
        if self.queued.is_some() || self.done.is_some() {
            return Err(BackendError::QueueFull { depth: 1 });
        }
        self.queued = Some(req);
        Ok(())
    }

    #[inline]
    fn submit(&mut self, _wait_for: u32) -> Result<(), BackendError> {
        let Some(req) = self.queued.take() else {
            return Ok(());
        };
        let fd = self.files[req.file as usize];
        if req.dir == IoDir::Trim {
            let device = self.devices[req.file as usize];
            let result = match crate::files::trim_range(fd, device, req.offset, req.len.into()) {
                Ok(()) => req.len as i32,
                Err(e) => -e.raw_os_error(),
            };
            self.done = Some(Completion {
                slot: req.slot,
                result,
            });
            return Ok(());
        }
        let start = req.buf_offset as usize;
        let buf = &mut self.pool.get_mut(req.slot)[start..start + req.len as usize];
        let res = if self.seek {
            rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(req.offset)).and_then(|_| {
                match req.dir {
                    IoDir::Write => rustix::io::write(fd, buf),
                    _ => rustix::io::read(fd, buf),
                }
            })
        } else {
            match req.dir {
                IoDir::Write => rustix::io::pwrite(fd, buf, req.offset),
                _ => rustix::io::pread(fd, buf, req.offset),
            }
        };
        let result = match res {
            Ok(n) => n as i32,
            Err(e) => -e.raw_os_error(),
        };
        self.done = Some(Completion {
            slot: req.slot,
            result,
        });
        Ok(())
    }

    #[inline]
    fn reap(&mut self, out: &mut Vec<Completion>) {
        if let Some(c) = self.done.take() {
            out.push(c);
        }
    }

    #[inline]
    fn in_flight(&self) -> u32 {
        (self.queued.is_some() || self.done.is_some()) as u32
    }
}
