//! `iolab run`: what it writes, what it leaves behind, what it says about bad input.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::common::{Ran, iolab, path, run};

pub(crate) fn json(file: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(file).expect("json written")).expect("valid json")
}

pub(crate) fn op<'a>(j: &'a serde_json::Value, phase: usize, op: &str) -> &'a serde_json::Value {
    j["phases"][phase]["ops"]
        .as_array()
        .expect("ops")
        .iter()
        .find(|o| o["op"] == op)
        .unwrap_or_else(|| panic!("no {op} in phase {phase}"))
}

#[test]
fn a_write_moves_every_byte_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let r = run(&[
        "run",
        "--dir",
        path(dir.path()),
        "--rw",
        "write",
        "--block-size",
        "64KiB",
        "--size",
        "2MiB",
        "--threads",
        "2",
        "--fsync-at-end",
        "--json",
        path(&out),
    ])
    .expect(0);
    assert!(r.stdout.contains("write-64KiB"), "{}", r.stdout);
    let j = json(&out);
    assert_eq!(j["schema"], "iolab.run/1");
    assert_eq!(j["status"], "complete");
    let w = op(&j, 0, "write");
    assert_eq!(w["ops"], 64);
    assert_eq!(w["bytes"], 4 << 20);
    assert_eq!(op(&j, 0, "fsync")["ops"], 2);
    assert_eq!(j["phases"][0]["workers"], 2);
    // Nothing of iolab's is left: only the JSON the user asked for.
    let left: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("r.json")]);
}

#[test]
fn written_blocks_never_repeat_within_a_record() {
    // A compressing file system (ZFS, btrfs) compresses each record (128 KiB by
    // default) alone: the data of any two 4 KiB blocks of a record must differ
    // everywhere, not only in a stamp, or the record shrinks.
    let dir = tempfile::tempdir().unwrap();
    run(&[
        "run",
        "--dir",
        path(dir.path()),
        "--rw",
        "write",
        "--size",
        "1MiB",
        "--keep",
    ])
    .expect(0);
    let data = fs::read(dir.path().join("iolab-work/data.r0.t0")).unwrap();
    assert_eq!(data.len(), 1 << 20);
    for record in data.chunks(128 << 10) {
        let mut tails: Vec<&[u8]> = record.chunks(4096).map(|b| &b[64..]).collect();
        tails.sort();
        tails.dedup();
        assert_eq!(tails.len(), 32, "blocks of a record repeat each other");
        // Not even 64 bytes at the same place of two blocks agree.
        let mut pieces: Vec<&[u8]> = record.chunks(4096).map(|b| &b[1024..1088]).collect();
        pieces.sort();
        pieces.dedup();
        assert_eq!(pieces.len(), 32);
    }
}

#[test]
fn buffered_reads_the_page_cache_may_serve_carry_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let warnings = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--dir",
            path(dir.path()),
            "--rw",
            "read",
            "--size",
            "1MiB",
            "--json",
            path(&out),
        ];
        args.extend_from_slice(extra);
        run(&args).expect(0);
        let j: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&out).unwrap()).unwrap();
        j["phases"][0]["warnings"].to_string()
    };
    // Time based: blocks are read again from the page cache.
    assert!(warnings(&["--runtime", "1s"]).contains("the page cache may be serving them"));
    assert!(warnings(&["--cache", "hot"]).contains("the page cache may be serving them"));
    // Dropped from the cache first and each block read once: the storage answers.
    assert!(!warnings(&["--cache", "cold"]).contains("page cache may"));
}

