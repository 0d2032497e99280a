//! [`Skewed`]: random offsets drawn from fio's skewed distributions with fio's formulas
//! (fio 3.33's lib/zipf.c, lib/gauss.c and the zones of io_u.c). Zipf, Pareto and normal
//! draw a rank, spread it over the share with fio's hash (a multiplication by the
//! golden ratio) and a random offset, so the popular blocks are scattered as in fio;
//! zones draw a zone by its share of the I/Os, then a place in it. Reads and writes share
//! one generator, so both find the same popular blocks (one state per file, as fio's).

use iolab_core::rng::Rng;
use iolab_core::spec::Distribution;
use iolab_core::spec::access::{AbsZone, Zone};

use super::OffsetGen;
use crate::sizes::SizeDraw;

/// fio's cap on the terms of zipf's normalising sum.
const ZIPF_MAX_GEN: u64 = 10_000_000;
/// fio's hash of a rank (hash.h's GOLDEN_RATIO_64).
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
/// Uniform draws fio averages for its normal distribution.
const GAUSS_ITERS: u64 = 12;

/// Skewed offsets over a share.
pub struct Skewed {
    units: u64,
    kind: Kind,
    /// The ranks' positions are steps of this many units (the finest of the directions).
    step: u64,
    rng: Rng,
}

enum Kind {
    Zipf {
        n: u64,
        theta: f64,
        zetan: f64,
        alpha: f64,
        eta: f64,
        offset: u64,
    },
    Pareto {
        n: u64,
        power: f64,
        offset: u64,
    },
    Normal {
        n: u64,
        stddev: u64,
        offset: u64,
    },
    /// Per direction: for each of the 100 percent of the draws, its zone as (first
    /// position, positions) in that direction's steps; empty: even draws.
    Zones([Vec<(u64, u64)>; 2]),
}

/// A 32-bit draw as fio's generators for these distributions give it.
fn rand32(rng: &mut Rng) -> u32 {
    (rng.next_u64() >> 32) as u32
}

