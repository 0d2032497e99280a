//! Storage faults, injected for real: `iolab-faultfs` (a FUSE pass-through built with
//! iolab) fails chosen operations with EIO or ENOSPC, writes short, or stalls, under a real
//! `iolab run` or `iolab meta`. Each must end with the operation, the file, the offset and
//! the errno named, the right exit code, and the run stored as failed with what it did.

use std::path::Path;

use crate::common::{FaultFs, Ran, iolab, pause_in};

fn iolab_on(db: &Path, args: &[&str]) -> Ran {
    Ran::from(iolab().env("IOLAB_DB", db).args(args).output().unwrap())
}

/// The ERRORS block's line for rank 0, and the one-line reason on stderr.
fn error_entry(r: &Ran) -> &str {
    r.stdout
        .lines()
        .find(|l| l.trim_start().starts_with("rank 0 on "))
        .unwrap_or_else(|| panic!("no error entry in\n{}\n{}", r.stdout, r.stderr))
}

fn stored_status(db: &Path) -> String {
    let list = iolab_on(db, &["results", "list"]).expect(0);
    let row = list
        .stdout
        .lines()
        .find(|l| l.starts_with("r1 "))
        .unwrap_or_else(|| panic!("r1 not stored:\n{}", list.stdout));
    row.split_whitespace().nth(2).unwrap().to_string()
}

const WRITE_1MIB: &[&str] = &["--size", "1MiB", "-b", "4KiB", "-t", "1", "--rw", "write"];

/// A results database of a test's own, removed with it.
struct Db {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

/// Runs `iolab ARGS --dir MOUNT` over an iolab-faultfs with `fault`, storing in a database
/// of its own; None (the test skips) on a machine without FUSE.
fn under_fault(fault: &str, args: &[&str]) -> Option<(Ran, Db)> {
    let fs = FaultFs::mount(&[fault])?;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.db");
    let mut all = args.to_vec();
    all.extend(["--dir", fs.dir()]);
    let r = iolab_on(&path, &all);
    Some((r, Db { _dir: dir, path }))
}

#[test]
fn eio_in_the_middle_of_a_write_names_the_offset_and_keeps_what_was_done() {
    let Some((r, db)) = under_fault(
        "write:eio:after=16:times=1:match=data.",
        &[&["run"], WRITE_1MIB].concat(),
    ) else {
        return;
    };
    let (r, db) = (r.expect(1), db.path);
    let entry = error_entry(&r);
    assert!(
        entry.contains("write of 4096 bytes at offset 65536 in ")
            && entry.contains("iolab-work/data.r0.t0 failed: Input/output error (EIO); "),
        "{entry}"
    );
    assert!(r.stderr.contains("1 I/O error"), "{}", r.stderr);
    // The 16 writes before the fault are counted, the failed one is not.
    assert!(r.stdout.contains("64.0 KiB in 16 I/Os"), "{}", r.stdout);
    assert_eq!(stored_status(&db), "failed");
    let shown = iolab_on(&db, &["results", "show", "r1"]).expect(0);
    assert!(shown.stdout.contains("16 I/Os"), "{}", shown.stdout);
}

#[test]
fn eio_in_the_middle_of_a_read_names_the_offset() {
    let read = [
        "run", "--size", "1MiB", "-b", "4KiB", "-t", "1", "--rw", "read",
    ];
    let Some((r, db)) = under_fault("read:eio:after=8:times=1:match=data.", &read) else {
        return;
    };
    let (r, db) = (r.expect(1), db.path);
    let entry = error_entry(&r);
    assert!(
        entry.contains("read of 4096 bytes at offset 32768 in ")
            && entry.contains("data.r0.t0 failed: Input/output error (EIO)"),
        "{entry}"
    );
    assert!(r.stdout.contains("32.0 KiB in 8 I/Os"), "{}", r.stdout);
    assert_eq!(stored_status(&db), "failed");
}

#[test]
fn enospc_is_a_target_problem_with_exit_2_and_a_hint() {
    let Some((r, db)) = under_fault(
        "write:enospc:after=4:match=data.",
        &[&["run"], WRITE_1MIB].concat(),
    ) else {
        return;
    };
    let (r, db) = (r.expect(2), db.path);
    let last = r.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("iolab: error: write of 4096 bytes at offset 16384 in ")
            && last.ends_with(
                "failed: No space left on device (ENOSPC); free space on the target or use a smaller --size/--total-size"
            ),
        "{}",
        r.stderr
    );
    assert_eq!(stored_status(&db), "failed");
}

#[test]
fn a_short_write_is_an_error_not_a_full_block() {
    let Some((r, db)) = under_fault(
        "write:short:after=4:times=1:match=data.",
        &[&["run"], WRITE_1MIB].concat(),
    ) else {
        return;
    };
    let (r, db) = (r.expect(1), db.path);
    let entry = error_entry(&r);
    assert!(
        entry.contains("short write: 2048 of 4096 bytes at offset 16384 in "),
        "{entry}"
    );
    assert_eq!(stored_status(&db), "failed");
}

