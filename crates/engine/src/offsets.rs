//! Which block comes next: [`OffsetGen`] yields block numbers within a worker's share;
//! [`Sequential`], [`Uniform`] and [`FullCoverage`] (a permutation: every block exactly
//! once per pass) implement it. A size-based generator ends after its share; a looping
//! one (time-based runs) never ends. [`OpMix`] decides read or write for mixed work.

use iolab_backend::IoDir;
use iolab_core::rng::{Permutation, Rng, mix};
use iolab_core::spec::{RandomKind, RwKind};

mod modifier;

pub use modifier::{Runs, SeqModifier, Skipping, modified_over_files};

pub trait OffsetGen: Send {
    /// The next block number in `0..blocks`, or None when the share is done.
    fn next(&mut self) -> Option<u64>;
}

/// 0, 1, 2, ... (wrapping to 0 when looping).
pub struct Sequential {
    blocks: u64,
    next: u64,
    remaining: u64,
    looping: bool,
}

impl Sequential {
    pub fn new(blocks: u64, count: u64, looping: bool) -> Self {
        Sequential {
            blocks,
            next: 0,
            remaining: count,
            looping,
        }
    }
}

impl OffsetGen for Sequential {
    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.blocks == 0 || (!self.looping && self.remaining == 0) {
            return None;
        }
        self.remaining = self.remaining.saturating_sub(1);
        let b = self.next;
        self.next += 1;
        if self.next == self.blocks {
            self.next = 0;
        }
        Some(b)
    }
}

/// Independent uniform draws.
pub struct Uniform {
    blocks: u64,
    rng: Rng,
    remaining: u64,
    looping: bool,
}

impl Uniform {
    pub fn new(blocks: u64, count: u64, looping: bool, seed: u64) -> Self {
        Uniform {
            blocks,
            rng: Rng::new(seed),
            remaining: count,
            looping,
        }
    }
}

impl OffsetGen for Uniform {
    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.blocks == 0 || (!self.looping && self.remaining == 0) {
            return None;
        }
        self.remaining = self.remaining.saturating_sub(1);
        Some(self.rng.below(self.blocks))
    }
}

/// A fresh permutation of all blocks each pass.
pub struct FullCoverage {
    perm: Permutation,
    seed: u64,
    pass: u64,
    index: u64,
    remaining: u64,
    looping: bool,
}

impl FullCoverage {
    pub fn new(blocks: u64, count: u64, looping: bool, seed: u64) -> Self {
        FullCoverage {
            perm: Permutation::new(blocks, seed),
            seed,
            pass: 0,
            index: 0,
            remaining: count,
            looping,
        }
    }
}

impl OffsetGen for FullCoverage {
    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.perm.is_empty() || (!self.looping && self.remaining == 0) {
            return None;
        }
        self.remaining = self.remaining.saturating_sub(1);
        if self.index == self.perm.len() {
            self.pass += 1;
            self.index = 0;
            self.perm = Permutation::new(self.perm.len(), mix(&[self.seed, self.pass]));
        }
        let b = self.perm.get(self.index);
        self.index += 1;
        Some(b)
    }
}

/// Builds the generator for a worker: `blocks` in its share, `count` I/Os to do when
/// size-based (ignored when `looping`).
pub fn generator(
    random: Option<RandomKind>,
    blocks: u64,
    count: u64,
    looping: bool,
    seed: u64,
) -> Box<dyn OffsetGen> {
    match random {
        None => Box::new(Sequential::new(blocks, count, looping)),
        Some(RandomKind::Uniform) => Box::new(Uniform::new(blocks, count, looping, seed)),
        Some(RandomKind::FullCoverage) => Box::new(FullCoverage::new(blocks, count, looping, seed)),
    }
}

/// Several files' generators taking turns, one block each (fio's round-robin file
/// service): yields `block * files + file`, which the worker splits again.
pub struct RoundRobin {
    gens: Vec<Box<dyn OffsetGen>>,
    turn: usize,
}

