//! How long each I/O is: [`SizeDraw`] gives one direction's I/O lengths in units (the
//! plan's smallest size), one size or a draw per I/O from a mix as fio's
//! `get_next_buflen` draws it, among the sizes that fit before the end of the share. It
//! also carries the direction's offset step (fio's blockalign), which the offset
//! generators place I/Os on. Built before the loop; a draw allocates nothing.

use iolab_core::rng::{Rng, mix};
use iolab_core::spec::{DataSpec, SizeMix};

use crate::fio_rand::Taus88;

/// One direction's I/O lengths and offset step, in units.
#[derive(Clone, Debug)]
pub struct SizeDraw {
    kind: Kind,
    smallest: u64,
    largest: u64,
    /// Random offsets are multiples of this many units.
    step: u64,
    /// The direction (0 reads, 1 writes, `IoDir` order), for generators that keep
    /// something per direction.
    dir: usize,
    rng: Rng,
    /// Drawn as fio 3.33 draws them (`iolab fio`); None: iolab's own draw.
    fio: Option<FioDraw>,
}

/// fio's size draw: its `bsrange_state` (a taus88 seeded with the clone's
/// `rand_seeds[FIO_RAND_BS_OFF + dir]`), `unit` bytes per unit.
#[derive(Clone, Copy, Debug)]
struct FioDraw {
    state: Taus88,
    seed: u32,
    unit: u64,
    /// Each pass draws again from the start (fio's randrepeat reseeds at each loop).
    repeat: bool,
}

#[derive(Clone, Debug)]
enum Kind {
    Fixed,
    /// (length, cumulative share in percent), in fio's order: by share, smallest first.
    Split(Vec<(u64, u64)>),
    /// Multiples of the smallest up to `largest`, each as likely.
    Range,
}

impl SizeDraw {
    /// Always `len` units, offsets on multiples of `len` (one size, as before mixes).
    pub fn fixed(len: u64, dir: usize) -> SizeDraw {
        SizeDraw {
            kind: Kind::Fixed,
            smallest: len,
            largest: len,
            step: len,
            dir,
            rng: Rng::new(0),
            fio: None,
        }
    }

    /// Direction `dir`'s sizes in `spec`, counted in `unit`s.
    pub fn of_spec(spec: &DataSpec, dir: usize, unit: u64, seed: u64) -> SizeDraw {
        let unit = unit.max(1);
        let sizes = spec.sizes()[dir];
        let smallest = sizes.smallest / unit;
        let step = spec.block_align.map_or(smallest, |a| a.get() / unit).max(1);
        let kind = match sizes.mix {
            None => Kind::Fixed,
            Some(SizeMix::Range { .. }) => Kind::Range,
            Some(SizeMix::Split(shares)) => {
                let mut by_share: Vec<(u64, u64)> = shares
                    .iter()
                    .map(|s| (s.size.get() / unit, u64::from(s.percent)))
                    .collect();
                // fio sorts the split by share (a stable sort: ties keep their order).
                by_share.sort_by_key(|&(_, p)| p);
                let mut sum = 0;
                Kind::Split(
                    by_share
                        .into_iter()
                        .map(|(len, p)| {
                            sum += p;
                            (len, sum)
                        })
                        .collect(),
                )
            }
        };
        SizeDraw {
            kind,
            smallest,
            largest: sizes.largest / unit,
            step,
            dir,
            rng: Rng::new(mix(&[seed, 0xB5_B17, dir as u64])),
            fio: None,
        }
    }

    /// Draws a mix as fio 3.33's `get_next_buflen` does, from its generator seeded with
    /// `seed`, `unit` bytes per unit; `repeat`: each pass draws again from the start
    /// (see [`SizeDraw::new_pass`]). One size draws nothing.
    pub fn fio(mut self, seed: u64, unit: u64, repeat: bool) -> SizeDraw {
        if !matches!(self.kind, Kind::Fixed) {
            self.fio = Some(FioDraw {
                state: Taus88::new(seed as u32),
                seed: seed as u32,
                unit: unit.max(1),
                repeat,
            });
        }
        self
    }

    /// A pass over the share starts again: fio's draws start again too under randrepeat.
    #[cold]
    pub fn new_pass(&mut self) {
        if let Some(f) = &mut self.fio
            && f.repeat
        {
            f.state = Taus88::new(f.seed);
        }
    }

    pub fn smallest(&self) -> u64 {
        self.smallest
    }

    pub fn step(&self) -> u64 {
        self.step
    }

    pub fn dir(&self) -> usize {
        self.dir
    }

    /// Where random offsets may start in a share of `units`: positions of `step` units
    /// from which the smallest I/O fits (fio's `last_block`).
    #[inline]
    pub fn positions(&self, units: u64) -> u64 {
        let end = if self.smallest > self.step {
            units.saturating_sub(self.smallest - self.step)
        } else {
            units
        };
        end / self.step
    }

    /// The length of the next I/O, at most `room` units; None when not even the
    /// smallest fits. A drawn size that does not fit gives its turn to the next larger
    /// share that does, and when none does the draw is made again (fio's rule).
    #[inline(always)]
    pub fn draw(&mut self, room: u64) -> Option<u64> {
        if room < self.smallest {
            return None;
        }
        // One size (the common case) in line; a mix's draw out of line.
        match &self.kind {
            Kind::Fixed => Some(self.smallest),
            _ => Some(self.draw_mix(room)),
        }
    }

