//! [`BufferPool`]: one aligned allocation cut into fixed-size slots. A slot is lent to
//! the kernel when its request is queued and returned when the completion is reaped;
//! while it is in flight, safe code cannot touch it. This is the one safe wrapper
//! io_uring needs, written once.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

use crate::error::BackendError;

pub struct BufferPool {
    ptr: NonNull<u8>,
    layout: Layout,
    slot_size: usize,
    /// Bytes from one slot's start to the next: slot_size rounded up to the alignment
    /// (kept, not computed per access: the rounding is a division).
    stride: usize,
    slots: u32,
    in_flight: Vec<bool>,
}

// SAFETY: the pool owns its allocation exclusively (like a Vec<u8>); moving it to another
// thread moves that ownership. Slots lent to the kernel are tracked in `in_flight` and
// the backends that lend them wait for their completion before the pool is dropped.
unsafe impl Send for BufferPool {}

impl BufferPool {
    /// `slots` buffers of `slot_size` bytes each, every one aligned to `align` (a power of
    /// two, at least 512 for direct I/O). Zero-filled.
    pub fn new(slots: u32, slot_size: u64, align: u64) -> Result<Self, BackendError> {
        let alloc_err = || BackendError::BufferAlloc {
            bytes: (slots as u64).saturating_mul(slot_size),
            slots,
            slot_size,
        };
        let align = align.max(8).next_power_of_two() as usize;
        let slot_size_usize = usize::try_from(slot_size).map_err(|_| alloc_err())?;
        let stride = slot_size_usize
            .checked_next_multiple_of(align)
            .ok_or_else(alloc_err)?;
        let total = stride
            .checked_mul(slots.max(1) as usize)
            .ok_or_else(alloc_err)?;
        let layout = Layout::from_size_align(total.max(align), align).map_err(|_| alloc_err())?;
        // SAFETY: the layout has a non-zero size (at least `align` bytes).
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(alloc_err)?;
        Ok(BufferPool {
            ptr,
            layout,
            slot_size: slot_size_usize,
            stride,
            slots,
            in_flight: vec![false; slots as usize],
        })
    }

    pub fn slots(&self) -> u32 {
        self.slots
    }

    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    #[inline]
    fn offset_of(&self, slot: u32) -> usize {
        assert!(
            slot < self.slots,
            "buffer slot {slot} out of range (pool has {})",
            self.slots
        );
        slot as usize * self.stride
    }

    pub fn is_in_flight(&self, slot: u32) -> bool {
        self.in_flight[slot as usize]
    }

    /// The slot's bytes. Panics if the slot is lent to the kernel (an engine bug).
    #[inline]
    pub fn get(&self, slot: u32) -> &[u8] {
        assert!(
            !self.in_flight[slot as usize],
            "buffer slot {slot} read while in flight"
        );
        let off = self.offset_of(slot);
        // SAFETY: off + slot_size lies inside the allocation (stride >= slot_size, slot <
        // slots); the slot is not in flight, so no kernel write can alias this borrow, and
        // &self prevents a simultaneous &mut borrow.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(off), self.slot_size) }
    }

    /// The slot's bytes, writable. Panics if the slot is lent to the kernel.
    #[inline]
    pub fn get_mut(&mut self, slot: u32) -> &mut [u8] {
        assert!(
            !self.in_flight[slot as usize],
            "buffer slot {slot} written while in flight"
        );
        let off = self.offset_of(slot);
        // SAFETY: as in `get`; &mut self makes this the only borrow of the slot.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(off), self.slot_size) }
    }

    /// Lends the slot to the kernel: returns its address and marks it in flight until
    /// [`BufferPool::release`]. Panics if it is already in flight.
    #[inline]
    pub(crate) fn lend(&mut self, slot: u32) -> *mut u8 {
        let off = self.offset_of(slot);
        assert!(
            !self.in_flight[slot as usize],
            "buffer slot {slot} lent twice"
        );
        self.in_flight[slot as usize] = true;
        // SAFETY: off is inside the allocation (see offset_of).
        unsafe { self.ptr.as_ptr().add(off) }
    }

    /// Takes a slot back from the kernel after its completion was reaped.
    #[inline]
    pub(crate) fn release(&mut self, slot: u32) {
        self.in_flight[slot as usize] = false;
    }

    /// The whole allocation, for registering it with io_uring.
    pub(crate) fn region(&self) -> (*mut u8, usize) {
        (self.ptr.as_ptr(), self.layout.size())
    }

    /// Fills every slot with pseudo-random bytes (incompressible data).
    pub fn fill_random(&mut self, seed: u64) {
        let mut rng = iolab_core::rng::Rng::new(seed);
        for slot in 0..self.slots {
            rng.fill(self.get_mut(slot));
        }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        // SAFETY: ptr was allocated with exactly this layout in `new`. Backends that lend
        // slots to the kernel drain them before the pool is dropped (see UringBackend's
        // Drop), so no kernel write can land after this.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_aligned_and_distinct() {
        let mut p = BufferPool::new(4, 1000, 4096).unwrap();
        for s in 0..4 {
            assert_eq!(p.get(s).as_ptr() as usize % 4096, 0);
            assert_eq!(p.get(s).len(), 1000);
        }
        p.get_mut(1).fill(7);
        assert!(p.get(0).iter().all(|b| *b == 0));
        assert!(p.get(1).iter().all(|b| *b == 7));
    }

    #[test]
    #[should_panic(expected = "in flight")]
    fn a_lent_slot_cannot_be_touched() {
        let mut p = BufferPool::new(2, 512, 512).unwrap();
        let _ = p.lend(0);
        let _ = p.get_mut(0);
    }

    #[test]
    fn released_slots_are_usable_again() {
        let mut p = BufferPool::new(1, 512, 512).unwrap();
        let _ = p.lend(0);
        assert!(p.is_in_flight(0));
        p.release(0);
        p.get_mut(0)[0] = 1;
        assert_eq!(p.get(0)[0], 1);
    }

    #[test]
    fn huge_requests_fail_cleanly() {
        assert!(matches!(
            BufferPool::new(u32::MAX, u64::MAX / 2, 4096),
            Err(BackendError::BufferAlloc { .. })
        ));
    }
}
