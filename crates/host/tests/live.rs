//! On the machine running the tests: inventory, audit and sampler against the live
//! /proc and /sys. They assert only what every Linux host shows (a root file system
//! type, a kernel), never values, so they pass in containers and VMs alike.

use std::path::Path;

use iolab_core::Nanos;
use iolab_host::inventory::collect;
use iolab_host::{Sampler, Status, SysRoot, audit};

#[test]
fn inventory_of_this_machine_finds_the_root_file_system() {
    let root = SysRoot::live();
    let inv = collect(&root, Some(Path::new("/")));
    let target = inv.target.as_ref().expect("a target was asked for");
    assert_eq!(
        target.mount_point.as_deref(),
        Some("/"),
        "notes: {:?}",
        inv.notes
    );
    assert!(
        target.fs_type.as_deref().is_some_and(|t| !t.is_empty()),
        "notes: {:?}",
        inv.notes
    );
    assert!(
        target.capacity_bytes.is_some(),
        "statvfs of / works: {:?}",
        inv.notes
    );
    assert!(inv.kernel.is_some());
    assert!(!inv.hostname.is_empty());
    assert!(inv.cpu.threads.is_some_and(|t| t > 0));
    serde_json::to_string(&inv).expect("the inventory serializes");
}

#[test]
fn inventory_of_a_directory_that_does_not_exist_yet() {
    let dir = tempfile::tempdir().unwrap();
    let inv = collect(&SysRoot::live(), Some(&dir.path().join("not/yet")));
    let target = inv.target.unwrap();
    assert!(target.fs_type.is_some(), "notes: {:?}", inv.notes);
    assert!(
        target.capacity_bytes.is_some(),
        "measured at the existing ancestor: {:?}",
        inv.notes
    );
}

#[test]
fn audit_of_this_machine_reads_the_sysctls() {
    let root = SysRoot::live();
    let inv = collect(&root, Some(Path::new("/")));
    let findings = audit::run(&root, &inv, Some(iolab_host::Profile::StorageServer));
    assert!(!findings.is_empty());
    let rmem = findings
        .iter()
        .find(|f| f.id == "net.rmem-max")
        .expect("a rmem_max finding");
    assert_ne!(rmem.status, Status::Unknown, "{rmem:?}");
}

#[test]
fn sampler_on_this_machine() {
    let root = SysRoot::live();
    let inv = collect(&root, Some(Path::new("/")));
    let devices: Vec<String> = inv
        .target
        .unwrap()
        .block_devices
        .into_iter()
        .map(|d| d.name)
        .collect();
    let sampler = Sampler::start(&root, &inv.hostname, &devices, Nanos::from_millis(20));
    std::thread::sleep(std::time::Duration::from_millis(110));
    let t = sampler.stop();
    assert!(!t.sample_ends_ms.is_empty());
    assert_eq!(t.cpu.user_percent.len(), t.sample_ends_ms.len());
    for d in &t.devices {
        assert_eq!(d.util_percent.len(), t.sample_ends_ms.len());
    }
    assert!(t.started_at_ms > 0);
}
