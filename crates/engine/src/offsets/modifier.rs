//! fio's `rw=...:N` modifiers as offset generators: [`Skipping`] (a sequential job that
//! moves N bytes past the end of each I/O, or back, as `rw=read:-8k`) and [`Runs`] (a
//! random job that goes on sequentially for N I/Os from each random offset). Both
//! follow fio 3.33's io_u.c (`get_next_seq_offset`, `get_next_offset`), in units.

use iolab_core::rng::mix;

use super::{OffsetGen, Order, generator};
use crate::sizes::SizeDraw;

pub use iolab_core::spec::{SeqModifier, Zones};

/// fio 3.33's `setup_strided_zone_mode` (io_u.c): each zone gets its own order over
/// the zone's units (a sequence from the zone's start, or random places in it with
/// their own map), made when the zone is entered.
pub struct Strided {
    units: u64,
    zones: Zones,
    order: Order,
    sizes: Vec<SizeDraw>,
    seed: u64,
    /// The zone's first unit, and the units moved in it.
    start: u64,
    moved: u64,
    entered: u64,
    inner: Option<Box<dyn OffsetGen>>,
}

impl Strided {
    pub fn new(units: u64, zones: Zones, order: &Order, sizes: &[&SizeDraw], seed: u64) -> Self {
        Strided {
            units,
            zones,
            order: order.clone(),
            sizes: sizes.iter().map(|s| (*s).clone()).collect(),
            seed,
            start: 0,
            moved: 0,
            entered: 0,
            inner: None,
        }
    }

    fn enter(&mut self, start: u64) -> &mut Box<dyn OffsetGen> {
        self.start = start;
        self.moved = 0;
        self.entered += 1;
        let n = self.zones.range.min(self.units - start);
        let sizes: Vec<&SizeDraw> = self.sizes.iter().collect();
        let seed = mix(&[self.seed, self.entered]);
        self.inner.insert(generator(&self.order, n, &sizes, seed))
    }
}

impl OffsetGen for Strided {
    fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)> {
        if self.moved >= self.zones.size {
            let next = self.start + self.zones.range + self.zones.skip;
            self.inner = None;
            self.start = if next >= self.units { 0 } else { next };
        }
        let start = self.start;
        let inner = match self.inner.take() {
            Some(g) => self.inner.insert(g),
            None => self.enter(start),
        };
        let got = match inner.next(sizes) {
            Some(io) => Some(io),
            // Not even the smallest size fits in what is left of the share: from its
            // start again, as fio wraps.
            None if start > 0 => self.enter(0).next(sizes),
            None => None,
        };
        let (at, len) = got?;
        self.moved += len;
        Some((self.start + at, len))
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
    fn strided_zones_move_their_size_then_skip_and_wrap() {
        let one = SizeDraw::fixed(1, 0);
        let zones = |range, size, skip| Zones { range, size, skip };
        // 100 units, zones of 10 with 15 skipped: 0-9, 25-34, 50-59, 75-84, then 0 again.
        let mut g = Strided::new(100, zones(10, 10, 15), &Order::Sequential, &[&one], 1);
        let v = starts(&mut g, 42);
        let want: Vec<u64> = [0u64, 25, 50, 75]
            .iter()
            .flat_map(|s| *s..*s + 10)
            .chain([0, 1])
            .collect();
        assert_eq!(v, want);
        // A zone size above the range goes round the zone: 0-3 twice, then 6-9 twice.
        let mut g = Strided::new(12, zones(4, 8, 2), &Order::Sequential, &[&one], 1);
        assert_eq!(
            starts(&mut g, 16),
            vec![0, 1, 2, 3, 0, 1, 2, 3, 6, 7, 8, 9, 6, 7, 8, 9]
        );
        // Random places stay in their zone, each block of it once per visit.
        let mut g = Strided::new(100, zones(10, 10, 40), &Order::Permutation, &[&one], 9);
        let v = starts(&mut g, 20);
        let mut first: Vec<u64> = v[..10].to_vec();
        first.sort_unstable();
        assert_eq!(first, (0..10).collect::<Vec<_>>());
        let mut second: Vec<u64> = v[10..].to_vec();
        second.sort_unstable();
        assert_eq!(second, (50..60).collect::<Vec<_>>());
        // A zone larger than the share is the share: a plain sequence.
        let mut g = Strided::new(5, zones(1000, 1000, 0), &Order::Sequential, &[&one], 1);
        assert_eq!(starts(&mut g, 7), vec![0, 1, 2, 3, 4, 0, 1]);
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
