//! Where the next I/O goes: [`OffsetGen`] yields an I/O's first unit within a worker's
//! share and its length, drawn by the direction's [`SizeDraw`] among the sizes that fit.
//! [`Sequential`], [`Uniform`], [`FullCoverage`] (a permutation: every block exactly once
//! per pass), [`CoverMap`] (every unit once per pass when sizes are drawn: fio's random
//! map) and [`Skewed`] (fio's random_distribution) implement it. Generators never end on
//! their own: a pass over the share starts again, and the worker's budget of units ends a
//! size-based run. [`OpMix`] decides read or write for mixed work.

use iolab_backend::IoDir;
use iolab_core::rng::{Permutation, Rng, mix};
use iolab_core::spec::{Distribution, RandomKind, RwKind};

use crate::sizes::SizeDraw;

mod cover;
mod files;
mod mixed;
mod modifier;
mod rwmix;
mod skew;

pub use cover::{CoverMap, map_bytes};
pub use files::{FileService, FileTurns};
pub use mixed::Mixed;
pub use modifier::{Runs, SeqModifier, Skipping, Strided, Zones};
pub use rwmix::{MixPasses, RwMix};
pub use skew::Skewed;

pub trait OffsetGen: Send {
    /// The next I/O: its first unit in the share and its length in units, drawn from
    /// `sizes`; None when not even the smallest size fits in the share.
    fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)>;
}

/// From the start of the share to its end, each I/O where the last one ended, then from
/// the start again.
pub struct Sequential {
    units: u64,
    cursor: u64,
}

impl Sequential {
    pub fn new(units: u64) -> Self {
        Sequential { units, cursor: 0 }
    }
}

impl OffsetGen for Sequential {
    #[inline]
    fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)> {
        let len = match sizes.draw(self.units - self.cursor) {
            Some(len) => len,
            None if self.cursor > 0 => {
                self.cursor = 0;
                sizes.new_pass();
                sizes.draw(self.units)?
            }
            None => return None,
        };
        let at = self.cursor;
        self.cursor += len;
        Some((at, len))
    }
}

/// Independent uniform draws over the places the smallest I/O fits.
pub struct Uniform {
    units: u64,
    /// Each direction's places, once known ([`UNKNOWN`] before: a share with that many
    /// places only asks again, with the same answer).
    positions: [u64; 2],
    rng: Rng,
}

/// A direction's places not yet asked for.
const UNKNOWN: u64 = u64::MAX;

impl Uniform {
    pub fn new(units: u64, seed: u64) -> Self {
        Uniform {
            units,
            positions: [UNKNOWN; 2],
            rng: Rng::new(seed),
        }
    }
}

impl OffsetGen for Uniform {
    #[inline(always)]
    fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)> {
        let d = sizes.dir() & 1;
        let mut positions = self.positions[d];
        if positions == UNKNOWN {
            positions = sizes.positions(self.units);
            self.positions[d] = positions;
        }
        if positions == 0 {
            return None;
        }
        let at = self.rng.below(positions) * sizes.step();
        Some((at, sizes.draw(self.units - at)?))
    }
}

/// A permutation of the share's blocks of one size, a fresh one each pass, or the same
/// one ([`FullCoverage::same_each_pass`]).
pub struct FullCoverage {
    perm: Permutation,
    seed: u64,
    pass: u64,
    index: u64,
    same: bool,
}

impl FullCoverage {
    /// Over `blocks` blocks (of the one size the draws give).
    pub fn new(blocks: u64, seed: u64) -> Self {
        FullCoverage {
            perm: Permutation::new(blocks, seed),
            seed,
            pass: 0,
            index: 0,
            same: false,
        }
    }

    /// Every pass in the first one's order (fio's randrepeat over loops).
    pub fn same_each_pass(self) -> Self {
        FullCoverage { same: true, ..self }
    }
}

impl OffsetGen for FullCoverage {
    #[inline]
    fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)> {
        if self.perm.is_empty() {
            return None;
        }
        if self.index == self.perm.len() {
            self.pass += 1;
            self.index = 0;
            if !self.same {
                self.perm = Permutation::new(self.perm.len(), mix(&[self.seed, self.pass]));
            }
        }
        let b = self.perm.get(self.index);
        self.index += 1;
        let len = sizes.smallest();
        Some((b * len, len))
    }
}

/// How a worker's offsets are chosen, decided once from the spec.
#[derive(Clone, Debug, PartialEq)]
pub enum Order {
    Sequential,
    Uniform,
    /// Every block once per pass, blocks of one size: a permutation.
    Permutation,
    /// [`Order::Permutation`] with every pass in the first one's order (fio's randrepeat,
    /// which reseeds at each loop of a size-based job).
    SamePermutation,
    /// Every unit once per pass with sizes drawn: a map of what is done (fio's).
    Cover,
    /// A skewed distribution, in a plan whose unit is `unit` bytes.
    Skewed {
        dist: Distribution,
        unit: u64,
    },
}

