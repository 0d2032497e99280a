//! [`CountingAlloc`]: the system allocator, counting the allocations (and reallocations)
//! each thread makes, read with [`thread_allocations`]. Only a test binary installs it (as
//! its `#[global_allocator]`), to assert that a hot loop allocates nothing per operation;
//! iolab itself uses the system allocator directly.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting per thread.
pub struct CountingAlloc;

fn count() {
    // A const-initialized Cell without a destructor: reachable at any point of a thread's
    // life, and counting allocates nothing.
    let _ = COUNT.try_with(|c| c.set(c.get() + 1));
}

/// Allocations and reallocations the calling thread has made so far (0 unless
/// [`CountingAlloc`] is the global allocator).
pub fn thread_allocations() -> u64 {
    COUNT.try_with(Cell::get).unwrap_or(0)
}

// SAFETY: every call goes to the system allocator with the caller's arguments unchanged,
// so System's guarantees are this allocator's; counting touches only a thread-local Cell.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller upholds GlobalAlloc::alloc's contract, which is System's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as for alloc.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: `ptr` came from this allocator, that is from System, with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from System, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}
