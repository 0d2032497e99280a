//! Bad input from a user with a typo, across commands: one line naming the option or the
//! file, exit 2, never a panic (non-UTF-8 arguments, ...).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::common::{Ran, iolab, path};

fn run_os(args: &[&OsStr]) -> Ran {
    Ran::from(iolab().args(args).output().expect("iolab runs"))
}

/// Bytes that are not UTF-8 (a Latin-1 "é" and 0xFF) as one argument.
fn latin1(prefix: &str) -> std::ffi::OsString {
    let mut b = prefix.as_bytes().to_vec();
    b.extend_from_slice(b"caf\xe9\xff");
    OsStr::from_bytes(&b).to_os_string()
}

#[test]
fn a_non_utf8_value_names_its_option() {
    let dir = tempfile::tempdir().unwrap();
    let d = OsStr::new(path(dir.path()));
    for (option, expected) in [
        (
            "--label",
            "iolab: error: --label: 'caf\\xe9\\xff' is not valid UTF-8",
        ),
        ("-b", "iolab: error: -b: 'caf\\xe9\\xff' is not valid UTF-8"),
        (
            "--rw",
            "iolab: error: invalid value 'caf\u{fffd}\u{fffd}' for '--rw <RW>'",
        ),
    ] {
        let bad = latin1("");
        let r = run_os(&["run".as_ref(), "--dir".as_ref(), d, option.as_ref(), &bad]).expect(2);
        assert!(
            r.error_line().starts_with(expected),
            "{option}: {}",
            r.stderr
        );
    }
    // `--label=VALUE` in one argument.
    let r = run_os(&["run".as_ref(), &latin1("--label=")]).expect(2);
    assert_eq!(
        r.error_line(),
        "iolab: error: --label: 'caf\\xe9\\xff' is not valid UTF-8"
    );
}

/// A path option takes any bytes (a path is not text); the run's provenance, the live
/// page's name and the error messages carry it with U+FFFD instead of panicking.
#[test]
fn a_non_utf8_path_is_used_or_refused_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut missing = dir.path().as_os_str().as_bytes().to_vec();
    missing.extend_from_slice(b"/caf\xe9");
    let missing = OsStr::from_bytes(&missing);
    let r = run_os(&[
        "run".as_ref(),
        "--dir".as_ref(),
        missing,
        "--size".as_ref(),
        "64KiB".as_ref(),
    ])
    .expect(2);
    assert!(
        r.error_line()
            .ends_with("/caf\u{fffd} does not exist; create it first or choose another directory"),
        "{}",
        r.stderr
    );
    std::fs::create_dir(missing).unwrap();
    let r = run_os(&[
        "run".as_ref(),
        "--dir".as_ref(),
        missing,
        "--size".as_ref(),
        "64KiB".as_ref(),
        "--rw".as_ref(),
        "write".as_ref(),
        "-Q".as_ref(),
    ])
    .expect(0);
    assert_eq!(r.stderr, "");
    let shown = iolab()
        .args(["results", "show", "1", "--format", "json"])
        .output()
        .unwrap();
    let shown = Ran::from(shown).expect(0);
    assert!(shown.stdout.contains("caf\u{fffd}"), "{}", shown.stdout);
}

