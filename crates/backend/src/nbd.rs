//! [`NbdBackend`]: an NBD export through libnbd's asynchronous interface, `queue_depth`
//! commands in flight on the worker's connection ([`Export`], opened as its data file).
//! Each command carries a completion callback that appends the slot's [`Completion`]; a
//! submit that must wait polls the connections' sockets. Trims are synchronous. libnbd
//! is loaded at run time and the connection is its own module's (`libnbd.rs`); the device
//! guard reads an export's ends in `device/on_nbd.rs`.

use std::ffi::{c_int, c_void};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use iolab_core::spec::BackendKind;

use crate::buffer::BufferPool;
use crate::error::BackendError;
use crate::files::DataFile;
use crate::{BackendOptions, Capabilities, Completion, IoBackend, IoDir, IoRequest};

use crate::libnbd::{self as sys, CompletionCallback};
pub use crate::libnbd::{Export, SONAME, SONAME_VAR, is_uri};

/// How long dropping a backend waits for commands still in flight before it gives up on
/// them (and leaks their buffers rather than free memory libnbd may still write).
const DRAIN_DEADLINE: Duration = Duration::from_secs(30);

/// Where a command's completion goes: the slot, its length, and the list it joins.
struct SlotContext {
    done: *mut Vec<Completion>,
    slot: u32,
    len: u32,
}

/// libnbd's completion callback: records the slot's result (the bytes, or -errno) and
/// retires the command (returns 1).
unsafe extern "C" fn completed(user_data: *mut c_void, error: *mut c_int) -> c_int {
    // SAFETY: user_data is the SlotContext of the command's slot, which lives in the
    // backend's boxed slice until every command is drained; `done` points at the
    // backend's boxed completion list, which lives as long. libnbd calls this on the
    // thread that drives the handle (the worker's), inside a call the backend made, so
    // nothing else touches the list meanwhile. `error` points at the command's errno.
    unsafe {
        let ctx = &*(user_data as *const SlotContext);
        let errno = if error.is_null() { 0 } else { *error };
        let result = if errno == 0 { ctx.len as i32 } else { -errno };
        (*ctx.done).push(Completion {
            slot: ctx.slot,
            result,
        });
    }
    1
}

pub struct NbdBackend<'a> {
    exports: Vec<&'a Export>,
    pool: ManuallyDrop<BufferPool>,
    /// One context per buffer slot (`depth` of them, from a leaked Box), pointed at by
    /// its in-flight command. Raw, as libnbd's callbacks reach it through pointers.
    contexts: NonNull<SlotContext>,
    /// Completions the callbacks recorded, not yet reaped (a leaked Box, as above).
    done: NonNull<Vec<Completion>>,
    queued: Vec<IoRequest>,
    /// Commands sent and not yet reaped, per export.
    sent: Vec<u32>,
    /// The export of each slot's command.
    slot_export: Vec<u32>,
    depth: u32,
    /// Poll descriptors, reused.
    fds: Vec<libc::pollfd>,
}

