//! [`NfsBackend`]: data I/O on files of an NFS export through libnfs. At queue depth 1
//! it is psync-like: one synchronous READ or WRITE per I/O, completed inside `submit`.
//! Deeper, it keeps `queue_depth` requests in flight with libnfs's asynchronous calls
//! on the worker's one connection (nfs_pread_async / nfs_pwrite_async), driven by
//! poll(2) on the connection's socket and `nfs_service`, as fio's nfs engine does.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use iolab_core::spec::BackendKind;

use crate::buffer::BufferPool;
use crate::error::BackendError;
use crate::files::DataFile;
use crate::nfs::ffi::Context;
use crate::nfs::{Conn, Fh};
use crate::{BackendOptions, Capabilities, Completion, IoBackend, IoDir, IoRequest};

/// How long `submit` waits for a completion before it gives up on the server (libnfs
/// times calls out after 20 s itself; this bounds a wait that sees no timeout).
const STALL_MS: i64 = 60_000;

/// What a callback needs of its request; one per buffer slot, at a fixed address.
struct Pending {
    done: *mut Vec<Completion>,
    slot: u32,
    buf: *mut u8,
    len: usize,
    read: bool,
}

pub struct NfsBackend<'a> {
    conn: Arc<Conn>,
    files: Vec<Fh>,
    paths: Vec<&'a std::path::Path>,
    /// Dropped only once no request is in flight (see Drop).
    pool: std::mem::ManuallyDrop<BufferPool>,
    depth: u32,
    queued: Vec<IoRequest>,
    in_flight: u32,
    /// Completions the callbacks add (boxed: the Vec itself, not only its elements,
    /// must stay at the address the callbacks were given).
    #[allow(clippy::box_collection)]
    done: Box<Vec<Completion>>,
    pending: Box<[Pending]>,
}

impl<'a> NfsBackend<'a> {
    /// Every file must be on an NFS export, through one connection (one worker's).
    pub fn new(files: &'a [DataFile], opts: BackendOptions) -> Result<Self, BackendError> {
        let mut conn: Option<Arc<Conn>> = None;
        let mut fhs = Vec::with_capacity(files.len());
        for f in files {
            let Some(nf) = f.nfs() else {
                return Err(BackendError::File {
                    op: "nfs",
                    path: f.path().to_path_buf(),
                    source: std::io::Error::other(
                        "not on an NFS export: --backend nfs needs --nfs-url",
                    ),
                });
            };
            match &conn {
                Some(c) if !Arc::ptr_eq(c, &nf.conn) => {
                    return Err(BackendError::File {
                        op: "nfs",
                        path: f.path().to_path_buf(),
                        source: std::io::Error::other("opened on another connection"),
                    });
                }
                Some(_) => {}
                None => conn = Some(nf.conn.clone()),
            }
            fhs.push(nf.fh);
        }
        let conn = match conn {
            Some(c) => c,
            None => {
                return Err(BackendError::NfsUnavailable(
                    "no NFS file to work on".into(),
                ));
            }
        };
        let depth = opts.queue_depth.max(1);
        let mut pool = BufferPool::new(depth, opts.slot_size(), opts.alignment)?;
        let mut done = Box::new(Vec::with_capacity(depth as usize));
        let done_ptr: *mut Vec<Completion> = &mut *done;
        let pending = (0..depth)
            .map(|slot| Pending {
                done: done_ptr,
                slot,
                buf: pool.get_mut(slot).as_mut_ptr(),
                len: 0,
                read: true,
            })
            .collect();
        Ok(NfsBackend {
            conn,
            files: fhs,
            paths: files.iter().map(DataFile::path).collect(),
            pool: std::mem::ManuallyDrop::new(pool),
            depth,
            queued: Vec::with_capacity(depth as usize),
            in_flight: 0,
            done,
            pending,
        })
    }

