//! A server failing over under load, for real: scripts/nfs.sh's `failover` kills
//! NFS-Ganesha (SIGKILL, a node that dies) in the middle of a verified write phase over
//! the NFS backend and starts another on the same export after a gap. The run rides
//! through (libnfs reconnects and sends again what was in flight), reports the gap as the
//! phase's pause within 20 % of the gap the script made and the I/O in flight through it
//! as retried, and every block written before,
//! during and after it reads back as written.

use super::Cluster;
use super::ceph::{files_under, wait_for};
use super::nfs::{failover, ports, tools};
use crate::common::{iolab, path, pause_in};

#[test]
fn an_nfs_failover_mid_write_is_ridden_through_measured_and_loses_nothing() {
    if !tools() {
        return;
    }
    let c = Cluster::up("nfs", &[]);
    let json = c.state().join("run.json");
    let child = iolab()
        .args(["run", "--no-store", "--backend", "nfs", "--nfs-url"])
        .arg(c.var("NFS_URL"))
        .args(["--rw", "write", "-b", "4KiB", "--size", "32MiB"])
        .args(["--runtime", "8s", "--verify", "--json", path(&json)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Under way: the data file is in the export; a second of writes before the failover.
    let export = std::path::Path::new(c.var("NFS_EXPORT")).to_path_buf();
    let started = std::time::Instant::now();
    while files_under(&export) == 0 {
        assert!(started.elapsed().as_secs() < 60, "no file in {export:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    let gap = failover(&c, "2");
    let r = wait_for(child, 120, "iolab run across a failover").expect(0);

    let (length, rest) = pause_in(&r.stdout);
    assert!(
        (length - gap).abs() <= 0.2 * gap,
        "pause {length} s against the failover's gap {gap} s: {rest}"
    );
    // The I/Os in flight when the server went (QD 1: the one), sent again on the new one.
    let retried: u64 = rest
        .split("; ")
        .find_map(|f| f.strip_suffix(" retried (in flight through it)"))
        .and_then(|n| n.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no I/Os retried in: {rest}"));
    assert_eq!(retried, 1, "{rest}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (write, verify) = (&j["phases"][0], &j["phases"][1]);
    assert_eq!(write["ops"][0]["op"], "write");
    assert_eq!(write["error_count"], 0, "{}", r.stdout);
    // Every write read back and checked (the file's 8,192 blocks, pass after pass).
    let written = write["ops"][0]["ops"].as_u64().unwrap();
    assert!(written > 8192, "{}", r.stdout);
    assert_eq!(verify["ops"][0]["ops"], written, "{}", r.stdout);
    assert_eq!(verify["verify_failures"], 0, "{}", r.stdout);
    let p = ports(&c);
    c.down_and_check(&p);
}
