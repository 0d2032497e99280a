//! [`LatencyCounts`]: the recording half of a [`LatencyHistogram`], for a loop that records
//! millions of latencies a second. The same buckets as the HdrHistogram of
//! [`LatencyHistogram::new`] (1 ns unit, 3 significant digits: 2048 sub-buckets, every
//! power of two above 2048 ns split in 1024), kept in one flat array that grows to the
//! largest latency seen, so recording is an index computation and an increment (the
//! hdrhistogram crate's record also keeps min, max and a total, and checks for a resize on
//! every value). [`LatencyCounts::histogram`] turns it into the very histogram those
//! latencies would have made.
//!
//! The array the loop increments holds one byte per bucket (the count modulo 256); a
//! second array holds how many times each bucket's byte wrapped, touched once per 256
//! latencies of that bucket. Every read adds the two: the counts are exact. The bytes
//! are what keeps recording cheap: latencies of a queue spread over thousands of
//! buckets, and between two visits of one bucket an I/O loop streams megabytes through
//! the CPU's caches (4 KiB read into a buffer per I/O), so an array of 8-byte counts
//! (some 48 KB for latencies from 1 to 64 µs) was mostly out of cache at each increment:
//! a cache miss per I/O, a quarter of the io_uring loop's user time in a profile.

use crate::histogram::LatencyHistogram;
use crate::live_latency;

/// log2 of the sub-buckets per bucket half (3 significant digits: 2048 sub-buckets).
const HALF_MAGNITUDE: u32 = 10;
const HALF: u64 = 1 << HALF_MAGNITUDE;
/// 64 minus log2 of the sub-bucket count (HdrHistogram's leading_zero_count_base).
const LEADING_ZERO_BASE: u32 = 53;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyCounts {
    /// Each bucket's count modulo 256.
    low: Vec<u8>,
    /// Each bucket's count divided by 256 (as long as `low`).
    high: Vec<u64>,
    total: u64,
}

/// From this index on (the values from 1024 ns, where the histogram's index is the
/// value's octave and its 10 bits after the leading one), live bucket = index / 256 +
/// LIVE_OFFSET: for octave o >= 10 the index is (o - 10) x 1024 + the value's top 11
/// bits, the live bucket 4 x o + its 2 bits after the leading one.
const LIVE_FROM: usize = 1024;
const LIVE_OFFSET: usize = 36;

/// HdrHistogram's index of `value` (at least 1).
#[inline]
fn index_of(value: u64) -> usize {
    let bucket = LEADING_ZERO_BASE - (value | (2 * HALF - 1)).leading_zeros();
    let sub = value >> bucket;
    ((u64::from(bucket) + 1) << HALF_MAGNITUDE) as usize + sub as usize - HALF as usize
}

/// The lowest value of bucket `index` (HdrHistogram's value_for).
fn value_at(index: usize) -> u64 {
    let bucket = (index >> HALF_MAGNITUDE) as i64 - 1;
    let sub = (index as u64 & (HALF - 1)) + HALF;
    if bucket < 0 {
        sub - HALF
    } else {
        sub << bucket
    }
}

impl LatencyCounts {
    pub fn new() -> Self {
        LatencyCounts::default()
    }

    /// Records one latency in nanoseconds; zero counts as 1 ns (the clock's resolution),
    /// as [`LatencyHistogram::record`] does.
    #[inline]
    pub fn record(&mut self, latency_ns: u64) {
        self.bump(index_of(latency_ns.max(1)));
    }

    /// Counts one latency in bucket `i`.
    #[inline(always)]
    fn bump(&mut self, i: usize) {
        match self.low.get_mut(i) {
            Some(c) => {
                *c = c.wrapping_add(1);
                if *c == 0 {
                    self.wrapped(i);
                }
            }
            None => self.grow_and_record(i),
        }
        self.total += 1;
    }

    /// Bucket `i`'s byte wrapped to 0: 256 more in its high count.
    #[cold]
    fn wrapped(&mut self, i: usize) {
        self.high[i] += 1;
    }

    /// Bucket `i`'s count.
    fn count_at(&self, i: usize) -> u64 {
        (self.high[i] << 8) | u64::from(self.low[i])
    }

    /// Records one latency, as [`LatencyCounts::record`], and returns its live bucket
    /// ([`live_latency::bucket`]) taken from the histogram's index: from 1024 ns on, a
    /// live bucket (a quarter of an octave) is 256 consecutive indexes, so a shift of
    /// the index finds it (half the instructions of working it out from the latency).
    #[inline]
    pub fn record_live(&mut self, latency_ns: u64) -> usize {
        let v = latency_ns.max(1);
        let i = index_of(v);
        self.bump(i);
        if i >= LIVE_FROM {
            ((i >> 8) + LIVE_OFFSET).min(live_latency::BUCKETS - 1)
        } else {
            live_latency::bucket(v)
        }
    }