impl<'a> NbdBackend<'a> {
    pub fn new(files: &'a [DataFile], opts: BackendOptions) -> Result<Self, BackendError> {
        let exports = files
            .iter()
            .map(|f| {
                f.export().ok_or_else(|| BackendError::NeedsExport {
                    path: f.path().to_path_buf(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let depth = opts.queue_depth.max(1);
        let pool = BufferPool::new(depth, opts.slot_size(), opts.alignment)?;
        let done = NonNull::from(Box::leak(Box::new(Vec::with_capacity(depth as usize))));
        let contexts: Box<[SlotContext]> = (0..depth)
            .map(|slot| SlotContext {
                done: done.as_ptr(),
                slot,
                len: 0,
            })
            .collect();
        let contexts = NonNull::from(Box::leak(contexts)).cast::<SlotContext>();
        Ok(NbdBackend {
            sent: vec![0; exports.len()],
            exports,
            pool: ManuallyDrop::new(pool),
            contexts,
            done,
            queued: Vec::with_capacity(depth as usize),
            slot_export: vec![0; depth as usize],
            depth,
            fds: Vec::new(),
        })
    }

    /// Sends one request: an asynchronous read or write, or a trim done at once.
    fn send(&mut self, req: IoRequest) -> Result<(), BackendError> {
        let export = self.exports[req.file as usize];
        let lib = export.lib();
        if req.dir == IoDir::Trim {
            let result = match export.trim(req.offset, req.len.into()) {
                Ok(()) => req.len as i32,
                Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
            };
            self.done().push(Completion {
                slot: req.slot,
                result,
            });
            self.sent[req.file as usize] += 1;
            self.slot_export[req.slot as usize] = req.file;
            return Ok(());
        }
        // Lending checks the slot is in the pool and free (a panic on an engine bug).
        let base = self.pool.lend(req.slot);
        // SAFETY: slot < depth (lend checked it), and the slot's context is not in use:
        // its last command completed (and was reaped) before the slot could be lent again.
        let ctx = unsafe { self.contexts.as_ptr().add(req.slot as usize) };
        // SAFETY: as above; no callback reads it now.
        unsafe { (*ctx).len = req.len };
        let callback = CompletionCallback {
            callback: Some(completed),
            user_data: ctx.cast(),
            free: None,
        };
        // SAFETY: the slot is lent (in flight) until its completion is reaped, so the
        // bytes at buf_offset..buf_offset+len of it (inside the slot: the engine's
        // contract) are libnbd's alone until then; the callback's context outlives the
        // command (drained in Drop).
        let cookie = unsafe {
            let buf = base.add(req.buf_offset as usize);
            match req.dir {
                IoDir::Write => (lib.aio_pwrite)(
                    export.handle(),
                    buf.cast_const().cast(),
                    req.len as usize,
                    req.offset,
                    callback,
                    0,
                ),
                _ => (lib.aio_pread)(
                    export.handle(),
                    buf.cast(),
                    req.len as usize,
                    req.offset,
                    callback,
                    0,
                ),
            }
        };
        if cookie == -1 {
            // Not queued: libnbd never calls the callback, and the slot is free again.
            self.pool.release(req.slot);
            return Err(BackendError::Io {
                op: if req.dir == IoDir::Write {
                    "write"
                } else {
                    "read"
                },
                path: export.uri().into(),
                offset: req.offset,
                len: req.len.into(),
                source: export.last_io_error(),
            });
        }
        self.sent[req.file as usize] += 1;
        self.slot_export[req.slot as usize] = req.file;
        Ok(())
    }

    /// Commands sent whose completion has not been recorded yet.
    fn outstanding(&self) -> u32 {
        self.sent.iter().sum::<u32>() - self.done_len()
    }

    /// The completion list. No callback runs while the borrow lives: they run only inside
    /// libnbd calls on the handles, which take no borrow of it.
    fn done(&mut self) -> &mut Vec<Completion> {
        // SAFETY: `done` came from a leaked Box and is freed only in Drop; &mut self makes
        // this the only Rust borrow, and libnbd calls back only within poll_once's calls.
        unsafe { self.done.as_mut() }
    }

    fn done_len(&self) -> u32 {
        // SAFETY: as in `done`, a read while no callback runs.
        unsafe { self.done.as_ref().len() as u32 }
    }

    /// Waits up to `timeout_ms` for any connection with commands in flight to be ready,
    /// and lets libnbd read or write what is ready (completions run their callbacks).
    fn poll_once(&mut self, timeout_ms: c_int) -> Result<(), BackendError> {
        self.fds.clear();
        let mut which = Vec::new();
        for (i, export) in self.exports.iter().enumerate() {
            let lib = export.lib();
            // SAFETY: a live handle; these read its state only.
            let (fd, dir, busy) = unsafe {
                (
                    (lib.aio_get_fd)(export.handle()),
                    (lib.aio_get_direction)(export.handle()),
                    (lib.aio_in_flight)(export.handle()),
                )
            };
            if busy <= 0 || fd < 0 {
                continue;
            }
            let mut events = 0;
            if dir & sys::DIRECTION_READ != 0 {
                events |= libc::POLLIN;
            }
            if dir & sys::DIRECTION_WRITE != 0 {
                events |= libc::POLLOUT;
            }
            self.fds.push(libc::pollfd {
                fd,
                events,
                revents: 0,
            });
            which.push(i);
        }
        if self.fds.is_empty() {
            return Ok(());
        }
        // SAFETY: `fds` is a live array of fds.len() pollfd structures.
        let n = unsafe {
            libc::poll(
                self.fds.as_mut_ptr(),
                self.fds.len() as libc::nfds_t,
                timeout_ms,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(());
            }
            return Err(self.connection_error(which[0], e));
        }
        for (k, &i) in which.iter().enumerate() {
            let revents = self.fds[k].revents;
            let export = self.exports[i];
            let lib = export.lib();
            // SAFETY: a live handle, notified of what poll found ready on its socket;
            // the callbacks it runs write only the backend's own completion list.
            let rc = unsafe {
                let mut rc = 0;
                if revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                    rc = (lib.aio_notify_read)(export.handle());
                }
                if rc != -1 && revents & libc::POLLOUT != 0 {
                    rc = (lib.aio_notify_write)(export.handle());
                }
                rc
            };
            if rc == -1 {
                return Err(self.connection_error(i, export.last_io_error()));
            }
        }
        Ok(())
    }

    fn connection_error(&self, i: usize, source: std::io::Error) -> BackendError {
        BackendError::File {
            op: "NBD connection",
            path: self.exports[i].uri().into(),
            source,
        }
    }
}

impl IoBackend for NbdBackend<'_> {
    fn kind(&self) -> BackendKind {
        BackendKind::Nbd
    }

    fn capabilities(&self) -> Capabilities {
        crate::capabilities_of(BackendKind::Nbd, self.depth)
    }

    #[inline]
    fn buffers(&mut self) -> &mut BufferPool {
        &mut self.pool
    }

    #[inline]
    fn push(&mut self, req: IoRequest) -> Result<(), BackendError> {
        if self.in_flight() >= self.depth {
            return Err(BackendError::QueueFull { depth: self.depth });
        }
        self.queued.push(req);
        Ok(())
    }

    fn submit(&mut self, wait_for: u32) -> Result<(), BackendError> {
        let queued = std::mem::take(&mut self.queued);
        for (k, req) in queued.iter().enumerate() {
            if let Err(e) = self.send(*req) {
                // What was not sent stays queued, as it was.
                self.queued.extend_from_slice(&queued[k + 1..]);
                return Err(e);
            }
        }
        self.queued = queued;
        self.queued.clear();
        let want = wait_for.min(self.sent.iter().sum());
        while self.done_len() < want {
            self.poll_once(-1)?;
        }
        Ok(())
    }

    #[inline]
    fn reap(&mut self, out: &mut Vec<Completion>) {
        // SAFETY: as in `done`; the list is a separate allocation from the fields below.
        let done = unsafe { self.done.as_mut() };
        for c in done.drain(..) {
            self.pool.release(c.slot);
            self.sent[self.slot_export[c.slot as usize] as usize] -= 1;
            out.push(c);
        }
    }

    #[inline]
    fn in_flight(&self) -> u32 {
        self.queued.len() as u32 + self.sent.iter().sum::<u32>()
    }
}

impl Drop for NbdBackend<'_> {
    fn drop(&mut self) {
        // Commands still in flight write into the pool and call back into the contexts:
        // wait for them (a dead connection fails them at once), within a deadline.
        let deadline = Instant::now() + DRAIN_DEADLINE;
        while self.outstanding() > 0 && Instant::now() < deadline {
            if self.poll_once(100).is_err() {
                break;
            }
        }
        if self.outstanding() > 0 {
            // libnbd may still write these buffers and call back (even when the data
            // file's connection is closed): leak them rather than free memory it holds
            // pointers to.
            return;
        }
        // SAFETY: nothing is in flight: libnbd holds no pointer into the pool, the
        // contexts or the completion list any more. Each is freed once, here, as the
        // Box (of `depth` contexts) it was leaked from.
        unsafe {
            ManuallyDrop::drop(&mut self.pool);
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.contexts.as_ptr(),
                self.depth as usize,
            )));
            drop(Box::from_raw(self.done.as_ptr()));
        }
    }
}
