//! `iolab study`: every preset plans, a study file runs end to end with every phase
//! stored, and bad study files get one-line errors with file and line.

use std::fs;

use crate::common::{Ran, error_line, iolab, path, run};

#[test]
fn every_preset_plans() {
    let list = run(&["study", "list"]).expect(0);
    for preset in ["quick", "nfs", "zfs-matrix", "hci"] {
        assert!(list.stdout.contains(preset), "{}", list.stdout);
        let r = run(&["study", "plan", preset]).expect(0);
        assert!(
            r.stdout.contains(" phases; needs "),
            "{preset}:\n{}",
            r.stdout
        );
    }
    let nfs = run(&["study", "plan", "nfs"]).expect(0);
    // 7 thread counts x (write, read) x (sequential, random), and the metadata table at
    // 1..32 threads.
    assert!(nfs.stdout.contains("34 phases"), "{}", nfs.stdout);
    assert!(nfs.stdout.contains("threads=64"), "{}", nfs.stdout);
    let zfs = run(&["study", "plan", "zfs-matrix"]).expect(0);
    // {128k, 4k} x {1, 64} x (4 writes + 2 reads).
    assert!(zfs.stdout.contains("24 phases"), "{}", zfs.stdout);
}

/// `study plan` shows each phase as it will run: `--set` values as set, `--scale` applied
/// to the preset's own values, and metadata phases by their files and directories (they
/// used to show as "0 B").
#[test]
fn plan_shows_the_resolved_values_of_every_phase() {
    let r = run(&[
        "study",
        "plan",
        "nfs",
        "--scale",
        "0.01",
        "--set",
        "files_per_dir=300",
    ])
    .expect(0);
    let row = |n: &str| {
        r.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{n} ")))
            .unwrap_or_else(|| panic!("no row {n}:\n{}", r.stdout))
            .to_string()
    };
    // Row 1: S1's sequential write at 1 thread, 1 MiB, 2 TB scaled to 20 GB.
    assert!(row("1").contains("write 1MiB x1 qd1"), "{}", row("1"));
    // The metadata table at 2 threads: 960,000 files scaled to 9,600, 300 per directory
    // (as set, not scaled to 3): 16 directories per thread, 32 directories in all.
    let md = row("30");
    assert!(md.contains("threads=2"), "{md}");
    assert!(md.contains("9600 files in 32 dirs, x2"), "{md}");
    let hci = run(&["study", "plan", "hci", "--scale", "0.01"]).expect(0);
    assert!(
        hci.stdout.contains("randrw 90%r 4KiB x8 qd8 for 9s"),
        "{}",
        hci.stdout
    );
    let odd = run(&[
        "study",
        "plan",
        "nfs",
        "--scale",
        "0.01",
        "--set",
        "files_per_dir=3000",
    ])
    .expect(0);
    assert!(
        odd.stdout.contains("note on #34: --total-files 9600 does not divide into 3000 files per directory for 32 threads: 1 directories per thread make 96000 files"),
        "{}",
        odd.stdout
    );
}

const MINI: &str = r#"
name = "mini"
repeat = 2
[[sweep]]
name = "sequential"
over = { threads = [1, 2] }
[sweep.defaults]
block_size = "64KiB"
total_size = "2MiB"
[[sweep.phase]]
name = "seq-write"
rw = "write"
[[sweep.phase]]
name = "seq-read"
rw = "read"
"#;

#[test]
fn a_study_file_runs_and_stores_every_phase() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mini.toml");
    fs::write(&file, MINI).unwrap();
    let work = dir.path().join("work");
    fs::create_dir(&work).unwrap();
    let db = dir.path().join("r.db");
    let out = dir.path().join("s.json");
    let r = Ran::from(
        iolab()
            .args([
                "study",
                "run",
                path(&file),
                "--dir",
                path(&work),
                "--label",
                "v1",
                "--json",
                path(&out),
            ])
            .env("IOLAB_DB", &db)
            .output()
            .unwrap(),
    )
    .expect(0);
    // Four phase headers, and four rows in the closing summary.
    let headers = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("seq-read  ("))
        .count();
    assert_eq!(headers, 4, "{}", r.stdout);
    let rows = r
        .stdout
        .lines()
        .filter(|l| l.contains("  seq-read  "))
        .count();
    assert_eq!(rows, 4, "{}", r.stdout);
    assert!(r.stdout.contains("study mini stored as r1"), "{}", r.stdout);
    let j: serde_json::Value = serde_json::from_str(&fs::read_to_string(&out).unwrap()).unwrap();
    let phases = j["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 8);
    assert_eq!(phases[0]["params"]["threads"], "1");
    assert_eq!(phases[7]["params"]["threads"], "2");
    assert_eq!(phases[7]["repetition"], 1);
    for p in phases {
        assert_eq!(p["ops"][0]["bytes"], 2 << 20, "{}", p["name"]);
    }
    assert_eq!(j["kind"], "study");
    assert_eq!(j["label"], "v1");
    assert_eq!(
        fs::read_dir(&work).unwrap().count(),
        0,
        "the study cleaned up"
    );
}

