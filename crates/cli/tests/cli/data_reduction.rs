//! The written data under every compressor and deduplicator (issue 47): whole files
//! written by `iolab run` (two threads, sequential and random, 4 KiB and 128 KiB blocks)
//! compressed by the real lz4, zstd, gzip and xz command lines, whole and record by
//! record, and their 512-byte and 4 KiB units counted at every 512-byte alignment.

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::{peer_on_path, run};

/// The compressors whose window covers a whole test file, and those whose window does not.
const WHOLE_WINDOW: [&[&str]; 1] = [&["zstd", "--long=27", "-3", "-q", "-c", "--no-check"]];
const COMPRESSORS: [&[&str]; 5] = [
    &["lz4", "-q", "-c"],
    &["zstd", "-1", "-q", "-c", "--no-check"],
    &["zstd", "-3", "-q", "-c", "--no-check"],
    &["zstd", "--long=27", "-3", "-q", "-c", "--no-check"],
    &["gzip", "-9", "-c"],
];
/// Slow ones, given a MiB.
const SLOW: [&[&str]; 2] = [
    &["zstd", "-19", "-q", "-c", "--no-check"],
    &["xz", "-c", "-T1"],
];

/// Bytes `cmd` turns `data` into (its stdin fed from a thread, so a full pipe cannot stall).
fn stored(cmd: &[&str], data: &[u8]) -> usize {
    let mut child = Command::new(cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    std::thread::scope(|s| {
        s.spawn(move || stdin.write_all(data).unwrap());
        child.wait_with_output().unwrap().stdout.len()
    })
}

/// `data` over what `cmd` stores of it, whole.
fn whole(cmd: &[&str], data: &[u8]) -> f64 {
    data.len() as f64 / stored(cmd, data) as f64
}

/// `data` over what `cmd` stores of it record by record (`record` bytes, each compressed
/// alone, as a compressing file system stores them; without the frame every output
/// carries, which a file system does not store): 12 records spread over the data.
fn per_record(cmd: &[&str], data: &[u8], record: usize) -> f64 {
    let frame = stored(cmd, b"");
    let records: Vec<&[u8]> = data.chunks_exact(record).collect();
    let step = (records.len() / 12).max(1);
    let (mut bytes, mut out) = (0, 0);
    for r in records.iter().step_by(step) {
        bytes += r.len();
        out += stored(cmd, r) - frame;
    }
    bytes as f64 / out as f64
}

/// `unit`-byte pieces of `data` from `shift` on over the distinct ones among them.
fn over_distinct(data: &[u8], unit: usize, shift: usize) -> f64 {
    let units: Vec<&[u8]> = data[shift..].chunks_exact(unit).collect();
    let distinct: HashSet<&[u8]> = units.iter().copied().collect();
    units.len() as f64 / distinct.len() as f64
}

fn near(got: f64, want: f64) -> bool {
    (got - want).abs() <= want * 0.05
}

/// Writes two 4 MiB files with `rw` and `bs` and `flags` and checks them: every
/// compressor finds `compress` per 4 KiB record, and over the whole file (times `dedupe`
/// for one whose window covers the file, between for the others); the 512-byte and 4 KiB
/// units at their alignment repeat `dedupe` times, 4 KiB units at every other 512-byte
/// alignment not at all.
fn check(rw: &str, bs: &str, flags: &[&str], compress: f64, dedupe: f64, slow: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "run",
        "--no-store",
        "-Q",
        "--dir",
        crate::common::path(dir.path()),
        "--rw",
        rw,
        "--block-size",
        bs,
        "--size",
        "4MiB",
        "--threads",
        "2",
        "--keep",
    ];
    if rw == "randwrite" {
        // Every block once: a uniform draw leaves holes of zeros.
        args.extend(["--random", "full-coverage"]);
    }
    args.extend(flags);
    run(&args).expect(0);
    let work = dir.path().join("iolab-work");
    let one = fs::read(work.join("data.r0.t0")).unwrap();
    let mut both = one.clone();
    both.extend(fs::read(work.join("data.r0.t1")).unwrap());
    assert_eq!(both.len(), 8 << 20);
    let case = format!("{rw} {bs} {flags:?}");
    for cmd in COMPRESSORS {
        let r = per_record(cmd, &one, 4096);
        assert!(near(r, compress), "{case}: {cmd:?} per 4 KiB record {r:.3}");
        let w = whole(cmd, &one);
        if dedupe == 1.0 || WHOLE_WINDOW.contains(&cmd) {
            assert!(near(w, compress * dedupe), "{case}: {cmd:?} whole {w:.3}");
        } else {
            let (lo, hi) = (compress * 0.95, compress * dedupe * 1.05);
            assert!(lo <= w && w <= hi, "{case}: {cmd:?} whole {w:.3}");
        }
        if dedupe == 1.0 {
            let r = per_record(cmd, &one, 1 << 20);
            assert!(near(r, compress), "{case}: {cmd:?} per 1 MiB record {r:.3}");
        }
    }
    if slow {
        for cmd in SLOW {
            let w = whole(cmd, &one[..1 << 20]);
            assert!(near(w, compress), "{case}: {cmd:?} over 1 MiB {w:.3}");
        }
    }
    let small = over_distinct(&both, 512, 0);
    assert!(near(small, dedupe), "{case}: 512-byte units {small:.3}");
    for shift in (0..4096).step_by(512) {
        let want = if shift == 0 { dedupe } else { 1.0 };
        let got = over_distinct(&both, 4096, shift);
        assert!(near(got, want), "{case}: 4 KiB units at {shift}: {got:.3}");
    }
}

