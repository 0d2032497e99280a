//! [`UringBackend`]: Linux io_uring with `queue_depth` I/Os in flight, registered files
//! and (when the memlock limit allows) registered buffers; one `io_uring_enter` both
//! submits and waits. [`uring_available`] tells whether this kernel and sandbox allow
//! io_uring at all.

use std::io;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, RawFd};

use io_uring::{IoUring, squeue};
use iolab_core::spec::BackendKind;

use crate::buffer::BufferPool;
use crate::error::BackendError;
use crate::files::DataFile;
use crate::{BackendOptions, Capabilities, Completion, IoBackend, IoDir, IoRequest};

mod cq;
mod sq;

use cq::CompletionRing;
use sq::{Opcodes, SlotQueue, SqEntry};

/// io_uring caps one registered buffer at 1 GiB.
const MAX_REGISTERED: usize = 1 << 30;

/// io_uring_enter's flag to wait for (and run the deferred work of) completions.
const IORING_ENTER_GETEVENTS: u32 = 1;
/// io_uring_enter's flag: the fd argument is an index of the task's registered rings.
const IORING_ENTER_REGISTERED_RING: u32 = 16;
const IORING_REGISTER_RING_FDS: libc::c_long = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_long = 21;

/// The kernel's struct io_uring_rsrc_update.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// Registers the ring's descriptor with the calling thread (Linux 5.18+), as fio's engine
/// and liburing do: io_uring_enter then finds the ring by its index without looking the
/// descriptor up and dropping it on every call. None if the kernel refuses.
fn register_ring_fd(fd: RawFd) -> Option<u32> {
    let mut up = RsrcUpdate {
        offset: u32::MAX,
        resv: 0,
        data: fd as u64,
    };
    // SAFETY: io_uring_register with a pointer to one live io_uring_rsrc_update, which
    // the kernel reads and writes the chosen index into.
    let n = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            fd,
            IORING_REGISTER_RING_FDS,
            &mut up as *mut RsrcUpdate,
            1,
        )
    };
    (n == 1).then_some(up.offset)
}

pub struct UringBackend<'a> {
    ring: IoUring,
    /// The submission queue, one entry per slot, written in place.
    sq: SlotQueue,
    /// The completion queue, read in place.
    cq: CompletionRing,
    opcodes: Opcodes,
    pool: BufferPool,
    fds: Vec<RawFd>,
    /// Which files are block devices (a trim is BLKDISCARD there, a punched hole else).
    devices: Vec<bool>,
    /// Trims done inline in `push`, waiting to be reaped (see `Capabilities::trims_inline`).
    inline_done: Vec<Completion>,
    fixed_files: bool,
    depth: u32,
    in_flight: u32,
    /// Requests pushed but not yet handed to the kernel, and how many to gather first.
    pending: u32,
    submit_batch: u32,
    /// The ring's index among the thread's registered rings (see [`register_ring_fd`]).
    ring_index: Option<u32>,
    /// The files' descriptors must stay open while the ring may use them.
    _files: PhantomData<&'a DataFile>,
}

/// Ok if an io_uring can be set up here; else why not (disabled by sysctl, blocked by a
/// seccomp profile, kernel too old).
pub fn uring_available() -> Result<(), String> {
    IoUring::new(2)
        .map(drop)
        .map_err(|e| explain_setup_error(&e))
}

fn explain_setup_error(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => {
            format!("{e}: blocked by kernel.io_uring_disabled or a container's seccomp profile")
        }
        Some(libc::ENOSYS) => format!("{e}: the kernel has no io_uring"),
        _ => e.to_string(),
    }
}

/// The ring, and whether it is the single-issuer one (used by the thread that made it).
/// A `movable` ring is always a plain one: any thread may enter it, one at a time.
fn build_ring(entries: u32, movable: bool) -> io::Result<(IoUring, bool)> {
    let plain = || {
        IoUring::<squeue::Entry>::builder()
            .setup_cqsize(entries * 2)
            .build(entries)
            .map(|r| (r, false))
    };
    if movable {
        return plain();
    }
    // Single issuer + deferred task running (Linux 6.1+) let the kernel skip work that a
    // ring used by one thread does not need; fall back to a plain ring on older kernels.
    // The task-run flag tells when completions wait in that deferred work (see `submit`).
    let tuned = IoUring::<squeue::Entry>::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_taskrun_flag()
        .setup_cqsize(entries * 2)
        .build(entries);
    match tuned {
        Ok(r) => Ok((r, true)),
        Err(_) => plain(),
    }
}