const MINI_META: &str = r#"
name = "mini-md"
[defaults]
block_size = "64KiB"
direct = false
[[sweep]]
name = "metadata"
over = { threads = [1, 2] }
[[sweep.phase]]
name = "md"
kind = "meta"
files_per_dir = 10
total_files = 40
file_size = 100
ops = "create,stat,read,remove"
"#;

#[test]
fn a_study_runs_metadata_phases_one_result_per_operation() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("md.toml");
    fs::write(&file, MINI_META).unwrap();
    // {rank} in --dir: rank 0 of one works in w0.
    let work = dir.path().join("w0");
    fs::create_dir(&work).unwrap();
    let out = dir.path().join("s.json");
    let r = run(&[
        "study",
        "run",
        path(&file),
        "--dir",
        path(&dir.path().join("w{rank}")),
        "--no-store",
        "--json",
        path(&out),
    ])
    .expect(0);
    let headers = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("md-read  ("))
        .count();
    assert_eq!(headers, 2, "{}", r.stdout);
    // The header counts the two planned phases and the eight results they print.
    assert!(
        r.stderr.contains(
            ": 2 phases (8 results: a metadata or S3 phase prints one per operation), about"
        ),
        "{}",
        r.stderr
    );
    let j: serde_json::Value = serde_json::from_str(&fs::read_to_string(&out).unwrap()).unwrap();
    let phases = j["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "md-create",
            "md-stat",
            "md-read",
            "md-remove",
            "md-create",
            "md-stat",
            "md-read",
            "md-remove"
        ]
    );
    for (i, p) in phases.iter().enumerate() {
        // 40 files at either thread count: 4 directories of 10 for one thread, 2 each
        // for two.
        assert_eq!(p["ops"][0]["ops"], 40, "{}", p["name"]);
        assert_eq!(p["params"]["threads"], if i < 4 { "1" } else { "2" });
    }
    assert_eq!(phases[0]["ops"][0]["bytes"], 4000);
    assert_eq!(phases[2]["ops"][0]["bytes"], 4000);
    // 4000 bytes just written by this host: the page cache serves them, and the result
    // says so.
    let read_warnings = phases[2]["warnings"].to_string();
    assert!(
        read_warnings.contains("the page cache may be serving them"),
        "{read_warnings}"
    );
    assert_eq!(phases[1]["warnings"].as_array().map_or(0, Vec::len), 0);
    assert_eq!(
        fs::read_dir(&work).unwrap().count(),
        0,
        "the study removed its trees"
    );
}

#[test]
fn a_bad_study_file_is_named_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    fs::write(
        &file,
        MINI.replace("rw = \"read\"", "rw = \"read\"\nqueue_deph = 4"),
    )
    .unwrap();
    let r = run(&["study", "plan", path(&file)]).expect(2);
    assert_eq!(
        error_line(&r),
        format!(
            "iolab: error: {}:16: unknown option `queue_deph` (the options are those of `iolab run` and `iolab meta`, in snake_case: block_size, queue_depth, ...)",
            file.display()
        )
    );
    let r = run(&["study", "plan", "no-such-study"]).expect(2);
    assert!(
        error_line(&r).contains("'no-such-study' is neither a preset"),
        "{}",
        r.stderr
    );
}

/// A phase's block_align larger than a worker's share ran as `run` did (no I/O, 0 B/s):
/// refused as `run` refuses it, naming the phase, before any phase runs. Here 2 MiB
/// fills the share of one thread (it runs) but not of two (1 MiB each).
#[test]
fn a_study_block_alignment_larger_than_the_share_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("align.toml");
    let aligned = "rw = \"randread\"\nblock_align = \"2MiB\"";
    fs::write(&file, MINI.replace("rw = \"read\"", aligned)).unwrap();
    let work = dir.path().join("work");
    fs::create_dir(&work).unwrap();
    let r = run(&[
        "study",
        "run",
        path(&file),
        "--dir",
        path(&work),
        "--no-store",
    ])
    .expect(2);
    assert_eq!(
        error_line(&r),
        format!(
            "iolab: error: {}: sweep 'sequential', phase 'seq-read': --block-align: 2MiB is larger than the 1MiB each worker draws its random offsets in, so no I/O would fit; use at most 1MiB",
            file.display()
        )
    );
    assert_eq!(r.stdout, "");
    assert_eq!(fs::read_dir(&work).unwrap().count(), 0);
}

