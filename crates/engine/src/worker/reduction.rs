//! Data reduction: `Reduction` decides, before the loop, what a write carries when a
//! compress or dedupe ratio is asked; `DataSampler` measures what the written data
//! really has (lz4 over a sample of the written blocks, a hash per dedupe unit) into a
//! mergeable [`DataSample`].

use iolab_core::pattern::{make_compressible, unit_hash};
use iolab_core::rng::{Rng, mix};
use iolab_core::spec::{DataPattern, DataSpec};
use serde::{Deserialize, Serialize};

/// Every one of the first writes is sampled, then one in [`SAMPLE_EVERY`].
const SAMPLE_ALL: u64 = 256;
const SAMPLE_EVERY: u64 = 16;
/// Dedupe units a worker hashes at most (128 KiB of hashes).
const MAX_UNITS: usize = 16 * 1024;
/// The dedupe unit: 4 KiB, the block most deduplicating storage works in (or a smaller
/// write whole).
const DEDUPE_UNIT: usize = 4096;

/// What a write carries, decided once per worker.
pub(super) struct Reduction {
    /// Writes hold fixed content, this pattern repeated from their first byte (zeros,
    /// or fio's buffer_pattern): no stamp, no window.
    pub fixed: Option<Vec<u8>>,
    /// Where in a slot the block every duplicate write copies starts (0: no dedupe).
    pub dedupe_at: usize,
    /// A write is a duplicate when a 32-bit draw is below this.
    dup_below: u64,
    rng: Rng,
    /// fio's dedupe_mode=working_set: duplicates copy one of a set of earlier unique
    /// writes instead of one shared block.
    set: Option<WorkingSet>,
    /// The run's seed, which the set's contents are drawn from.
    seed: u64,
}

/// A job's dedupe working set as asked (fio's dedupe_mode=working_set): `percent` of
/// each clone's share, shared among the phase's workers with `global`
/// (dedupe_global).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DedupeWorkingSet {
    pub percent: u8,
    pub global: bool,
}

/// fio's dedupe working set (dedupe.c): `pages` blocks, the first unique writes of
/// this worker, or (dedupe_global) `per_owner` of each worker's of the phase in turn,
/// starting with its own; a duplicate write copies one drawn uniformly.
pub struct WorkingSet {
    pub pages: u64,
    /// This worker, and the workers whose first writes make the set (global: all of the
    /// phase's on this rank; else 1).
    pub me: u64,
    pub owners: u64,
    pub per_owner: u64,
    /// Unique writes so far.
    unique: u64,
    rng: Rng,
}

impl WorkingSet {
    /// fio's sizes: `pages` = the worker's share times `percent` over the write size;
    /// with `global`, `per_owner` = pages / workers (at least 1).
    pub fn new(pages: u64, global: bool, me: u64, workers: u64, seed: u64) -> WorkingSet {
        let pages = pages.max(1);
        let (owners, per_owner) = if global {
            (workers.max(1), (pages / workers.max(1)).max(1))
        } else {
            (1, pages)
        };
        WorkingSet {
            pages,
            me,
            owners,
            per_owner,
            unique: 0,
            rng: Rng::new(mix(&[seed, me, 0x5E7])),
        }
    }
}

impl Reduction {
    /// The extra bytes a slot needs beyond the block and its write window: room for the
    /// shared duplicate block when a dedupe ratio is asked.
    pub fn extra_bytes(spec: &DataSpec, alignment: u64) -> u64 {
        if spec.dedupe_ratio.is_some() {
            spec.largest_io().next_multiple_of(alignment.max(1))
        } else {
            0
        }
    }

    pub fn new(spec: &DataSpec, window: u64, seed: u64) -> Reduction {
        let dup_share = spec.dedupe_ratio.map_or(0.0, |r| 1.0 - 1.0 / r);
        Reduction {
            fixed: if spec.pattern == DataPattern::Zeros {
                Some(vec![0])
            } else {
                spec.buffer_pattern
                    .as_deref()
                    .and_then(|p| iolab_core::pattern::parse_buffer_pattern(p).ok())
            },
            dedupe_at: if spec.dedupe_ratio.is_some() {
                (spec.largest_io() + window) as usize
            } else {
                0
            },
            dup_below: (dup_share * (1u64 << 32) as f64).round() as u64,
            rng: Rng::new(mix(&[seed, 0xDEDE])),
            set: None,
            seed: spec.seed,
        }
    }