#[test]
fn keep_leaves_the_files_and_a_later_read_reuses_them() {
    let dir = tempfile::tempdir().unwrap();
    run(&[
        "run",
        "--dir",
        path(dir.path()),
        "--rw",
        "write",
        "--size",
        "1MiB",
        "--threads",
        "2",
        "--keep",
    ])
    .expect(0);
    let work = dir.path().join("iolab-work");
    for t in 0..2 {
        assert_eq!(
            fs::metadata(work.join(format!("data.r0.t{t}")))
                .unwrap()
                .len(),
            1 << 20
        );
    }
    let before = fs::metadata(work.join("data.r0.t0"))
        .unwrap()
        .modified()
        .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let out = dir.path().join("read.json");
    run(&[
        "run",
        "--dir",
        path(dir.path()),
        "--rw",
        "read",
        "--size",
        "1MiB",
        "--threads",
        "2",
        "--json",
        path(&out),
    ])
    .expect(0);
    assert_eq!(op(&json(&out), 0, "read")["bytes"], 2 << 20);
    // Read from the kept files without laying them out again, then removed.
    assert!(
        !work.exists(),
        "the work directory is removed after a run without --keep"
    );
    let _ = before;
}

#[test]
fn verify_reports_a_corrupted_block_with_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    run(&[
        "run", "--dir", d, "--rw", "write", "--size", "256KiB", "--verify", "--keep",
    ])
    .expect(0);
    let file = dir.path().join("iolab-work/data.r0.t0");
    let mut data = fs::read(&file).unwrap();
    data[3 * 4096 + 100] ^= 1;
    fs::write(&file, data).unwrap();
    let r = run(&[
        "run",
        "--dir",
        d,
        "--rw",
        "randread",
        "--random",
        "full-coverage",
        "--size",
        "256KiB",
        "--verify",
    ])
    .expect(1);
    assert!(
        r.stdout.contains("VERIFY FAILURES: 1 block"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("checksum mismatch"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains(&format!("offset 12288 in {}", file.display())),
        "the failure names file and offset:\n{}",
        r.stdout
    );
    assert!(r.stderr.contains("failed validation"), "{}", r.stderr);
    assert!(!r.stdout.contains(" more\n"), "one failure, all shown");
}

/// Eight corrupted blocks: five are shown with file and offset, and the report says how
/// many more there are instead of stopping silently.
#[test]
fn a_verify_report_cut_short_says_how_many_more() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    run(&[
        "run", "--dir", d, "--rw", "write", "--size", "256KiB", "--verify", "--keep",
    ])
    .expect(0);
    let file = dir.path().join("iolab-work/data.r0.t0");
    let mut data = fs::read(&file).unwrap();
    for block in 0..8 {
        data[block * 4096 + 100] ^= 1;
    }
    fs::write(&file, data).unwrap();
    let r = run(&[
        "run", "--dir", d, "--rw", "read", "--size", "256KiB", "--verify",
    ])
    .expect(1);
    assert!(
        r.stdout.contains("VERIFY FAILURES: 8 blocks"),
        "{}",
        r.stdout
    );
    assert_eq!(
        r.stdout.matches("checksum mismatch").count(),
        5,
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("    and 3 more\n"), "{}", r.stdout);
}

#[test]
fn ctrl_c_keeps_the_partial_result_cleans_up_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("partial.json");
    let child = iolab()
        .args([
            "run",
            "--dir",
            path(dir.path()),
            "--rw",
            "randread",
            "--size",
            "4MiB",
            "--runtime",
            "60s",
            "--json",
            path(&out),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the phase runs (the work directory exists and the file is laid out).
    let file = dir.path().join("iolab-work/data.r0.t0");
    for _ in 0..100 {
        if fs::metadata(&file)
            .map(|m| m.len() == 4 << 20)
            .unwrap_or(false)
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let pid = child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let r = Ran::from(child.wait_with_output().unwrap()).expect(130);
    assert!(r.stdout.contains("[interrupted]"), "{}", r.stdout);
    let j = json(&out);
    assert_eq!(j["status"], "interrupted");
    assert!(op(&j, 0, "read")["ops"].as_u64().unwrap() > 0);
    assert!(
        !dir.path().join("iolab-work").exists(),
        "cleaned up after Ctrl-C"
    );
}

#[test]
fn the_null_backend_needs_no_target() {
    let r = run(&[
        "run",
        "--backend",
        "null",
        "--rw",
        "randread",
        "--size",
        "64MiB",
    ])
    .expect(0);
    assert!(r.stdout.contains("16384 I/Os"), "{}", r.stdout);
}