impl Order {
    /// The order of a spec's offsets.
    pub fn of(spec: &iolab_core::spec::DataSpec) -> Order {
        if !spec.rw.is_random() {
            return Order::Sequential;
        }
        if let Some(d) = &spec.distribution {
            return Order::Skewed {
                dist: d.clone(),
                unit: spec.unit(),
            };
        }
        match spec.random {
            RandomKind::Uniform => Order::Uniform,
            RandomKind::FullCoverage if spec.has_size_mix() => Order::Cover,
            RandomKind::FullCoverage => Order::Permutation,
        }
    }

    /// Whether reads and writes need generators of their own: a sequential mix (each
    /// direction goes on from its own last offset, as fio's do), or a coverage of blocks
    /// of the direction's smallest size when the two differ.
    pub fn per_direction(&self, sizes: &[SizeDraw; 2], mixed: bool) -> bool {
        match self {
            Order::Sequential => mixed,
            Order::Permutation | Order::SamePermutation | Order::Cover => {
                sizes[0].smallest() != sizes[1].smallest()
            }
            Order::Uniform | Order::Skewed { .. } => false,
        }
    }
}

/// The generator over one file's `units` for the direction(s) whose sizes are `sizes`
/// (`sizes[0]` is the one whose blocks a coverage counts).
pub fn generator(order: &Order, units: u64, sizes: &[&SizeDraw], seed: u64) -> Box<dyn OffsetGen> {
    match order {
        Order::Sequential => Box::new(Sequential::new(units)),
        Order::Uniform => Box::new(Uniform::new(units, seed)),
        Order::Permutation => {
            let len = sizes[0].smallest().max(1);
            Box::new(FullCoverage::new(units / len, seed))
        }
        Order::SamePermutation => {
            let len = sizes[0].smallest().max(1);
            Box::new(FullCoverage::new(units / len, seed).same_each_pass())
        }
        Order::Cover => Box::new(CoverMap::new(units, sizes[0].smallest(), seed)),
        Order::Skewed { dist, unit } => Box::new(Skewed::new(dist, units, sizes, *unit, seed)),
    }
}

/// Several files' generators taking turns, one I/O each (fio's round-robin file
/// service): yields `unit * files + file`, which the worker splits again.
pub struct RoundRobin {
    gens: Vec<Box<dyn OffsetGen>>,
    turn: usize,
}

impl OffsetGen for RoundRobin {
    #[inline]
    fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)> {
        let n = self.gens.len();
        for _ in 0..n {
            let f = self.turn;
            self.turn = if f + 1 == n { 0 } else { f + 1 };
            if let Some((at, len)) = self.gens[f].next(sizes) {
                return Some((at * n as u64 + f as u64, len));
            }
        }
        None
    }
}

/// The generator for a worker whose `units` are spread over `files` files of equal
/// size, which take turns; each file has its own order (and random map), with fio's
/// `rw=...:N` (`modifier`, its skip in units) applied to each, or fio's
/// `percentage_random` over them all ([`Mixed`]); a `file_service_type` other than
/// fio's default chooses the files ([`FileTurns`]). One file: [`generator`].
pub fn generator_over_files(
    order: &Order,
    units: u64,
    files: u32,
    sizes: &[&SizeDraw],
    seed: u64,
    modifier: SeqModifier,
) -> Box<dyn OffsetGen> {
    let n = u64::from(files.max(1));
    if let Some(share) = modifier.random_share {
        // fio's percentage_random: one choice sequence for all the files.
        let per_file = units / n;
        let gens = (0..n)
            .map(|f| {
                let seed = if n == 1 { seed } else { mix(&[seed, f]) };
                generator(order, per_file, sizes, seed)
            })
            .collect();
        return Box::new(Mixed::new(gens, per_file, share, modifier.run));
    }
    let one = |units: u64, seed: u64| -> Box<dyn OffsetGen> {
        if let Some(z) = modifier.zones {
            Box::new(Strided::new(units, z, order, sizes, seed))
        } else if modifier.is_plain() {
            generator(order, units, sizes, seed)
        } else if *order == Order::Sequential {
            Box::new(Skipping::new(units, modifier.skip))
        } else {
            Box::new(Runs::new(
                generator(order, units, sizes, seed),
                units,
                modifier.run,
            ))
        }
    };
    if n == 1 {
        return one(units, seed);
    }
    let per_file = units / n;
    let service = modifier.files;
    if !service.is_default() {
        let gens = (0..n).map(|f| one(per_file, mix(&[seed, f]))).collect();
        // fio 3.33's io_u.c: a sequence ends at the file's end (get_next_seq_offset
        // wraps only a single file), a random map when full unless time-based
        // (get_next_rand_block resets it), a file without a map never.
        let ends = match order {
            Order::Uniform => false,
            Order::Sequential => true,
            _ => !service.time_based,
        };
        return Box::new(FileTurns::new(
            gens,
            per_file,
            FileService { ends, ..service },
        ));
    }
    Box::new(RoundRobin {
        gens: (0..n).map(|f| one(per_file, mix(&[seed, f]))).collect(),
        turn: 0,
    })
}

