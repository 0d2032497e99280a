//! iolab's written data, as pure functions of a [`DataBase`] and 64-bit unit ids: every
//! 512-byte unit `id` is a 512-byte block of the base (chosen by the id) XOR a 64-bit key
//! (a bijective mix of the id) repeated over it, so no two ids give the same unit and no
//! byte string repeats for a compressor to find, at any distance ([`fill_unique`]).
//! [`Compressible`] lays each chunk out as such data then zeros with the unit's first word
//! kept at every 512-byte boundary inside the zeros (docs/flash.md).

use crate::rng::Rng;

/// The unit every id names: 512 bytes, the smallest block storage addresses.
pub const UNIT: usize = 512;
const UNIT_WORDS: usize = UNIT / 8;
/// Bytes of random data a worker's units are drawn from: 64 KiB, 128 unit positions, so it
/// stays in the core's cache beside the I/O buffers. Uniqueness comes from the keys, not
/// from the base's size: two units over the same base block differ in every 8-byte word by
/// the XOR of two distinct keys, which leaves no common byte run a compressor can match.
pub const BASE_BYTES: usize = 64 << 10;
const BASE_UNITS: u64 = (BASE_BYTES / UNIT) as u64;
/// Bits of an id below the worker's tag: 2^40 units (512 TiB) per worker and phase.
pub const ID_BITS: u32 = 40;

/// A worker's random base, filled once from a seed.
#[derive(Clone, Debug)]
pub struct DataBase {
    words: Box<[u64]>,
}

impl DataBase {
    pub fn new(seed: u64) -> DataBase {
        let mut rng = Rng::new(seed);
        DataBase {
            words: (0..BASE_BYTES / 8).map(|_| rng.next_u64()).collect(),
        }
    }

    /// The base block unit `id` is drawn from.
    #[inline(always)]
    fn block(&self, id: u64) -> &[u64; UNIT_WORDS] {
        let at = (id % BASE_UNITS) as usize * UNIT_WORDS;
        self.words[at..at + UNIT_WORDS]
            .try_into()
            .expect("a base block is one unit")
    }
}

/// The first id of worker `tag`'s units (each worker's ids are its own).
pub fn first_id(tag: u64) -> u64 {
    tag << ID_BITS
}

