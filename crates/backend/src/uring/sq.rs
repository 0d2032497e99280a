//! [`SlotQueue`]: the ring's submission queue written in place, as fio's engine and the
//! floor (bench/floor/uring.c) write it: every buffer slot owns one submission entry,
//! prepared once with what never changes (the slot's number, the registered buffer,
//! the flags), and an I/O writes only its own fields (opcode, file, offset, address,
//! length, priority) into its slot's entry and the slot's number into the ring, where
//! the io-uring crate built a 64-byte entry per I/O and copied it in.
//!
//! The crate's `IoUring` still owns the ring (setup, registration, completions, the
//! enter call); this is a second mapping of the same submission pages. Entries go in
//! only through here: the crate's `push` would assume the identity index array this
//! queue rewrites.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

use io_uring::{IoUring, opcode, squeue};

/// mmap offsets of the ring's submission queue and its entries (the kernel's
/// IORING_OFF_SQ_RING and IORING_OFF_SQES).
const OFF_SQ_RING: libc::off_t = 0;
const OFF_SQES: libc::off_t = 0x1000_0000;

/// The ring's flag: completions wait in deferred task work (IORING_SQ_TASKRUN).
const SQ_TASKRUN: u32 = 1 << 1;

/// The kernel's struct io_uring_sqe, as read and write requests use it.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(dead_code)] // The kernel reads the fields this code only writes.
struct Sqe {
    opcode: u8,
    flags: u8,
    ioprio: u16,
    fd: i32,
    off: u64,
    addr: u64,
    len: u32,
    rw_flags: u32,
    user_data: u64,
    buf_index: u16,
    personality: u16,
    splice_fd_in: i32,
    addr3: u64,
    pad: u64,
}

const _: () = assert!(std::mem::size_of::<Sqe>() == 64);
const _: () = assert!(std::mem::size_of::<squeue::Entry>() == 64);

/// The kernel's struct io_sqring_offsets.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(dead_code)] // The kernel's layout: some fields only keep the others' places.
struct SqOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    flags: u32,
    dropped: u32,
    array: u32,
    resv1: u32,
    user_addr: u64,
}

/// The kernel's struct io_cqring_offsets.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(dead_code)] // The kernel's layout: some fields only keep the others' places.
pub(super) struct CqOffsets {
    pub head: u32,
    pub tail: u32,
    pub ring_mask: u32,
    pub ring_entries: u32,
    pub overflow: u32,
    pub cqes: u32,
    pub flags: u32,
    pub resv1: u32,
    pub user_addr: u64,
}

/// The kernel's struct io_uring_params (the crate's `Parameters` is a transparent
/// wrapper of it).
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(dead_code)] // The kernel's layout: some fields only keep the others' places.
pub(super) struct Params {
    sq_entries: u32,
    pub cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    sq_off: SqOffsets,
    pub cq_off: CqOffsets,
}

impl Params {
    /// The parameters the kernel filled in when it made `ring`.
    pub fn of(ring: &IoUring) -> Params {
        // SAFETY: `Parameters` is a transparent wrapper of the kernel's io_uring_params
        // (documented by the crate), which `Params` lays out (its size is checked above).
        unsafe { std::ptr::read((ring.params() as *const io_uring::Parameters).cast()) }
    }
}

const _: () = assert!(std::mem::size_of::<Params>() == 120);
const _: () = assert!(std::mem::size_of::<io_uring::Parameters>() == 120);

/// One shared mapping of the ring's file, unmapped when dropped.
pub(super) struct Map {
    pub ptr: *mut u8,
    len: usize,
}