#[test]
fn a_stall_shows_in_the_maximum_latency_and_the_watchdog_names_it() {
    // A 3 s stall (an HA fail-over) is measured, not hidden: the run succeeds, max ≥ 3 s,
    // and the per-second timeline has the seconds in which nothing completed.
    let timed = [
        "run",
        "--size",
        "64MiB",
        "-b",
        "4KiB",
        "-t",
        "1",
        "--rw",
        "write",
        "--runtime",
        "5s",
    ];
    let Some((r, db)) = under_fault("write:stall=3s:after=4:times=1:match=data.", &timed) else {
        return;
    };
    let r = r.expect(0);
    let lat = r
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("lat min"))
        .unwrap();
    let max = lat.split("max ").nth(1).unwrap();
    let secs: f64 = max.trim_end_matches(" s").parse().unwrap_or(0.0);
    assert!(max.ends_with(" s") && (3.0..4.0).contains(&secs), "{lat}");
    // The pause: from the completion before the stalled write to the one after it, with
    // the rate after it (the stall came after 4 writes: no whole second before it).
    let (length, rest) = pause_in(&r.stdout);
    assert!((3.0..3.6).contains(&length), "{length} s from {rest}");
    assert!(
        rest.contains(" s into the phase; ")
            && rest.ends_with("/s after; 1 I/O retried (in flight through it)"),
        "{rest}"
    );
    let json = iolab_on(&db.path, &["results", "export", "r1", "--format", "json"]).expect(0);
    let run: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let ops = &run["phases"][0]["timeline"]["series"][0]["ops"];
    let ops: Vec<u64> = ops
        .as_array()
        .unwrap_or_else(|| panic!("no timeline in {}", json.stdout))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(
        ops[0] > 0 && ops[1] == 0 && ops[2] == 0 && ops[3..].iter().any(|&n| n > 0),
        "ops per second: {ops:?}"
    );
    // The stored silences say the same, in ns: the longest gap is the pause.
    let gap = &run["phases"][0]["timeline"]["silences"]["gaps"][0];
    let gap_s = (gap[1].as_u64().unwrap() - gap[0].as_u64().unwrap()) as f64 / 1e9;
    assert!((length - gap_s).abs() < 0.01, "{gap} against {length} s");

    // With --stall-timeout shorter than the stall, the job ends naming the worker.
    let args = [&["run", "--stall-timeout", "1s"], WRITE_1MIB].concat();
    let Some((r, db)) = under_fault("write:stall=4s:after=4:times=1:match=data.", &args) else {
        return;
    };
    let r = r.expect(1);
    // The watchdog looks every tick (0.1 s): on a loaded machine it may say 1.1 s.
    let said = r
        .stderr
        .split("stalled in write-4KiB: worker 0 completed no operation for ")
        .nth(1)
        .unwrap_or_else(|| panic!("{}", r.stderr));
    let (secs, rest) = said
        .split_once(" s ")
        .unwrap_or_else(|| panic!("{}", r.stderr));
    let secs: f64 = secs.parse().unwrap_or_else(|_| panic!("{}", r.stderr));
    assert!(
        (1.0..2.0).contains(&secs) && rest.starts_with("(--stall-timeout 1 s)"),
        "{}",
        r.stderr
    );
    assert_eq!(stored_status(&db.path), "failed");
}

#[test]
fn metadata_faults_name_the_operation_and_the_file() {
    for (fault, op) in [
        ("create:eio:after=10:times=1:match=file.", "create"),
        ("getattr:eio:after=10:times=1:match=file.", "stat"),
        ("unlink:eio:after=10:times=1:match=file.", "remove"),
    ] {
        let Some((r, db)) = under_fault(fault, &["meta", "-n", "50"]) else {
            return;
        };
        let (r, db) = (r.expect(1), db.path);
        let entry = error_entry(&r);
        assert!(
            entry.contains(&format!("{op} "))
                && entry.contains(
                    "iolab-work/meta/test-dir.0-0/mdtest_tree.0.0/file.mdtest.0.10 failed: Input/output error (EIO)"
                ),
            "{fault}: {entry}"
        );
        assert_eq!(stored_status(&db), "failed", "{fault}");
    }
}

/// `iolab fio` reports a failed I/O as fio does: the io_u error line on stderr, the errno
/// in `err=` and in the JSON `error`, and fio's exit status 1.
#[test]
fn the_fio_front_end_reports_the_errno_as_fio_does() {
    // fio's file name for job x: x.0.0.
    let Some(fs) = FaultFs::mount(&["write:enospc:after=2:match=x.0.0"]) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("f.db");
    let dir = format!("--directory={}", fs.dir());
    let fio = |format: &str| {
        iolab_on(
            &db,
            &[
                "fio",
                "--name=x",
                "--rw=write",
                "--size=1m",
                "--bs=4k",
                &dir,
                format,
            ],
        )
        .expect(1)
    };
    let r = fio("--output-format=normal");
    assert!(
        r.stderr
            .lines()
            .any(|l| l.starts_with("fio: io_u error on file ")
                && l.ends_with(": No space left on device: write offset=8192, buflen=4096")),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains(
            "x: (groupid=0, jobs=1): err=28 (func=io_u error, error=No space left on device): pid=0"
        ),
        "{}",
        r.stdout
    );
    let r = fio("--output-format=json");
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(json["jobs"][0]["error"], 28, "{}", r.stdout);
}
