//! What the written data really holds, measured on a sample of the writes as they are
//! handed to storage: lz4 per write (a window-less compressor, as a file system compresses
//! a record), lz4 over the stream of sampled writes (each with the sampled bytes before it
//! as its window), a hash per dedupe unit and a hash per 512-byte unit.

use iolab_core::data_gen::UNIT;
use iolab_core::pattern::unit_hash;
use iolab_core::spec::DataSpec;
use serde::{Deserialize, Serialize};

/// Every one of the first writes is sampled, then one in [`SAMPLE_EVERY`].
const SAMPLE_ALL: u64 = 256;
const SAMPLE_EVERY: u64 = 16;
/// Dedupe units a worker hashes at most (128 KiB of hashes, 64 MiB of 4 KiB units).
const MAX_UNITS: usize = 16 * 1024;
/// 512-byte units a worker hashes at most (512 KiB of hashes: 32 MiB of data).
const MAX_SMALL_UNITS: usize = 64 * 1024;
/// The stream's window: lz4's 64 KiB.
const WINDOW: usize = 64 << 10;

/// The written data as sampled: bytes and their lz4-compressed sizes (per write, and as
/// a stream), one hash per dedupe unit and one per 512-byte unit. Merged over workers and
/// ranks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DataSample {
    /// The ratios asked for (the spec's), carried to the phase's figures.
    pub asked_compress: Option<f64>,
    pub asked_dedupe: Option<f64>,
    pub writes: u64,
    pub bytes: u64,
    pub compressed: u64,
    /// The same bytes compressed as one stream (each write with the sampled bytes
    /// before it in the window).
    #[serde(default)]
    pub stream_compressed: u64,
    pub hashes: Vec<u64>,
    /// A hash of every 512-byte unit sampled.
    #[serde(default)]
    pub unit_hashes: Vec<u64>,
}

impl DataSample {
    pub fn merge(&mut self, other: &DataSample) {
        self.asked_compress = self.asked_compress.or(other.asked_compress);
        self.asked_dedupe = self.asked_dedupe.or(other.asked_dedupe);
        self.writes += other.writes;
        self.bytes += other.bytes;
        self.compressed += other.compressed;
        self.stream_compressed += other.stream_compressed;
        self.hashes.extend_from_slice(&other.hashes);
        self.unit_hashes.extend_from_slice(&other.unit_hashes);
    }

    /// Sampled bytes over their lz4-compressed size, write by write.
    pub fn compress_ratio(&self) -> Option<f64> {
        (self.compressed > 0).then(|| self.bytes as f64 / self.compressed as f64)
    }

    /// Sampled bytes over their lz4-compressed size as one stream.
    pub fn stream_compress_ratio(&self) -> Option<f64> {
        (self.stream_compressed > 0).then(|| self.bytes as f64 / self.stream_compressed as f64)
    }

    /// Sampled dedupe units over the distinct ones among them.
    pub fn dedupe_ratio(&self) -> Option<f64> {
        over_distinct(&self.hashes)
    }

    /// Sampled 512-byte units over the distinct ones among them: what a compressor with
    /// a window over the whole sample, or a dedupe engine at any 512-byte alignment, finds.
    pub fn unit_repeat_ratio(&self) -> Option<f64> {
        over_distinct(&self.unit_hashes)
    }
}

fn over_distinct(hashes: &[u64]) -> Option<f64> {
    let mut distinct = hashes.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    (!distinct.is_empty()).then(|| hashes.len() as f64 / distinct.len() as f64)
}

/// Samples the writes as they are handed to storage, up to [`MAX_UNITS`] dedupe units:
/// hashes of each, lz4 of the first [`SAMPLE_ALL`] then one in [`SAMPLE_EVERY`].
pub struct DataSampler {
    seen: u64,
    out: Vec<u8>,
    /// The last [`WINDOW`] bytes sampled, the stream's window.
    window: Vec<u8>,
    unit: usize,
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
            window: Vec::with_capacity(WINDOW),
            unit: spec.dedupe_unit().max(1) as usize,
            sample: DataSample {
                asked_compress: spec.compress_ratio,
                asked_dedupe: spec.dedupe_ratio,
                ..DataSample::default()
            },
        })
    }

    /// Counts a write; true when this one is to be measured: every write while the
    /// hashes take it (a copy's source is any earlier unit: only a run of consecutive
    /// writes holds its sources), and then none.
    #[inline]
    pub fn due(&mut self) -> bool {
        self.seen += 1;
        self.sample.hashes.len() < MAX_UNITS
    }

    /// Measures one written block: its hashes per dedupe unit and per 512 bytes, and, for
    /// the first [`SAMPLE_ALL`] writes and one in [`SAMPLE_EVERY`] after, its lz4 size as
    /// one block (as ZFS compresses a record) and in the stream.
    #[cold]
    pub fn take(&mut self, data: &[u8]) {
        let s = &mut self.sample;
        let unit = self.unit.min(data.len()).max(1);
        s.hashes.extend(data.chunks(unit).map(unit_hash));
        if s.unit_hashes.len() < MAX_SMALL_UNITS {
            s.unit_hashes.extend(data.chunks(UNIT).map(unit_hash));
        }
        if self.seen > SAMPLE_ALL && self.seen % SAMPLE_EVERY != 1 {
            return;
        }
        let compressed = lz4_flex::block::compress_into(data, &mut self.out)
            .expect("the output buffer holds the largest block's worst case");
        let streamed = lz4_flex::block::compress_into_with_dict(data, &mut self.out, &self.window)
            .expect("the output buffer holds the largest block's worst case");
        let s = &mut self.sample;
        s.writes += 1;
        s.bytes += data.len() as u64;
        s.compressed += compressed as u64;
        s.stream_compressed += streamed as u64;
        let keep = data.len().min(WINDOW);
        let drop = (self.window.len() + keep).saturating_sub(WINDOW);
        self.window.drain(..drop);
        self.window.extend_from_slice(&data[data.len() - keep..]);
    }
}