impl Skewed {
    /// Over a share of `units` for the directions `sizes` (read first) in a plan whose
    /// unit is `unit` bytes.
    pub fn new(d: &Distribution, units: u64, sizes: &[&SizeDraw], unit: u64, seed: u64) -> Skewed {
        let mut rng = Rng::new(seed);
        let step = sizes.iter().map(|s| s.step()).min().unwrap_or(1).max(1);
        let smallest = sizes.iter().map(|s| s.smallest()).min().unwrap_or(1);
        let finest = SizeDraw::fixed(smallest, 0);
        let n = if step == smallest {
            finest.positions(units)
        } else {
            units.saturating_sub(smallest.saturating_sub(step)) / step
        }
        .max(1);
        // fio: a random place for the most popular rank, or `center` of the share.
        let mut place = |center: Option<f64>| match center {
            Some(c) => (n as f64 * c) as u64,
            None => u64::from(rand32(&mut rng)),
        };
        let kind = match d {
            Distribution::Zipf { theta, center } => {
                let zetan: f64 = (0..n.min(ZIPF_MAX_GEN))
                    .map(|i| (1.0 / (i + 1) as f64).powf(*theta))
                    .sum();
                let zeta2 = 1.0 + 0.5f64.powf(*theta);
                Kind::Zipf {
                    n,
                    theta: *theta,
                    zetan,
                    alpha: 1.0 / (1.0 - theta),
                    eta: (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
                    offset: place(*center),
                }
            }
            Distribution::Pareto { h, center } => Kind::Pareto {
                n,
                power: h.ln() / (1.0 - h).ln(),
                offset: place(*center),
            },
            Distribution::Normal { dev, center } => Kind::Normal {
                n,
                stddev: if *dev == 0.0 {
                    0
                } else {
                    ((n as f64 * dev / 100.0).ceil() as u64).min(n / 2)
                },
                // fio's (double) n * (center - 0.5), taken as an unsigned 64-bit value.
                offset: center.map_or(0, |c| (n as f64 * (c - 0.5)) as i64 as u64),
            },
            Distribution::Zoned { read, write } => {
                let table = |zones: &[Zone], s: &SizeDraw| {
                    zone_table(zones.iter().map(|z| (z.access, z.size)), |prev, end| {
                        let last = s.positions(units);
                        let start = u64::from(prev) * last / 100;
                        (start, last * u64::from(end - prev) / 100)
                    })
                };
                Kind::Zones([table(read, sizes[0]), table(write, sizes[sizes.len() - 1])])
            }
            Distribution::ZonedAbs { read, write } => {
                let table = |zones: &[AbsZone], s: &SizeDraw| {
                    let bytes_per = (s.step() * unit).max(1);
                    zone_table(
                        zones.iter().map(|z| (z.access, z.size.get())),
                        |prev, end| (prev / bytes_per, (end - prev) / bytes_per),
                    )
                };
                Kind::Zones([table(read, sizes[0]), table(write, sizes[sizes.len() - 1])])
            }
        };
        Skewed {
            units,
            kind,
            step,
            rng,
        }
    }

    /// The next rank's position, in steps of `self.step` (or of the direction's own step
    /// for zones: then true).
    #[inline]
    fn rank(&mut self, dir: usize, positions: u64) -> (u64, bool) {
        let rng = &mut self.rng;
        match &self.kind {
            Kind::Zipf {
                n,
                theta,
                zetan,
                alpha,
                eta,
                offset,
            } => {
                let uni = f64::from(rand32(rng)) / f64::from(u32::MAX);
                let z = uni * zetan;
                let val = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(*theta) {
                    2
                } else {
                    1 + (*n as f64 * (eta * uni - eta + 1.0).powf(*alpha)) as u64
                };
                (spread(val - 1, *offset, *n), false)
            }
            Kind::Pareto { n, power, offset } => {
                let uni = f64::from(rand32(rng)) / f64::from(u32::MAX);
                let val = ((n - 1) as f64 * uni.powf(*power)) as u64;
                (spread(val, *offset, *n), false)
            }
            Kind::Normal { n, stddev, offset } => {
                let sum: u64 = (0..GAUSS_ITERS)
                    .map(|_| u64::from(rand32(rng)) % (n + 1))
                    .sum();
                let mut sum = sum.div_ceil(GAUSS_ITERS);
                if *stddev > 0 {
                    let r = f64::from(rand32(rng)) / 4_294_967_296.0;
                    let mut dev = (*stddev as f64 * r) as i64 - (*stddev / 2) as i64;
                    while (dev as i128 + sum as i128) as u64 >= *n && dev != 0 {
                        dev /= 2;
                    }
                    sum = (sum as i64 + dev) as u64;
                }
                (spread(sum, *offset, *n), false)
            }
            Kind::Zones(tables) => {
                let table = &tables[dir];
                if table.is_empty() {
                    return (rng.below(positions), true);
                }
                let (start, len) = table[rng.below(100) as usize];
                (
                    (start + rng.below(len.max(1)).min(len)).min(positions - 1),
                    true,
                )
            }
        }
    }
}

/// fio's scattering of a rank over `n` places: hashed, then moved by `offset`.
#[inline]
fn spread(rank: u64, offset: u64, n: u64) -> u64 {
    rank.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(offset) % n
}

/// For each percent of the draws, its zone as `place(start, end)` of the zone's
/// cumulative sizes (fio's zone_state_index): `zones` are (share of the I/Os, size).
fn zone_table<T: Copy + Default + std::ops::Add<Output = T>>(
    zones: impl Iterator<Item = (u8, T)>,
    place: impl Fn(T, T) -> (u64, u64),
) -> Vec<(u64, u64)> {
    let mut table = Vec::with_capacity(100);
    let mut prev = T::default();
    for (access, size) in zones {
        let end = prev + size;
        let zone = place(prev, end);
        table.extend(std::iter::repeat_n(zone, access as usize));
        prev = end;
    }
    table
}

impl OffsetGen for Skewed {
    #[inline]
    fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)> {
        let positions = sizes.positions(self.units);
        if positions == 0 {
            return None;
        }
        let (rank, own_steps) = self.rank(sizes.dir(), positions);
        let at = if own_steps {
            rank * sizes.step()
        } else {
            // A rank on the finest steps, on this direction's steps at or before it.
            let s = sizes.step();
            ((rank * self.step) / s).min(positions - 1) * s
        };
        Some((at, sizes.draw(self.units - at)?))
    }
}

#[cfg(test)]
#[path = "skew_tests.rs"]
mod tests;
