//! The one place a dataset format meets its compat code: which bytes a file of each
//! [`TrainFormat`] holds ([`file_len`], [`write_body`] into a [`Sink`]), which names
//! are a dataset's ([`is_dataset_name`]), and how the loader reads a sample
//! ([`read_plan`]: the byte ranges, in order, a reader asks the backend for). A new
//! format (parquet, jpeg) adds one arm to each match here and its writer and reader
//! layout in `iolab_compat::dlio`; generation and the loader call only these.

use iolab_compat::dlio::npz::NpzLayout;
use iolab_compat::dlio::parquet::{FileChunks, ParquetLayout, Part, footer, read_footer};
use iolab_compat::dlio::tfrecord::{ExampleLayout, crc32c_update, masked};
use iolab_core::SpecError;
use iolab_core::rng::{Rng, mix};
use iolab_core::spec::{TrainConfig, TrainFormat};

use crate::AiError;
use crate::train::normal;

/// Bytes of random sample data produced at once.
pub const CHUNK: usize = 4 << 20;

/// Where a format writer's bytes go: appended in order, and (npz's first header,
/// which carries the CRC only known at the end) written again at an earlier offset.
pub trait Sink {
    /// Appends `bytes` at the end of what was put so far.
    fn put(&mut self, bytes: &[u8]) -> Result<(), AiError>;
    /// Writes out everything put so far.
    fn flush(&mut self) -> Result<(), AiError>;
    /// Overwrites `bytes` at `offset` (after a [`Sink::flush`]).
    fn rewrite(&mut self, bytes: &[u8], offset: u64) -> Result<(), AiError>;
    /// Whether the run was asked to stop (checked between samples).
    fn stopped(&self) -> bool;
}

/// DLIO's dimension: int(sqrt(record_length)).
pub fn dimension(cfg: &TrainConfig) -> u64 {
    cfg.record_length.sqrt() as u64
}

/// File `index`'s two dimensions, drawn as DLIO draws them: each from
/// N(int(sqrt(record_length)), stdev / 2 / sqrt(record_length)).
pub fn dims(cfg: &TrainConfig, index: u64) -> (u64, u64) {
    let dim = dimension(cfg) as f64;
    let stdev = cfg.record_length_stdev / 2.0 / cfg.record_length.sqrt();
    let mut rng = Rng::new(mix(&[cfg.seed, index, 0xd110_da7a]));
    let d1 = (normal(&mut rng, dim, stdev) as i64).max(1) as u64;
    let d2 = (normal(&mut rng, dim, stdev) as i64).max(1) as u64;
    (d1, d2)
}

/// File `index`'s bytes once written.
pub fn file_len(cfg: &TrainConfig, index: u64) -> u64 {
    let (d1, d2) = dims(cfg, index);
    match cfg.format {
        TrainFormat::Tfrecord => {
            cfg.samples_per_file * ExampleLayout::new(d1 * d2, dimension(cfg) as i64).record_len()
        }
        TrainFormat::Jpeg => cfg.samples_per_file * d1 * d2,
        TrainFormat::Parquet => parquet_layout(cfg).map_or(0, |l| l.file_len()),
        TrainFormat::Npz | TrainFormat::Hdf5 => npz_layout(cfg, d1, d2).file_len(),
    }
}

fn npz_layout(cfg: &TrainConfig, dim1: u64, dim2: u64) -> NpzLayout {
    NpzLayout {
        dim1,
        dim2,
        samples: cfg.samples_per_file,
    }
}

/// Whether a file name is one of a dataset's (DLIO's `img_<i>_of_<n>.<ext>`) in any
/// format iolab writes: what a new generation may replace.
pub fn is_dataset_name(name: &str) -> bool {
    const WRITTEN: [TrainFormat; 4] = [
        TrainFormat::Npz,
        TrainFormat::Tfrecord,
        TrainFormat::Jpeg,
        TrainFormat::Parquet,
    ];
    name.starts_with("img_")
        && name.contains("_of_")
        && WRITTEN.iter().any(|f| {
            name.strip_suffix(f.extension())
                .is_some_and(|n| n.ends_with('.'))
        })
}

