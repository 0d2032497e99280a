//! Data reduction: `Reduction` makes each write's data (iolab's unique data from the
//! worker's [`DataBase`], laid out for a compress ratio, with copies of earlier units for
//! a dedupe ratio, or fio's working-set pages, or a fixed pattern); `DataSampler`
//! measures what the written data really has into a mergeable [`DataSample`].

use iolab_core::data_gen::{Compressible, DataBase, fill_unique, first_id, units_of};
use iolab_core::rng::{Rng, mix};
use iolab_core::spec::{DataPattern, DataSpec};

pub use crate::recorder::{DataSample, DataSampler};

/// Units a worker writes new before its first copy: copies drawn from few sources would
/// put the same two side by side again, a repeat at a shifted alignment.
const MIN_SOURCES: u64 = 128;

/// What a write carries, decided once per worker.
pub(super) struct Reduction {
    /// Writes hold fixed content, this pattern repeated from their first byte (zeros,
    /// or fio's buffer_pattern).
    pub fixed: Option<Vec<u8>>,
    /// The random data every unit of this worker is drawn from.
    base: DataBase,
    /// The id of the next unique 512-byte unit.
    next_id: u64,
    /// --compress-ratio's layout of a write (or of each dedupe unit).
    layout: Option<Compressible>,
    dedupe: Option<Dedupe>,
    /// fio's dedupe_mode=working_set: duplicates copy one of a set of earlier unique
    /// writes.
    set: Option<WorkingSet>,
    /// The run's seed, which the set's contents are drawn from.
    seed: u64,
}

/// --dedupe-ratio: every `unit` bytes of a write are a new unit or a copy of one of the
/// worker's earlier ones, so that units over distinct units is the ratio.
struct Dedupe {
    unit: usize,
    ratio: f64,
    /// Units written, and the distinct ones among them (unit j holds the ids from
    /// `first + j * unit / 512`).
    units: u64,
    distinct: u64,
    first: u64,
    rng: Rng,
    /// A write is a duplicate when a 32-bit draw is below this (fio's working set).
    dup_below: u64,
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
    /// A worker's data: its base drawn from `seed` (the worker's and its files', so no
    /// two workers or phases share one), its ids tagged with `tag` (the worker's global
    /// index).
    pub fn new(spec: &DataSpec, seed: u64, tag: u64) -> Reduction {
        let fixed = if spec.pattern == DataPattern::Zeros {
            Some(vec![0])
        } else {
            spec.buffer_pattern
                .as_deref()
                .and_then(|p| iolab_core::pattern::parse_buffer_pattern(p).ok())
        };
        let dedupe = spec.dedupe_ratio.map(|ratio| {
            let unit = spec.dedupe_unit().max(1) as usize;
            Dedupe {
                unit,
                ratio,
                units: 0,
                distinct: 0,
                first: first_id(tag),
                rng: Rng::new(mix(&[seed, 0xDEDE])),
                dup_below: ((1.0 - 1.0 / ratio) * (1u64 << 32) as f64).round() as u64,
            }
        });
        let layout = spec.compress_ratio.map(|r| {
            let chunk = spec.compress_chunk() as usize;
            let chunk = dedupe.as_ref().map_or(chunk, |d| chunk.min(d.unit));
            Compressible::new(chunk, r)
        });
        Reduction {
            fixed,
            base: DataBase::new(mix(&[seed, 0xDA7A_BA5E])),
            next_id: first_id(tag),
            layout,
            dedupe,
            set: None,
            seed: spec.seed,
        }
    }

    /// Duplicates copy earlier unique writes of a working set (fio's
    /// dedupe_mode=working_set) rather than earlier units.
    pub fn with_working_set(mut self, set: WorkingSet) -> Reduction {
        self.set = Some(set);
        self
    }

