//! Tests of [`collect`] and [`target_info`] against the fixture machine of
//! `testing::machine` and against empty or partial trees.

use super::*;
use crate::testing::{Fixture, machine};

#[test]
fn whole_machine() {
    let fx = machine();
    let inv = collect(&fx.root(), Some(Path::new("/scratch/run1")));
    assert_eq!(inv.hostname, "node01");
    assert_eq!(inv.os.as_deref(), Some("Debian GNU/Linux 12 (bookworm)"));
    assert_eq!(inv.kernel.as_deref(), Some("6.1.0-18-amd64"));
    assert_eq!(inv.cpu.model.as_deref(), Some("AMD EPYC 7302"));
    assert_eq!(
        (inv.cpu.sockets, inv.cpu.cores, inv.cpu.threads),
        (Some(1), Some(2), Some(2))
    );
    assert_eq!(inv.cpu.numa_nodes, Some(1));
    assert_eq!(inv.cpu.governor.as_deref(), Some("performance"));
    assert_eq!(inv.memory_bytes, Some(65_536_000 * 1024));
    assert_eq!(inv.mitigations.len(), 3);
    assert_eq!(inv.mitigations["meltdown"], "Not affected");
    assert!(inv.collected_at_ms > 0);

    let names: Vec<&str> = inv.network.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["docker0", "eth0"]);
    assert_eq!(inv.network[1].speed_mbps, Some(25_000));

    let t = inv.target.as_ref().unwrap();
    assert_eq!(t.path, "/scratch/run1");
    assert_eq!(t.mount_point.as_deref(), Some("/scratch"));
    assert_eq!(t.fs_type.as_deref(), Some("xfs"));
    assert_eq!(t.source.as_deref(), Some("/dev/nvme0n1p1"));
    assert_eq!(t.device_number.as_deref(), Some("259:2"));
    assert_eq!(t.source_device.as_deref(), Some("nvme0n1p1"));
    assert_eq!(
        t.mount_options,
        [
            "rw",
            "noatime",
            "attr2",
            "inode64",
            "logbufs=8",
            "logbsize=32k",
            "noquota"
        ]
    );
    assert_eq!(t.key_options["logbufs"], "8");
    assert_eq!(t.block_devices.len(), 1);
    assert_eq!(t.block_devices[0].name, "nvme0n1");
    assert_eq!(t.block_devices[0].scheduler.as_deref(), Some("none"));
    // /scratch does not exist on the machine running the test: capacity is a note.
    assert_eq!(t.capacity_bytes, None);
    assert!(
        inv.notes
            .iter()
            .any(|n| n.starts_with("target capacity unknown")),
        "{:?}",
        inv.notes
    );
    assert_eq!(inv.notes.len(), 1, "{:?}", inv.notes);
}

#[test]
fn raid_lvm_and_nfs_targets() {
    let fx = machine();
    let root = fx.root();
    let mut notes = Vec::new();

    let raid = target_info(&root, Path::new("/data/x/../y"), &mut notes);
    assert_eq!(raid.path, "/data/y");
    assert_eq!(
        raid.fs_type.as_deref(),
        Some("xfs"),
        "the upper of two /data mounts"
    );
    assert_eq!(raid.source_device.as_deref(), Some("md0"));
    let disks: Vec<&str> = raid.block_devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(disks, ["sda", "sdb"]);
    assert_eq!(raid.block_devices[0].rotational, Some(true));

    let lvm = target_info(&root, Path::new("/mnt/my data/run"), &mut notes);
    assert_eq!(lvm.mount_point.as_deref(), Some("/mnt/my data"));
    assert_eq!(lvm.source.as_deref(), Some("/dev/mapper/vg-data lv"));
    assert_eq!(lvm.source_device.as_deref(), Some("dm-0"));
    assert_eq!(lvm.block_devices.len(), 1);
    assert_eq!(lvm.block_devices[0].name, "sdc");

    let nfs = target_info(&root, Path::new("/mnt/nfs/results"), &mut notes);
    assert_eq!(nfs.fs_type.as_deref(), Some("nfs4"));
    assert_eq!(nfs.source.as_deref(), Some("nfs1:/export/home"));
    assert_eq!(nfs.device_number.as_deref(), Some("0:53"));
    assert_eq!(nfs.key_options["rsize"], "1048576");
    assert_eq!(nfs.key_options["nconnect"], "8");
    assert_eq!(nfs.key_options["hard"], "true");
    assert!(nfs.block_devices.is_empty());
    assert_eq!(nfs.source_device, None);
    assert!(
        notes
            .iter()
            .all(|n| n.starts_with("target capacity unknown")),
        "{notes:?}"
    );
}

#[test]
fn empty_tree_is_all_unknown_with_notes_never_a_panic() {
    let fx = Fixture::new();
    let inv = collect(&fx.root(), Some(Path::new("/anywhere")));
    assert_eq!(inv.hostname, "");
    assert_eq!(inv.os, None);
    assert_eq!(inv.kernel, None);
    assert_eq!(inv.memory_bytes, None);
    assert!(inv.mitigations.is_empty());
    assert!(inv.network.is_empty());
    let t = inv.target.unwrap();
    assert_eq!(t.path, "/anywhere");
    assert_eq!(t.fs_type, None);
    for what in [
        "hostname",
        "OS",
        "kernel",
        "memory",
        "CPU vulnerability",
        "target file system",
        "network",
    ] {
        assert!(
            inv.notes.iter().any(|n| n.starts_with(what)),
            "no note about {what}: {:?}",
            inv.notes
        );
    }
}

#[test]
fn malformed_files_are_notes() {
    let fx = Fixture::new();
    fx.file("etc/os-release", "NAME=x\n")
        .file("proc/meminfo", "garbage\n")
        .file("proc/self/mountinfo", "not mountinfo\n");
    let inv = collect(&fx.root(), Some(Path::new("/x")));
    assert_eq!(inv.os, None);
    assert_eq!(inv.memory_bytes, None);
    assert!(inv.notes.iter().any(|n| n.contains("no PRETTY_NAME")));
    assert!(inv.notes.iter().any(|n| n.contains("no MemTotal")));
    assert!(inv.notes.iter().any(|n| n.contains("no mount in")));
}

#[test]
fn capacity_of_an_existing_target() {
    let fx = machine();
    let dir = tempfile::tempdir().unwrap();
    // Mount the temporary directory in the fixture table so the real statvfs applies.
    let line = format!(
        "50 27 254:1 / {} rw - ext4 /dev/vda1 rw\n",
        dir.path().canonicalize().unwrap().display()
    );
    let mut table = std::fs::read_to_string(fx.path("proc/self/mountinfo")).unwrap();
    table.push_str(&line);
    fx.file("proc/self/mountinfo", &table);
    let mut notes = Vec::new();
    let t = target_info(&fx.root(), &dir.path().join("not-yet"), &mut notes);
    assert!(notes.is_empty(), "{notes:?}");
    let (cap, free) = (t.capacity_bytes.unwrap(), t.free_bytes.unwrap());
    assert!(cap > 0 && free <= cap, "{cap} {free}");
}

#[test]
fn relative_targets_are_made_absolute() {
    let p = absolute(Path::new("some/relative/../dir"));
    assert!(p.is_absolute());
    assert!(p.ends_with("some/dir"), "{}", p.display());
}

#[test]
fn serializes_to_json_and_back() {
    let fx = machine();
    let inv = collect(&fx.root(), Some(Path::new("/mnt/nfs")));
    let json = serde_json::to_string(&inv).unwrap();
    let back: Inventory = serde_json::from_str(&json).unwrap();
    assert_eq!(back, inv);
}
