//! The command line of `iolab pts`: its options, the R/W mixes they name and the test
//! matrices they select.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
pub use iolab_core::pts::PtsClass as Class;
use iolab_core::spec::BackendKind;
use iolab_core::units::{ByteCount, TimeSpan};
use iolab_suites::pts::{PtsMatrix, PtsTest, THROUGHPUT_BLOCK_SIZES};

use crate::args::OutputArgs;

/// PTS's three tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TestKind {
    /// Random, 7 R/W mixes x 8 block sizes, IOPS tracked.
    Iops,
    /// Sequential 100/0 and 0/100 at 1024 KiB (and 128 KiB for PTS-E), MB/s tracked.
    Throughput,
    /// Random 100/0, 65/35, 0/100 x 8, 4, 0.5 KiB at TC 1 x QD 1; mean, 99.999th
    /// percentile and maximum response times.
    Latency,
}

#[derive(Args, Debug)]
pub struct PtsArgs {
    /// Which of PTS's tests.
    #[arg(long, value_enum, default_value_t = TestKind::Iops)]
    pub test: TestKind,

    /// The device (or image file) to test. Every byte of it is discarded and
    /// overwritten: one holding a file system, a partition table or data is refused
    /// unless --allow-destroy; one in use always.
    #[arg(long, value_name = "DEVICE", required_unless_present = "nbd_uri")]
    pub device: Option<PathBuf>,

    /// An NBD export to test instead of a device, through --backend nbd
    /// (nbd+unix:///?socket=SOCKET, nbd://HOST[:PORT]); guarded as a device is.
    #[arg(long, value_name = "URI", conflicts_with = "device")]
    pub nbd_uri: Option<String>,

    /// Allow destroying what the device holds.
    #[arg(long)]
    pub allow_destroy: bool,

    /// PTS-E or PTS-C settings (active range, write cache expected).
    #[arg(long, value_enum, default_value_t = Class::Enterprise)]
    pub class: Class,

    /// Multiply every duration by this (0.01: a cell of 0.6 s instead of a minute).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,

    /// How long each cell of a round runs, before --scale (PTS: one minute).
    #[arg(long, value_name = "TIME", default_value = "60s")]
    pub cell_time: TimeSpan,

    /// The share of the device the rounds address, in percent [default: 100 for
    /// enterprise, 75 for client].
    #[arg(long, value_name = "PERCENT")]
    pub active_range: Option<u8>,

    /// Workload-independent preconditioning: sequential writes of this many times the
    /// active range (PTS: 2; 0 skips it).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub precondition: u32,

    /// The preconditioning's block size (PTS: 128 KiB).
    #[arg(long, value_name = "SIZE", default_value = "128KiB")]
    pub precondition_block_size: ByteCount,

    /// Leave out the purge (the results then start from the device's current state).
    #[arg(long)]
    pub no_purge: bool,

    /// Worker threads per cell (PTS's thread count, TC; reported in the header)
    /// [default: iops 4, throughput 1, latency 1 (PTS's, the only one allowed)].
    #[arg(short = 't', long)]
    pub threads: Option<u32>,

    /// I/Os in flight per thread (PTS's queue depth, QD) [default: iops 32, throughput
    /// 32, latency 1 (PTS's, the only one allowed)].
    #[arg(short = 'q', long)]
    pub queue_depth: Option<u32>,

    /// I/O engine.
    #[arg(long, value_enum, default_value_t = BackendKind::Uring)]
    pub backend: BackendKind,

    /// Run only these of PTS's block sizes (1MiB,64KiB,4KiB): a shorter test that is no
    /// longer PTS's whole matrix (said in the report).
    #[arg(long, value_name = "SIZES", value_delimiter = ',')]
    pub block_sizes: Option<Vec<ByteCount>>,

    /// Run only these of PTS's R/W mixes (100/0,65/35,0/100).
    #[arg(long, value_name = "MIXES", value_delimiter = ',')]
    pub mixes: Option<Vec<String>>,

    /// The most rounds before the test is reported as not steady (PTS: 25).
    #[arg(long, value_name = "N", default_value_t = 25)]
    pub max_rounds: usize,

    /// Write the PTS report (plots, tables, device) as one HTML file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    #[command(flatten)]
    pub output: OutputArgs,
}

impl PtsArgs {
    /// What is tested: the device's path, or the NBD export's URI.
    pub(super) fn target_path(&self) -> PathBuf {
        match (&self.device, &self.nbd_uri) {
            (Some(d), _) => d.clone(),
            (None, Some(uri)) => PathBuf::from(uri),
            (None, None) => PathBuf::new(),
        }
    }
}

/// "65/35" as its read share.
pub(super) fn parse_mix(text: &str) -> Result<u8> {
    let (r, w) = text
        .split_once('/')
        .ok_or_else(|| anyhow::anyhow!("--mixes: '{text}' is not a R/W mix like 65/35"))?;
    let (r, w): (u8, u8) = match (r.trim().parse(), w.trim().parse()) {
        (Ok(r), Ok(w)) if u16::from(r) + u16::from(w) == 100 => (r, w),
        _ => bail!("--mixes: '{text}' is not a R/W mix whose shares add up to 100"),
    };
    let _ = w;
    Ok(r)
}

/// The test's matrices, limited by --block-sizes and --mixes.
pub(super) fn matrices(
    test: PtsTest,
    class: Class,
    sizes: Option<&[u64]>,
    mixes: Option<&[u8]>,
) -> Result<(Vec<PtsMatrix>, bool)> {
    let flag = |e: String| {
        anyhow::anyhow!(
            "{}: {e}",
            if e.contains("mix") {
                "--mixes"
            } else {
                "--block-sizes"
            }
        )
    };
    let full = match test {
        PtsTest::Iops => vec![PtsMatrix::iops()],
        PtsTest::Latency => vec![PtsMatrix::latency()],
        PtsTest::Throughput => match class {
            Class::Enterprise => THROUGHPUT_BLOCK_SIZES
                .iter()
                .map(|b| PtsMatrix::throughput(*b))
                .collect(),
            Class::Client => vec![PtsMatrix::throughput(1 << 20)],
        },
    };
    if test != PtsTest::Throughput {
        let m = full[0].limited(sizes, mixes).map_err(flag)?;
        let whole = m == full[0];
        return Ok((vec![m], whole));
    }
    let mut subs = Vec::new();
    if let Some(b) = sizes
        && let Some(x) = b.iter().find(|x| !THROUGHPUT_BLOCK_SIZES.contains(x))
    {
        bail!(
            "--block-sizes: {} is not one of the block sizes of PTS's throughput test (1MiB, 128KiB)",
            ByteCount(*x)
        );
    }
    let sizes: Vec<u64> = match sizes {
        Some(b) => THROUGHPUT_BLOCK_SIZES
            .iter()
            .copied()
            .filter(|x| b.contains(x))
            .collect(),
        None => full.iter().map(|m| m.block_sizes[0]).collect(),
    };
    for b in &sizes {
        subs.push(
            PtsMatrix::throughput(*b)
                .limited(None, mixes)
                .map_err(flag)?,
        );
    }
    let whole = subs == full;
    Ok((subs, whole))
}