    /// Fills `buf` with the next unique data (iolab's default: nothing asked of it).
    #[inline(always)]
    pub fn fill_unique(&mut self, buf: &mut [u8]) {
        fill_unique(buf, &self.base, self.next_id);
        self.next_id += units_of(buf.len());
    }

    /// Fills `buf` with the next write's data as asked: unique, laid out for the compress
    /// ratio, with copies of earlier units for the dedupe ratio.
    pub fn fill_write(&mut self, buf: &mut [u8]) {
        // (Under a working set, its pages are the copies: the other writes are new.)
        let dedupe = self.dedupe.as_mut().filter(|_| self.set.is_none());
        let Some(d) = dedupe else {
            self.fill_unique(buf);
            if let Some(l) = &self.layout {
                l.apply(buf);
            }
            return;
        };
        let per_unit = units_of(d.unit);
        for u in buf.chunks_mut(d.unit) {
            // A new unit while the distinct ones are fewer than the units over the
            // ratio or than [`MIN_SOURCES`], else a copy of one drawn among the earlier
            // ones. (Two copies side by side repeat at a shifted alignment only where the
            // same two sources met before: rare among many sources.)
            d.units += 1;
            let j = if (d.distinct as f64) < d.units as f64 / d.ratio
                || d.distinct < MIN_SOURCES
                || u.len() < d.unit
            {
                d.distinct += 1;
                d.distinct - 1
            } else {
                d.rng.below(d.distinct)
            };
            fill_unique(u, &self.base, d.first + j * per_unit);
            if let Some(l) = &self.layout {
                l.apply(u);
            }
        }
    }

