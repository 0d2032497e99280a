//! Every ior and mdtest command line a real io500 (isc26) writes into its result.txt,
//! run unchanged but for the paths and the sizes, one after another as IO500 runs them,
//! through `iolab ior` and `iolab mdtest`: each exits 0 and does what the line says.

use std::fs;
use std::path::Path;

use crate::common::{Ran, iolab, path};

/// The `exe = ...` lines of a real `io500 --dry-run` (compat's fixture).
fn io500_lines() -> Vec<String> {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../compat/tests/fixtures/io500/io500-isc26-dry-run-exe.txt");
    fs::read_to_string(fixture)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once("= ").map(|(_, exe)| exe.trim().to_string()))
        .collect()
}

/// A line with its paths moved under `data` and `results`, and its sizes made small.
fn localize(line: &str, data: &Path, results: &Path) -> Vec<String> {
    let line = line
        .replace("/scratch/2026.11.25-06.19.26", path(data))
        .replace("./results/2026.11.25-06.19.26", path(results));
    let mut words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    for i in 0..words.len() {
        let w = words[i].clone();
        words[i] = match (w.as_str(), words.get(i.wrapping_sub(1)).map(String::as_str)) {
            ("9920000m", Some("-b")) => "4m".into(),
            ("10000000", Some("-s")) => "20".into(),
            ("1000000", Some("-n")) => "40".into(),
            ("-s=10000000", _) => "-s=20".into(),
            _ => w,
        };
    }
    words
}

fn run_line(words: &[String], db: &Path) -> Ran {
    let tool = words[0].trim_start_matches("./");
    Ran::from(
        iolab()
            .env("IOLAB_DB", db)
            .arg(tool)
            .args(&words[1..])
            .output()
            .unwrap(),
    )
}

/// The "Summary of all tests:" row of `access`: its aggregate size in MiB.
fn aggregate_mib(out: &str, access: &str) -> f64 {
    let start = out.find("Summary of all tests:").expect("a summary");
    let row: Vec<&str> = out[start..]
        .lines()
        .find(|l| l.starts_with(access))
        .unwrap_or_else(|| panic!("no {access} row in\n{out}"))
        .split_whitespace()
        .collect();
    row[24].parse().unwrap()
}

#[test]
fn every_ior_and_mdtest_line_io500_writes_runs_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let (data, results) = (dir.path().join("data"), dir.path().join("results"));
    for d in ["ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard"] {
        fs::create_dir_all(data.join(d)).unwrap();
    }
    fs::create_dir_all(&results).unwrap();
    let db = dir.path().join("db");
    let lines = io500_lines();
    assert_eq!(lines.len(), 13, "{lines:?}");
    let mut ran = Vec::new();
    for line in &lines {
        let words = localize(line, &data, &results);
        if words[0] == "./pfind" {
            continue;
        }
        let r = run_line(&words, &db);
        assert_eq!(r.code, 0, "{}\n{}\n{}", words.join(" "), r.stdout, r.stderr);
        ran.push((words, r.stdout));
    }
    assert_eq!(ran.len(), 12);
    // ior-easy: a 4 MiB block per rank written and read back (-R checks every word);
    // ior-hard: 20 segments of 47008 bytes.
    let out = |i: usize| ran[i].1.as_str();
    assert_eq!(aggregate_mib(out(0), "write"), 4.0);
    assert_eq!(aggregate_mib(out(4), "read"), 4.0);
    let hard = 20.0 * 47008.0 / 1048576.0;
    assert!((aggregate_mib(out(2), "write") - hard).abs() < 0.1);
    assert!((aggregate_mib(out(6), "read") - hard).abs() < 0.1);
    // The random 4 KiB read draws over what ior-easy wrote.
    assert!(aggregate_mib(out(11), "read") > 0.0);
    // mdtest: each call's own phase in its SUMMARY (create, stat, remove; hard also
    // read with -X), 40 items per rank.
    for (i, op) in [
        (1, "File creation"),
        (3, "File creation"),
        (5, "File stat"),
        (7, "File stat"),
        (8, "File removal"),
        (9, "File read"),
        (10, "File removal"),
    ] {
        assert!(
            out(i).contains("SUMMARY") && out(i).lines().any(|l| l.trim_start().starts_with(op)),
            "{}: no {op}\n{}",
            ran[i].0.join(" "),
            out(i)
        );
    }
    // The stonewall status files the write calls left for the reads, and the per-rank
    // CSV files of every call.
    assert_eq!(
        fs::read_to_string(results.join("ior-hard.stonewall")).unwrap(),
        "20"
    );
    for csv in ["ior-easy-write", "mdtest-hard-read", "ior-rnd4K-easy-read"] {
        assert!(results.join(format!("{csv}.csv")).is_file(), "{csv}.csv");
    }
}