/// A duration that fits in u64 nanoseconds but not added to the start of a run: the
/// worker thread panicked computing its deadline.
#[test]
fn a_duration_of_centuries_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    let r = crate::common::run(&[
        "run",
        "--dir",
        d,
        "--size",
        "64KiB",
        "--runtime",
        "18446744073s",
    ])
    .expect(2);
    assert_eq!(
        r.error_line(),
        "iolab: error: invalid value '18446744073s' for '--runtime <RUNTIME>': duration '18446744073s' is longer than 100 years, the longest iolab takes"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// The plans multiplied sizes by threads and ranks unchecked: `--ranks 4294967295`,
/// `--set size=15EiB --set threads=1000` and `--ior-hard-segments 2^64-1` panicked with
/// an overflow (debug) or wrapped to a small need (release).
#[test]
fn plans_of_huge_sizes_and_rank_counts_do_not_overflow() {
    let r = crate::common::run(&["study", "plan", "quick", "--ranks", "4294967295"]).expect(2);
    assert_eq!(
        r.error_line(),
        "iolab: error: --ranks must be at least 1 and at most 1048576"
    );
    let r = crate::common::run(&["io500", "plan", "--dir", "/tmp", "--ranks", "1048577"]).expect(2);
    assert_eq!(
        r.error_line(),
        "iolab: error: --ranks must be at least 1 and at most 1048576"
    );
    let r = crate::common::run(&[
        "study",
        "plan",
        "quick",
        "--set",
        "size=15EiB",
        "--set",
        "threads=1000",
    ])
    .expect(0);
    assert!(
        r.stdout
            .contains("5 phases; needs 16.0 EiB of free space at most"),
        "{}",
        r.stdout
    );
    let dir = tempfile::tempdir().unwrap();
    let r = crate::common::run(&[
        "study",
        "run",
        "quick",
        "--set",
        "size=15EiB",
        "--set",
        "threads=4",
        "--dir",
        path(dir.path()),
        "--no-store",
    ])
    .expect(2);
    assert!(
        r.error_line()
            .starts_with("iolab: error: the study needs 16.0 EiB in "),
        "{}",
        r.stderr
    );
    let r = crate::common::run(&[
        "io500",
        "plan",
        "--dir",
        "/tmp",
        "--ior-hard-segments",
        "18446744073709551615",
    ])
    .expect(2);
    assert_eq!(
        r.error_line(),
        "iolab: error: --ior-hard-segments: 18446744073709551615 segments of 47008 bytes are more than 16 EiB"
    );
}

/// `checkpoint --plan` looped per rank and per layer (4294967295 of them ran for hours)
/// and multiplied hidden and vocabulary sizes unchecked (2^64-1 panicked).
#[test]
fn a_checkpoint_model_beyond_any_machine_is_refused() {
    for (args, expected) in [
        (
            vec!["--ranks", "4294967295"],
            "--ranks: 4294967295 is more than 65536",
        ),
        (
            vec!["--num-layers", "4294967295"],
            "--num-layers: 4294967295 is more than 4096",
        ),
        (
            vec!["--hidden-size", "18446744073709551615"],
            "--hidden-size: 18446744073709551615 is more than 1048576",
        ),
        (
            vec!["--vocab-size", "18446744073709551615"],
            "--vocab-size: 18446744073709551615 is more than 16777216",
        ),
        (
            vec!["--tp", "256", "--pp", "256", "--dp", "2"],
            "--tp: tp x pp x dp = 131072 is more than 65536 ranks",
        ),
        (
            vec!["--attention-heads", "1", "--kv-heads", "8"],
            "--kv-heads: 8 is more than the 1 attention heads",
        ),
    ] {
        let mut all = vec!["checkpoint", "--plan", "--dir", "/tmp"];
        all.extend(&args);
        let r = crate::common::run(&all).expect(2);
        assert_eq!(
            r.error_line(),
            format!("iolab: error: {expected}"),
            "{args:?}"
        );
    }
    // The largest model the limits allow is planned, its bytes inside u64.
    let r = crate::common::run(&[
        "checkpoint",
        "--plan",
        "--dir",
        "/tmp",
        "--hidden-size",
        "1048576",
        "--attention-heads",
        "1048576",
        "--kv-heads",
        "1048576",
        "--num-layers",
        "4096",
        "--ffn-hidden-size",
        "4194304",
        "--vocab-size",
        "16777216",
        "--ranks",
        "1",
        "--tp",
        "1",
        "--pp",
        "1",
        "--dp",
        "1",
        "--zero",
        "0",
    ])
    .expect(0);
    assert!(
        r.stdout
            .contains("one checkpoint: 1009299018076913664 bytes (896 PiB)"),
        "{}",
        r.stdout
    );
}

/// `--since 9223372036854775807-01-01` overflowed the calendar arithmetic (a panic);
/// `--until 2026-02-30` was taken as March 2nd.
#[test]
fn a_date_that_is_no_day_is_refused() {
    for (option, date) in [
        ("--since", "9223372036854775807-01-01"),
        ("--until", "2026-02-30"),
        ("--since", "2025-02-29"),
        ("--until", "2026-04-31"),
        ("--since", "0-01-01"),
    ] {
        let r = crate::common::run(&["results", "list", option, date]).expect(2);
        assert_eq!(
            r.error_line(),
            format!("iolab: error: {option}: '{date}' is not a date; use YYYY-MM-DD")
        );
    }
    crate::common::run(&["results", "list", "--since", "2024-02-29"]).expect(0);
}

/// IOR's -D and mdtest's -W in seconds: 2^64-1 overflowed the nanoseconds (a panic).
#[test]
fn ior_and_mdtest_deadlines_of_centuries_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let m = dir.path().join("m");
    for (args, expected) in [
        (
            vec![
                "ior",
                "-a",
                "POSIX",
                "-w",
                "-o",
                path(&f),
                "-D",
                "18446744073709551615",
            ],
            "iolab: error: ior -D: 18446744073709551615 seconds is more than 100 years, the longest iolab takes",
        ),
        (
            vec![
                "ior",
                "-a",
                "POSIX",
                "-w",
                "-o",
                path(&f),
                "-d",
                "3153600001",
            ],
            "iolab: error: ior -d: 3153600001 seconds is more than 100 years, the longest iolab takes",
        ),
        (
            vec![
                "mdtest",
                "-n",
                "2",
                "-d",
                path(&m),
                "-W",
                "18446744073709551615",
            ],
            "iolab: error: mdtest -W: 18446744073709551615 seconds is more than 100 years, the longest iolab takes",
        ),
    ] {
        let mut all = args.clone();
        all.insert(1, "--no-store");
        let r = crate::common::run(&all).expect(2);
        assert_eq!(r.error_line(), expected, "{args:?}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// `study plan --set threads=4096 --ranks 1048576` showed its metadata phase as "0 files
/// in 0 dirs": the tree of 2^32 workers is more than iolab plans, and the estimate took
/// the refusal as zero (the workers also saturated at 2^32-1).
#[test]
fn a_study_plan_of_a_tree_too_large_for_its_ranks_is_refused() {
    for (threads, expected) in [
        (
            "threads=4096",
            "--threads: 4294967296 threads of all ranks together need a directory each, more than the 50000000 directories iolab plans at once; use fewer threads or ranks",
        ),
        (
            "threads=16",
            "--dirs-per-thread: 5 directories for each of 16777216 threads is more than the 50000000 directories iolab plans at once; use fewer directories and more --files-per-dir",
        ),
    ] {
        let r = crate::common::run(&[
            "study", "plan", "quick", "--set", threads, "--ranks", "1048576",
        ])
        .expect(2);
        assert_eq!(
            r.error_line(),
            format!(
                "iolab: error: preset quick: sweep 'metadata', phase 'md' on 1048576 ranks: {expected}"
            ),
            "{threads}"
        );
    }
    // The largest tree that fits: 8 x 1048576 workers, 5 directories of 10000 files each.
    let r = crate::common::run(&[
        "study",
        "plan",
        "quick",
        "--set",
        "threads=8",
        "--ranks",
        "1048576",
    ])
    .expect(0);
    assert!(
        r.stdout
            .contains("419430400000 files in 41943040 dirs, x8 per rank"),
        "{}",
        r.stdout
    );
}

/// `checkpoint --kv-heads 0` was planned and run (its key/value projections of 0
/// bytes); heads that do not split among the key/value heads make no model either.
#[test]
fn a_checkpoint_model_without_key_value_heads_is_refused() {
    for (args, expected) in [
        (vec!["--kv-heads", "0"], "--kv-heads: must be at least 1"),
        (
            vec!["--attention-heads", "32", "--kv-heads", "6"],
            "--kv-heads: the 32 attention heads do not split evenly among 6 key/value heads (each key/value head serves the same number of heads)",
        ),
        (
            vec!["--vocab-size", "0"],
            "--vocab-size: must be at least 1",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut all = vec!["checkpoint", "--no-store", "--dir", path(dir.path())];
        all.extend(&args);
        let r = crate::common::run(&all).expect(2);
        assert_eq!(
            r.error_line(),
            format!("iolab: error: {expected}"),
            "{args:?}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

/// `ladder --max 10000` stopped at 4096 without a word (the deepest queue and the most
/// threads a run takes), and `--max 0` ran the step of 1.
#[test]
fn a_ladder_beyond_what_a_run_takes_is_refused() {
    for (axis, max, expected) in [
        (
            "queue-depth",
            "10000",
            "--max: 10000 is more than 4096, the deepest --queue-depth iolab supports",
        ),
        (
            "threads",
            "8192",
            "--max: 8192 is more than 4096, the most --threads per rank iolab supports",
        ),
        ("threads", "0", "--max: must be at least 1"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let r = crate::common::run(&[
            "ladder",
            "--no-store",
            "--dir",
            path(dir.path()),
            "--rw",
            "randread",
            "--size",
            "64KiB",
            "--axis",
            axis,
            "--max",
            max,
        ])
        .expect(2);
        assert_eq!(
            r.error_line(),
            format!("iolab: error: {expected}"),
            "{axis}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

/// `pts --html` and `train run --summary-json` in a directory that is not there were
/// found out only when the report was written, after the whole test (hours for PTS).
#[test]
fn a_report_file_in_a_missing_directory_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("pts.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(4 << 20)
        .unwrap();
    let typo = dir.path().join("reprots");
    let out = typo.join("out");
    for (args, option) in [
        (vec!["pts", "--device", path(&img), "--html"], "--html"),
        (
            vec![
                "train",
                "run",
                "--data-dir",
                path(dir.path()),
                "--summary-json",
            ],
            "--summary-json",
        ),
    ] {
        let mut args = args.clone();
        args.extend([path(&out), "--no-store"]);
        let r = crate::common::run(&args).expect(2);
        assert_eq!(
            r.error_line(),
            format!(
                "iolab: error: {option} {}: the directory {} does not exist; create it first or choose another file",
                out.display(),
                typo.display()
            )
        );
    }
    assert_eq!(std::fs::read(&img).unwrap(), vec![0u8; 4 << 20]);
    assert!(!typo.exists());
}
