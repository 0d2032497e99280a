//! Latency histograms: [`LatencyHistogram`] records nanoseconds with 3 significant
//! digits (HdrHistogram), merges across workers and ranks, and serializes as HdrHistogram
//! V2 bytes (base64 in JSON) so the full distribution survives storage.
//! [`LatencySummary`] is the fixed set of figures every report shows.

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer as HdrDeserializer, Serializer as _, V2Serializer};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::HistogramError;
use crate::units::Nanos;

/// Percentiles reported everywhere, in this order.
pub const PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 99.99];

#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for LatencyHistogram {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        // Auto-resizing from 1 ns keeps an idle histogram small (a few KiB) and grows it
        // only as far as the latencies seen; 3 significant digits as fio and IOR report.
        let mut inner = Histogram::new(3).expect("3 significant digits is a valid precision");
        inner.auto(true);
        LatencyHistogram { inner }
    }

    /// An empty histogram of the least precision, a few hundred bytes instead of the
    /// 16 KiB of an empty [`LatencyHistogram::new`]: what a measure keeps once its
    /// latencies were merged elsewhere (rank 0 keeps one per rank and operation). Merging
    /// it adds nothing; it is not meant to be recorded into.
    pub fn placeholder() -> Self {
        let mut inner = Histogram::new(1).expect("1 significant digit is a valid precision");
        inner.auto(true);
        LatencyHistogram { inner }
    }

    /// Records one latency. Zero is recorded as 1 ns (the clock's resolution).
    #[inline]
    pub fn record(&mut self, latency_ns: u64) {
        // With auto-resize on, record only fails for values beyond u64 range tracking,
        // which a nanosecond latency cannot reach; saturate rather than lose the sample.
        let v = latency_ns.max(1);
        if self.inner.record(v).is_err() {
            let high = self.inner.high();
            let _ = self.inner.record(high);
        }
    }

    /// Records `count` samples of the same latency (used by fake clocks and tests).
    pub fn record_n(&mut self, latency_ns: u64, count: u64) {
        let _ = self.inner.record_n(latency_ns.max(1), count);
    }

    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.inner
            .add(&other.inner)
            .expect("auto-resizing histograms always merge");
    }

    pub fn count(&self) -> u64 {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The counters it holds, 8 bytes each: a bucket for every value up to the largest
    /// it has recorded or merged (it grows to hold them), 2,048 while it is empty.
    pub fn counters(&self) -> usize {
        self.inner.distinct_values()
    }

    pub fn min(&self) -> Nanos {
        if self.is_empty() {
            Nanos::ZERO
        } else {
            Nanos(self.inner.min())
        }
    }

    pub fn max(&self) -> Nanos {
        Nanos(self.inner.max())
    }

    pub fn mean(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            self.inner.mean()
        }
    }

    pub fn stdev(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            self.inner.stdev()
        }
    }

    /// The value at percentile `p` (0-100), as HdrHistogram defines it (the highest
    /// value equivalent to the one at that rank).
    pub fn percentile(&self, p: f64) -> Nanos {
        if self.is_empty() {
            return Nanos::ZERO;
        }
        Nanos(self.inner.value_at_percentile(p))
    }

    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            count: self.count(),
            min: self.min(),
            mean: self.mean(),
            p50: self.percentile(50.0),
            p90: self.percentile(90.0),
            p99: self.percentile(99.0),
            p99_9: self.percentile(99.9),
            p99_99: self.percentile(99.99),
            max: self.max(),
        }
    }

    /// Samples of at least `low` (to the histogram's precision: a sample in the bucket
    /// that holds `low` counts).
    pub fn count_at_least(&self, low: Nanos) -> u64 {
        let from = self.inner.lowest_equivalent(low.0);
        self.inner
            .iter_recorded()
            .filter(|v| v.value_iterated_to() >= from)
            .map(|v| v.count_at_value())
            .sum()
    }

    /// (value upper bound, count) pairs of every non-empty bucket, for charts.
    pub fn buckets(&self) -> Vec<(Nanos, u64)> {
        self.inner
            .iter_recorded()
            .map(|v| (Nanos(v.value_iterated_to()), v.count_at_value()))
            .collect()
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>, HistogramError> {
        let mut out = Vec::new();
        V2Serializer::new()
            .serialize(&self.inner, &mut out)
            .map_err(|e| HistogramError::Encode(format!("{e:?}")))?;
        Ok(out)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, HistogramError> {
        let mut inner: Histogram<u64> = HdrDeserializer::new()
            .deserialize(&mut &bytes[..])
            .map_err(|e| HistogramError::Decode(format!("{e:?}")))?;
        inner.auto(true);
        Ok(LatencyHistogram { inner })
    }
}

/// HdrHistogram's V2 bytes: base64 text in human-readable formats (JSON, the store),
/// the bytes themselves in binary ones (CBOR between ranks).
impl Serialize for LatencyHistogram {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes = self.to_bytes().map_err(serde::ser::Error::custom)?;
        if s.is_human_readable() {
            s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
        } else {
            s.serialize_bytes(&bytes)
        }
    }
}

impl<'de> Deserialize<'de> for LatencyHistogram {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bytes = if d.is_human_readable() {
            let text = String::deserialize(d)?;
            base64::engine::general_purpose::STANDARD
                .decode(text.as_bytes())
                .map_err(serde::de::Error::custom)?
        } else {
            serde_bytes_of(d)?
        };
        LatencyHistogram::from_bytes(&bytes).map_err(serde::de::Error::custom)
    }
}