    /// A mix's draw, at least the smallest size fitting in `room`.
    #[inline(never)]
    fn draw_mix(&mut self, room: u64) -> u64 {
        if let Some(f) = &mut self.fio {
            return f.draw(&self.kind, self.smallest, self.largest, room);
        }
        match &self.kind {
            Kind::Fixed => self.smallest,
            Kind::Range => {
                let fit = (self.largest.min(room) / self.smallest).max(1);
                self.smallest * (1 + self.rng.below(fit))
            }
            Kind::Split(shares) => loop {
                let v = self.rng.below(100);
                if let Some(&(len, _)) = shares.iter().find(|&&(len, cum)| v < cum && len <= room) {
                    return len;
                }
            },
        }
    }
}

impl FioDraw {
    /// fio 3.33's `get_next_buflen`: a range's draw is `minbs + maxbs * r / 2^32`, a
    /// split's the first size whose cumulative share `c` has `r / c <= 2^32 / 100`
    /// (shares of 0 skipped), then aligned down to the smallest and capped at the
    /// largest; drawn again until it fits in `room` (which the smallest does).
    fn draw(&mut self, kind: &Kind, smallest: u64, largest: u64, room: u64) -> u64 {
        let (min, max) = (smallest * self.unit, largest * self.unit);
        loop {
            let r = self.state.next();
            let mut len = match kind {
                Kind::Split(shares) => {
                    let (mut len, mut before) = (0, 0);
                    for &(size, cum) in shares {
                        if cum == before {
                            continue;
                        }
                        before = cum;
                        len = size * self.unit;
                        if u64::from(r) / cum <= u64::from(u32::MAX) / 100 && size <= room {
                            break;
                        }
                    }
                    len
                }
                _ => min + (max as f64 * (f64::from(r) / 4294967296.0)) as u64,
            };
            len -= len % min;
            len = len.min(max);
            if len >= min && len / self.unit <= room {
                return len / self.unit;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::spec::RwKind;

    fn spec_with(mix: &str) -> DataSpec {
        DataSpec {
            rw: RwKind::Randread,
            block_sizes: Some(mix.parse().unwrap()),
            ..DataSpec::default()
        }
    }

    #[test]
    fn a_split_draws_its_shares() {
        let spec = spec_with("4KiB/10:64KiB/50:32KiB/40");
        let mut d = SizeDraw::of_spec(&spec, 0, 4096, 7);
        let mut counts = [0u32; 17];
        let n = 200_000;
        for _ in 0..n {
            counts[d.draw(u64::MAX).unwrap() as usize] += 1;
        }
        let share = |units: usize| f64::from(counts[units]) / f64::from(n);
        // Within 1 % of the asked shares (the standard error is about 0.1 %).
        assert!((share(1) - 0.10).abs() < 0.01, "{}", share(1));
        assert!((share(16) - 0.50).abs() < 0.01, "{}", share(16));
        assert!((share(8) - 0.40).abs() < 0.01, "{}", share(8));
        assert_eq!(counts.iter().sum::<u32>(), n);
    }

    #[test]
    fn near_the_end_only_sizes_that_fit_are_drawn() {
        let spec = spec_with("4KiB/10:64KiB/50:32KiB/40");
        let mut d = SizeDraw::of_spec(&spec, 0, 4096, 7);
        // 12 units of room: 64 KiB (16) and 32 KiB (8 fits) ...
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..1000 {
            seen.insert(d.draw(12).unwrap());
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [1, 8]);
        assert_eq!(d.draw(0), None);
        assert_eq!(d.draw(1), Some(1));
    }

    #[test]
    fn a_range_draws_every_multiple_alike() {
        let spec = spec_with("4KiB-16KiB");
        let mut d = SizeDraw::of_spec(&spec, 0, 4096, 3);
        let mut counts = [0u32; 5];
        for _ in 0..40_000 {
            counts[d.draw(u64::MAX).unwrap() as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        assert!(
            counts[1..].iter().all(|c| (9_500..10_500).contains(c)),
            "{counts:?}"
        );
        // Two units of room: 4 or 8 KiB only.
        assert!((0..100).all(|_| d.draw(2).unwrap() <= 2));
    }

    #[test]
    fn positions_are_where_the_smallest_fits() {
        // 16 units, smallest 2 on steps of 1 (an align of half the size): 0..=14.
        let mut spec = spec_with("8KiB-16KiB");
        spec.block_align = Some(iolab_core::units::ByteCount::kib(4));
        let d = SizeDraw::of_spec(&spec, 0, 4096, 3);
        assert_eq!((d.step(), d.smallest()), (1, 2));
        assert_eq!(d.positions(16), 15);
        // Steps larger than the smallest: whole steps.
        spec.block_align = Some(iolab_core::units::ByteCount::kib(32));
        let d = SizeDraw::of_spec(&spec, 0, 8192, 3);
        assert_eq!((d.step(), d.smallest()), (4, 1));
        assert_eq!(d.positions(17), 4);
        assert_eq!(SizeDraw::fixed(4, 1).positions(17), 4);
    }
}