impl Map {
    pub fn new(fd: RawFd, offset: libc::off_t, len: usize) -> io::Result<Map> {
        // SAFETY: a fresh shared mapping of the ring's file at one of the offsets the
        // kernel defines for it; nothing else refers to the new range.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Map {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: the range this mapping made; no pointer into it outlives the queue.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// The opcodes of a read and a write: with the registered buffer, or without.
#[derive(Clone, Copy)]
pub(super) struct Opcodes {
    pub read: u8,
    pub write: u8,
}

impl Opcodes {
    pub fn new(fixed_buffers: bool) -> Opcodes {
        if fixed_buffers {
            Opcodes {
                read: opcode::ReadFixed::CODE,
                write: opcode::WriteFixed::CODE,
            }
        } else {
            Opcodes {
                read: opcode::Read::CODE,
                write: opcode::Write::CODE,
            }
        }
    }
}

/// What one I/O writes into its slot's entry.
#[derive(Clone, Copy)]
pub(super) struct SqEntry {
    pub opcode: u8,
    pub fd: i32,
    pub offset: u64,
    pub addr: *mut u8,
    pub len: u32,
    pub ioprio: u16,
}

/// The submission queue, one entry per buffer slot, written in place.
pub(super) struct SlotQueue {
    sqes: *mut Sqe,
    head: *const AtomicU32,
    tail: *const AtomicU32,
    flags: *const AtomicU32,
    array: *mut u32,
    mask: u32,
    entries: u32,
    /// The tail as this queue last published it (it is the only producer).
    local_tail: u32,
    _ring: Map,
    _sqes: Map,
}

// SAFETY: the mappings belong to this queue (and the ring, owned by the same backend);
// moving the backend to another thread moves both.
unsafe impl Send for SlotQueue {}

impl SlotQueue {
    /// The queue of `ring`, whose `slots` buffer slots get one entry each (at most the
    /// ring's entries), prepared with `fixed_file` and the slot's number as user data.
    pub fn new(ring: &IoUring, slots: u32, fixed_file: bool) -> io::Result<SlotQueue> {
        use std::os::fd::AsRawFd;
        let p = Params::of(ring);
        let entries = p.sq_entries;
        if slots > entries {
            return Err(io::Error::other(format!(
                "{slots} buffer slots for a submission queue of {entries} entries"
            )));
        }
        let fd = ring.as_raw_fd();
        let ring_len = p.sq_off.array as usize + entries as usize * 4;
        let ring_map = Map::new(fd, OFF_SQ_RING, ring_len)?;
        let sqes_map = Map::new(fd, OFF_SQES, entries as usize * 64)?;
        // SAFETY: the offsets are the kernel's, inside the mapped ring (its index array
        // ends it), and point to aligned u32s.
        let at = |off: u32| unsafe { ring_map.ptr.add(off as usize) };
        // SAFETY: as above; the mask is written once, at setup.
        let mask = unsafe { at(p.sq_off.ring_mask).cast::<u32>().read() };
        let q = SlotQueue {
            sqes: sqes_map.ptr.cast(),
            head: at(p.sq_off.head).cast(),
            tail: at(p.sq_off.tail).cast(),
            flags: at(p.sq_off.flags).cast(),
            array: at(p.sq_off.array).cast(),
            mask,
            entries,
            local_tail: 0,
            _ring: ring_map,
            _sqes: sqes_map,
        };
        // SAFETY: the tail is the kernel's u32 in the mapped ring, aligned by it.
        let local_tail = unsafe { (*q.tail).load(Ordering::Acquire) };
        let flags = if fixed_file {
            squeue::Flags::FIXED_FILE.bits()
        } else {
            0
        };
        for slot in 0..slots {
            // SAFETY: slot < entries, inside the mapped entries; nothing is queued yet.
            unsafe {
                q.sqes.add(slot as usize).write(Sqe {
                    opcode: 0,
                    flags,
                    ioprio: 0,
                    fd: 0,
                    off: 0,
                    addr: 0,
                    len: 0,
                    rw_flags: 0,
                    user_data: u64::from(slot),
                    buf_index: 0,
                    personality: 0,
                    splice_fd_in: 0,
                    addr3: 0,
                    pad: 0,
                })
            };
        }
        Ok(SlotQueue { local_tail, ..q })
    }

    /// Entries queued and not yet taken by the kernel.
    #[inline(always)]
    pub fn len(&self) -> u32 {
        // SAFETY: the head is the kernel's u32 in the mapped ring.
        let head = unsafe { (*self.head).load(Ordering::Acquire) };
        self.local_tail.wrapping_sub(head)
    }

    /// Whether completions wait in deferred work (IORING_SQ_TASKRUN): reaping them
    /// needs an io_uring_enter with GETEVENTS.
    #[inline(always)]
    pub fn taskrun(&self) -> bool {
        // SAFETY: the flags are the kernel's u32 in the mapped ring.
        unsafe { (*self.flags).load(Ordering::Acquire) & SQ_TASKRUN != 0 }
    }

    /// Queues slot `slot`'s I/O `io`; false (nothing queued) when the queue is full.
    ///
    /// # Safety
    /// `slot` is below the `slots` the queue was made with and has no I/O queued or in
    /// flight; `io.addr` points to `io.len` bytes lent to the kernel until the completion
    /// is reaped (or, with fixed buffers, inside the registered one); `io.fd` is
    /// registered (fixed files) or open while the ring may use it.
    #[inline(always)]
    pub unsafe fn push(&mut self, slot: u32, io: SqEntry) -> bool {
        if self.len() >= self.entries {
            return false;
        }
        // SAFETY: (the caller's) the slot's entry is not in the kernel's hands: its last
        // I/O completed, so the kernel took the entry long before.
        unsafe {
            let e = &mut *self.sqes.add(slot as usize);
            e.opcode = io.opcode;
            e.ioprio = io.ioprio;
            e.fd = io.fd;
            e.off = io.offset;
            e.addr = io.addr as u64;
            e.len = io.len;
            let t = self.local_tail;
            self.array.add((t & self.mask) as usize).write(slot);
            self.local_tail = t.wrapping_add(1);
            (*self.tail).store(self.local_tail, Ordering::Release);
        }
        true
    }
}
