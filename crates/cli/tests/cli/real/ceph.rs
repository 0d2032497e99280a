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
    // Two clusters started at once on the same ports: the port lock (scripts/lib/cluster.sh)
    // lets one pick them, the other waits until that one's mon listens and then fails in
    // one line having started nothing (no second 1.5 GiB of daemons).
    let lock_dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let lock = lock_dir.path().join("ports.lock");
    let base = super::cluster::free_block(2);
    let c = Cluster::race_for_ports("ceph", &lock, base, &[]);
    assert_eq!(c.var("CEPH_MON"), format!("127.0.0.1:{base}"));
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
            .args(crate::io500_run::BOUNDED)
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

    // ceph-fuse's own cache: named for buffered reads even from a cold page cache, not
    // for direct reads, which go to the OSD.
    let cached = mnt.join("cached");
    std::fs::create_dir(&cached).unwrap();
    for (how, warned) in [("--cache=cold", true), ("--direct", false)] {
        let r = Ran::from(
            iolab()
                .args([
                    "run",
                    "--dir",
                    path(&cached),
                    "--rw",
                    "read",
                    "--size",
                    "16MiB",
                ])
                .args(["--block-size", "1MiB", "--no-store", how])
                .output()
                .unwrap(),
        )
        .expect(0);
        assert_eq!(
            r.stdout.contains(
                "reads on CephFS through ceph-fuse, which keeps file data in its object cache"
            ),
            warned,
            "{how}\n{}",
            r.stdout
        );
    }

    // statfs on CephFS is the cluster's, not the client machine's: the data pool's room
    // on the one 2 GiB OSD (less bluestore's own), and iolab's space check takes it so.
    let (total, free) = super::cluster::space(&mnt);
    assert!(
        (1u64 << 30..=2 << 30).contains(&total) && free <= total,
        "CephFS on a 2 GiB OSD reports {total} bytes, {free} free"
    );
    let big = mnt.join("big");
    std::fs::create_dir(&big).unwrap();
    let r = Ran::from(
        iolab()
            .args([
                "run",
                "--dir",
                path(&big),
                "--rw",
                "write",
                "--size",
                "3GiB",
            ])
            .arg("--no-store")
            .output()
            .unwrap(),
    )
    .expect(2);
    assert!(
        r.stderr.contains("the workload needs 3")
            && r.stderr.contains(&format!("in {}", big.display()))
            && r.stderr.contains("is free; use a smaller --size"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_dir(&big).unwrap().count(), 0, "wrote nothing");

    let state = c.state().to_str().unwrap().to_string();
    let ports = ports(&c);
    c.down_and_check(&ports);
    assert!(loops_under(&state).is_empty(), "{:?}", loops_under(&state));
}

/// Waits for `child` at most `secs`; kills it and panics when it takes longer.
pub(super) fn wait_for(mut child: std::process::Child, secs: u64, what: &str) -> Ran {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} still runs after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    Ran::from(child.wait_with_output().unwrap())
}

/// Files under `dir` (recursively; entries that vanish meanwhile are skipped).
pub(super) fn files_under(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => files_under(&e.path()),
            Ok(_) => 1,
            Err(_) => 0,
        })
        .sum()
}

