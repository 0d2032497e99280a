//! `iolab meta` and `iolab find` end to end: what they report (counts, phases, JSON),
//! what they leave behind (nothing, or a kept tree that a later run reuses), exit codes
//! (0 ok, 1 a changed file, 2 bad input or no inodes left) and one-line errors.

use std::fs;
use std::path::Path;

use crate::common::{Ran, can_mount, error_line, path, run, run_in_namespace};

fn json(file: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(file).expect("json written")).expect("valid json")
}

/// (phase name, operations) of every phase.
fn phase_ops(j: &serde_json::Value) -> Vec<(String, u64)> {
    j["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .map(|p| {
            let ops = p["ops"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["ops"].as_u64().unwrap())
                .sum();
            (p["name"].as_str().unwrap().to_string(), ops)
        })
        .collect()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn meta(dir: &Path, extra: &[&str]) -> Ran {
    let mut args = vec!["meta", "--dir", path(dir), "--no-store"];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn every_phase_counts_every_file_and_nothing_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    let r = meta(
        dir.path(),
        &[
            "-t",
            "2",
            "-n",
            "50",
            "--dirs-per-thread",
            "3",
            "--file-size",
            "3901",
            "--json",
            path(&out),
        ],
    )
    .expect(0);
    for phase in [
        "create  (2 threads, private-dirs",
        "stat  (",
        "read  (",
        "remove  (",
    ] {
        assert!(r.stdout.contains(phase), "{phase}: {}", r.stdout);
    }
    assert!(r.stdout.contains("  create "), "{}", r.stdout);
    let j = json(&out);
    assert_eq!(j["kind"], "meta");
    assert_eq!(j["status"], "complete");
    let want: Vec<(String, u64)> = ["create", "stat", "read", "remove"]
        .iter()
        .map(|n| (n.to_string(), 300))
        .collect();
    assert_eq!(phase_ops(&j), want);
    assert_eq!(j["phases"][0]["kind"], "meta");
    assert_eq!(j["phases"][2]["ops"][0]["bytes"], 300 * 3901);
    assert_eq!(j["phases"][0]["params"]["dirs_per_thread"], "3");
    assert_eq!(names(dir.path()), vec!["m.json".to_string()]);
}

#[test]
fn total_files_chooses_the_directories_per_thread() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    meta(
        dir.path(),
        &[
            "-t",
            "2",
            "-n",
            "30",
            "--total-files",
            "960",
            "--ops",
            "create,remove",
            "--json",
            path(&out),
        ],
    )
    .expect(0);
    let j = json(&out);
    assert_eq!(j["phases"][0]["params"]["dirs_per_thread"], "16");
    assert_eq!(
        phase_ops(&j),
        vec![("create".into(), 960), ("remove".into(), 960)]
    );
}

#[test]
fn a_stonewalled_create_is_followed_by_exactly_as_many_stats() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    meta(
        dir.path(),
        &[
            "-n",
            "5000000",
            "--runtime",
            "20ms",
            "--ops",
            "create,stat,remove",
            "--json",
            path(&out),
        ],
    )
    .expect(0);
    let ops = phase_ops(&json(&out));
    assert!(ops[0].1 > 0 && ops[0].1 < 5_000_000, "{ops:?}");
    assert_eq!(ops[1].1, ops[0].1, "{ops:?}");
    assert_eq!(ops[2].1, ops[0].1, "{ops:?}");
    assert_eq!(names(dir.path()), vec!["m.json".to_string()]);
}