/// The cases of the table: the default, three compress ratios, two dedupe
/// ratios and both together (the slow compressors on the default and a compress ratio).
fn table(rw: &str) {
    let tools = [("lz4", "-V"), ("zstd", "-V"), ("gzip", "-V"), ("xz", "-V")];
    if !tools.iter().all(|(t, a)| peer_on_path(t, a)) {
        return;
    }
    for bs in ["4KiB", "128KiB"] {
        let slow = bs == "128KiB";
        check(rw, bs, &[], 1.0, 1.0, slow);
        for r in ["1.5", "2", "4"] {
            let flags = ["--compress-ratio", r];
            check(rw, bs, &flags, r.parse().unwrap(), 1.0, slow && r == "2");
        }
        for r in ["2", "4"] {
            check(
                rw,
                bs,
                &["--dedupe-ratio", r],
                1.0,
                r.parse().unwrap(),
                false,
            );
        }
        let flags = ["--compress-ratio", "2", "--dedupe-ratio", "2"];
        check(rw, bs, &flags, 2.0, 2.0, false);
    }
}

#[test]
fn sequential_files_hold_the_asked_ratios_under_every_compressor() {
    table("write");
}

#[test]
fn random_files_hold_the_asked_ratios_under_every_compressor() {
    table("randwrite");
}

/// A dedupe unit that is no multiple of 512 bytes, or larger than a write, or a ratio
/// below 1: one line naming the option, exit 2, nothing written.
#[test]
fn a_bad_dedupe_unit_or_ratio_is_one_line_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    for (flags, option, words) in [
        (
            &["--dedupe-unit", "1000"][..],
            "--dedupe-unit",
            "multiple of 512",
        ),
        (
            &["--dedupe-unit", "8KiB"][..],
            "--dedupe-unit",
            "larger than the block size 4KiB",
        ),
        (
            &["--dedupe-unit", "0"][..],
            "--dedupe-unit",
            "multiple of 512",
        ),
    ] {
        let mut args = vec![
            "run",
            "--no-store",
            "--dir",
            crate::common::path(dir.path()),
            "--rw",
            "write",
            "--size",
            "1MiB",
            "--block-size",
            "4KiB",
            "--dedupe-ratio",
            "2",
        ];
        args.extend(flags);
        let line = crate::common::error_line(&run(&args).expect(2));
        assert!(
            line.contains(option) && line.contains(words),
            "{flags:?}: {line}"
        );
    }
    let mut args = vec![
        "run",
        "--no-store",
        "--dir",
        crate::common::path(dir.path()),
        "--rw",
        "write",
        "--size",
        "1MiB",
        "--dedupe-ratio",
        "0.5",
        "--dedupe-unit",
        "4KiB",
    ];
    let line = crate::common::error_line(&run(&args).expect(2));
    assert!(
        line.contains("--dedupe-ratio") && line.contains("below 1"),
        "{line}"
    );
    // The unit goes with a dedupe ratio only.
    args.truncate(8);
    args.extend(["--dedupe-unit", "4KiB"]);
    run(&args).expect(2);
    assert!(
        !dir.path().join("iolab-work").exists(),
        "nothing was written"
    );
}