    /// Covers index `i` (and the rest of its bucket) and records one value there.
    #[cold]
    fn grow_and_record(&mut self, i: usize) {
        let len = (i + 1).next_multiple_of(HALF as usize);
        self.low.resize(len, 0);
        self.high.resize(len, 0);
        self.low[i] = 1;
    }

    /// Latencies recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// Forgets every latency (keeping the memory).
    pub fn clear(&mut self) {
        self.low.fill(0);
        self.high.fill(0);
        self.total = 0;
    }

    /// The histogram of the recorded latencies: each bucket's count recorded at the
    /// bucket's lowest value, which lands in the same bucket of the same histogram.
    pub fn histogram(&self) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for i in 0..self.low.len() {
            let n = self.count_at(i);
            if n > 0 {
                h.record_n(value_at(i), n);
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The same latencies recorded both ways give the same histogram: counts, every
    /// figure a report prints, and the stored bytes.
    fn same_as_hdr(values: &[u64]) {
        let mut counts = LatencyCounts::new();
        let mut direct = LatencyHistogram::new();
        for &v in values {
            counts.record(v);
            direct.record(v);
        }
        let made = counts.histogram();
        assert_eq!(counts.count(), values.len() as u64);
        assert_eq!(made.count(), direct.count());
        assert_eq!(made.summary(), direct.summary());
        assert_eq!(made.stdev(), direct.stdev());
        assert_eq!(made.buckets(), direct.buckets());
        assert_eq!(made.to_bytes().unwrap(), direct.to_bytes().unwrap());
    }

    #[test]
    fn buckets_match_hdrhistogram_everywhere() {
        // Every value up to 2^14, around every power of two, zero, and the far end.
        let mut values: Vec<u64> = (0..1 << 14).collect();
        for p in 10..64 {
            let b = 1u64 << p;
            values.extend([b - 1, b, b + 1, b + b / 3]);
        }
        values.push(u64::MAX / 4);
        same_as_hdr(&values);
    }

    #[test]
    fn random_latencies_give_the_same_histogram() {
        let mut rng = Rng::new(7);
        for scale in [1_000u64, 100_000, 10_000_000, 5_000_000_000] {
            let values: Vec<u64> = (0..20_000).map(|_| rng.below(scale)).collect();
            same_as_hdr(&values);
        }
    }

    #[test]
    fn the_live_bucket_from_the_index_is_the_live_bucket() {
        let mut values: Vec<u64> = (0..1 << 16).collect();
        for p in 10..64 {
            let b = 1u64 << p;
            values.extend([
                b - 1,
                b,
                b + 1,
                b + b / 4 - 1,
                b + b / 4,
                b + b / 2,
                b + b / 3,
            ]);
        }
        values.push(u64::MAX / 4);
        let mut rng = Rng::new(3);
        values.extend((0..100_000).map(|_| rng.below(1 << 40)));
        let mut c = LatencyCounts::new();
        for v in values {
            assert_eq!(c.record_live(v), live_latency::bucket(v), "{v} ns");
        }
    }

    #[test]
    fn every_index_maps_back_to_itself() {
        for i in 0..(55 << HALF_MAGNITUDE) {
            let v = value_at(i);
            if v == 0 {
                continue;
            }
            assert_eq!(index_of(v), i, "value {v}");
        }
    }

    #[test]
    fn counts_past_a_byte_stay_exact() {
        // One bucket wrapping its byte several times, its neighbour once to the edge, and
        // a bucket grown after the wraps.
        let mut values = vec![1500u64; 256 * 3 + 7];
        values.extend(vec![1501u64; 255]);
        values.extend(vec![40_000u64; 256]);
        values.extend(vec![1500u64; 256]);
        same_as_hdr(&values);
        let mut c = LatencyCounts::new();
        for &v in &values {
            c.record(v);
        }
        let counts: Vec<u64> = c.histogram().buckets().iter().map(|&(_, n)| n).collect();
        assert_eq!(counts, [256 * 4 + 7, 255, 256]);
    }

    #[test]
    fn clear_forgets_everything() {
        let mut c = LatencyCounts::new();
        c.record(5);
        c.record(1 << 40);
        c.clear();
        assert_eq!(c.count(), 0);
        assert!(c.histogram().is_empty());
    }
}
