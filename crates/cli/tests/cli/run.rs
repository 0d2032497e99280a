//! `iolab run`: what it writes, what it leaves behind, what it says about bad input.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::common::{Ran, can_mount, error_line, iolab, path, run, run_in_namespace};

fn json(file: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(file).expect("json written")).expect("valid json")
}

fn op<'a>(j: &'a serde_json::Value, phase: usize, op: &str) -> &'a serde_json::Value {
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
fn a_missing_directory_is_one_line_and_exit_2() {
    let r = run(&["run", "--dir", "/nonexistent/iolab-test", "--size", "1MiB"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: --dir /nonexistent/iolab-test does not exist; create it first or choose another directory"
    );
}

#[test]
fn an_unknown_option_value_is_one_line_and_exit_2() {
    let r = run(&["run", "--dir", "/tmp", "--rw", "sideways"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: invalid value 'sideways' for '--rw <RW>' [possible values: read, write, randread, randwrite, rw, randrw, trim, randtrim, trimwrite, randtrimwrite]"
    );
    let r = run(&["run", "--dir", "/tmp", "--block-size", "4 parsecs"]).expect(2);
    assert!(
        error_line(&r).contains("invalid size '4 parsecs'"),
        "{}",
        r.stderr
    );
    for (option, value) in [
        ("--size", "-10"),
        ("--block-size", "-4096"),
        ("-t", "-16"),
        ("--runtime", "-1s"),
        ("--size", "-1.5"),
    ] {
        let r = run(&["run", "--dir", "/tmp", option, value]).expect(2);
        assert_eq!(
            error_line(&r),
            format!("iolab: error: {option}: {value}: negative values are not accepted")
        );
    }
    let r = run(&[
        "run",
        "--dir",
        "/tmp",
        "--size",
        "1MiB",
        "--stonewall",
        "0s",
    ])
    .expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: --stonewall: must be longer than 0s"
    );
    // A --json that cannot be written is refused before the workload, not after it.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("no/such/dir/r.json");
    let r = run(&[
        "run",
        "--dir",
        path(dir.path()),
        "--size",
        "1MiB",
        "--json",
        path(&bad),
        "--no-store",
    ])
    .expect(2);
    assert_eq!(
        error_line(&r),
        format!(
            "iolab: error: --json {}: No such file or directory",
            bad.display()
        )
    );
    assert!(
        !r.stdout.contains("IOPS"),
        "the workload ran first: {}",
        r.stdout
    );
}

/// The one error line of a direct run of 1000-byte blocks in `dir` (refused: exit 2).
fn direct_1000_byte_blocks(dir: &str) -> String {
    let r = run(&[
        "run",
        "--dir",
        dir,
        "--direct",
        "--block-size",
        "1000",
        "--size",
        "100000",
    ])
    .expect(2);
    error_line(&r)
}

#[test]
fn a_block_size_direct_io_cannot_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let line = direct_1000_byte_blocks(path(dir.path()));
    assert!(
        line.starts_with("iolab: error: --block-size: 1000B is not a multiple of"),
        "{line}"
    );
    assert!(line.ends_with("or drop --direct"), "{line}");
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}

