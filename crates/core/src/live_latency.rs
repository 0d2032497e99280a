//! Coarse latency buckets for watching a run while it runs: four buckets per power of two
//! (each 19 % wide), from 1 ns to about 18 minutes, so that workers can count every
//! latency in a fixed array, ranks can sum the arrays by reduction, and the live views can
//! tell p50 and p99 of the last second within 19 %. The figures to quote stay the
//! HdrHistograms of the stored result (3 significant digits).

/// Buckets in the array.
pub const BUCKETS: usize = 160;

/// The bucket of a latency in nanoseconds.
#[inline]
pub fn bucket(ns: u64) -> usize {
    let ns = ns.max(1);
    let lz = ns.leading_zeros();
    // The two bits after the leading one split the octave in four (no branch: this runs
    // for every operation).
    let sub = ((ns << lz) >> 61) & 3;
    (((63 - lz) as usize) * 4 + sub as usize).min(BUCKETS - 1)
}

/// The upper edge of a bucket, in nanoseconds (what a quantile in it is reported as).
pub fn upper_edge(index: usize) -> u64 {
    let octave = index / 4;
    let sub = (index % 4) as u64;
    // (4 + sub + 1) / 4 x 2^octave.
    ((4 + sub + 1) << octave) / 4
}

/// The latency at quantile `q` (0.5, 0.99) of counts per bucket: the upper edge of the
/// bucket it falls in; None when nothing was counted.
pub fn quantile(counts: &[u64], q: f64) -> Option<u64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (i, c) in counts.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return Some(upper_edge(i));
        }
    }
    Some(upper_edge(counts.len().saturating_sub(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_falls_in_a_bucket_at_most_a_quarter_octave_wide() {
        for ns in [
            1u64,
            2,
            3,
            7,
            100,
            999,
            4096,
            1_000_000,
            123_456_789,
            10_000_000_000,
        ] {
            let b = bucket(ns);
            let high = upper_edge(b);
            let low = if b == 0 { 0 } else { upper_edge(b - 1) };
            assert!(low <= ns && ns <= high, "{ns}: bucket {b} [{low}, {high}]");
            assert!(high as f64 <= ns as f64 * 1.25 + 1.0, "{ns} -> {high}");
        }
        assert!(bucket(u64::MAX) < BUCKETS);
    }

    #[test]
    fn quantiles_of_counted_latencies() {
        let mut counts = [0u64; BUCKETS];
        // 98 I/Os of 100 µs and 2 of 10 ms: p50 near 100 µs, p99 near 10 ms.
        counts[bucket(100_000)] += 98;
        counts[bucket(10_000_000)] += 2;
        let p50 = quantile(&counts, 0.5).unwrap();
        let p99 = quantile(&counts, 0.99).unwrap();
        assert!((100_000..=125_000).contains(&p50), "{p50}");
        assert!((10_000_000..=12_500_000).contains(&p99), "{p99}");
        assert_eq!(quantile(&[0; BUCKETS], 0.5), None);
    }
}