impl<'a> UringBackend<'a> {
    /// A ring over `files` used only by the calling thread (single issuer).
    pub fn new(files: &'a [DataFile], opts: BackendOptions) -> Result<Self, BackendError> {
        Self::build(files, opts, false)
    }

    /// A ring over no files that any thread may use, one at a time (a plain ring, its
    /// descriptor not registered with a thread): a reader's ring handed from the
    /// threads of one epoch to the next.
    pub(crate) fn movable(opts: BackendOptions) -> Result<Self, BackendError> {
        Self::build(&[], opts, true)
    }

    fn build(
        files: &'a [DataFile],
        opts: BackendOptions,
        movable: bool,
    ) -> Result<Self, BackendError> {
        let fds: Vec<RawFd> = DataFile::fds(files, "uring")?
            .iter()
            .map(|fd| fd.as_raw_fd())
            .collect();
        let depth = opts.queue_depth.max(1);
        let (ring, single_issuer) =
            build_ring(depth.next_power_of_two(), movable).map_err(|e| {
                BackendError::UringUnavailable {
                    reason: explain_setup_error(&e),
                }
            })?;
        // A single-issuer ring is only ever entered by this thread, whose registration
        // the index is.
        let ring_index = if single_issuer {
            register_ring_fd(ring.as_raw_fd())
        } else {
            None
        };
        let pool = BufferPool::new(depth, opts.slot_size(), opts.alignment)?;
        let devices = files.iter().map(DataFile::is_block_device).collect();
        let fixed_files = !fds.is_empty() && ring.submitter().register_files(&fds).is_ok();
        let (base, len) = pool.region();
        let fixed_buffers = len <= MAX_REGISTERED && {
            let iov = libc::iovec {
                iov_base: base.cast(),
                iov_len: len,
            };
            // SAFETY: the iovec covers the pool's live allocation, which outlives the ring:
            // Drop drains in-flight I/O and the ring field is dropped before the pool.
            // Registration fails harmlessly (ENOMEM) when RLIMIT_MEMLOCK is too small; we
            // then use unregistered buffers.
            unsafe { ring.submitter().register_buffers(&[iov]).is_ok() }
        };
        let sq = SlotQueue::new(&ring, depth, fixed_files).map_err(|e| {
            BackendError::UringUnavailable {
                reason: format!("mapping the submission queue: {e}"),
            }
        })?;
        let cq = CompletionRing::new(&ring).map_err(|e| BackendError::UringUnavailable {
            reason: format!("mapping the completion queue: {e}"),
        })?;
        Ok(UringBackend {
            ring,
            sq,
            cq,
            opcodes: Opcodes::new(fixed_buffers),
            pool,
            fds,
            devices,
            inline_done: Vec::with_capacity(depth as usize),
            fixed_files,
            depth,
            in_flight: 0,
            pending: 0,
            submit_batch: opts.submit_batch.max(1),
            ring_index,
            _files: PhantomData,
        })
    }

    /// Lends a ring opened over no files the descriptors of `fds` (by request `file`
    /// index), used unregistered, until [`UringBackend::take_back_files`].
    pub(crate) fn lend_files(&mut self, fds: Vec<RawFd>, devices: Vec<bool>) {
        assert!(
            !self.fixed_files && self.in_flight == 0,
            "files are lent to an idle ring opened over none"
        );
        self.fds = fds;
        self.devices = devices;
    }

    /// Forgets the lent descriptors once every request has completed. What could not be
    /// drained keeps its own reference to its file in the kernel; the ring forgets the
    /// numbers, which may be reused once the files close.
    pub(crate) fn take_back_files(&mut self) {
        let _ = self.drain();
        self.fds.clear();
        self.devices.clear();
    }

    /// Waits for every in-flight request; false if the ring cannot be entered.
    fn drain(&mut self) -> bool {
        let mut sink = Vec::new();
        // Inline trims are done: only the ring's requests are waited for.
        self.in_flight -= self.inline_done.len() as u32;
        self.inline_done.clear();
        while self.in_flight > 0 {
            if self.enter(1).is_err() {
                return false;
            }
            self.reap(&mut sink);
            sink.clear();
        }
        true
    }