/// Writes file `index`'s bytes, start to end, into `out`.
pub fn write_body(cfg: &TrainConfig, index: u64, out: &mut dyn Sink) -> Result<(), AiError> {
    let (d1, d2) = dims(cfg, index);
    let mut rng = Rng::new(mix(&[cfg.seed, index, 0xda7a]));
    match cfg.format {
        TrainFormat::Tfrecord => write_tfrecord(cfg, (d1, d2), &mut rng, out),
        TrainFormat::Jpeg => write_raw(cfg.samples_per_file * d1 * d2, &mut rng, out),
        TrainFormat::Parquet => write_parquet(cfg, &mut rng, out),
        TrainFormat::Npz | TrainFormat::Hdf5 => write_npz(cfg, (d1, d2), &mut rng, out),
    }
}

/// A parquet file's layout: `samples_per_file` rows of the config's columns.
fn parquet_layout(cfg: &TrainConfig) -> Result<ParquetLayout, AiError> {
    let schema = cfg
        .parquet
        .as_ref()
        .ok_or_else(|| AiError::Setup("a parquet workload without its columns".into()))?;
    ParquetLayout::new(schema, cfg.samples_per_file)
        .map_err(|e| AiError::Spec(SpecError::new("--row-group-size", e.to_string())))
}

/// The chunks of a parquet file iolab writes for `cfg`, as its footer gives them (what
/// the null backend's reader plans by: it reads no footer).
pub fn parquet_chunks(cfg: &TrainConfig) -> Result<FileChunks, AiError> {
    read_footer(&footer(&parquet_layout(cfg)?)).map_err(|e| AiError::Setup(e.to_string()))
}

/// The bytes of the FileMetaData of a parquet file iolab writes for `cfg`.
pub fn parquet_metadata_len(cfg: &TrainConfig) -> Result<u64, AiError> {
    Ok(footer(&parquet_layout(cfg)?).len() as u64)
}

/// A parquet file as the config says (row groups of `row_group_size` rows, every
/// column chunk paged as pyarrow pages it, uncompressed), its values random bytes.
fn write_parquet(cfg: &TrainConfig, rng: &mut Rng, out: &mut dyn Sink) -> Result<(), AiError> {
    let layout = parquet_layout(cfg)?;
    out.put(b"PAR1")?;
    for g in 0..layout.groups.len() {
        for c in 0..layout.schema.columns.len() {
            if out.stopped() {
                return Err(AiError::Interrupted);
            }
            let mut draw = Rng::new(rng.next_u64());
            for part in layout.chunk_parts(g, c, || draw.next_u64()) {
                match part {
                    Part::Bytes(b) => out.put(&b)?,
                    Part::Random(n) => put_random(n, rng, out)?,
                }
            }
        }
    }
    let meta = footer(&layout);
    out.put(&meta)?;
    out.put(&(meta.len() as u32).to_le_bytes())?;
    out.put(b"PAR1")?;
    out.flush()
}

fn put_random(len: u64, rng: &mut Rng, out: &mut dyn Sink) -> Result<(), AiError> {
    let mut chunk = vec![0u8; CHUNK.min(len as usize)];
    let mut left = len as usize;
    while left > 0 {
        let n = left.min(CHUNK);
        rng.fill(&mut chunk[..n]);
        out.put(&chunk[..n])?;
        left -= n;
    }
    Ok(())
}

/// v3.0 DLIO's ".jpeg" for its PyTorch loader: the raw uint8 tensor (dim1 x dim2), no
/// JPEG bitstream (jpeg_generator.py writes `gen_random_tensor(...)` as it is).
fn write_raw(len: u64, rng: &mut Rng, out: &mut dyn Sink) -> Result<(), AiError> {
    let mut chunk = vec![0u8; CHUNK];
    let mut left = len as usize;
    while left > 0 {
        if out.stopped() {
            return Err(AiError::Interrupted);
        }
        let n = left.min(CHUNK);
        rng.fill(&mut chunk[..n]);
        out.put(&chunk[..n])?;
        left -= n;
    }
    out.flush()
}

fn write_tfrecord(
    cfg: &TrainConfig,
    (d1, d2): (u64, u64),
    rng: &mut Rng,
    out: &mut dyn Sink,
) -> Result<(), AiError> {
    let layout = ExampleLayout::new(d1 * d2, dimension(cfg) as i64);
    let mut chunk = vec![0u8; CHUNK];
    for _ in 0..cfg.samples_per_file {
        if out.stopped() {
            return Err(AiError::Interrupted);
        }
        out.put(&layout.header())?;
        out.put(&layout.prefix)?;
        let mut crc = crc32c_update(0, &layout.prefix);
        let mut left = layout.sample_len as usize;
        while left > 0 {
            let n = left.min(CHUNK);
            rng.fill(&mut chunk[..n]);
            crc = crc32c_update(crc, &chunk[..n]);
            out.put(&chunk[..n])?;
            left -= n;
        }
        out.put(&layout.suffix)?;
        crc = crc32c_update(crc, &layout.suffix);
        out.put(&masked(crc).to_le_bytes())?;
    }
    out.flush()
}