    /// Duplicates copy earlier unique writes of a working set (fio's
    /// dedupe_mode=working_set) rather than one shared block.
    pub fn with_working_set(mut self, set: WorkingSet) -> Reduction {
        self.dedupe_at = 0;
        self.set = Some(set);
        self
    }

    /// With a working set: the contents the next write carries, as the key of
    /// [`Reduction::fill_page`] (a page of the set: a duplicate, or one of the first
    /// unique writes that make the set), or None for a unique write after those.
    #[inline]
    pub fn page_of_next_write(&mut self) -> Option<u64> {
        let set = self.set.as_mut()?;
        if (self.rng.next_u64() >> 32) < self.dup_below {
            // fio: page i of the set is page i % per_owner of owner
            // (me + i / per_owner) % owners.
            let i = set.rng.below(set.pages);
            let (owner, page) = if set.owners > 1 {
                ((set.me + i / set.per_owner) % set.owners, i % set.per_owner)
            } else {
                (set.me, i)
            };
            return Some(mix(&[self.seed, 0x5E7_5E7, owner, page]));
        }
        let j = set.unique;
        set.unique += 1;
        let own = if set.owners > 1 {
            set.per_owner
        } else {
            set.pages
        };
        (j < own).then(|| mix(&[self.seed, 0x5E7_5E7, set.me, j]))
    }

    /// Fills `buf` with the page `key` names (random data, made compressible as asked).
    pub fn fill_page(spec: &DataSpec, buf: &mut [u8], key: u64) {
        Rng::new(key).fill(buf);
        if let Some(r) = spec.compress_ratio {
            make_compressible(buf, spec.compress_chunk() as usize, r);
        }
    }

    /// Fills one slot before the run: zeros, or the compressible random layout, and the
    /// shared duplicate block (the same in every slot of every worker: the seed is the
    /// run's, not the worker's).
    pub fn prepare_slot(&self, spec: &DataSpec, slot: &mut [u8]) {
        if self.fixed.is_some() {
            self.fill_fixed(slot);
            return;
        }
        if self.dedupe_at > 0 {
            let len = spec.largest_io() as usize;
            let copy = &mut slot[self.dedupe_at..self.dedupe_at + len];
            Rng::new(mix(&[spec.seed, 0xD0_0B1E])).fill(copy);
        }
        if let Some(r) = spec.compress_ratio {
            make_compressible(slot, spec.compress_chunk() as usize, r);
        }
    }

    /// Fills `buf` with the fixed content, repeated from its first byte.
    pub fn fill_fixed(&self, buf: &mut [u8]) {
        match self.fixed.as_deref() {
            Some([b]) => buf.fill(*b),
            Some(p) => buf
                .chunks_mut(p.len())
                .for_each(|c| c.copy_from_slice(&p[..c.len()])),
            None => {}
        }
    }

    /// Whether every write is unique data from its place in the window (no fixed pattern,
    /// no copies, no working set): [`Reduction::duplicate`] and
    /// [`Reduction::page_of_next_write`] then never say otherwise.
    pub fn all_unique(&self) -> bool {
        self.fixed.is_none() && self.dedupe_at == 0 && self.set.is_none()
    }

    /// Whether the next write is a copy of the shared block.
    #[inline]
    pub fn duplicate(&mut self) -> bool {
        self.dedupe_at > 0 && (self.rng.next_u64() >> 32) < self.dup_below
    }
}

/// The written data as sampled: bytes and their lz4-compressed size, and one hash per
/// dedupe unit. Merged over workers and ranks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DataSample {
    /// The ratios asked for (the spec's), carried to the phase's figures.
    pub asked_compress: Option<f64>,
    pub asked_dedupe: Option<f64>,
    pub writes: u64,
    pub bytes: u64,
    pub compressed: u64,
    pub hashes: Vec<u64>,
}

impl DataSample {
    pub fn merge(&mut self, other: &DataSample) {
        self.asked_compress = self.asked_compress.or(other.asked_compress);
        self.asked_dedupe = self.asked_dedupe.or(other.asked_dedupe);
        self.writes += other.writes;
        self.bytes += other.bytes;
        self.compressed += other.compressed;
        self.hashes.extend_from_slice(&other.hashes);
    }

    /// Sampled bytes over their lz4-compressed size.
    pub fn compress_ratio(&self) -> Option<f64> {
        (self.compressed > 0).then(|| self.bytes as f64 / self.compressed as f64)
    }