/// A FUSE client (ceph-fuse, weed mount, iolab-faultfs) reports no direct-I/O alignment
/// and takes no O_TMPFILE; fio runs 512-byte direct I/O on it, so iolab tries the sizes
/// on the target rather than assuming 4096: 512 runs, 1000 is refused naming 512, and
/// the file made for the try is gone.
#[test]
fn direct_io_alignment_is_tried_on_a_fuse_mount_that_reports_none() {
    let Some(fs) = crate::common::FaultFs::mount(&[]) else {
        return;
    };
    let d = fs.dir();
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("r.json");
    run(&[
        "run",
        "--dir",
        d,
        "--direct",
        "--rw",
        "randwrite",
        "--block-size",
        "512",
        "--size",
        "256KiB",
        "--no-store",
        "--json",
        path(&report),
    ])
    .expect(0);
    let w = op(&json(&report), 0, "write").clone();
    assert_eq!(
        (w["ops"].as_u64(), w["bytes"].as_u64()),
        (Some(512), Some(256 << 10))
    );
    let line = direct_1000_byte_blocks(d);
    assert!(
        line.starts_with("iolab: error: --block-size: 1000B is not a multiple of 512 bytes"),
        "{line}"
    );
    // Nothing is left on the mount: not the files, not the one made for the try.
    let left: Vec<_> = fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_link_planted_in_the_work_directory_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    run(&[
        "run", "--dir", d, "--rw", "write", "--size", "1MiB", "--keep",
    ])
    .expect(0);
    let victim = dir.path().join("victim.txt");
    fs::write(&victim, "precious\n").unwrap();
    let data = dir.path().join("iolab-work/data.r0.t0");
    fs::remove_file(&data).unwrap();
    std::os::unix::fs::symlink(&victim, &data).unwrap();
    let r = run(&["run", "--dir", d, "--rw", "write", "--size", "1MiB"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        error_line(&r).contains("Too many levels of symbolic links"),
        "{}",
        r.stderr
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
}

#[test]
fn a_cpu_the_process_may_not_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in [
        vec!["run", "--rw", "write", "--size", "1MiB"],
        vec!["meta", "--files-per-dir", "10"],
    ] {
        let mut args = cmd.clone();
        args.extend(["--dir", path(dir.path()), "--cpus", "4000", "--no-store"]);
        let r = run(&args);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            error_line(&r)
                .starts_with("iolab: error: --cpus: CPU 4000 is not one this process may run on ("),
            "{}",
            r.stderr
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

#[test]
fn permission_denied_is_one_line_and_exit_2() {
    let r = run(&["run", "--dir", "/sys", "--size", "1MiB"]).expect(2);
    let line = error_line(&r);
    assert!(
        line.starts_with("iolab: error: cannot create /sys/iolab-work:"),
        "{line}"
    );
    assert!(
        line.contains("choose a directory you can write to"),
        "{line}"
    );
}

#[test]
fn too_little_space_is_refused_before_writing() {
    if !can_mount() {
        eprintln!("SKIPPED: cannot mount a small tmpfs here (needs root and mount namespaces)");
        return;
    }
    let r = run_in_namespace(
        "mount -t tmpfs -o size=2m tmpfs /mnt",
        &["run", "--dir", "/mnt", "--rw", "write", "--size", "8MiB"],
    )
    .expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("needs 8.00 MiB in /mnt/iolab-work but only"),
        "{line}"
    );
    assert!(
        line.ends_with("use a smaller --size/--total-size or free space"),
        "{line}"
    );
}

/// A stonewall bounds what a phase writes while it runs, not the files a read lays out
/// before it starts: a stonewalled random read of more than the file system holds is
/// refused too (it filled a tmpfs laying out IOR's -s 10000000 4 KiB transfers).
#[test]
fn a_stonewalled_read_needing_more_than_there_is_is_refused() {
    if !can_mount() {
        eprintln!("SKIPPED: cannot mount a small tmpfs here (needs root and mount namespaces)");
        return;
    }
    let r = run_in_namespace(
        "mount -t tmpfs -o size=2m tmpfs /mnt",
        &[
            "run",
            "--dir",
            "/mnt",
            "--rw",
            "randread",
            "--size",
            "8MiB",
            "--stonewall",
            "1s",
        ],
    )
    .expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("needs 8.00 MiB in /mnt/iolab-work but only"),
        "{line}"
    );
}

#[test]
fn running_out_of_inodes_is_one_line_and_leaves_nothing() {
    if !can_mount() {
        eprintln!("SKIPPED: cannot mount a small tmpfs here (needs root and mount namespaces)");
        return;
    }
    // Room for the work directory, its marker and lock, but not for two data files.
    let r = run_in_namespace(
        "mount -t tmpfs -o size=8m,nr_inodes=5 tmpfs /mnt",
        &[
            "run",
            "--dir",
            "/mnt",
            "--rw",
            "write",
            "--size",
            "1MiB",
            "--threads",
            "2",
        ],
    );
    let r = r.expect(2);
    let line = error_line(&r);
    assert!(line.contains("No space left on device"), "{line}");
}

#[test]
fn direct_io_on_a_file_system_that_refuses_it_is_named() {
    if !can_mount() {
        eprintln!("SKIPPED: cannot mount ramfs here (needs root and mount namespaces)");
        return;
    }
    let r = run_in_namespace(
        "mount -t ramfs ramfs /mnt",
        &["run", "--dir", "/mnt", "--direct", "--size", "1MiB"],
    )
    .expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("the file system refuses direct I/O (O_DIRECT)"),
        "{line}"
    );
    assert!(
        line.ends_with("drop --direct, or run on a file system that supports it"),
        "{line}"
    );
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
