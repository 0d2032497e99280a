//! A write's data in its slot before the I/O is issued: iolab's unique data (laid out
//! for a compress ratio, with copies for a dedupe ratio), a dedupe page, a fixed
//! pattern, fio's scrambled buffer, IOR's words or verify blocks (and IOR's spoiled read
//! buffer).

use iolab_backend::{IoBackend, IoDir};
use iolab_core::pattern::{fill_ior_timestamp, fill_verify, fio_scramble};
use iolab_core::spec::DataPattern;

use super::issue::RunState;
use super::{IoAt, Loop};
use crate::clock::Clock;

impl<C: Clock, B: IoBackend + ?Sized> Loop<'_, '_, C, B> {
    /// A plain loop's write (iolab's default data, nothing else asked of it): what
    /// [`Loop::prepare_buffer`] does for it, without the checks for what is off. Fills the
    /// first `len` bytes of slot `slot` with the worker's next unique data (one pass).
    #[inline(always)]
    pub(super) fn fill_unique_write(&mut self, slot: u32, file: u32, len: u32) -> usize {
        let buf = &mut self.backend.buffers().get_mut(slot)[..len as usize];
        self.reduction.fill_unique(buf);
        self.writes_since_fsync += 1;
        self.last_write_file = file as usize;
        0
    }

    /// Fills slot `slot`'s buffer for the I/O `io` (a write's data: iolab's, a dedupe
    /// page, a fixed pattern, IOR's words or verify blocks; for IOR's verified read, a
    /// spoiled first byte) and returns where in the slot the I/O's bytes start (its
    /// start). `st` gives the run's verify and IOR settings.
    #[inline]
    pub(super) fn prepare_buffer(&mut self, slot: u32, io: IoAt, st: &RunState<'_>) -> usize {
        let IoAt {
            dir,
            file,
            offset,
            len,
        } = io;
        let (verify, ior) = (st.verify, st.ior);
        let spec = &self.s.plan.spec;
        let seed = spec.seed;
        // fio's buffers: each slot's own bytes, stamped per write (scrambled) or not.
        let fio = spec.pattern.is_fio();
        let scramble = spec.pattern == DataPattern::Fio;
        // A page of a dedupe working set (fio's working_set mode), if one.
        let fixed = self.reduction.fixed.is_some();
        let page = if dir == IoDir::Write && !verify && !ior && !fixed {
            self.reduction.page_of_next_write()
        } else {
            None
        };
        if dir == IoDir::Write
            && fixed
            && !ior
            && !verify
            && self.slots[slot as usize].dir == IoDir::Read
        {
            // The slot holds the pattern, unless a read used it: then all of it
            // again, as a later longer write takes more of it than this one (sizes
            // drawn per I/O).
            let whole = self.backend.buffers().get_mut(slot);
            let end = (self.s.plan.spec.largest_io() as usize).min(whole.len());
            self.reduction.fill_fixed(&mut whole[..end]);
        }
        if dir == IoDir::Write {
            let buf = &mut self.backend.buffers().get_mut(slot)[..len as usize];
            if ior {
                // The buffer already holds IOR's words, unless a read used it.
                if self.slots[slot as usize].dir == IoDir::Read {
                    fill_ior_timestamp(buf, seed as u32, self.s.worker.global.into());
                }
            } else if verify {
                let file_id = self.my_files[file as usize].id;
                fill_verify(buf, seed, file_id, offset);
            } else if let Some(key) = page {
                self.reduction.fill_page(buf, key);
            } else if !fixed && !fio {
                // (A fixed pattern is in the slot already: filled again above
                // after a read.)
                self.reduction.fill_write(buf);
            } else if scramble {
                // fio's small_content_scramble, with the time since the start.
                let t = self.now.saturating_sub(self.start).0;
                fio_scramble(buf, offset, t / 1_000_000_000, t % 1_000_000_000);
            }
            if let Some(sampler) = &mut self.sampler
                && sampler.due()
            {
                sampler.take(buf);
            }
            self.writes_since_fsync += 1;
            self.last_write_file = file as usize;
        } else if ior && verify {
            // IOR's invalidate_buffer_pattern: a read that delivers nothing
            // cannot pass for the data left in the buffer.
            let buf = self.backend.buffers().get_mut(slot);
            buf[0] = !buf[0];
        }
        0
    }
}
