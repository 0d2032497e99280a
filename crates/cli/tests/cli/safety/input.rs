//! Bounded input: an endless file or stream is refused at a limit, in one line naming
//! it, instead of growing without bound.

use std::fs;
use std::process::Stdio;

use crate::common::{Ran, error_line, iolab, path, run};

#[test]
fn an_endless_io500_result_is_refused_at_the_limit() {
    let r = run(&["io500", "score", "/dev/zero"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: /dev/zero is larger than 16.0 MiB, the most iolab reads from one input; is it the right file?"
    );
}

#[test]
fn endless_standard_input_is_refused_at_the_limit() {
    let zero = fs::File::open("/dev/zero").unwrap();
    let r = Ran::from(
        iolab()
            .args(["targets", "analyze", "-"])
            .stdin(Stdio::from(zero))
            .output()
            .unwrap(),
    )
    .expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: standard input is larger than 16.0 MiB, the most iolab reads from one input; is it the right file?"
    );
}

#[test]
fn study_and_targets_files_are_bounded_too() {
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("study.toml");
    fs::write(&long, format!("name = \"{}\"\n", "x".repeat(2 << 20))).unwrap();
    let r = run(&["study", "plan", path(&long)]).expect(2);
    assert!(
        error_line(&r).ends_with(
            "study.toml:1: a line longer than 1.00 MiB, the longest iolab reads; is it a text file?"
        ),
        "{}",
        r.stderr
    );
    let r = run(&[
        "targets",
        "--targets-file",
        "/dev/zero",
        "--backend",
        "null",
    ])
    .expect(2);
    assert!(
        error_line(&r).contains("/dev/zero is larger than 16.0 MiB"),
        "{}",
        r.stderr
    );
}

/// An absurd size names the capacity it exceeds, or the arithmetic limit, never panics.
#[test]
fn sizes_beyond_any_capacity_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    let r = run(&[
        "run",
        "--dir",
        d,
        "--rw",
        "write",
        "--size",
        "1EiB",
        "--no-store",
    ])
    .expect(2);
    let line = error_line(&r);
    assert!(
        line.starts_with("iolab: error: the workload needs 1.00 EiB in ")
            && line.contains(" is free;"),
        "{line}"
    );
    let r = run(&[
        "run",
        "--dir",
        d,
        "--rw",
        "write",
        "--size",
        "1EiB",
        "-t",
        "32",
        "--no-store",
    ])
    .expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: --size: 32 workers together would move more than 16.0 EiB, the most any file system or device holds"
    );
    assert!(!dir.path().join("iolab-work").join("data.r0.t0").exists());

    // A refusal (the space check) is not kept as a failed run: nothing ran.
    let db = dir.path().join("r.db");
    let refused = |args: &[&str]| {
        Ran::from(iolab().env("IOLAB_DB", &db).args(args).output().unwrap()).expect(2)
    };
    refused(&["run", "--dir", d, "--rw", "write", "--size", "1EiB"]);
    refused(&["meta", "--dir", d, "-n", "1000000000000"]);
    let list = Ran::from(
        iolab()
            .env("IOLAB_DB", &db)
            .args(["results", "list"])
            .output()
            .unwrap(),
    );
    assert!(!list.stdout.contains("failed"), "{}", list.stdout);
}