    /// One I/O through the synchronous calls (queue depth 1).
    fn run_sync(&mut self, req: IoRequest) {
        let fh = self.files[req.file as usize];
        let start = req.buf_offset as usize;
        let buf = &mut self.pool.get_mut(req.slot)[start..start + req.len as usize];
        let res = match req.dir {
            IoDir::Read => self.conn.pread(fh, buf, req.offset),
            IoDir::Write => self.conn.pwrite(fh, buf, req.offset),
            IoDir::Trim => Err(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
        };
        self.done.push(Completion {
            slot: req.slot,
            result: match res {
                Ok(n) => n as i32,
                Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
            },
        });
    }

    /// Hands one request to libnfs; a refusal completes it at once with its error.
    fn start_async(&mut self, ctx: *mut Context, req: IoRequest) {
        let fh = self.files[req.file as usize];
        let start = req.buf_offset as usize;
        let base = self.pool.get_mut(req.slot)[start..].as_mut_ptr();
        let p = &mut self.pending[req.slot as usize];
        p.buf = base;
        p.len = req.len as usize;
        p.read = req.dir == IoDir::Read;
        let private = (p as *mut Pending).cast::<c_void>();
        let lib = self.conn.lib;
        let rc = match req.dir {
            // SAFETY: `ctx` is this backend's locked context and `fh` a handle opened on
            // it; `private` points at the slot's Pending, which lives (boxed, never moved)
            // as long as the backend, and the slot's buffer is not touched until its
            // completion is reaped; libnfs copies a write's bytes when it queues it.
            IoDir::Read => unsafe {
                (lib.pread_async)(ctx, fh.0, req.offset, req.len.into(), on_done, private)
            },
            // SAFETY: as above.
            IoDir::Write => unsafe {
                (lib.pwrite_async)(
                    ctx,
                    fh.0,
                    req.offset,
                    req.len.into(),
                    base.cast::<c_void>(),
                    on_done,
                    private,
                )
            },
            IoDir::Trim => -libc::EOPNOTSUPP,
        };
        if rc < 0 {
            self.done.push(Completion {
                slot: req.slot,
                result: if rc == -1 { -libc::EIO } else { rc },
            });
        }
    }

    /// Services the connection until `want` completions are ready.
    fn wait(&mut self, ctx: *mut Context, want: usize) -> Result<(), BackendError> {
        let lib = self.conn.lib;
        let mut waited = 0i64;
        while self.done.len() < want {
            // SAFETY: a live context, locked by the caller.
            let (fd, events) = unsafe { ((lib.get_fd)(ctx), (lib.which_events)(ctx)) };
            let mut pfd = libc::pollfd {
                fd,
                events: events as i16,
                revents: 0,
            };
            // SAFETY: one pollfd, valid for the call.
            let n = unsafe { libc::poll(&mut pfd, 1, 100) };
            if n == 0 {
                waited += 100;
            }
            let revents = if n > 0 { c_int::from(pfd.revents) } else { 0 };
            // SAFETY: a live context; callbacks run inside and touch only the
            // Pending entries and completion list this backend owns.
            let rc = unsafe { (lib.service)(ctx, revents) };
            if rc < 0 || waited >= STALL_MS {
                return Err(self.lost(rc < 0));
            }
        }
        Ok(())
    }

    fn lost(&self, broken: bool) -> BackendError {
        let why = if broken {
            "the connection to the NFS server broke"
        } else {
            "no answer from the NFS server in 60 s"
        };
        BackendError::File {
            op: "nfs I/O",
            path: self
                .paths
                .first()
                .map(|p| p.to_path_buf())
                .unwrap_or_default(),
            source: std::io::Error::new(std::io::ErrorKind::TimedOut, why),
        }
    }
}

/// libnfs's completion callback: `status` is the bytes moved or -errno; `data` a READ's
/// bytes, copied into the slot's buffer.
extern "C" fn on_done(status: c_int, _nfs: *mut Context, data: *mut c_void, private: *mut c_void) {
    // SAFETY: `private` is the Pending this request was started with (see start_async),
    // alive and not otherwise borrowed while nfs_service runs.
    let p = unsafe { &mut *private.cast::<Pending>() };
    let mut result = status;
    if p.read && status > 0 {
        let n = (status as usize).min(p.len);
        // SAFETY: libnfs's `data` holds `status` bytes; the slot's buffer has room for
        // `p.len` bytes from `p.buf`; they do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(data.cast::<u8>(), p.buf, n) };
        result = n as c_int;
    }
    // SAFETY: the backend's completion list, alive at a fixed address, not otherwise
    // borrowed while nfs_service runs.
    unsafe {
        (*p.done).push(Completion {
            slot: p.slot,
            result,
        })
    };
}

impl IoBackend for NfsBackend<'_> {
    fn kind(&self) -> BackendKind {
        BackendKind::Nfs
    }

    fn capabilities(&self) -> Capabilities {
        crate::capabilities_of(BackendKind::Nfs, self.depth)
    }

    fn buffers(&mut self) -> &mut BufferPool {
        &mut self.pool
    }

    fn push(&mut self, req: IoRequest) -> Result<(), BackendError> {
        if self.in_flight >= self.depth {
            return Err(BackendError::QueueFull { depth: self.depth });
        }
        self.in_flight += 1;
        self.queued.push(req);
        Ok(())
    }

    fn submit(&mut self, wait_for: u32) -> Result<(), BackendError> {
        if self.depth == 1 {
            while let Some(req) = self.queued.pop() {
                self.run_sync(req);
            }
            return Ok(());
        }
        let conn = self.conn.clone();
        let raw = conn.lock();
        let queued = std::mem::take(&mut self.queued);
        for req in &queued {
            self.start_async(raw.ctx, *req);
        }
        self.queued = queued;
        self.queued.clear();
        let want = (wait_for as usize).min(self.in_flight as usize);
        self.wait(raw.ctx, want)
    }

    fn reap(&mut self, out: &mut Vec<Completion>) {
        self.in_flight -= self.done.len() as u32;
        out.append(&mut self.done);
    }

    fn in_flight(&self) -> u32 {
        self.in_flight
    }
}

impl Drop for NfsBackend<'_> {
    /// Waits for requests still in flight (a worker that stopped early); if the server
    /// does not answer, their buffers and bookkeeping are leaked rather than freed under
    /// callbacks libnfs may still make.
    fn drop(&mut self) {
        let outstanding = self.in_flight as usize;
        if self.depth > 1 && outstanding > self.done.len() {
            let conn = self.conn.clone();
            let raw = conn.lock();
            if self.wait(raw.ctx, outstanding).is_err() {
                Box::leak(std::mem::take(&mut self.done));
                Box::leak(std::mem::take(&mut self.pending));
                return;
            }
        }
        // SAFETY: nothing is in flight: no callback refers to the pool any more, and it
        // is dropped once, here.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.pool) };
    }
}