/// An npz as Python's zipfile writes it: the first header (with a zero CRC) streamed
/// with the data, then written again once the CRC is known.
fn write_npz(
    cfg: &TrainConfig,
    (d1, d2): (u64, u64),
    rng: &mut Rng,
    out: &mut dyn Sink,
) -> Result<(), AiError> {
    let layout = npz_layout(cfg, d1, d2);
    layout
        .check()
        .map_err(|e| AiError::Spec(SpecError::new("--record-length", e.to_string())))?;
    let mut chunk = vec![0u8; CHUNK];
    let mut crc = crc32fast::Hasher::new();
    crc.update(&layout.x_header());
    out.put(&layout.head(0))?;
    let mut left = layout.data_len() as usize;
    while left > 0 {
        if out.stopped() {
            return Err(AiError::Interrupted);
        }
        let n = left.min(CHUNK);
        rng.fill(&mut chunk[..n]);
        crc.update(&chunk[..n]);
        out.put(&chunk[..n])?;
        left -= n;
    }
    let crc = crc.finalize();
    out.put(&layout.tail(crc))?;
    out.flush()?;
    out.rewrite(&layout.head(crc), 0)
}

/// How a reader takes a file in: the reads it issues, in order, each `(offset, len)`.
/// npz and TFRecord are read start to end in `transfer_size` reads (numpy's and
/// TensorFlow's 256 KiB), the last one short at the end of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadPlan {
    pub reads: Vec<(u64, u64)>,
}

impl ReadPlan {
    pub fn bytes(&self) -> u64 {
        self.reads.iter().map(|r| r.1).sum()
    }
}

/// The reads a sample's (or a file's, for the TensorFlow loader) reader issues on a
/// file of `len` bytes.
pub fn read_plan(cfg: &TrainConfig, len: u64) -> ReadPlan {
    match cfg.format {
        // Python's `open(path, 'rb').read()`: one read of the size fstat gave plus one
        // (it returns the whole file, short), then one that returns 0 at the end.
        TrainFormat::Jpeg => ReadPlan {
            reads: vec![(0, len + 1), (len, 1)],
        },
        TrainFormat::Npz | TrainFormat::Tfrecord | TrainFormat::Hdf5 | TrainFormat::Parquet => {
            let t = cfg.transfer_size.max(1);
            ReadPlan {
                reads: (0..len.div_ceil(t))
                    .map(|k| (k * t, t.min(len - k * t)))
                    .collect(),
            }
        }
    }
}

/// The read buffer a reader needs: the largest read of its plans (jpeg's whole file
/// plus one), else `transfer_size`.
pub fn read_buffer(cfg: &TrainConfig, largest_file: u64) -> u64 {
    match cfg.format {
        TrainFormat::Jpeg => (largest_file + 1).next_multiple_of(4096),
        _ => cfg.transfer_size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dataset_names_are_npz_and_tfrecord_of_dlio_s_pattern() {
        assert!(is_dataset_name("img_01_of_16.npz"));
        assert!(is_dataset_name("img_1_of_2.tfrecord"));
        assert!(!is_dataset_name("img_1_of_2.npzx"));
        assert!(!is_dataset_name("img_1_of_2xnpz"));
        assert!(!is_dataset_name("notes_of_2.npz"));
        assert!(!is_dataset_name("img_1.npz"));
    }

    #[test]
    fn read_plan_covers_the_file_in_transfer_size_reads() {
        let cfg = TrainConfig {
            transfer_size: 256 << 10,
            ..iolab_core::spec::TrainSpec::default().resolve().unwrap()
        };
        let p = read_plan(&cfg, (600 << 10) + 7);
        assert_eq!(
            p.reads,
            vec![
                (0, 256 << 10),
                (256 << 10, 256 << 10),
                (512 << 10, (88 << 10) + 7)
            ]
        );
        assert_eq!(p.bytes(), (600 << 10) + 7);
        assert!(read_plan(&cfg, 0).reads.is_empty());
    }
}