/// A byte string from a binary format.
fn serde_bytes_of<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    struct Bytes;
    impl<'de> serde::de::Visitor<'de> for Bytes {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("HdrHistogram V2 bytes")
        }
        fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }
        fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }
    }
    // byte_buf, not bytes: ciborium hands out byte strings longer than its 4 KiB scratch
    // buffer only as an owned buffer (a wide histogram's V2 bytes are longer).
    d.deserialize_byte_buf(Bytes)
}

/// The latency figures every report shows. Nanoseconds; `mean` is fractional.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub min: Nanos,
    pub mean: f64,
    pub p50: Nanos,
    pub p90: Nanos,
    pub p99: Nanos,
    pub p99_9: Nanos,
    pub p99_99: Nanos,
    pub max: Nanos,
}

impl LatencySummary {
    /// The percentiles of [`PERCENTILES`], in order, with their labels.
    pub fn percentiles(&self) -> [(&'static str, Nanos); 5] {
        [
            ("p50", self.p50),
            ("p90", self.p90),
            ("p99", self.p99),
            ("p99.9", self.p99_9),
            ("p99.99", self.p99_99),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Samples at or above a value, counted to the bucket that holds it: 3 of 5 from
    /// 2 s on (2.0 s, 2.5 s, 3 s), all 5 from 0, none past the largest.
    #[test]
    fn count_at_least_counts_the_samples_from_a_value_on() {
        let mut h = LatencyHistogram::new();
        for ms in [10, 1_500, 2_000, 2_500, 3_000] {
            h.record(Nanos::from_millis(ms).0);
        }
        assert_eq!(h.count_at_least(Nanos::from_millis(2_000)), 3);
        assert_eq!(h.count_at_least(Nanos::ZERO), 5);
        assert_eq!(h.count_at_least(Nanos::from_millis(3_100)), 0);
    }

    /// Between ranks histograms travel as CBOR byte strings; one with latencies from
    /// 100 ns to 10 s has V2 bytes well over ciborium's 4 KiB scratch buffer, and must
    /// come back whole (it once failed with "invalid type: bytes, expected bytes").
    #[test]
    fn a_wide_histogram_crosses_cbor_whole() {
        let mut h = LatencyHistogram::new();
        let mut v = 100u64;
        while v < 10_000_000_000 {
            h.record(v);
            v = v * 1001 / 1000 + 1;
        }
        assert!(h.to_bytes().unwrap().len() > 4096);
        let mut wire = Vec::new();
        ciborium::into_writer(&h, &mut wire).unwrap();
        let back: LatencyHistogram = ciborium::from_reader(wire.as_slice()).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn summary_of_known_values() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert_eq!(s.min, Nanos(1000));
        // 3 significant digits: values are exact to 0.1 %.
        let within =
            |got: Nanos, want: u64| (got.0 as f64 - want as f64).abs() <= want as f64 * 1e-3;
        assert!(within(s.p50, 500_000), "{:?}", s.p50);
        assert!(within(s.p99, 990_000), "{:?}", s.p99);
        assert!(within(s.max, 1_000_000), "{:?}", s.max);
        assert!((s.mean - 500_500.0).abs() < 500.0, "{}", s.mean);
    }

    /// A placeholder is empty, much smaller than an empty histogram, and merging it
    /// into a real one changes nothing.
    #[test]
    fn a_placeholder_is_small_and_adds_nothing() {
        let p = LatencyHistogram::placeholder();
        assert_eq!(p.summary().count, 0);
        assert!(p.inner.distinct_values() * 8 < LatencyHistogram::new().inner.distinct_values());
        let mut h = LatencyHistogram::new();
        h.record(1234);
        let before = h.summary();
        h.merge(&p);
        assert_eq!(h.summary(), before);
    }

    /// It grows to hold its largest value: 2,048 counters empty, 30 x 1,024 (240 KiB)
    /// once it holds 300 s (a bucket per power of two above 2,048 ns, each of 1,024).
    #[test]
    fn its_counters_grow_with_the_largest_value_it_holds() {
        let mut h = LatencyHistogram::new();
        assert_eq!(h.counters(), 2048);
        h.record(Nanos::from_secs(300).0);
        assert_eq!(h.counters(), 30 * 1024);
        let mut merged = LatencyHistogram::new();
        merged.merge(&h);
        assert_eq!(merged.counters(), 30 * 1024);
    }

    #[test]
    fn empty_histogram_summarizes_to_zero() {
        let s = LatencyHistogram::new().summary();
        assert_eq!(s.count, 0);
        assert_eq!(s.min, Nanos::ZERO);
        assert_eq!(s.p99, Nanos::ZERO);
    }

    #[test]
    fn round_trips_through_json() {
        let mut h = LatencyHistogram::new();
        h.record(5);
        h.record(1_000_000);
        h.record_n(42_000, 10);
        let json = serde_json::to_string(&h).unwrap();
        let back: LatencyHistogram = serde_json::from_str(&json).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.count(), 12);
    }

    #[test]
    fn garbage_does_not_decode() {
        assert!(LatencyHistogram::from_bytes(b"not a histogram").is_err());
    }

    proptest! {
        #[test]
        fn merge_equals_recording_everything_in_one(
            a in proptest::collection::vec(1u64..10_000_000_000, 0..200),
            b in proptest::collection::vec(1u64..10_000_000_000, 0..200),
        ) {
            let mut ha = LatencyHistogram::new();
            let mut hb = LatencyHistogram::new();
            let mut all = LatencyHistogram::new();
            for v in &a { ha.record(*v); all.record(*v); }
            for v in &b { hb.record(*v); all.record(*v); }
            ha.merge(&hb);
            prop_assert_eq!(ha.count(), (a.len() + b.len()) as u64);
            prop_assert_eq!(ha.summary(), all.summary());
        }
    }
}