    /// A trim, as fio's io_uring engine does it: what is queued goes to the kernel first,
    /// then the discard is one synchronous call, complete when `push` returns.
    #[cold]
    fn trim_inline(&mut self, req: IoRequest) -> Result<(), BackendError> {
        if self.pending > 0 {
            self.enter(0)?;
        }
        // SAFETY: the descriptor belongs to a DataFile borrowed for 'a, so it is open.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(self.fds[req.file as usize]) };
        let device = self.devices[req.file as usize];
        let result = match crate::files::trim_range(fd, device, req.offset, req.len.into()) {
            Ok(()) => req.len as i32,
            Err(e) => -e.raw_os_error(),
        };
        self.inline_done.push(Completion {
            slot: req.slot,
            result,
        });
        self.in_flight += 1;
        Ok(())
    }

    /// Hands what is queued to the kernel and waits for `wait_for` completions: one
    /// io_uring_enter, carrying GETEVENTS only when it waits or when completions wait in
    /// deferred work (IORING_SQ_TASKRUN), as the crate's submit_and_wait decides, without
    /// its checks for SQPOLL and CQ overflow, which this ring never has (no SQPOLL; a CQ
    /// twice the queue depth).
    fn enter(&mut self, wait_for: u32) -> Result<(), BackendError> {
        self.pending = 0;
        loop {
            let (to_submit, taskrun) = (self.sq.len(), self.sq.taskrun());
            match self.enter_once(to_submit, wait_for, taskrun) {
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                entered => return Self::entered(entered),
            }
        }
    }

    /// What an io_uring_enter's outcome means: EBUSY (completions to reap first) is no
    /// failure, the caller reaps and comes back.
    #[inline]
    fn entered(entered: io::Result<usize>) -> Result<(), BackendError> {
        match entered {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Ok(()),
            Err(e) => Err(BackendError::UringUnavailable {
                reason: format!("io_uring_enter failed: {e}"),
            }),
        }
    }

    /// One io_uring_enter handing over `to_submit` entries and waiting for `wait_for`
    /// completions; GETEVENTS only when it waits or completions wait in deferred work
    /// (`taskrun`: IORING_SQ_TASKRUN).
    #[inline]
    fn enter_once(&self, to_submit: u32, wait_for: u32, taskrun: bool) -> io::Result<usize> {
        let flags = if wait_for > 0 || taskrun {
            IORING_ENTER_GETEVENTS
        } else {
            0
        };
        match self.ring_index {
            // SAFETY: a plain io_uring_enter on this ring, named by its registered index,
            // with no argument struct: the queued entries were written completely before
            // their pushes published the tail, and their buffers stay lent until their
            // completions are reaped.
            Some(index) => match unsafe {
                libc::syscall(
                    libc::SYS_io_uring_enter,
                    index,
                    to_submit,
                    wait_for,
                    flags | IORING_ENTER_REGISTERED_RING,
                    std::ptr::null::<libc::c_void>(),
                    0usize,
                )
            } {
                -1 => Err(io::Error::last_os_error()),
                n => Ok(n as usize),
            },
            // SAFETY: as above, with the ring's descriptor.
            None => unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(to_submit, wait_for, flags, None)
            },
        }
    }
}

