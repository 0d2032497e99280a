//! Ceph from scripts/ceph.sh (mon, mgr, a bluestore OSD on a loop device, MDS, CephFS
//! through ceph-fuse): a short IO500 and a metadata run on CephFS give sane figures, and
//! `down` leaves no process, mount, loop device, port or file behind.

use super::Cluster;
use crate::common::{Ran, iolab, path};

fn ports(c: &Cluster) -> Vec<u16> {
    c.var("CEPH_PORTS")
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// The loop devices still backed by a file under `prefix`.
fn loops_under(prefix: &str) -> Vec<String> {
    let out = std::process::Command::new("losetup")
        .args(["-n", "-O", "NAME,BACK-FILE"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(prefix))
        .map(str::to_string)
        .collect()
}

/// `[RESULT] name value unit : time t seconds` -> (name, value).
fn result_lines(stdout: &str) -> Vec<(String, f64)> {
    stdout
        .lines()
        .filter(|l| l.starts_with("[RESULT]") || l.starts_with("[      ]"))
        .map(|l| {
            let f: Vec<&str> = l[8..].split_whitespace().collect();
            (f[0].to_string(), f[1].parse().unwrap())
        })
        .collect()
}

#[test]
fn io500_and_meta_on_cephfs_are_sane_and_down_leaves_nothing() {
    let c = Cluster::up("ceph", &[]);
    let mnt = std::path::PathBuf::from(c.var("CEPHFS_MOUNT"));
    let fs = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(
        fs.lines()
            .any(|l| l.contains(" fuse.ceph-fuse ") && l.contains(path(&mnt))),
        "CephFS is not mounted with ceph-fuse at {}:\n{fs}",
        mnt.display()
    );
    let devices = c.var("CEPH_OSD_DEVICES").to_string();
    assert!(devices.starts_with("/dev/loop"), "{devices}");

    let work = mnt.join("io500");
    let r = Ran::from(
        iolab()
            .args(["io500", "--dir", path(&work), "--stonewall", "2s"])
            .args(["--files-per-rank", "2000", "--no-store"])
            .arg("--result-dir")
            .arg(c.state().join("io500-result"))
            .output()
            .unwrap(),
    )
    .expect(0);
    let results = result_lines(&r.stdout);
    assert_eq!(results.len(), 13, "{}", r.stdout);
    for (name, value) in &results {
        // GiB/s for the IOR phases, kIOPS for the others: one client on one OSD on a
        // loop device moves well under 50 GiB/s, and nothing is zero.
        let top = if name.starts_with("ior") {
            50.0
        } else {
            5000.0
        };
        assert!(
            *value > 0.0 && *value < top,
            "{name} = {value} is not a sane figure on CephFS\n{}",
            r.stdout
        );
    }
    let total: f64 = r
        .stdout
        .lines()
        .find_map(|l| l.split("TOTAL ").nth(1))
        .and_then(|t| t.split_whitespace().next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no TOTAL in\n{}", r.stdout));
    assert!(total > 0.0, "{total}");
    assert_eq!(
        std::fs::read_dir(&work).unwrap().count(),
        0,
        "io500 cleaned up"
    );

    let json = c.state().join("meta.json");
    let meta = mnt.join("meta");
    std::fs::create_dir(&meta).unwrap();
    Ran::from(
        iolab()
            .args(["meta", "--dir", path(&meta), "--threads", "2"])
            .args([
                "--files-per-dir",
                "300",
                "--file-size",
                "3901",
                "--no-store",
            ])
            .args(["--json", path(&json)])
            .output()
            .unwrap(),
    )
    .expect(0);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let phases = j["phases"].as_array().unwrap();
    let names: Vec<&str> = phases
        .iter()
        .flat_map(|p| p["ops"].as_array().unwrap())
        .map(|o| o["op"].as_str().unwrap())
        .collect();
    for want in ["create", "stat", "read", "remove"] {
        let op = phases
            .iter()
            .flat_map(|p| p["ops"].as_array().unwrap())
            .find(|o| o["op"] == want)
            .unwrap_or_else(|| panic!("no {want} among {names:?}"));
        assert_eq!(op["ops"], 600, "{want}: {op}");
        assert_eq!(op["errors"].as_u64().unwrap_or(0), 0, "{want}: {op}");
    }
    assert_eq!(
        std::fs::read_dir(&meta).unwrap().count(),
        0,
        "meta cleaned up"
    );

    let state = c.state().to_str().unwrap().to_string();
    let ports = ports(&c);
    c.down_and_check(&ports);
    assert!(loops_under(&state).is_empty(), "{:?}", loops_under(&state));
}