/// A worker's offsets: the plain uniform draw and the sequential walk over one file (the
/// common cases) called in line, every other generator through `dyn` (the same
/// generators, so the same sequence of offsets either way).
pub enum Offsets {
    Uniform(Uniform),
    Sequential(Sequential),
    Other(Box<dyn OffsetGen>),
}

impl Offsets {
    /// The next I/O, as [`OffsetGen::next`].
    #[inline(always)]
    pub fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)> {
        match self {
            Offsets::Uniform(g) => g.next(sizes),
            Offsets::Sequential(g) => g.next(sizes),
            Offsets::Other(g) => g.next(sizes),
        }
    }
}

/// A worker's generator, as [`generator_over_files`] builds it, with a plain uniform draw
/// or sequential walk over one file in line (see [`Offsets`]).
pub fn offsets_over_files(
    order: &Order,
    units: u64,
    files: u32,
    sizes: &[&SizeDraw],
    seed: u64,
    modifier: SeqModifier,
) -> Offsets {
    // generator_over_files gives these very generators (one file, no modifier).
    match order {
        _ if files > 1 || !modifier.is_plain() => {}
        Order::Uniform => return Offsets::Uniform(Uniform::new(units, seed)),
        Order::Sequential => return Offsets::Sequential(Sequential::new(units)),
        _ => {}
    }
    Offsets::Other(generator_over_files(
        order, units, files, sizes, seed, modifier,
    ))
}

/// Read or write, in the spec's proportion.
pub struct OpMix {
    read_percent: u8,
    rng: Rng,
    /// Trims, or fio's order of reads and writes; None: each I/O drawn on its own.
    rule: Option<MixRule>,
}

enum MixRule {
    /// Only trims.
    Trims,
    /// trimwrite: the next draw is a trim (else the write of the block just trimmed).
    TrimThenWrite { trim_next: bool },
    /// fio's read-or-write choice (`iolab fio`).
    Fio(Box<rwmix::FioRwMix>),
}

impl OpMix {
    pub fn new(read_percent: u8, seed: u64) -> Self {
        OpMix {
            read_percent,
            rng: Rng::new(mix(&[seed, 0x0B_5EED])),
            rule: None,
        }
    }

    /// The mix of a workload: reads and writes by its read share, or its trims.
    pub fn of(rw: RwKind, read_percent: u8, seed: u64) -> Self {
        let mut m = OpMix::new(read_percent, seed);
        m.rule = match rw {
            RwKind::Trim | RwKind::Randtrim => Some(MixRule::Trims),
            RwKind::Trimwrite | RwKind::Randtrimwrite => {
                Some(MixRule::TrimThenWrite { trim_next: true })
            }
            _ => None,
        };
        m
    }

    /// Reads and writes in fio 3.33's order (see [`RwMix`]), passes as `passes` says; a
    /// mix of only reads, only writes or trims is left as it is (fio's draws change
    /// nothing there).
    pub fn fio(mut self, mix: RwMix, passes: Option<MixPasses>) -> Self {
        if self.rule.is_none() && !self.only_reads() && !self.only_writes() {
            let fio = rwmix::FioRwMix::new(self.read_percent, mix, passes);
            self.rule = Some(MixRule::Fio(Box::new(fio)));
        }
        self
    }

    /// Whether every draw is a read (and draws take nothing from the random sequence).
    pub fn only_reads(&self) -> bool {
        !matches!(
            self.rule,
            Some(MixRule::Trims | MixRule::TrimThenWrite { .. })
        ) && self.read_percent == 100
    }

    /// Whether every draw is a write (and draws take nothing from the random sequence).
    pub fn only_writes(&self) -> bool {
        !matches!(
            self.rule,
            Some(MixRule::Trims | MixRule::TrimThenWrite { .. })
        ) && self.read_percent == 0
    }

    #[inline]
    pub fn draw(&mut self) -> IoDir {
        if let Some(r) = &mut self.rule {
            return match r {
                MixRule::Trims => IoDir::Trim,
                MixRule::TrimThenWrite { trim_next } => {
                    *trim_next = !*trim_next;
                    if *trim_next {
                        IoDir::Write
                    } else {
                        IoDir::Trim
                    }
                }
                MixRule::Fio(f) => f.draw(),
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
#[path = "offsets/tests.rs"]
mod tests;
