//! [`CoverMap`]: random offsets that touch every block of a share once per pass when
//! I/O sizes are drawn, as fio's random map (lib/axmap.c) does: a uniform draw; if that
//! block is done, the next free one after it (wrapping); the I/O's drawn length is cut
//! at the first block already done. A three-level bitmap finds the next free block in a
//! few word reads however full the map is. It is allocated once, before the loop.

use iolab_core::rng::Rng;

use super::OffsetGen;
use crate::sizes::SizeDraw;

/// Bytes a map of `blocks` blocks takes (for the memory check).
pub fn map_bytes(blocks: u64) -> u64 {
    let words = blocks.div_ceil(64);
    let level1 = words.div_ceil(64);
    (words + level1 + level1.div_ceil(64)) * 8
}

/// Every block of `block` units once per pass, at random, with drawn lengths.
pub struct CoverMap {
    /// Level 0: a bit per block, set when done; level 1: a bit per full level-0 word;
    /// level 2: a bit per full level-1 word.
    done: [Vec<u64>; 3],
    blocks: u64,
    /// Units per block: the smallest size of the direction(s) it serves.
    block: u64,
    filled: u64,
    rng: Rng,
}

impl CoverMap {
    /// Over a share of `units`, in blocks of `block` units.
    pub fn new(units: u64, block: u64, seed: u64) -> CoverMap {
        let block = block.max(1);
        let blocks = units / block;
        let words = blocks.div_ceil(64) as usize;
        let level1 = words.div_ceil(64);
        CoverMap {
            done: [
                vec![0; words],
                vec![0; level1],
                vec![0; level1.div_ceil(64)],
            ],
            blocks,
            block,
            filled: 0,
            rng: Rng::new(seed),
        }
    }

    fn is_set(&self, b: u64) -> bool {
        self.done[0][(b / 64) as usize] & (1 << (b % 64)) != 0
    }

    fn set(&mut self, b: u64) {
        let w = (b / 64) as usize;
        self.done[0][w] |= 1 << (b % 64);
        if self.done[0][w] == self.full_word(0, w) {
            let w1 = w / 64;
            self.done[1][w1] |= 1 << (w % 64);
            if self.done[1][w1] == self.full_word(1, w1) {
                self.done[2][w1 / 64] |= 1 << (w1 % 64);
            }
        }
    }

    /// What word `w` of `level` holds when everything under it is done (the last word of
    /// a level may be partly outside the map).
    fn full_word(&self, level: usize, w: usize) -> u64 {
        let bits = match level {
            0 => self.blocks,
            1 => self.done[0].len() as u64,
            _ => self.done[1].len() as u64,
        };
        let rest = bits - w as u64 * 64;
        if rest >= 64 {
            u64::MAX
        } else {
            (1 << rest) - 1
        }
    }

    /// The first free block at or after `from` up to the end of the map.
    fn free_from(&self, from: u64) -> Option<u64> {
        if from >= self.blocks {
            return None;
        }
        let free_in = |level: usize, word: usize, from_bit: u64| -> Option<u64> {
            let free =
                !self.done[level][word] & self.full_word(level, word) & (u64::MAX << from_bit);
            (free != 0).then(|| word as u64 * 64 + u64::from(free.trailing_zeros()))
        };
        let w0 = (from / 64) as usize;
        if let Some(b) = free_in(0, w0, from % 64) {
            return Some(b);
        }
        // The next level-0 word after w0 that is not full, through level 1 (and 2).
        let next = w0 as u64 + 1;
        let w1 = (next / 64) as usize;
        let word = if w1 >= self.done[1].len() {
            None
        } else if let Some(w) = free_in(1, w1, next % 64) {
            Some(w)
        } else {
            let next1 = w1 as u64 + 1;
            let w2 = (next1 / 64) as usize;
            let level1_word = (w2..self.done[2].len())
                .find_map(|w| free_in(2, w, if w == w2 { next1 % 64 } else { 0 }));
            level1_word.and_then(|w| free_in(1, w as usize, 0))
        }?;
        free_in(0, word as usize, 0)
    }

    /// The next free block after `b`, wrapping to the start (fio's axmap_next_free).
    fn next_free(&self, b: u64) -> Option<u64> {
        self.free_from(b + 1).or_else(|| self.free_from(0))
    }

    fn reset(&mut self) {
        for level in &mut self.done {
            level.iter_mut().for_each(|w| *w = 0);
        }
        self.filled = 0;
    }
}

impl OffsetGen for CoverMap {
    #[inline]
    fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)> {
        if self.blocks == 0 {
            return None;
        }
        if self.filled == self.blocks {
            // A new pass (loops, or a time-based run).
            self.reset();
        }
        let mut b = self.rng.below(self.blocks);
        if self.is_set(b) {
            b = self.next_free(b)?;
        }
        let units = self.blocks * self.block;
        let at = b * self.block;
        let len = sizes.draw(units - at)?;
        // Cut at the first block already done (fio's mark_random_map).
        let mut n = 0;
        let want = len.div_ceil(self.block);
        while n < want && b + n < self.blocks && !self.is_set(b + n) {
            self.set(b + n);
            n += 1;
        }
        self.filled += n;
        Some((at, (n * self.block).min(len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::spec::{DataSpec, RwKind};
    use proptest::prelude::{prop_assert, prop_assert_eq, proptest};

    fn draw(mix: &str) -> SizeDraw {
        let spec = DataSpec {
            rw: RwKind::Randread,
            block_sizes: Some(mix.parse().unwrap()),
            ..DataSpec::default()
        };
        SizeDraw::of_spec(&spec, 0, 4096, 11)
    }

    #[test]
    fn next_free_skips_full_words_and_wraps() {
        let mut m = CoverMap::new(5000, 1, 1);
        for b in 0..4999 {
            if b != 70 {
                m.set(b);
            }
        }
        assert_eq!(m.next_free(3), Some(70));
        assert_eq!(m.next_free(70), Some(4999));
        m.set(4999);
        assert_eq!(m.next_free(4000), Some(70));
        m.set(70);
        assert_eq!(m.next_free(10), None);
        assert_eq!(map_bytes(5000), (79 + 2 + 1) * 8);
    }

    #[test]
    fn a_large_map_finds_the_last_free_block_far_away() {
        // 64 * 64 * 3 + 5 blocks: three level-2 words' worth.
        let n = 64 * 64 * 64 * 3 + 5;
        let mut m = CoverMap::new(n, 1, 1);
        for b in 0..n {
            if b != n - 2 {
                m.set(b);
            }
        }
        assert_eq!(m.next_free(0), Some(n - 2));
        assert_eq!(m.next_free(n - 1), Some(n - 2));
    }

    proptest! {
        #[test]
        fn every_unit_is_covered_once_per_pass(units in 1u64..3000, seed: u64) {
            let mut sizes = draw("4KiB/40:16KiB/30:64KiB/30");
            let mut m = CoverMap::new(units, 1, seed);
            let mut seen = vec![0u8; units as usize];
            let mut total = 0;
            while total < units {
                let (at, len) = m.next(&mut sizes).unwrap();
                prop_assert!(len >= 1 && at + len <= units);
                for u in at..at + len {
                    prop_assert_eq!(seen[u as usize], 0);
                    seen[u as usize] = 1;
                }
                total += len;
            }
            prop_assert_eq!(total, units);
            // The next pass starts over.
            let (at, _) = m.next(&mut sizes).unwrap();
            prop_assert!(at < units);
        }
    }
}