#[test]
fn a_study_larger_than_the_target_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&["study", "run", "nfs", "--dir", path(dir.path())]).expect(2);
    let line = error_line(&r);
    assert!(line.contains("the study needs 1.82 TiB in"), "{line}");
    assert!(
        line.ends_with("use --scale or --set size=... to make it smaller"),
        "{line}"
    );
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn plan_refuses_assumed_rates_of_zero() {
    for (option, value) in [
        ("--assume-bandwidth", "0"),
        ("--assume-iops", "0"),
        ("--assume-iops", "-5"),
        ("--assume-iops", "inf"),
        ("--assume-iops", "NaN"),
    ] {
        let r = run(&["study", "plan", "quick", &format!("{option}={value}")]).expect(2);
        assert_eq!(
            error_line(&r),
            format!("iolab: error: {option} must be more than 0"),
            "{option}={value}"
        );
    }
    run(&["study", "plan", "quick", "--assume-iops=0.5"]).expect(0);
    let r = run(&["study", "plan", "quick", "--ranks", "0"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: --ranks must be at least 1 and at most 1048576"
    );
}

#[test]
fn set_keys_are_checked_against_the_options_and_the_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mini.toml");
    fs::write(&file, MINI).unwrap();
    let r = run(&["study", "plan", path(&file), "--set", "blocksize=64KiB"]).expect(2);
    assert!(
        error_line(&r).starts_with(
            "iolab: error: --set: unknown option `blocksize` (did you mean `block_size`?)"
        ),
        "{}",
        r.stderr
    );
    // A swept key set on the command line replaces the sweep's values.
    let r = run(&["study", "plan", path(&file), "--set", "threads=[4,8]"]).expect(0);
    assert!(r.stdout.contains("threads=8"), "{}", r.stdout);
    assert!(!r.stdout.contains("threads=1 "), "{}", r.stdout);
    let r = run(&["study", "plan", path(&file), "--set", "queue_depth=[4,8]"]).expect(2);
    assert!(
        error_line(&r).starts_with("iolab: error: --set: `queue_depth` is given a list"),
        "{}",
        r.stderr
    );
    let r = run(&["study", "plan", path(&file), "--set", "queue_depth=4"]).expect(0);
    assert!(r.stdout.contains("threads=2"), "{}", r.stdout);
}

/// S3's six phases (block size x read share, the all-read mix included) print headers that name their point, and
/// the run ends with one table of every phase's headline figures, total IOPS of the
/// mixed phases included. (On the null backend its 2 MiB writes used to panic a worker:
/// its buffers were capped at 1 MiB.)
#[test]
fn a_study_names_each_point_and_ends_with_a_summary_table() {
    let dir = tempfile::tempdir().unwrap();
    let r = Ran::from(
        iolab()
            .args([
                "study",
                "run",
                "hci",
                "--scale",
                "0.001",
                "--set",
                "backend=null",
                "--units",
                "decimal",
            ])
            .args(["--dir", path(dir.path())])
            .env("IOLAB_DB", dir.path().join("db"))
            .output()
            .unwrap(),
    )
    .expect(0);
    let headers: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("randrw  ("))
        .collect();
    assert_eq!(headers.len(), 6, "{}", r.stdout);
    for (h, point) in headers.iter().zip([
        "(4KiB, 100% reads,",
        "(4KiB, 90% reads,",
        "(4KiB, 70% reads,",
        "(2MiB, 100% reads,",
        "(2MiB, 90% reads,",
        "(2MiB, 70% reads,",
    ]) {
        assert!(h.contains(point), "{h}");
    }
    let summary = &r.stdout[r.stdout.find("study hci: every phase").expect("a summary")..];
    let rows: Vec<&str> = summary
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(rows.len(), 6, "{summary}");
    assert!(
        rows[0].starts_with("1  randrw  4KiB, 100% reads"),
        "{}",
        rows[0]
    );
    // The all-read phases have one figure; a mixed phase's headline is its total IOPS,
    // then each operation: 4 KiB quoted in IOPS, 2 MiB in bandwidth.
    assert!(
        rows[0].ends_with(" IOPS") && !rows[0].contains("total"),
        "{}",
        rows[0]
    );
    assert!(
        rows[3].ends_with("/s") && !rows[3].contains("total"),
        "{}",
        rows[3]
    );
    for mixed in [1, 2, 4, 5] {
        let result = rows[mixed]
            .split("file-per-thread ")
            .nth(1)
            .unwrap_or("")
            .trim_start();
        assert!(
            result.starts_with("total ") && result.contains(" IOPS, read "),
            "{}",
            rows[mixed]
        );
    }
    assert!(
        rows[1].ends_with(" IOPS") && rows[1].contains(" IOPS, write "),
        "{}",
        rows[1]
    );
    assert!(
        rows[4].ends_with("/s") && rows[4].contains("/s, write "),
        "{}",
        rows[4]
    );
    // --units decimal: the summary's bandwidth in GB/s or TB/s, not GiB/s.
    assert!(
        rows[3].ends_with("B/s") && !rows[3].contains("iB/s"),
        "{}",
        rows[3]
    );
    // Each mixed phase's block ends with read and write together.
    assert_eq!(
        r.stdout
            .lines()
            .filter(|l| l.starts_with("  total   IOPS ") && l.ends_with("  read + write"))
            .count(),
        4,
        "{}",
        r.stdout
    );
}