impl OffsetGen for RoundRobin {
    #[inline]
    fn next(&mut self) -> Option<u64> {
        let n = self.gens.len();
        for _ in 0..n {
            let f = self.turn;
            self.turn = if f + 1 == n { 0 } else { f + 1 };
            if let Some(b) = self.gens[f].next() {
                return Some(b * n as u64 + f as u64);
            }
        }
        None
    }
}

/// The generator for a worker whose `blocks` are spread over `files` files of equal
/// size, which take turns; each file has its own order (and random map), and `count`
/// is split evenly between them. One file: [`generator`].
pub fn generator_over_files(
    random: Option<RandomKind>,
    blocks: u64,
    files: u32,
    count: u64,
    looping: bool,
    seed: u64,
) -> Box<dyn OffsetGen> {
    let n = u64::from(files.max(1));
    if n == 1 {
        return generator(random, blocks, count, looping, seed);
    }
    let per_file = blocks / n;
    Box::new(RoundRobin {
        gens: (0..n)
            .map(|f| {
                let c = count / n + u64::from(f < count % n);
                generator(random, per_file, c, looping, mix(&[seed, f]))
            })
            .collect(),
        turn: 0,
    })
}

/// Read or write, in the spec's proportion.
pub struct OpMix {
    read_percent: u8,
    rng: Rng,
    /// Trims: only trims, or (trimwrite) a trim, then a write of the same block.
    trims: Option<TrimMix>,
}

#[derive(Clone, Copy)]
enum TrimMix {
    Only,
    /// The next draw is a trim (else the write of the block just trimmed).
    ThenWrite {
        trim_next: bool,
    },
}

impl OpMix {
    pub fn new(read_percent: u8, seed: u64) -> Self {
        OpMix {
            read_percent,
            rng: Rng::new(mix(&[seed, 0x0B_5EED])),
            trims: None,
        }
    }

    /// The mix of a workload: reads and writes by its read share, or its trims.
    pub fn of(rw: RwKind, read_percent: u8, seed: u64) -> Self {
        let mut m = OpMix::new(read_percent, seed);
        m.trims = match rw {
            RwKind::Trim | RwKind::Randtrim => Some(TrimMix::Only),
            RwKind::Trimwrite => Some(TrimMix::ThenWrite { trim_next: true }),
            _ => None,
        };
        m
    }

