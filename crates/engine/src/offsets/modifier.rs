//! fio's `rw=...:N` modifiers as offset generators: [`Skipping`] (a sequential job that
//! moves N bytes past the end of each I/O, or back, as `rw=read:-8k`) and [`Runs`] (a
//! random job that goes on sequentially for N I/Os from each random offset). Both
//! follow fio 3.33's io_u.c (`get_next_seq_offset`, `get_next_offset`), in units.

use super::OffsetGen;
use crate::sizes::SizeDraw;

/// What fio's `rw=...:N` asks of a worker's sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeqModifier {
    /// Blocks (of the block size) added after the end of each sequential I/O (negative:
    /// backwards).
    pub skip: i64,
    /// A random job: I/Os per random offset, the rest following it in sequence (1: every
    /// I/O random).
    pub run: u32,
}

impl SeqModifier {
    pub fn is_plain(&self) -> bool {
        self.skip == 0 && self.run <= 1
    }
}

/// fio's sequential order with holes: the first I/O at unit 0, each next one `skip`
/// units after the end of the one before (before its start when negative). Past the end
/// it starts again at 0; before the start (backwards) it goes on from the end.
pub struct Skipping {
    units: u64,
    skip: i64,
    /// The end of the last I/O; None before the first.
    last_end: Option<u64>,
}

impl Skipping {
    pub fn new(units: u64, skip: i64) -> Self {
        Skipping {
            units,
            skip,
            last_end: None,
        }
    }
}

impl OffsetGen for Skipping {
    #[inline]
    fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)> {
        let n = self.units as i128;
        let at = match self.last_end {
            None | Some(0) => 0,
            Some(end) => {
                let pos = end as i128 + self.skip as i128;
                if pos >= 0 && pos < n {
                    pos
                } else if self.skip > 0 {
                    0
                } else {
                    (n + self.skip as i128).clamp(0, (n - 1).max(0))
                }
            }
        } as u64;
        let (at, len) = match sizes.draw(self.units.saturating_sub(at)) {
            Some(len) => (at, len),
            None => (0, sizes.draw(self.units)?),
        };
        self.last_end = Some(at + len);
        Some((at, len))
    }
}

/// fio's `rw=randread:N`: every Nth I/O at a random place drawn by `random`, the ones
/// between in sequence after it (the first N-1 from unit 0, as fio's start); a sequence
/// that reaches the end takes a random place instead.
pub struct Runs {
    random: Box<dyn OffsetGen>,
    units: u64,
    run: u32,
    left: u32,
    next_seq: u64,
}

impl Runs {
    pub fn new(random: Box<dyn OffsetGen>, units: u64, run: u32) -> Self {
        Runs {
            random,
            units,
            run: run.max(1),
            left: run.max(1),
            next_seq: 0,
        }
    }
}

impl OffsetGen for Runs {
    #[inline]
    fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)> {
        self.left -= 1;
        let in_sequence = if self.left == 0 {
            self.left = self.run;
            None
        } else {
            sizes
                .draw(self.units.saturating_sub(self.next_seq))
                .map(|len| (self.next_seq, len))
        };
        let (at, len) = match in_sequence {
            Some(io) => io,
            None => self.random.next(sizes)?,
        };
        self.next_seq = at + len;
        Some((at, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offsets::Uniform;

    fn starts(g: &mut dyn OffsetGen, n: usize) -> Vec<u64> {
        let mut one = SizeDraw::fixed(1, 0);
        (0..n)
            .map_while(|_| g.next(&mut one))
            .map(|(at, _)| at)
            .collect()
    }

    #[test]
    fn backwards_reads_as_fios_read_minus_8k() {
        // bs=4k, rw=read:-8k over 6 blocks: 0, then from the end back one block a time
        // (fio: 0, 16k, 12k, 8k, 4k, 0 for a 24k file).
        assert_eq!(starts(&mut Skipping::new(6, -2), 6), vec![0, 4, 3, 2, 1, 0]);
    }

    #[test]
    fn holes_skip_forward_and_wrap_to_the_start() {
        // bs=4k, rw=write:4k over 5 blocks, 5 I/Os: 0, 8k, 16k, then wrap.
        assert_eq!(starts(&mut Skipping::new(5, 1), 5), vec![0, 2, 4, 0, 2]);
    }

    #[test]
    fn random_runs_go_on_in_sequence() {
        let v = starts(&mut Runs::new(Box::new(Uniform::new(1000, 7)), 1000, 4), 12);
        assert_eq!(v.len(), 12);
        // The first three from 0, then a random block and the two after it, ...
        assert_eq!(&v[..3], [0, 1, 2]);
        for k in [3usize, 7] {
            assert_eq!(v[k + 1], v[k] + 1);
            assert_eq!(v[k + 2], v[k] + 2);
        }
    }
}