    /// Sampled dedupe units over the distinct ones among them.
    pub fn dedupe_ratio(&self) -> Option<f64> {
        let mut distinct = self.hashes.clone();
        distinct.sort_unstable();
        distinct.dedup();
        (!distinct.is_empty()).then(|| self.hashes.len() as f64 / distinct.len() as f64)
    }
}

/// Samples the first [`SAMPLE_ALL`] writes, then one in [`SAMPLE_EVERY`], as they are
/// handed to storage, up to [`MAX_UNITS`] dedupe units.
pub(super) struct DataSampler {
    seen: u64,
    out: Vec<u8>,
    pub sample: DataSample,
}

impl DataSampler {
    /// A sampler when the spec asks for a ratio (the figures are then reported beside
    /// it), else none.
    pub fn of(spec: &DataSpec) -> Option<DataSampler> {
        if spec.compress_ratio.is_none() && spec.dedupe_ratio.is_none() {
            return None;
        }
        let largest = spec.largest_io() as usize;
        Some(DataSampler {
            seen: 0,
            out: vec![0; lz4_flex::block::get_maximum_output_size(largest)],
            sample: DataSample {
                asked_compress: spec.compress_ratio,
                asked_dedupe: spec.dedupe_ratio,
                ..DataSample::default()
            },
        })
    }

    /// Counts a write; true when this one is to be sampled.
    #[inline]
    pub fn due(&mut self) -> bool {
        self.seen += 1;
        (self.seen <= SAMPLE_ALL || self.seen % SAMPLE_EVERY == 1)
            && self.sample.hashes.len() < MAX_UNITS
    }

    /// Measures one written block: its lz4 size as one block (as ZFS compresses a
    /// record) and a hash per dedupe unit.
    #[cold]
    pub fn take(&mut self, data: &[u8]) {
        let compressed = lz4_flex::block::compress_into(data, &mut self.out)
            .expect("the output buffer holds the largest block's worst case");
        self.sample.writes += 1;
        self.sample.bytes += data.len() as u64;
        self.sample.compressed += compressed as u64;
        let unit = DEDUPE_UNIT.min(data.len()).max(1);
        for u in data.chunks(unit) {
            self.sample.hashes.push(unit_hash(u));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(compress: Option<f64>, dedupe: Option<f64>) -> DataSpec {
        DataSpec {
            rw: iolab_core::spec::RwKind::Write,
            block_size: iolab_core::units::ByteCount::kib(if dedupe.is_some() { 4 } else { 64 }),
            compress_ratio: compress,
            dedupe_ratio: dedupe,
            ..DataSpec::default()
        }
    }

    /// Blocks built for a ratio once, written as the loop writes them (each unique
    /// write stamped with its number), sampled as the loop samples them.
    fn measured(s: &DataSpec, writes: u64, worker: u64) -> DataSample {
        let mut red = Reduction::new(s, 0, 7);
        let mut slot = vec![0u8; (s.largest_io() + Reduction::extra_bytes(s, 4096)) as usize];
        Rng::new(worker).fill(&mut slot);
        red.prepare_slot(s, &mut slot);
        let mut sampler = DataSampler::of(s).unwrap();
        let len = s.largest_io() as usize;
        for i in 0..writes {
            let at = if red.duplicate() {
                red.dedupe_at
            } else {
                slot[..8].copy_from_slice(&(worker << 40 | i).to_le_bytes());
                0
            };
            if sampler.due() {
                sampler.take(&slot[at..at + len]);
            }
        }
        sampler.sample
    }

    #[test]
    fn asked_ratios_are_what_lz4_and_the_hashes_find() {
        for r in [1.0, 2.0, 3.0, 5.0] {
            let m = measured(&spec(Some(r), None), 160, 1);
            let got = m.compress_ratio().unwrap();
            assert!((got - r).abs() / r < 0.05, "asked {r}, lz4 {got}");
        }
        for r in [1.0, 2.0, 4.0] {
            let m = measured(&spec(None, Some(r)), 200_000, 1);
            let got = m.dedupe_ratio().unwrap();
            assert!((got - r).abs() / r < 0.05, "asked {r}, hashes {got}");
        }
    }

    #[test]
    fn merged_samples_count_copies_across_workers() {
        let s = spec(None, Some(2.0));
        let mut a = measured(&s, 20_000, 1);
        let b = measured(&s, 20_000, 2);
        a.merge(&b);
        // Every worker copies the same block: their copies are one unit, not two.
        let got = a.dedupe_ratio().unwrap();
        assert!((got - 2.0).abs() < 0.1, "{got}");
        assert_eq!(a.asked_dedupe, Some(2.0));
    }
}