/// The key unit `id` is XORed with: MurmurHash3's 64-bit finalizer of the id, a bijection
/// (distinct ids, distinct keys).
#[inline(always)]
pub fn key(id: u64) -> u64 {
    let mut x = id ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Fills `dst` with units `first`, `first + 1`, ... (512 bytes each, the last one cut
/// where `dst` ends): unit `id` is its base block XOR `key(id)` in every 8-byte word,
/// little-endian. One streaming pass; `dst` of n bytes takes ceil(n / 512) ids.
#[inline]
pub fn fill_unique(dst: &mut [u8], base: &DataBase, first: u64) {
    let mut id = first;
    let mut units = dst.chunks_exact_mut(UNIT);
    for unit in &mut units {
        let k = key(id);
        for (w, b) in unit.chunks_exact_mut(8).zip(base.block(id)) {
            w.copy_from_slice(&(b ^ k).to_le_bytes());
        }
        id = id.wrapping_add(1);
    }
    let rest = units.into_remainder();
    if !rest.is_empty() {
        let k = key(id);
        for (w, b) in rest.chunks_mut(8).zip(base.block(id)) {
            w.copy_from_slice(&(b ^ k).to_le_bytes()[..w.len()]);
        }
    }
}

/// Units `dst` of `len` bytes takes ids for.
#[inline]
pub fn units_of(len: usize) -> u64 {
    len.div_ceil(UNIT) as u64
}

/// Bytes a compressor spends on each 512-byte boundary inside the zeros: the kept 8-byte
/// word (a literal) and the match that ends one run of zeros and starts the next
/// (measured with lz4, zstd, gzip and xz; docs/flash.md).
const STAMP_COST: f64 = 8.0 + 7.5;
/// Bytes a compressor spends on a chunk's first run of zeros.
const RUN_COST: f64 = 6.0;
/// A unit keeps its random fill when at least this much of its start is random; else its
/// first word is kept in the zeros (so no unit of zeros repeats another).
const STAMP: usize = 8;
const MIN_RANDOM_START: usize = 16;

/// The layout `--compress-ratio` asks for: in every chunk, random data first, then zeros
/// with the first word of every unit that starts in them kept, so a chunk compresses to
/// its random part plus a few bytes per unit, sized so the whole is `1 / ratio`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compressible {
    pub chunk: usize,
    pub ratio: f64,
    /// Random bytes at the start of a whole chunk.
    pub random: usize,
}

impl Compressible {
    pub fn new(chunk: usize, ratio: f64) -> Compressible {
        let chunk = chunk.max(1);
        Compressible {
            chunk,
            ratio,
            random: random_part(chunk, ratio),
        }
    }

    /// Lays out `dst` (filled by [`fill_unique`], its first byte on a unit boundary):
    /// chunk by chunk from its start (one shorter chunk at the end, sized for its
    /// length), zeros after the random part but for the first word of every unit that
    /// starts in them.
    pub fn apply(&self, dst: &mut [u8]) {
        for (i, c) in dst.chunks_mut(self.chunk).enumerate() {
            let random = if c.len() == self.chunk {
                self.random
            } else {
                random_part(c.len(), self.ratio)
            };
            lay_chunk(c, i * self.chunk, random);
        }
    }
}

/// Zeros `c` (at `at` in its buffer, which starts on a unit boundary) after its first
/// `random` bytes, but for the first word of every unit that starts in the zeros or less
/// than 16 bytes before them: that word of the unit's fill stays, so no unit of zeros
/// repeats another.
#[inline]
fn lay_chunk(c: &mut [u8], at: usize, random: usize) {
    if random >= c.len() {
        return;
    }
    let end = at + c.len();
    let threshold = (at + random).saturating_sub(MIN_RANDOM_START - 1).max(at);
    let mut u = threshold.next_multiple_of(UNIT);
    let mut pos = random;
    while u < end {
        let from = u - at;
        if from > pos {
            c[pos..from].fill(0);
        }
        pos = pos.max((from + STAMP).min(c.len()));
        u += UNIT;
    }
    if pos < c.len() {
        c[pos..].fill(0);
    }
}

/// Random bytes at the start of a chunk of `chunk` bytes for `ratio`: the chunk's share
/// `chunk / ratio`, less what the kept words and runs of zeros cost a compressor.
fn random_part(chunk: usize, ratio: f64) -> usize {
    let target = chunk as f64 / ratio;
    let mut random = target.round() as usize;
    for _ in 0..4 {
        let stamps = stamps_after(chunk, random) as f64;
        let runs = if random < chunk { 1.0 } else { 0.0 };
        let r = (target - stamps * STAMP_COST - runs * RUN_COST).round();
        random = (r.max(0.0) as usize).min(chunk);
    }
    random
}

/// Units whose first word stays in the zeros of a chunk of `chunk` bytes (starting on a
/// unit boundary) with `random` random bytes first.
fn stamps_after(chunk: usize, random: usize) -> usize {
    if random >= chunk {
        return 0;
    }
    let first = random
        .saturating_sub(MIN_RANDOM_START - 1)
        .next_multiple_of(UNIT);
    if first >= chunk {
        0
    } else {
        (chunk - first).div_ceil(UNIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// `n` writes of `len` bytes of worker `tag`'s data, laid out for `ratio` if any.
    fn written(tag: u64, n: usize, len: usize, lay: Option<Compressible>) -> Vec<u8> {
        let base = DataBase::new(tag ^ 77);
        let mut id = first_id(tag);
        let mut out = vec![0u8; n * len];
        for w in out.chunks_mut(len) {
            fill_unique(w, &base, id);
            id += units_of(len);
            if let Some(l) = lay {
                l.apply(w);
            }
        }
        out
    }

    fn distinct_units(data: &[u8], unit: usize, shift: usize) -> (usize, usize) {
        let units: Vec<&[u8]> = data[shift..].chunks_exact(unit).collect();
        let set: HashSet<&[u8]> = units.iter().copied().collect();
        (units.len(), set.len())
    }

    fn lz4_ratio(data: &[u8], record: usize) -> f64 {
        let stored: usize = data
            .chunks(record)
            .map(|r| lz4_flex::block::compress(r).len())
            .sum();
        data.len() as f64 / stored as f64
    }

    #[test]
    fn no_unit_repeats_within_or_across_workers() {
        let mut data = written(1, 300, 4096, None);
        data.extend(written(2, 300, 4096, None));
        for unit in [512, 4096] {
            for shift in (0..unit).step_by(512) {
                let (n, d) = distinct_units(&data, unit, shift);
                assert_eq!(n, d, "unit {unit} at {shift}");
            }
        }
        // Ids name units: the same id gives the same unit, the next one another.
        let base = DataBase::new(5);
        let (mut a, mut b) = ([0u8; 1024], [0u8; 512]);
        fill_unique(&mut a, &base, 40);
        fill_unique(&mut b, &base, 41);
        assert_eq!(&a[512..], &b[..]);
        assert_ne!(&a[..512], &b[..]);
        // A cut unit is the start of the whole one.
        let mut c = [0u8; 300];
        fill_unique(&mut c, &base, 41);
        assert_eq!(&c[..], &b[..300]);
    }

    #[test]
    fn default_data_does_not_compress() {
        let data = written(3, 512, 4096, None);
        let got = lz4_ratio(&data, 64 << 10);
        assert!(got < 1.0 + 1e-9, "lz4 {got}");
    }

    #[test]
    fn compressible_data_holds_its_ratio_and_repeats_no_unit() {
        for (chunk, len) in [(4096, 4096), (512, 4096), (65536, 131072), (4096, 131072)] {
            for ratio in [1.5, 2.0, 4.0] {
                let lay = Compressible::new(chunk, ratio);
                let data = written(4, (2 << 20) / len, len, Some(lay));
                for record in [4096, 128 << 10] {
                    let got = lz4_ratio(&data, record);
                    assert!(
                        (got - ratio).abs() / ratio < 0.05,
                        "chunk {chunk}, ratio {ratio}, record {record}: lz4 {got}"
                    );
                }
                let (n, d) = distinct_units(&data, 512, 0);
                assert_eq!(n, d, "chunk {chunk}, ratio {ratio}");
            }
        }
    }

    #[test]
    fn a_chunk_keeps_the_first_word_of_every_unit_in_its_zeros() {
        let base = DataBase::new(9);
        let mut buf = vec![0u8; 4096];
        fill_unique(&mut buf, &base, 0);
        let fill = buf.clone();
        lay_chunk(&mut buf, 0, 1000);
        assert_eq!(&buf[..1000], &fill[..1000]);
        for u in (1024..4096).step_by(512) {
            assert_eq!(&buf[u..u + 8], &fill[u..u + 8], "unit at {u}");
            assert!(buf[u + 8..u + 512].iter().all(|b| *b == 0), "unit at {u}");
        }
        assert!(buf[1000..1024].iter().all(|b| *b == 0));
        // Random bytes ending just after a unit starts: that unit is stamped too.
        let mut b2 = fill.clone();
        lay_chunk(&mut b2, 0, 520);
        assert_eq!(&b2[..520], &fill[..520]);
        assert_eq!(stamps_after(4096, 520), 7);
        assert_eq!(stamps_after(4096, 1000), 6);
        assert_eq!(stamps_after(4096, 4096), 0);
    }
}
