//! `iolab fio` with `verify_only`: a write job's verify read-back alone, over the files
//! an earlier `iolab fio --keep` run of the job wrote with verify; never a layout or a
//! write, and a refusal (one line, exit 2) when there is nothing of iolab's to check.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Ran, error_line, iolab, path};

/// The job both runs use: 1 MiB of 4 KiB random writes with crc32c verify.
const JOB: [&str; 5] = [
    "--name=v",
    "--rw=randwrite",
    "--bs=4k",
    "--size=1m",
    "--verify=crc32c",
];

/// `iolab fio` (`--keep` first when asked) with JSON output, in `dir`.
fn fio(dir: &Path, keep: bool, extra: &[&str]) -> Ran {
    let mut cmd = iolab();
    cmd.args(["fio", "--no-store"]);
    if keep {
        cmd.arg("--keep");
    }
    cmd.arg("--output-format=json")
        .args(JOB)
        .arg(format!("--directory={}", path(dir)))
        .args(extra);
    Ran::from(cmd.output().unwrap())
}

fn json(r: &Ran) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

/// Written with verify and kept, then checked twice with verify_only: each check reads
/// the whole size and writes nothing (the file is byte for byte as the write left it,
/// and stays for the next check); fio's own verify_only reads as much.
#[test]
fn verify_only_reads_back_what_an_earlier_write_kept() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    fio(dir.path(), true, &[]).expect(0);
    let file = dir.path().join("iolab-work/v.0.0");
    let written = std::fs::read(&file).unwrap();
    assert_eq!(written.len(), 1 << 20);
    for _ in 0..2 {
        let r = fio(dir.path(), false, &["--verify_only=1"]).expect(0);
        assert!(
            r.stderr
                .contains("verify_only: nothing is written or laid out"),
            "{}",
            r.stderr
        );
        let v = json(&r);
        let j = &v["jobs"][0];
        assert_eq!(j["read"]["io_bytes"].as_u64(), Some(1 << 20), "{j}");
        assert_eq!(j["read"]["total_ios"].as_u64(), Some(256), "{j}");
        assert_eq!(j["write"]["io_bytes"].as_u64(), Some(0), "{j}");
        assert_eq!(j["error"].as_u64(), Some(0), "{j}");
        assert!(std::fs::read(&file).unwrap() == written, "nothing written");
    }
    if Command::new("fio").arg("--version").output().is_err() {
        eprintln!("skipping the comparison with real fio: fio is not installed");
        return;
    }
    let theirs = tempfile::tempdir_in("/var/tmp").unwrap();
    let real = |extra: &[&str]| {
        // fio leaves its verify state (local-v-0-verify.state) where it runs.
        let out = Command::new("fio")
            .current_dir(theirs.path())
            .arg("--output-format=json")
            .args(JOB)
            .arg(format!("--directory={}", path(theirs.path())))
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    real(&[]);
    let v = real(&["--verify_only=1"]);
    assert_eq!(v["jobs"][0]["read"]["io_bytes"].as_u64(), Some(1 << 20));
    assert_eq!(v["jobs"][0]["read"]["total_ios"].as_u64(), Some(256));
}

/// A byte changed in a kept file: verify_only reports the block as do_verify's
/// read-back does (the file and offset, exit 1), and does not lay the file out anew.
#[test]
fn verify_only_reports_a_corrupted_block() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    fio(dir.path(), true, &[]).expect(0);
    let file = dir.path().join("iolab-work/v.0.0");
    let mut data = std::fs::read(&file).unwrap();
    data[5 * 4096 + 100] ^= 0xff;
    std::fs::write(&file, &data).unwrap();
    let r = fio(dir.path(), false, &["--verify_only=1"]).expect(1);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        all.contains(&format!(
            "verify failed for the block at offset 20480 in {}",
            file.display()
        )),
        "{all}"
    );
    assert!(all.contains("checksum mismatch"), "{all}");
    let v = json(&r);
    assert_eq!(v["jobs"][0]["write"]["io_bytes"].as_u64(), Some(0));
    // fio's job error for a block that does not match: EILSEQ (84), as fio reports it.
    assert_eq!(v["jobs"][0]["error"].as_i64(), Some(84), "{}", v["jobs"][0]);
    assert!(
        std::fs::read(&file).unwrap() == data,
        "the file is left as found"
    );
}