    /// With a working set: the contents the next write carries, as the key of
    /// [`Reduction::fill_page`] (a page of the set: a duplicate, or one of the first
    /// unique writes that make the set), or None for a unique write after those.
    #[inline]
    pub fn page_of_next_write(&mut self) -> Option<u64> {
        let set = self.set.as_mut()?;
        let d = self.dedupe.as_mut()?;
        if (d.rng.next_u64() >> 32) < d.dup_below {
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

    /// Fills `buf` with the page `key` names (random data of that key, the same in every
    /// worker, laid out for the compress ratio as asked).
    pub fn fill_page(&self, buf: &mut [u8], key: u64) {
        Rng::new(key).fill(buf);
        if let Some(l) = &self.layout {
            l.apply(buf);
        }
    }

    /// Fills one slot before the run with the fixed pattern, if one.
    pub fn prepare_slot(&self, slot: &mut [u8]) {
        self.fill_fixed(slot);
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

    /// Whether every write is iolab's unique data and nothing else (no fixed pattern, no
    /// layout, no copies, no working set): [`Reduction::fill_unique`] is then all a write
    /// needs.
    pub fn all_unique(&self) -> bool {
        self.fixed.is_none() && self.layout.is_none() && self.dedupe.is_none() && self.set.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn spec(compress: Option<f64>, dedupe: Option<f64>, block: u64) -> DataSpec {
        DataSpec {
            rw: iolab_core::spec::RwKind::Write,
            block_size: iolab_core::units::ByteCount::kib(block),
            compress_ratio: compress,
            dedupe_ratio: dedupe,
            ..DataSpec::default()
        }
    }

    /// `writes` writes as the loop makes them, one after the other, and their sample.
    fn written(s: &DataSpec, writes: usize, worker: u64) -> (Vec<u8>, DataSample) {
        let mut red = Reduction::new(s, mix(&[worker, 3]), worker);
        let mut sampler = DataSampler::of(s).unwrap();
        let len = s.largest_io() as usize;
        let mut out = vec![0u8; writes * len];
        for w in out.chunks_mut(len) {
            red.fill_write(w);
            if sampler.due() {
                sampler.take(w);
            }
        }
        (out, sampler.sample)
    }

    /// `unit`-byte pieces from `shift` on over the distinct ones among them.
    fn over_distinct(data: &[u8], unit: usize, shift: usize) -> f64 {
        let units: Vec<&[u8]> = data[shift..].chunks_exact(unit).collect();
        let set: HashSet<&[u8]> = units.iter().copied().collect();
        units.len() as f64 / set.len() as f64
    }

    #[test]
    fn asked_ratios_are_what_lz4_and_the_hashes_find() {
        for r in [1.0, 1.5, 2.0, 4.0] {
            let (_, m) = written(&spec(Some(r), None, 64), 64, 1);
            for got in [
                m.compress_ratio().unwrap(),
                m.stream_compress_ratio().unwrap(),
            ] {
                assert!((got - r).abs() / r < 0.05, "asked {r}, lz4 {got}");
            }
            assert_eq!(m.unit_repeat_ratio(), Some(1.0));
        }
        for r in [2.0, 4.0] {
            let (data, m) = written(&spec(None, Some(r), 16), 1024, 1);
            let got = m.dedupe_ratio().unwrap();
            assert!((got - r).abs() / r < 0.05, "asked {r}, hashes {got}");
            // The whole: copies at the dedupe unit and in its 512-byte units, none at
            // another alignment.
            for unit in [512, 4096] {
                let got = over_distinct(&data, unit, 0);
                assert!((got - r).abs() / r < 0.02, "asked {r}, {unit}: {got}");
            }
            for shift in (512..4096).step_by(512) {
                let got = over_distinct(&data, 4096, shift);
                assert!(got < 1.02, "asked {r}, 4 KiB at {shift}: {got}");
            }
        }
    }

    #[test]
    fn both_ratios_compose() {
        let (data, m) = written(&spec(Some(2.0), Some(2.0), 16), 1024, 1);
        let dedupe = over_distinct(&data, 4096, 0);
        assert!((dedupe - 2.0).abs() < 0.04, "{dedupe}");
        let lz4 = m.compress_ratio().unwrap();
        assert!((lz4 - 2.0).abs() < 0.1, "{lz4}");
    }

    #[test]
    fn workers_share_no_unit() {
        let s = spec(None, Some(2.0), 4);
        let (mut a, mut sa) = written(&s, 2000, 1);
        let (b, sb) = written(&s, 2000, 2);
        a.extend_from_slice(&b);
        let got = over_distinct(&a, 4096, 0);
        assert!((got - 2.0).abs() < 0.01, "{got}");
        sa.merge(&sb);
        assert_eq!(sa.asked_dedupe, Some(2.0));
        let got = sa.dedupe_ratio().unwrap();
        assert!((got - 2.0).abs() < 0.1, "{got}");
    }

    #[test]
    fn default_data_repeats_nothing() {
        let s = spec(None, None, 4);
        let mut red = Reduction::new(&s, 1, 7);
        assert!(red.all_unique());
        let mut data = vec![0u8; 4 << 20];
        for w in data.chunks_mut(4096) {
            red.fill_unique(w);
        }
        assert_eq!(over_distinct(&data, 512, 0), 1.0);
        let stored = lz4_flex::block::compress(&data).len();
        assert!(stored >= data.len(), "{stored}");
    }

    #[test]
    fn under_a_working_set_the_other_writes_are_new() {
        let s = spec(None, Some(2.0), 4);
        let mut red = Reduction::new(&s, 1, 7).with_working_set(WorkingSet::new(8, false, 0, 1, 3));
        let mut data = vec![0u8; 2 << 20];
        let mut pages = 0;
        for w in data.chunks_mut(4096) {
            match red.page_of_next_write() {
                Some(key) => {
                    red.fill_page(w, key);
                    pages += 1;
                }
                None => red.fill_write(w),
            }
        }
        // About half the writes copy one of the set's 8 pages; the rest are all new.
        let got = over_distinct(&data, 4096, 0);
        let want = 512.0 / (512 - pages + 8) as f64;
        assert!((got - want).abs() < 0.02, "{got} {want} ({pages} pages)");
        assert!((200..320).contains(&pages), "{pages}");
    }
}
