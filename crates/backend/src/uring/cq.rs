//! [`CompletionRing`]: the ring's completions read in place, as the floor
//! (bench/floor/uring.c) and liburing read them: from the head to the tail the kernel
//! published, the head handed back once per reap, where the io-uring crate copied each
//! entry out through an iterator. A second mapping of the ring's pages (the crate's
//! `IoUring` still owns the ring); completions are taken only through here.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};

use io_uring::IoUring;

use super::sq::{Map, Params};

/// mmap offset of the ring's completion queue (the kernel's IORING_OFF_CQ_RING).
const OFF_CQ_RING: libc::off_t = 0x800_0000;

/// The kernel's struct io_uring_cqe (a ring without CQE32).
#[repr(C)]
#[derive(Clone, Copy)]
struct Cqe {
    user_data: u64,
    res: i32,
    flags: u32,
}

const _: () = assert!(std::mem::size_of::<Cqe>() == 16);

pub(super) struct CompletionRing {
    head: *const AtomicU32,
    tail: *const AtomicU32,
    cqes: *const Cqe,
    mask: u32,
    _map: Map,
}

// SAFETY: the mapping belongs to this ring reader (and the ring, owned by the same
// backend); moving the backend to another thread moves both.
unsafe impl Send for CompletionRing {}

impl CompletionRing {
    pub fn new(ring: &IoUring) -> io::Result<CompletionRing> {
        let p = Params::of(ring);
        let fd: RawFd = ring.as_raw_fd();
        let len = p.cq_off.cqes as usize + p.cq_entries as usize * std::mem::size_of::<Cqe>();
        let map = Map::new(fd, OFF_CQ_RING, len)?;
        // SAFETY: the offsets are the kernel's, inside the mapped ring (the entries end
        // it), and point to aligned u32s and entries.
        let at = |off: u32| unsafe { map.ptr.add(off as usize) };
        // SAFETY: as above; the mask is written once, at setup.
        let mask = unsafe { at(p.cq_off.ring_mask).cast::<u32>().read() };
        Ok(CompletionRing {
            head: at(p.cq_off.head).cast(),
            tail: at(p.cq_off.tail).cast(),
            cqes: at(p.cq_off.cqes).cast(),
            mask,
            _map: map,
        })
    }

    /// Completions ready to be taken.
    #[inline(always)]
    pub fn len(&self) -> u32 {
        // SAFETY: head and tail are the kernel's u32s in the mapped ring; the tail is
        // read with Acquire so that the entries it covers are visible.
        unsafe {
            let tail = (*self.tail).load(Ordering::Acquire);
            tail.wrapping_sub((*self.head).load(Ordering::Relaxed))
        }
    }

    /// Hands every ready completion's (user data, result) to `each`, then gives their
    /// entries back to the kernel; how many there were.
    #[inline(always)]
    pub fn reap(&mut self, mut each: impl FnMut(u64, i32)) -> u32 {
        // SAFETY: this reader is the only consumer: the head is ours to move; the entries
        // from head to the tail (read with Acquire) are complete, and the kernel reuses
        // them only after the head's Release store.
        unsafe {
            let head = (*self.head).load(Ordering::Relaxed);
            let tail = (*self.tail).load(Ordering::Acquire);
            let mut h = head;
            while h != tail {
                let c = self.cqes.add((h & self.mask) as usize).read();
                each(c.user_data, c.res);
                h = h.wrapping_add(1);
            }
            if h != head {
                (*self.head).store(h, Ordering::Release);
            }
            h.wrapping_sub(head)
        }
    }
}