/// Nothing of iolab's to check: a missing file, or one written without verify, is one
/// line naming verify_only and the file, exit 2, with nothing made or written; a write
/// job without verify, or a time-based one, is refused before anything runs.
#[test]
fn verify_only_without_kept_verify_data_is_refused() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let file = dir.path().join("iolab-work/v.0.0");
    let r = fio(dir.path(), false, &["--verify_only=1"]).expect(2);
    let line = error_line(&r);
    assert!(line.contains("verify_only"), "{line}");
    assert!(
        line.contains(&format!("{} does not exist", file.display())),
        "{line}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing is made"
    );
    // Kept, but written without verify: the record says so.
    let mut plain = iolab();
    plain
        .args(["fio", "--no-store", "--keep", "--name=v", "--rw=randwrite"])
        .args(["--bs=4k", "--size=1m"])
        .arg(format!("--directory={}", path(dir.path())));
    Ran::from(plain.output().unwrap()).expect(0);
    let before = std::fs::read(&file).unwrap();
    let r = fio(dir.path(), false, &["--verify_only=1"]).expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("verify_only") && line.contains("was written by iolab without verify"),
        "{line}"
    );
    assert!(std::fs::read(&file).unwrap() == before, "nothing written");
    for (extra, says) in [
        (
            &["--verify=0", "--verify_only=1"][..],
            "verify_only: needs verify=",
        ),
        (
            &["--verify_only=1", "--time_based", "--runtime=1"][..],
            "verify_only: does not run with time_based",
        ),
    ] {
        let r = fio(dir.path(), false, extra).expect(2);
        let line = error_line(&r);
        assert!(line.contains(says), "{line}");
    }
    assert!(std::fs::read(&file).unwrap() == before, "nothing written");
}

/// A `filename` image iolab wrote with verify carries its record as an attribute:
/// verify_only checks it (a block changed underneath, its time kept, is a verify failure),
/// a write since voids the record (refused), and a missing image is refused, not made.
#[test]
fn verify_only_checks_an_image_file_iolab_wrote() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let img = dir.path().join("img");
    let job = |extra: &[&str]| {
        let mut cmd = iolab();
        cmd.args(["fio", "--no-store", "--keep", "--output-format=json"])
            .args(JOB)
            .arg(format!("--filename={}", path(&img)))
            .args(extra);
        Ran::from(cmd.output().unwrap())
    };
    let r = job(&["--verify_only=1"]).expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("verify_only") && line.contains(&format!("{} does not exist", img.display())),
        "{line}"
    );
    assert!(!img.exists(), "a missing image is not made");
    job(&[]).expect(0);
    let r = job(&["--verify_only=1"]);
    if r.code == 2 && r.stderr.contains("carries no record") {
        // The record is a user xattr (as the image mark is).
        eprintln!(
            "SKIPPED: {} keeps no user xattrs, so an image carries no record",
            dir.path().display()
        );
        return;
    }
    let r = r.expect(0);
    let v = json(&r);
    assert_eq!(v["jobs"][0]["read"]["io_bytes"].as_u64(), Some(1 << 20));
    assert_eq!(v["jobs"][0]["write"]["io_bytes"].as_u64(), Some(0));
    // A block changed underneath (media corruption: the file's time kept).
    let when = std::fs::metadata(&img).unwrap().modified().unwrap();
    let mut data = std::fs::read(&img).unwrap();
    data[7 * 4096 + 9] ^= 0x10;
    std::fs::write(&img, &data).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&img)
        .unwrap()
        .set_modified(when)
        .unwrap();
    let r = job(&["--verify_only=1"]).expect(1);
    assert!(
        r.stderr
            .contains("verify failed for the block at offset 28672"),
        "{}",
        r.stderr
    );
    // Written since (its time moves): the record no longer holds.
    std::fs::write(&img, &data).unwrap();
    let r = job(&["--verify_only=1"]).expect(2);
    assert!(
        error_line(&r).contains("an image's is voided"),
        "{}",
        r.stderr
    );
}