#[test]
fn a_kept_tree_is_reused_and_a_changed_file_fails_the_read() {
    let dir = tempfile::tempdir().unwrap();
    fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        [&["-n", "20", "--file-size", "100"][..], extra].concat()
    }
    meta(dir.path(), &with(&["--ops", "create", "--keep"])).expect(0);
    let leaf = dir
        .path()
        .join("iolab-work/meta/test-dir.0-0/mdtest_tree.0.0");
    assert_eq!(fs::read_dir(&leaf).unwrap().count(), 20);
    fs::write(leaf.join("file.mdtest.0.7"), vec![0u8; 100]).unwrap();

    let out = dir.path().join("m.json");
    let r = meta(
        dir.path(),
        &with(&["--ops", "stat,read", "--json", path(&out)]),
    )
    .expect(1);
    assert!(r.stderr.contains("failed validation"), "{}", r.stderr);
    assert!(
        r.stdout.contains("file.mdtest.0.7: its contents differ"),
        "{}",
        r.stdout
    );
    let j = json(&out);
    assert_eq!(j["status"], "failed");
    assert_eq!(
        phase_ops(&j),
        vec![("stat".into(), 20), ("read".into(), 20)]
    );
    assert_eq!(j["phases"][0]["verify_failures"], 0);
    assert_eq!(j["phases"][1]["verify_failures"], 1);
    // A tree this run did not make stays, and a later run can remove it.
    assert!(leaf.join("file.mdtest.0.7").exists());
    let r = meta(
        dir.path(),
        &with(&["--ops", "remove,rmdir", "--json", path(&out)]),
    )
    .expect(0);
    assert!(r.stdout.contains("rmdir  ("), "{}", r.stdout);
    // One directory per thread: mdtest's mdtest_tree.0.0, files directly in it.
    assert_eq!(
        phase_ops(&json(&out)),
        vec![("remove".into(), 20), ("rmdir".into(), 1)]
    );
    assert_eq!(names(dir.path()), vec!["m.json".to_string()]);
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent");
    let r = meta(&missing, &[]).expect(2);
    assert_eq!(
        error_line(&r),
        format!(
            "iolab: error: --dir {} does not exist; create it first or choose another directory",
            missing.display()
        )
    );
    let r = meta(dir.path(), &["--ops", "stat,create"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: --ops: create must come before stat"
    );
    let r = meta(dir.path(), &["--wear-out"]).expect(2);
    assert!(
        error_line(&r).starts_with("iolab: error: --wear-out:"),
        "{}",
        r.stderr
    );
    let r = meta(dir.path(), &["--ops", "stat"]).expect(2);
    assert!(
        error_line(&r).contains("there is no tree to work on"),
        "{}",
        r.stderr
    );
    // A tree too large to plan is refused, not run out of memory.
    let r = meta(
        dir.path(),
        &["--dirs-per-thread", "4294967295", "--threads", "2"],
    )
    .expect(2);
    assert!(
        error_line(&r).starts_with("iolab: error: --dirs-per-thread: 4294967295 directories for each of 2 threads is more than"),
        "{}",
        r.stderr
    );
    let r = meta(dir.path(), &["--file-size", "-5"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: --file-size: -5: negative values are not accepted"
    );
    let r = run(&["meta", "--device", "/dev/null", "--no-store"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: iolab meta works in a directory; use --dir (--device is for iolab run)"
    );
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

#[test]
fn no_inodes_left_is_a_clear_error() {
    if !can_mount() {
        eprintln!(
            "SKIPPED no_inodes_left_is_a_clear_error: cannot create a mount namespace and mount a tmpfs here (needs root or user namespaces)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = path(dir.path());
    let r = run_in_namespace(
        &format!("mount -t tmpfs -o size=16m,nr_inodes=64 tmpfs {mnt}"),
        &["meta", "--dir", mnt, "-n", "200", "--no-store"],
    )
    .expect(2);
    let line = error_line(&r);
    assert!(line.starts_with("iolab: error: create "), "{line}");
    assert!(
        line.contains(
            "No space left on device (ENOSPC); the file system has no inodes left (see df -i)"
        ),
        "{line}"
    );
    // Running out while making the tree (untimed) also fails cleanly and leaves nothing.
    let script = format!(
        "mount -t tmpfs -o size=16m,nr_inodes=64 tmpfs {mnt} && {} meta --dir {mnt} -n 1 --dirs-per-thread 200 --no-store; echo rc=$?; ls -A {mnt}",
        env!("CARGO_BIN_EXE_iolab")
    );
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout.trim(), "rc=2", "left behind: {stdout}");
    assert!(stderr.starts_with("iolab: error: mkdir "), "{stderr}");
    assert!(stderr.contains("no inodes left"), "{stderr}");
}

fn tree_for_find(top: &Path) {
    fs::create_dir_all(top.join("a/b")).unwrap();
    fs::write(top.join("a/f01"), vec![1u8; 3901]).unwrap();
    fs::write(top.join("a/b/f101"), vec![1u8; 3901]).unwrap();
    fs::write(top.join("a/b/f102"), vec![1u8; 10]).unwrap();
    fs::write(top.join("g22"), vec![1u8; 3901]).unwrap();
}

#[test]
fn find_reports_scanned_and_matched() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().join("top");
    tree_for_find(&top);
    let out = dir.path().join("f.json");
    let r = run(&[
        "find",
        "--dir",
        path(&top),
        "--size",
        "3901c",
        "--name",
        "*01*",
        "-t",
        "2",
        "--no-store",
        "--json",
        path(&out),
    ])
    .expect(0);
    assert!(r.stdout.contains("matched: 2"), "{}", r.stdout);
    let j = json(&out);
    assert_eq!(j["kind"], "find");
    assert_eq!(j["phases"][0]["kind"], "find");
    assert_eq!(j["phases"][0]["extra"]["matched"], 2.0);
    assert_eq!(j["phases"][0]["ops"][0]["op"], "scan");
    assert_eq!(j["phases"][0]["ops"][0]["ops"], 6);
    let r = run(&[
        "find",
        "--dir",
        path(&top),
        "--size",
        "-20c",
        "--type",
        "f",
        "--no-store",
    ])
    .expect(0);
    assert!(r.stdout.contains("matched: 1"), "{}", r.stdout);
}

#[test]
fn find_bad_input_gets_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let r = run(&["find", "--dir", path(&missing), "--no-store"]).expect(2);
    assert_eq!(
        error_line(&r),
        format!(
            "iolab: error: --dir {} does not exist; give the directory to walk",
            missing.display()
        )
    );
    let r = run(&[
        "find",
        "--dir",
        path(dir.path()),
        "--size",
        "3x",
        "--no-store",
    ])
    .expect(2);
    assert!(r.stderr.contains("invalid size test '3x'"), "{}", r.stderr);
    let r = run(&[
        "find",
        "--dir",
        path(dir.path()),
        "--newer",
        path(&missing),
        "--no-store",
    ])
    .expect(2);
    assert!(
        error_line(&r).starts_with("iolab: error: --newer "),
        "{}",
        r.stderr
    );
}

#[test]
fn ctrl_c_keeps_the_partial_result_removes_the_tree_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("partial.json");
    let child = crate::common::iolab()
        .args([
            "meta",
            "--dir",
            path(dir.path()),
            "--no-store",
            "-n",
            "50000000",
        ])
        .args(["--ops", "create,stat,remove", "--json", path(&out)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until files are being created.
    let leaf = dir
        .path()
        .join("iolab-work/meta/test-dir.0-0/mdtest_tree.0.0");
    for _ in 0..200 {
        if fs::read_dir(&leaf)
            .map(|d| d.count() > 100)
            .unwrap_or(false)
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let pid = child.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status();
    assert!(killed.unwrap().success());
    let r = Ran::from(child.wait_with_output().unwrap()).expect(130);
    assert!(r.stdout.contains("[interrupted]"), "{}", r.stdout);
    let j = json(&out);
    assert_eq!(j["status"], "interrupted");
    let ops = phase_ops(&j);
    assert_eq!(
        ops.len(),
        1,
        "no phase after the interrupted create: {ops:?}"
    );
    assert!(ops[0].1 > 100, "{ops:?}");
    assert_eq!(names(dir.path()), vec!["partial.json".to_string()]);
}

#[test]
fn relative_paths_are_named_as_not_comparable_with_mdtest() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    let r = meta(
        dir.path(),
        &["-n", "10", "--ops", "create,remove", "--json", path(&out)],
    )
    .expect(0);
    assert!(!r.stdout.contains("not comparable"), "{}", r.stdout);
    assert_eq!(json(&out)["phases"][0]["params"]["paths"], "whole");
    let r = meta(
        dir.path(),
        &[
            "-n",
            "10",
            "--ops",
            "create,remove",
            "--paths",
            "relative",
            "--json",
            path(&out),
        ],
    )
    .expect(0);
    assert_eq!(
        r.stdout
            .matches("--paths relative: calls relative to an open directory (openat, fstatat, unlinkat) walk no path; mdtest passes whole paths, so this figure is not comparable with mdtest's")
            .count(),
        2,
        "{}",
        r.stdout
    );
    let j = json(&out);
    assert_eq!(j["phases"][1]["params"]["paths"], "relative");
    assert_eq!(
        phase_ops(&j),
        vec![("create".into(), 10), ("remove".into(), 10)]
    );
}
