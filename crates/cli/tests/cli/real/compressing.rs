//! What the compressing file systems' tests (zfs.rs, btrfs.rs) write: fio's data of a
//! compress ratio (the reference people know) and iolab's (of a ratio, or its default),
//! 32 MiB each in 128 KiB writes (a whole ZFS record or btrfs extent each), written out
//! before the file system is asked what it stored.

use std::path::Path;
use std::process::Command;

use crate::common::{Ran, iolab, path};

/// What one file is written with; its name says so ("fio-2", "iolab-4", "iolab-default").
#[derive(Clone, Copy, Debug)]
pub enum Data {
    /// fio's `buffer_compress_percentage` of this ratio with `refill_buffers`.
    Fio(f64),
    /// iolab's `--compress-ratio`, or its default data.
    Iolab(Option<f64>),
}

impl Data {
    pub fn name(self) -> String {
        match self {
            Data::Fio(r) => format!("fio-{r}"),
            Data::Iolab(Some(r)) => format!("iolab-{r}"),
            Data::Iolab(None) => "iolab-default".into(),
        }
    }

    /// Writes 32 MiB of this data as `dir`/data (fsync'd at the end).
    pub fn write(self, dir: &Path) {
        match self {
            Data::Fio(r) => fio_writes(dir, r),
            Data::Iolab(r) => iolab_writes(dir, r),
        }
    }
}

/// The ratio a file named by `Data::name` was asked for (1 for the default data).
pub fn asked(name: &str) -> f64 {
    name.rsplit('-').next().unwrap().parse().unwrap_or(1.0)
}

pub const SIZE: &str = "32MiB";

/// fio: `buffer_compress_percentage` 100 (1 - 1/ratio), fresh buffers for every write,
/// no preallocation (btrfs stores a preallocated range uncompressed).
pub fn fio_writes(dir: &Path, ratio: f64) {
    let pct = (100.0 * (1.0 - 1.0 / ratio)).round() as u32;
    let out = Command::new("fio")
        .args(["--name=w", "--rw=write", "--bs=128k", "--size=32m"])
        .arg(format!("--filename={}", path(&dir.join("data"))))
        .arg(format!("--buffer_compress_percentage={pct}"))
        .args([
            "--refill_buffers",
            "--ioengine=psync",
            "--end_fsync=1",
            "--fallocate=none",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fio: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `iolab run --rw write` of 32 MiB in 128 KiB blocks, kept, fsync'd at the end.
pub fn iolab_writes(dir: &Path, ratio: Option<f64>) {
    let mut c = iolab();
    c.args([
        "run",
        "--no-store",
        "--rw",
        "write",
        "--block-size",
        "128KiB",
    ])
    .args([
        "--size",
        SIZE,
        "--keep",
        "--fsync-at-end",
        "--dir",
        path(dir),
    ]);
    if let Some(r) = ratio {
        c.args(["--compress-ratio", &r.to_string()]);
    }
    Ran::from(c.output().unwrap()).expect(0);
}