    #[inline]
    pub fn draw(&mut self) -> IoDir {
        if let Some(t) = &mut self.trims {
            return match t {
                TrimMix::Only => IoDir::Trim,
                TrimMix::ThenWrite { trim_next } => {
                    *trim_next = !*trim_next;
                    if *trim_next {
                        IoDir::Write
                    } else {
                        IoDir::Trim
                    }
                }
            };
        }
        match self.read_percent {
            100 => IoDir::Read,
            0 => IoDir::Write,
            p => {
                if self.rng.percent(p) {
                    IoDir::Read
                } else {
                    IoDir::Write
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{prop_assert, prop_assert_eq, proptest};

    fn drain(g: &mut dyn OffsetGen, limit: usize) -> Vec<u64> {
        let mut v = Vec::new();
        while let Some(b) = g.next() {
            v.push(b);
            if v.len() >= limit {
                break;
            }
        }
        v
    }

    #[test]
    fn sequential_walks_and_wraps() {
        assert_eq!(drain(&mut Sequential::new(3, 3, false), 10), vec![0, 1, 2]);
        assert_eq!(
            drain(&mut Sequential::new(3, 0, true), 7),
            vec![0, 1, 2, 0, 1, 2, 0]
        );
        assert_eq!(
            drain(&mut Sequential::new(0, 5, true), 7),
            Vec::<u64>::new()
        );
    }

    #[test]
    fn uniform_is_reproducible_and_bounded() {
        let a = drain(&mut Uniform::new(100, 50, false, 1), 100);
        let b = drain(&mut Uniform::new(100, 50, false, 1), 100);
        let c = drain(&mut Uniform::new(100, 50, false, 2), 100);
        assert_eq!(a.len(), 50);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().all(|&x| x < 100));
    }

    #[test]
    fn full_coverage_loops_with_a_new_order() {
        let v = drain(&mut FullCoverage::new(50, 0, true, 3), 100);
        let (first, second) = v.split_at(50);
        let mut s1 = first.to_vec();
        let mut s2 = second.to_vec();
        s1.sort();
        s2.sort();
        assert_eq!(s1, (0..50).collect::<Vec<_>>());
        assert_eq!(s2, (0..50).collect::<Vec<_>>());
        assert_ne!(first, second);
    }

    #[test]
    fn trim_mixes_trim_or_pair_a_trim_with_a_write() {
        let mut t = OpMix::of(RwKind::Randtrim, 0, 1);
        assert!((0..10).all(|_| t.draw() == IoDir::Trim));
        let mut tw = OpMix::of(RwKind::Trimwrite, 0, 1);
        let v: Vec<IoDir> = (0..4).map(|_| tw.draw()).collect();
        assert_eq!(v, [IoDir::Trim, IoDir::Write, IoDir::Trim, IoDir::Write]);
    }

    #[test]
    fn op_mix_follows_the_percentage() {
        let mut m = OpMix::new(70, 9);
        let reads = (0..10_000).filter(|_| m.draw() == IoDir::Read).count();
        assert!((6800..7200).contains(&reads), "{reads}");
        let mut all = OpMix::new(100, 9);
        assert!((0..100).all(|_| all.draw() == IoDir::Read));
    }

    #[test]
    fn files_take_turns_and_each_is_covered() {
        // 3 files of 4 blocks, sequential: file 0 block 0, file 1 block 0, ...
        let v = drain(&mut *generator_over_files(None, 12, 3, 12, false, 1), 100);
        let split: Vec<(u64, u64)> = v.iter().map(|b| (b % 3, b / 3)).collect();
        assert_eq!(&split[..4], [(0, 0), (1, 0), (2, 0), (0, 1)]);
        assert_eq!(v, (0..12).collect::<Vec<_>>());
        // Random: still in turns, every block of every file once.
        let v = drain(
            &mut *generator_over_files(Some(RandomKind::FullCoverage), 12, 3, 12, false, 1),
            100,
        );
        assert!(v.iter().enumerate().all(|(i, b)| b % 3 == i as u64 % 3));
        let mut sorted = v.clone();
        sorted.sort();
        assert_eq!(sorted, (0..12).collect::<Vec<_>>());
        // Two loops over the files: twice each block.
        assert_eq!(
            drain(&mut *generator_over_files(None, 6, 2, 12, false, 1), 100).len(),
            12
        );
    }

    proptest! {
        #[test]
        fn random_full_coverage_hits_every_block_once(blocks in 1u64..3000, seed: u64) {
            let v = drain(&mut FullCoverage::new(blocks, blocks, false, seed), usize::MAX);
            prop_assert_eq!(v.len() as u64, blocks);
            let mut seen = vec![false; blocks as usize];
            for b in v {
                prop_assert!(!seen[b as usize]);
                seen[b as usize] = true;
            }
        }

        #[test]
        fn size_based_generators_stop_after_their_count(blocks in 1u64..500, count in 0u64..1000, seed: u64) {
            prop_assert_eq!(drain(&mut Sequential::new(blocks, count, false), usize::MAX).len() as u64, count);
            prop_assert_eq!(drain(&mut Uniform::new(blocks, count, false, seed), usize::MAX).len() as u64, count);
            prop_assert_eq!(drain(&mut FullCoverage::new(blocks, count, false, seed), usize::MAX).len() as u64, count);
        }
    }
}
