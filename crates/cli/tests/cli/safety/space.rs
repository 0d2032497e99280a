//! The free-space checks refuse what does not fit, but a file system that reports no
//! capacity at all must not be taken as full: ramfs (memory) is checked against the
//! host's available memory, another (some FUSE) cannot be checked.

use crate::common::{can_mount, error_line, json_of, path, run_in_namespace};

#[test]
fn a_file_system_reporting_no_capacity_is_not_taken_as_full() {
    if !can_mount() {
        eprintln!("SKIPPED: cannot mount ramfs here (needs root and mount namespaces)");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("targets.json");
    let r = run_in_namespace(
        "mount -t ramfs ramfs /mnt && mkdir /mnt/a /mnt/b",
        &[
            "targets",
            "/mnt/a",
            "/mnt/b",
            "--size",
            "1MiB",
            "--json",
            path(&json),
            "--no-store",
        ],
    )
    .expect(0);
    let v = json_of(&json);
    let written: u64 = v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["ops"].as_array().unwrap())
        .map(|o| o["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(written, 2 << 20, "{}", r.stdout);

    let json = out.path().join("checkpoint.json");
    run_in_namespace(
        "mount -t ramfs ramfs /mnt && mkdir /mnt/c",
        &[
            "checkpoint",
            "--ranks",
            "8",
            "--scale",
            "0.00001",
            "--writes",
            "1",
            "--reads",
            "0",
            "--time-between",
            "0",
            "--dir",
            "/mnt/c",
            "--json",
            path(&json),
            "--no-store",
        ],
    )
    .expect(0);
    let v = json_of(&json);
    let per_checkpoint: u64 = v["spec"]["rank_bytes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .sum();
    assert!(per_checkpoint > 0);
    assert_eq!(
        v["phases"][0]["ops"][0]["bytes"].as_u64(),
        Some(per_checkpoint)
    );

    run_in_namespace(
        "mount -t ramfs ramfs /mnt",
        &[
            "train",
            "datagen",
            "--data-dir",
            "/mnt/d",
            "--files",
            "4",
            "--samples-per-file",
            "2",
            "--record-length",
            "4096",
            "--no-store",
        ],
    )
    .expect(0);

    // ramfs holds what memory can: more than the host has is refused before a byte is
    // written.
    let r = run_in_namespace(
        "mount -t ramfs ramfs /mnt && mkdir /mnt/a",
        &["targets", "/mnt/a", "--size", "64TiB", "--no-store"],
    )
    .expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("the workload needs 64.0 TiB in /mnt/a/iolab-work but only")
            && line.contains(" is free;"),
        "{line}"
    );

    // The check still refuses what does not fit where the capacity is known.
    let r = run_in_namespace(
        "mount -t tmpfs -o size=1m tmpfs /mnt && mkdir /mnt/a /mnt/b",
        &[
            "targets",
            "/mnt/a",
            "/mnt/b",
            "--size",
            "4MiB",
            "--no-store",
        ],
    )
    .expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("the workload needs 4.00 MiB in /mnt/a/iolab-work but only")
            && line.contains(" is free;"),
        "{line}"
    );
}
