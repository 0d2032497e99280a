//! `iolab run` refusing bad input: one line naming the option, exit 2, nothing left
//! behind (options, direct-I/O sizes, links, CPUs, permissions, space, inodes).

use std::fs;

use crate::common::{can_mount, error_line, path, run, run_in_namespace};
use crate::run::{json, op};

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
    let d = path(dir.path());
    // `targets` pinned its workers to CPU 4000 (and failed silently) where `run` refused.
    for cmd in [
        vec!["run", "--rw", "write", "--size", "1MiB", "--dir", d],
        vec!["meta", "--files-per-dir", "10", "--dir", d],
        vec!["targets", "--size", "64KiB", d],
    ] {
        let mut args = cmd.clone();
        args.extend(["--cpus", "4000", "--no-store"]);
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

/// `--block-align 15EiB` (or any alignment larger than a worker's share) was run: no
/// aligned offset left room for an I/O, and the run ended at once, "no operations
/// completed", exit 0. Refused now, naming the share; an alignment of the whole share
/// (every I/O at its start) still runs. A ladder is refused as run is.
#[test]
fn a_block_alignment_larger_than_the_share_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    for (align, shown, extra, share) in [
        ("15EiB", "15EiB", vec![], "64KiB"),
        ("128KiB", "128KiB", vec![], "64KiB"),
        (
            "64KiB",
            "64KiB",
            vec!["--threads", "2", "--layout", "shared"],
            "32KiB",
        ),
    ] {
        let mut args = vec![
            "run",
            "--no-store",
            "--dir",
            d,
            "--rw",
            "randread",
            "--runtime",
            "1s",
            "--block-align",
            align,
        ];
        if extra.is_empty() {
            args.extend(["--size", "64KiB"]);
        } else {
            args.extend(["--total-size", "64KiB"]);
        }
        args.extend(&extra);
        let r = run(&args).expect(2);
        assert_eq!(
            error_line(&r),
            format!(
                "iolab: error: --block-align: {shown} is larger than the {share} each worker draws its random offsets in, so no I/O would fit; use at most {share}"
            ),
            "{args:?}"
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "{args:?}");
    }
    // A ladder's steps, judged "meets the objective" at 0 IOPS; on the threads axis the
    // largest step's share counts (4 threads share 128 KiB: 32 KiB each).
    for (axis, align, share) in [
        ("queue-depth", "128KiB", "64KiB"),
        ("threads", "64KiB", "32KiB"),
    ] {
        let size = if axis == "threads" {
            ["--total-size", "128KiB"]
        } else {
            ["--size", "64KiB"]
        };
        let r = run(&[
            "ladder",
            "--no-store",
            "--dir",
            d,
            "--rw",
            "randread",
            size[0],
            size[1],
            "--axis",
            axis,
            "--max",
            "4",
            "--block-align",
            align,
            "--step-time",
            "200ms",
        ])
        .expect(2);
        assert_eq!(
            error_line(&r),
            format!(
                "iolab: error: --block-align: {align} is larger than the {share} each worker draws its random offsets in, so no I/O would fit; use at most {share}"
            ),
            "{axis}"
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "{axis}");
    }
    let r = run(&[
        "run",
        "--no-store",
        "--dir",
        d,
        "--rw",
        "randread",
        "--size",
        "64KiB",
        "--runtime",
        "200ms",
        "--block-align",
        "64KiB",
        "--json",
        path(&dir.path().join("r.json")),
        "-Q",
    ])
    .expect(0);
    assert_eq!(r.stderr, "");
    let j = json(&dir.path().join("r.json"));
    assert!(op(&j, 0, "read")["ops"].as_u64().unwrap() > 0, "{j}");
}

/// `targets` ran a --block-align larger than a target's share as run did: no I/O, exit
/// 0. Refused as run refuses it, naming the target; nothing is left in the targets.
#[test]
fn targets_refuse_a_block_alignment_larger_than_the_share() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (size, align, share) in [
        (["--size", "64KiB"], "128KiB", "64KiB"),
        (["--total-size", "128KiB"], "64KiB", "32KiB"),
    ] {
        let r = run(&[
            "targets",
            "--no-store",
            "--rw",
            "randread",
            size[0],
            size[1],
            "--threads",
            "4",
            "--runtime",
            "200ms",
            "--block-align",
            align,
            path(a.path()),
            path(b.path()),
        ])
        .expect(2);
        assert_eq!(
            error_line(&r),
            format!(
                "iolab: error: --block-align: target {}: {align} is larger than the {share} each worker draws its random offsets in, so no I/O would fit; use at most {share}",
                path(a.path())
            ),
            "{size:?}"
        );
        for d in [&a, &b] {
            assert_eq!(fs::read_dir(d.path()).unwrap().count(), 0, "{size:?}");
        }
    }
}