impl IoBackend for UringBackend<'_> {
    fn kind(&self) -> BackendKind {
        BackendKind::Uring
    }

    fn capabilities(&self) -> Capabilities {
        crate::capabilities_of(BackendKind::Uring, self.depth)
    }

    #[inline]
    fn buffers(&mut self) -> &mut BufferPool {
        &mut self.pool
    }

    // In line in the loop built for this backend (a call per I/O costs some twenty
    // instructions of its own).
    #[inline(always)]
    fn push(&mut self, req: IoRequest) -> Result<(), BackendError> {
        if self.in_flight >= self.depth {
            return Err(BackendError::QueueFull { depth: self.depth });
        }
        if req.dir == IoDir::Trim {
            return self.trim_inline(req);
        }
        assert!(
            req.buf_offset as usize + req.len as usize <= self.pool.slot_size(),
            "request of {} bytes at {} exceeds its {}-byte buffer",
            req.len,
            req.buf_offset,
            self.pool.slot_size()
        );
        // In bounds (checked above), so the pointer stays inside the slot.
        let buf = self
            .pool
            .lend(req.slot)
            .wrapping_add(req.buf_offset as usize);
        let fd = if self.fixed_files {
            req.file as i32
        } else {
            self.fds[req.file as usize]
        };
        let io = SqEntry {
            opcode: if req.dir == IoDir::Write {
                self.opcodes.write
            } else {
                self.opcodes.read
            },
            fd,
            offset: req.offset,
            addr: buf,
            len: req.len,
            ioprio: req.ioprio,
        };
        // SAFETY: the slot is below the depth the queue was made with and was not in
        // flight (`lend` checks both and marks it in flight until its completion is
        // reaped, so nothing else touches the buffer, and the pool outlives every
        // in-flight request: Drop drains them). The fd is registered or belongs to a
        // DataFile borrowed for 'a.
        let pushed = |sq: &mut SlotQueue| unsafe { sq.push(req.slot, io) };
        if !pushed(&mut self.sq) {
            // The submission queue is full of unsubmitted entries: flush it and retry.
            self.enter(0)?;
            assert!(
                pushed(&mut self.sq),
                "a just-flushed submission queue has room"
            );
        }
        self.in_flight += 1;
        self.pending += 1;
        // Handing each request over at once keeps a device's queue as full as fio does;
        // a larger batch trades that for fewer system calls.
        if self.pending >= self.submit_batch {
            let (to_submit, taskrun) = (self.sq.len(), self.sq.taskrun());
            self.pending = 0;
            match self.enter_once(to_submit, 0, taskrun) {
                // Interrupted: the entries are still queued; the full call hands them over.
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => self.enter(0)?,
                entered => Self::entered(entered)?,
            }
        }
        Ok(())
    }

    #[inline]
    fn submit(&mut self, wait_for: u32) -> Result<(), BackendError> {
        // Inline trims are complete already: nothing to wait for while one is unreaped.
        let wait = if self.inline_done.is_empty() {
            wait_for.min(self.in_flight)
        } else {
            0
        };
        // Nothing left to hand over, and the completions to wait for are in the ring
        // already with none held back in deferred work (IORING_SQ_TASKRUN): reaping them
        // needs no system call. A read the kernel completes inline (a page-cache hit)
        // then costs one io_uring_enter, its submission, as in fio's loop.
        if self.pending == 0 && !self.sq.taskrun() && self.cq.len() >= wait {
            return Ok(());
        }
        self.enter(wait)
    }

    #[inline]
    fn reap(&mut self, out: &mut Vec<Completion>) {
        if !self.inline_done.is_empty() {
            self.in_flight -= self.inline_done.len() as u32;
            out.append(&mut self.inline_done);
        }
        let pool = &mut self.pool;
        let reaped = self.cq.reap(|user_data, result| {
            let slot = user_data as u32;
            pool.release(slot);
            out.push(Completion { slot, result });
        });
        self.in_flight -= reaped;
    }

    fn in_flight(&self) -> u32 {
        self.in_flight
    }
}

impl Drop for UringBackend<'_> {
    fn drop(&mut self) {
        // The kernel may still write into lent buffers: wait for every in-flight request
        // before the pool is freed.
        if !self.drain() {
            // Cannot wait for them: leak the buffers rather than free memory the
            // kernel may still write to.
            if let Ok(tiny) = BufferPool::new(1, 8, 8) {
                std::mem::forget(std::mem::replace(&mut self.pool, tiny));
            }
        }
        if let Some(index) = self.ring_index {
            let up = RsrcUpdate {
                offset: index,
                resv: 0,
                data: 0,
            };
            // SAFETY: unregisters this ring's index (the registration holds a reference
            // to the ring's file until then); reads one live io_uring_rsrc_update.
            unsafe {
                libc::syscall(
                    libc::SYS_io_uring_register,
                    self.ring.as_raw_fd(),
                    IORING_UNREGISTER_RING_FDS,
                    &up as *const RsrcUpdate,
                    1,
                )
            };
        }
    }
}
