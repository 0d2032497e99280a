//! [`Extents`]: where entries go on a block device. First fit over the device's
//! capacity: an entry takes the lowest free run of blocks that holds it (its size
//! rounded up to the block, so every entry starts block-aligned, as O_DIRECT needs), and
//! a freed run merges with its free neighbours.

use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub struct Extents {
    /// Free runs: offset -> length, none adjacent to another.
    free: BTreeMap<u64, u64>,
    block: u64,
}

impl Extents {
    /// `capacity` bytes from `start` (whole blocks of `block` bytes) all free.
    pub fn new(start: u64, capacity: u64, block: u64) -> Extents {
        let block = block.max(1);
        let whole = capacity / block * block;
        let mut free = BTreeMap::new();
        if whole > 0 {
            free.insert(start, whole);
        }
        Extents { free, block }
    }

    /// The bytes an entry of `size` bytes takes.
    pub fn rounded(&self, size: u64) -> u64 {
        size.div_ceil(self.block).max(1) * self.block
    }

    /// The offset of the lowest free run that holds `size` bytes, taken; None if none.
    pub fn alloc(&mut self, size: u64) -> Option<u64> {
        let need = self.rounded(size);
        let (&at, &len) = self.free.iter().find(|(_, len)| **len >= need)?;
        self.free.remove(&at);
        if len > need {
            self.free.insert(at + need, len - need);
        }
        Some(at)
    }

    /// Gives back the run of an entry of `size` bytes at `offset`.
    pub fn release(&mut self, offset: u64, size: u64) {
        let mut at = offset;
        let mut len = self.rounded(size);
        if let Some((&p, &plen)) = self.free.range(..at).next_back()
            && p + plen == at
        {
            self.free.remove(&p);
            at = p;
            len += plen;
        }
        if let Some(&nlen) = self.free.get(&(at + len)) {
            self.free.remove(&(at + len));
            len += nlen;
        }
        self.free.insert(at, len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_rounds_to_blocks_and_merges_what_is_freed() {
        let mut e = Extents::new(0, 10 * 4096 + 100, 4096);
        assert_eq!(e.alloc(100), Some(0));
        assert_eq!(e.alloc(4097), Some(4096));
        assert_eq!(e.alloc(4096), Some(3 * 4096));
        // A hole of one block at 0 and of two at 4096 once both are freed.
        e.release(0, 100);
        assert_eq!(
            e.alloc(2 * 4096),
            Some(4 * 4096),
            "the hole at 0 is too small"
        );
        e.release(4096, 4097);
        assert_eq!(e.alloc(3 * 4096), Some(0), "0..3 blocks merged");
        assert_eq!(e.alloc(5 * 4096), None, "4 blocks left, not 5");
        assert_eq!(e.alloc(4 * 4096), Some(6 * 4096));
        assert_eq!(
            e.alloc(1),
            None,
            "full: the tail under a block is never used"
        );
    }

    #[test]
    fn a_share_starts_where_it_is_given() {
        let mut e = Extents::new(1 << 20, 8192, 4096);
        assert_eq!(e.alloc(10), Some(1 << 20));
        assert_eq!(e.alloc(10), Some((1 << 20) + 4096));
        assert_eq!(e.alloc(10), None);
    }
}
