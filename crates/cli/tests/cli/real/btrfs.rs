//! btrfs for real, from scripts/btrfs.sh (a loop device over a sparse image, mounted with
//! compress-force=zstd:3): what it stores of fio's and of iolab's data, read by compsize.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::Cluster;
use super::compressing::{Data, asked};
use crate::common::{path, peer_on_path};

fn tools() -> bool {
    peer_on_path("mkfs.btrfs", "--version")
        && peer_on_path("compsize", "--help")
        && peer_on_path("fio", "--version")
}

/// (bytes stored, bytes written) of `file` by compsize's TOTAL line ("TOTAL 53% 17825792
/// 33554432 33554432": percentage, disk usage, uncompressed, referenced).
fn compsize(file: &Path) -> (u64, u64) {
    let out = Command::new("compsize")
        .arg("-b")
        .arg(file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "compsize {}: {text}{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let total: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("TOTAL"))
        .unwrap_or_else(|| panic!("no TOTAL line: {text}"))
        .split_whitespace()
        .collect();
    (total[2].parse().unwrap(), total[3].parse().unwrap())
}

/// The one file of more than 1 MiB under `dir` (at any depth).
fn data_file(dir: &Path) -> PathBuf {
    let mut big = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                todo.push(e.path());
            } else if meta.len() > 1 << 20 {
                big.push(e.path());
            }
        }
    }
    assert_eq!(
        big.len(),
        1,
        "one data file under {}: {big:?}",
        dir.display()
    );
    big.pop().unwrap()
}

/// The ratio btrfs stores data of ratio `r` at when an extent compresses to a little more
/// than 128 KiB / r (fio's does, by zstd's frame): the extent takes whole 4 KiB sectors,
/// one more than 128 KiB / r, and an extent that would not shrink is stored as it is.
/// 1.88 for r = 2, 3.56 for r = 4, 1 for r = 1.
fn stored_ratio(r: f64) -> f64 {
    let compressed = 128.0 / r + 0.01;
    128.0 / ((compressed / 4.0).ceil() * 4.0).min(128.0)
}

/// fio's and iolab's data of ratios 2 and 4 and iolab's default data, 32 MiB each, are
/// stored at the ratio asked within 10 % (compsize: bytes written over bytes on disk), or
/// at what btrfs's rounding up to whole 4 KiB sectors makes of it (fio's ratio 4: 3.56;
/// iolab's data compresses to 128 KiB / r at most and is stored at 2.00 and 4.00).
/// `down` leaves no mount, loop device or file behind.
#[test]
fn a_zstd_btrfs_stores_fio_and_iolab_data_at_the_ratio_asked() {
    if !tools() {
        return;
    }
    let c = Cluster::up("btrfs", &["--size", "512M"]);
    assert_eq!(c.var("BTRFS_COMPRESS"), "zstd:3");
    let dev = c.var("BTRFS_DEVICE").to_string();
    let image = PathBuf::from(c.var("BTRFS_IMAGE"));
    let mnt = PathBuf::from(c.var("BTRFS_MOUNT"));
    let fs = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(
        fs.lines()
            .any(|l| l.starts_with(&format!("{dev} {} btrfs ", path(&mnt)))
                && l.contains("compress-force=zstd:3")),
        "{dev} is not mounted with compress-force=zstd:3 at {}:\n{fs}",
        mnt.display()
    );
    let mut seen = Vec::new();
    for data in [
        Data::Fio(2.0),
        Data::Iolab(Some(2.0)),
        Data::Fio(4.0),
        Data::Iolab(Some(4.0)),
        Data::Iolab(None),
    ] {
        let dir = mnt.join(data.name());
        std::fs::create_dir(&dir).unwrap();
        data.write(&dir);
        let out = Command::new("btrfs")
            .args(["filesystem", "sync", path(&mnt)])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        // fio's file, or iolab's in its work directory (beside its small marker files).
        let file = data_file(&dir);
        let (disk, written) = compsize(&file);
        assert_eq!(written, 32 << 20, "{}", file.display());
        seen.push((data.name(), written as f64 / disk as f64));
    }
    for (name, ratio) in &seen {
        let want = asked(name);
        let rounded = stored_ratio(want);
        assert!(
            (ratio / want - 1.0).abs() <= 0.10 || (ratio / rounded - 1.0).abs() <= 0.01,
            "{name}: btrfs stored it at {ratio:.2}, {want} asked ({rounded:.2} after rounding \
             to sectors): every figure {seen:?}"
        );
    }
    c.down_and_check_all(&[]);
    assert!(!image.exists(), "{} is left", image.display());
    let loops = Command::new("losetup")
        .args(["-n", "-O", "NAME,BACK-FILE"])
        .output()
        .unwrap();
    let loops = String::from_utf8_lossy(&loops.stdout);
    assert!(
        !loops.lines().any(|l| l.contains(path(&image))),
        "a loop device over {} is left:\n{loops}",
        image.display()
    );
}

#[test]
fn the_stored_ratio_counts_whole_sectors() {
    assert!((stored_ratio(2.0) - 128.0 / 68.0).abs() < 1e-9);
    assert!((stored_ratio(4.0) - 128.0 / 36.0).abs() < 1e-9);
    assert_eq!(stored_ratio(1.0), 1.0);
}