/// Polls `done` every 100 ms for at most `secs`; panics naming `what` when it never holds.
fn wait_until(secs: u64, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {secs} s"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn ceph_sh(c: &Cluster, what: &[&str]) {
    let out = std::process::Command::new(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ceph.sh"),
    )
    .args(what)
    .arg("--state")
    .arg(c.state())
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "ceph.sh {what:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_mds_restart_stalls_a_metadata_phase_and_a_stopped_osd_fails_a_write() {
    let c = Cluster::up("ceph", &[]);
    let mnt = std::path::PathBuf::from(c.var("CEPHFS_MOUNT"));
    let db = c.state().join("results.db");

    // The MDS killed and started again while files are created: the phase waits for
    // it, completes every file, and says where it stalled.
    let meta = mnt.join("meta");
    std::fs::create_dir(&meta).unwrap();
    let json = c.state().join("meta.json");
    let child = iolab()
        .args(["meta", "--dir", path(&meta), "--threads", "2"])
        .args([
            "--files-per-dir",
            "5000",
            "--ops",
            "create,remove",
            "--no-store",
        ])
        .args(["--json", path(&json)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Killed (an active MDS may sit on SIGTERM for seconds while the creates go on) once
    // the create phase is under way, so the stall falls inside it whatever the speed.
    wait_until(60, "iolab meta creating files", || {
        files_under(&meta) >= 500
    });
    let mds = std::fs::read_to_string(c.state().join("run/mds.a.pid")).unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", mds.trim()])
        .status()
        .unwrap();
    assert!(killed.success(), "kill -KILL {mds}");
    wait_until(10, "the killed MDS gone", || {
        !std::path::Path::new(&format!("/proc/{}", mds.trim())).exists()
    });
    std::thread::sleep(std::time::Duration::from_secs(1));
    ceph_sh(&c, &["start", "mds.a"]);
    let r = wait_for(child, 180, "iolab meta across an MDS restart").expect(0);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let create = &j["phases"][0];
    assert_eq!(create["ops"][0]["op"], "create");
    assert_eq!(create["ops"][0]["ops"], 10000, "{}", r.stdout);
    let warnings = create["warnings"].to_string();
    assert!(
        warnings.contains("no operation completed for "),
        "no stall among the create phase's warnings: {warnings}\ntimeline: {}",
        create["timeline"]
    );
    // The pause and the creates in flight through it (one per thread at most), which
    // ceph-fuse sent to the MDS again once it was back.
    let (length, rest) = crate::common::pause_in(&r.stdout);
    let retried: u64 = rest
        .split("; ")
        .find_map(|f| f.strip_suffix(" retried (in flight through it)"))
        .and_then(|n| n.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no I/Os retried in: {rest}"));
    assert!(
        length >= 1.0 && (1..=2).contains(&retried),
        "pause {length} s, {retried} retried: {rest}"
    );
    assert_eq!(j["phases"][1]["ops"][0]["ops"], 10000);
    assert_eq!(std::fs::read_dir(&meta).unwrap().count(), 0);

    // The only OSD stopped under direct writes: the watchdog ends the job, names the
    // phase and stores the run as failed. The process itself can exit only once the
    // write it is blocked in returns, so the OSD comes back before it is waited for.
    let work = mnt.join("write");
    std::fs::create_dir(&work).unwrap();
    let child = iolab()
        .env("IOLAB_DB", &db)
        .args(["run", "--dir", path(&work), "--rw", "write", "--direct"])
        .args([
            "--size",
            "64MiB",
            "--runtime",
            "120s",
            "--block-size",
            "1MiB",
            "--stall-timeout",
            "4s",
        ])
        .args(["--label", "osd-down"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Time based, so it still writes when the OSD goes, however fast the OSD is.
    wait_until(60, "iolab run writing", || {
        std::fs::read_dir(&work)
            .is_ok_and(|d| d.flatten().any(|e| e.metadata().is_ok_and(|m| m.len() > 0)))
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    ceph_sh(&c, &["stop", "osd.0"]);
    std::thread::sleep(std::time::Duration::from_secs(8));
    ceph_sh(&c, &["start", "osd.0"]);
    let r = wait_for(child, 180, "iolab run with its OSD stopped");
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("rank 0 on ")
            && r.stderr.contains("stalled in write-1MiB")
            && r.stderr.contains("(--stall-timeout 4 s)"),
        "{}",
        r.stderr
    );
    let show = Ran::from(
        iolab()
            .env("IOLAB_DB", &db)
            .args(["results", "show", "osd-down", "--format", "json"])
            .output()
            .unwrap(),
    )
    .expect(0);
    let j: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(j["status"], "failed", "{}", show.stdout);

    let ports = ports(&c);
    c.down_and_check(&ports);
}
