//! `iolab targets`, `iolab targets analyze` and `iolab net` from the command line, each
//! test in its own temporary directories.

use std::path::Path;

use crate::common::run as iolab;

pub(crate) fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

fn small(dirs: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "targets",
        "--write",
        "--read",
        "--block-size",
        "4KiB",
        "--size",
        "64KiB",
        "--threads",
        "2",
        "--no-store",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    a.extend(dirs.iter().map(|d| d.to_string()));
    a
}

#[test]
fn three_directories_write_then_read_and_clean_up() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let paths: Vec<&str> = dirs.iter().map(|d| s(d.path())).collect();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("run.json");
    let mut args = small(&paths);
    args.extend(["--verbose".to_string(), "--json".into(), s(&json).into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = iolab(&args).expect(0);
    assert!(
        r.stdout.contains("write results: 3 targets on 1 node"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("read results: 3 targets on 1 node"),
        "{}",
        r.stdout
    );
    for label in [
        "min throughput",
        "max throughput",
        "avg throughput",
        "aggregate throughput",
    ] {
        assert!(r.stdout.contains(label), "{label}\n{}", r.stdout);
    }
    assert!(r.stdout.contains("target-id"), "{}", r.stdout);
    for p in &paths {
        assert!(r.stdout.contains(p), "{p} listed\n{}", r.stdout);
    }
    // Nothing of iolab's is left behind.
    for d in &dirs {
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["kind"], "targets");
    assert_eq!(v["status"], "complete");
    let phases = v["phases"].as_array().unwrap();
    // Per direction: the summary, then one phase per target.
    assert_eq!(phases.len(), 8);
    assert_eq!(phases[0]["name"], "write-4KiB");
    assert!(
        phases[0]["extra"]["aggregate_bytes_per_sec"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(phases[1]["name"], format!("target {}", paths[0]));
    assert_eq!(phases[1]["params"]["path"], paths[0]);
    assert_eq!(phases[1]["ops"][0]["bytes"], 2 * 65536);
    assert_eq!(phases[5]["ops"][0]["op"], "read");
}

#[test]
fn a_targets_file_places_targets_and_rated_figures() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let list = tempfile::tempdir().unwrap();
    let csv = list.path().join("targets.csv");
    let mut text = String::from("id,node,path,rated_mbps\n");
    for (i, d) in dirs.iter().enumerate() {
        text.push_str(&format!("{},,{},100000\n", i + 1, s(d.path())));
    }
    std::fs::write(&csv, text).unwrap();
    let r = iolab(&[
        "targets",
        "--targets-file",
        s(&csv),
        "--block-size",
        "4KiB",
        "--size",
        "64KiB",
        "--no-store",
        "-v",
    ])
    .expect(0);
    assert!(
        r.stdout.contains("write results: 3 targets"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("of theoretical"), "{}", r.stdout);
    assert!(r.stdout.contains("rated"), "{}", r.stdout);
}

#[test]
fn targets_file_errors_name_the_line() {
    let list = tempfile::tempdir().unwrap();
    let csv = list.path().join("targets.csv");
    std::fs::write(
        &csv,
        "id,node,path,rated_mbps\n1,,/tmp,5000\n2,,/tmp,fast\n",
    )
    .unwrap();
    let r = iolab(&["targets", "--targets-file", s(&csv), "--no-store"]).expect(2);
    assert_eq!(
        r.error_line(),
        format!(
            "iolab: error: {}:3: rated_mbps 'fast' is not a number",
            s(&csv)
        )
    );
    let r = iolab(&["targets", "--no-store"]).expect(2);
    assert!(r.error_line().contains("no target given"), "{}", r.stderr);
    let r = iolab(&["targets", "--no-store", "/nonexistent/iolab-t"]).expect(2);
    assert!(
        r.error_line()
            .contains("/nonexistent/iolab-t does not exist"),
        "{}",
        r.stderr
    );
}

/// Targets that ran together: the sum of their own rates and all bytes over the wall
/// time, each named; two directories of one file system share a device, and buffered
/// writes measure the page cache: both said.
#[test]
fn targets_name_both_aggregates_and_warn_of_a_shared_device_and_the_cache() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let r = iolab(&[
        "targets",
        "--rw",
        "write",
        "--size",
        "8MiB",
        "--no-store",
        s(a.path()),
        s(b.path()),
    ])
    .expect(0);
    assert!(
        r.stdout
            .contains("sum of the targets' own rates (StorageBench's aggregate)"),
        "{}",
        r.stdout
    );
    let wall = r
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("total / wall time"))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(wall.contains("16.0 MiB moved in "), "{wall}");
    assert!(
        r.stdout.contains(" are on one device (")
            && r.stdout
                .contains("their sum is that one device's bandwidth, not 2"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("buffered writes without --direct, --sync or an fsync"),
        "{}",
        r.stdout
    );
}

/// Two directories of one FUSE mount (iolab-faultfs, a client as ceph-fuse or weed mount
/// is) share the client, not necessarily a device: the warning says where their data
/// lives is the file system's choice, not that their sum is one device's bandwidth.
#[test]
fn targets_on_one_network_or_fuse_mount_are_not_called_one_device() {
    let Some(fs) = crate::common::FaultFs::mount(&[]) else {
        return;
    };
    let (a, b) = (format!("{}/a", fs.dir()), format!("{}/b", fs.dir()));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let r = iolab(&[
        "targets",
        "--rw",
        "write",
        "--size",
        "1MiB",
        "--direct",
        "--no-store",
        &a,
        &b,
    ])
    .expect(0);
    assert!(
        r.stdout.contains(&format!("targets {a}, {b} on "))
            && r.stdout.contains(" are on one fuse mount (")
            && r.stdout
                .contains("whether they share servers depends on where"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("one device's bandwidth"), "{}", r.stdout);
}

/// On a FUSE mount (no DIOALIGN, no O_TMPFILE) `iolab targets --direct` tries the
/// alignment on each target as `iolab run` does: 512-byte direct writes run (4096 was
/// assumed before, and they were refused), and nothing is left on the mount.
#[test]
fn targets_try_the_direct_io_alignment_on_a_fuse_mount() {
    let Some(fs) = crate::common::FaultFs::mount(&[]) else {
        return;
    };
    let (a, b) = (format!("{}/a", fs.dir()), format!("{}/b", fs.dir()));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let r = iolab(&[
        "targets",
        "--rw",
        "write",
        "--size",
        "256KiB",
        "--block-size",
        "512",
        "--direct",
        "--no-store",
        &a,
        &b,
    ])
    .expect(0);
    assert!(
        r.stdout.contains(&a) && r.stdout.contains(&b),
        "{}",
        r.stdout
    );
    for d in [&a, &b] {
        let left: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

/// `results show` of a stored targets run gives its figures in units, not raw floats,
/// and no "no operations completed" or "0 CPUs" for rows that have their figures
/// elsewhere.
#[test]
fn a_stored_targets_run_shows_its_figures_in_units() {
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let db = c.path().join("t.db");
    let with_db = |args: &[&str]| {
        crate::common::Ran::from(
            crate::common::iolab()
                .env("IOLAB_DB", &db)
                .args(args)
                .output()
                .unwrap(),
        )
    };
    with_db(&[
        "targets",
        "--rw",
        "write",
        "--size",
        "4MiB",
        "-Q",
        s(a.path()),
        s(b.path()),
    ])
    .expect(0);
    let r = with_db(&["results", "show", "r1"]).expect(0);
    assert!(
        !r.stdout.contains("no operations completed"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("of 0 CPUs"), "{}", r.stdout);
    assert!(
        r.stdout.contains("  total bytes moved: 8.00 MiB"),
        "{}",
        r.stdout
    );
    let line = r
        .stdout
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with("sum of per-target rates (StorageBench's aggregate): ")
        })
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(line.ends_with("/s"), "{line}");
}

#[test]
fn the_null_backend_runs_one_at_a_time_without_storage() {
    let r = iolab(&[
        "targets",
        "--backend",
        "null",
        "--one-at-a-time",
        "--size",
        "1MiB",
        "--no-store",
        "--verbose",
        "/a",
        "/b",
        "/c",
    ])
    .expect(0);
    assert!(r.stdout.contains("one-at-a-time"), "{}", r.stdout);
    assert!(
        r.stdout.contains("write results: 3 targets"),
        "{}",
        r.stdout
    );
}
#[test]
fn a_target_whose_disk_fills_up_does_not_cut_the_others_short() {
    if !crate::common::can_mount() {
        eprintln!("SKIPPED: cannot mount a tmpfs here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (disk, small) = (tmp.path().join("disk"), tmp.path().join("small"));
    std::fs::create_dir(&disk).unwrap();
    std::fs::create_dir(&small).unwrap();
    let json = tmp.path().join("t.json");
    // Two targets of 1.5 MiB on one 2 MiB tmpfs: each fits alone, together they fill it.
    let r = crate::common::run_in_namespace(
        &format!(
            "mount -t tmpfs -o size=2m tmpfs '{0}' && mkdir '{0}/a' '{0}/b'",
            s(&small)
        ),
        &[
            "targets",
            "--write",
            "--block-size",
            "64KiB",
            "--size",
            "1536KiB",
            // O_SYNC: the disk's writes take time, the tmpfs fills at once.
            "--sync",
            "--no-store",
            "--json",
            s(&json),
            s(&disk),
            &format!("{}/a", s(&small)),
            &format!("{}/b", s(&small)),
        ],
    );
    // The file system fills with a short write (exit 1, validation failed) or with
    // ENOSPC (exit 2, an environment error), whichever comes first.
    assert!([1, 2].contains(&r.code), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("the file system is probably full")
            || r.stdout.contains("No space left on device"),
        "{}",
        r.stdout
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let phases = j["phases"].as_array().unwrap();
    let written = |target: &str| -> (u64, u64) {
        let p = phases
            .iter()
            .find(|p| p["name"] == format!("target {target}"))
            .unwrap();
        let w = p["ops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["op"] == "write")
            .unwrap();
        (
            w["bytes"].as_u64().unwrap(),
            p["error_count"].as_u64().unwrap(),
        )
    };
    // The healthy target wrote all of its share, with no error of its own.
    assert_eq!(written(s(&disk)), (1536 << 10, 0));
    let full: u64 = ["a", "b"]
        .iter()
        .map(|t| written(&format!("{}/{t}", s(&small))).1)
        .sum();
    assert!(
        full >= 1,
        "the full file system's targets report their errors"
    );
}

#[test]
fn ctrl_c_marks_the_targets_phase_interrupted() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args([
            "targets",
            "--runtime",
            "60s",
            "--size",
            "4MiB",
            "--block-size",
            "64KiB",
        ])
        .args(["--no-store", s(&a), s(&b)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The timed phase runs once both targets' files exist.
    let file = a.join("iolab-work/data.r0.t0");
    for _ in 0..100 {
        if file.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let r = crate::common::Ran::from(child.wait_with_output().unwrap()).expect(130);
    let header = r
        .stdout
        .lines()
        .find(|l| l.starts_with("write-64KiB"))
        .unwrap();
    assert!(header.ends_with("  [interrupted]"), "{}", r.stdout);
}

#[test]
fn one_directory_under_two_spellings_is_one_target() {
    let tmp = tempfile::tempdir().unwrap();
    let d1 = tmp.path().join("d1");
    std::fs::create_dir(&d1).unwrap();
    // A link to it, as a mount point's other name would be.
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&d1, &link).unwrap();
    let r = iolab(&["targets", "--size", "1MiB", "--no-store", s(&d1), s(&link)]).expect(2);
    assert_eq!(
        crate::common::error_line(&r),
        format!(
            "iolab: error: target {0}: {0} is the same place as the path of target {1} ({1}); list each target once",
            s(&link),
            s(&d1)
        )
    );
    assert_eq!(
        std::fs::read_dir(&d1).unwrap().count(),
        0,
        "nothing written"
    );
}
