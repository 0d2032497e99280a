//! Under `mpirun` (MPI build only), what must never hang: a bad option on one rank, a
//! rank that fails alone, a rank that stops (the stall watchdog); and several hosts on
//! one machine (UTS namespaces) with their own `{host}` directories.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Ran, path};
use crate::mpi::{mpirun, mpirun_available, run_limited, the_one_error};

/// A bad option on one rank of an MPMD launch: every rank ends non-zero at once, the
/// error said once, naming the rank.
#[test]
fn a_bad_argument_on_one_rank_ends_every_rank() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_iolab");
    let mut c = Command::new("mpirun");
    c.args(["--allow-run-as-root", "--oversubscribe", "-np", "2", bin]);
    c.args(["run", "--dir", path(dir.path()), "--size", "1MiB"]);
    c.args([":", "-np", "1", bin]);
    c.args(["run", "--dir", path(dir.path()), "--size", "1MiB"]);
    c.args(["--block-size", "0"]);
    c.env("IOLAB_DB", dir.path().join("db"));
    let r = run_limited(c, Duration::from_secs(60));
    assert_eq!(r.code, 2, "{}", r.stderr);
    let lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("iolab:"))
        .collect();
    assert_eq!(lines.len(), 1, "said once:\n{}", r.stderr);
    assert!(
        lines[0].contains("rank 2 on ") && lines[0].contains("--block-size: must be larger than 0"),
        "{}",
        lines[0]
    );
    assert!(
        !dir.path().join("iolab-work").exists(),
        "nothing was laid out"
    );
}

/// A rank that fails alone after the agreement (rank 0 cannot write --json) does not
/// leave the others waiting: the job ends with its code.
#[test]
fn a_rank_that_fails_alone_ends_the_job() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut c = mpirun(2);
    c.args(["run", "--dir", path(dir.path()), "--size", "1MiB", "--json"]);
    c.arg(dir.path().join("missing/x.json"));
    let r = run_limited(c, Duration::from_secs(60));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--json "), "{}", r.stderr);
}

/// The pid of the iolab process that is rank `rank` of an MPI job working in `dir`.
fn rank_pid(dir: &std::path::Path, rank: u32) -> Option<u32> {
    let pids = Command::new("pgrep")
        .args(["-f", path(dir)])
        .output()
        .ok()?;
    String::from_utf8_lossy(&pids.stdout)
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .find(|p| {
            fs::read(format!("/proc/{p}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|v| v == format!("OMPI_COMM_WORLD_RANK={rank}").as_bytes())
            })
        })
}

/// A stopped rank (SIGSTOP, as a hung node looks to the others) ends the job within the
/// stall timeout plus the roll call, and the run is stored as failed naming the rank.
#[test]
fn a_stopped_rank_is_found_by_the_stall_watchdog() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let mut c = mpirun(2);
    c.env("IOLAB_DB", &db);
    c.args(["run", "--dir", path(dir.path()), "--backend", "null"]);
    c.args([
        "--size",
        "1GiB",
        "--runtime",
        "60s",
        "--stall-timeout",
        "5s",
    ]);
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let victim = loop {
        if let Some(p) = rank_pid(dir.path(), 1) {
            break p;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "rank 1 never ran: {:?}",
            child.try_wait()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // The null backend lays out nothing: give the phase time to start.
    std::thread::sleep(Duration::from_secs(3));
    Command::new("kill")
        .args(["-STOP", &victim.to_string()])
        .status()
        .unwrap();
    let stopped_at = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if stopped_at.elapsed() > Duration::from_secs(30) {
            let _ = Command::new("kill")
                .args(["-CONT", &victim.to_string()])
                .status();
            let _ = child.kill();
            panic!("the job did not end within 30 s of rank 1 stopping");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = Command::new("kill")
        .args(["-CONT", &victim.to_string()])
        .status();
    let r = Ran::from(child.wait_with_output().unwrap());
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("iolab: rank 1 on ")
            && r.stderr
                .contains(" stalled in read-4KiB: it stopped answering"),
        "{}",
        r.stderr
    );
    let shown = crate::common::iolab()
        .env("IOLAB_DB", &db)
        .args(["results", "list"])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&shown.stdout);
    assert!(list.contains("failed"), "{list}");
    let shown = crate::common::iolab()
        .env("IOLAB_DB", &db)
        .args(["results", "show", "r1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("failed: rank 1 on "), "{text}");
}

/// `mpirun -np N` with every rank in its own UTS namespace named node<rank / per_host>:
/// several hosts on one machine.
pub(crate) fn mpirun_on_hosts(np: u32, per_host: u32) -> Command {
    let mut c = Command::new("mpirun");
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &np.to_string(),
        "unshare",
        "--uts",
        "sh",
        "-c",
    ]);
    c.arg(format!(
        "hostname node$((OMPI_COMM_WORLD_RANK / {per_host})) && exec \"$@\""
    ));
    c.args(["sh", env!("CARGO_BIN_EXE_iolab")]);
    c.env_remove("RUST_BACKTRACE");
    c
}

pub(crate) fn uts_namespaces() -> bool {
    let ok = Command::new("unshare")
        .args(["--uts", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: no UTS namespaces (unshare --uts) here");
    }
    ok
}

/// Two simulated hosts of two ranks: `{host}` directories are created on each host (the
/// parent exists, the last level does not), the result has one row per host, and each
/// host's directory held its own ranks' files.
#[test]
fn two_hosts_get_their_own_directories_and_rows() {
    if !mpirun_available() || !uts_namespaces() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut c = mpirun_on_hosts(4, 2);
    c.env("IOLAB_DB", dir.path().join("db"));
    c.args(["run", "--dir"]);
    c.arg(dir.path().join("{host}"));
    c.args(["--rw", "write", "--size", "1MiB", "--keep", "--json"]);
    c.arg(dir.path().join("r.json"));
    let r = run_limited(c, Duration::from_secs(120));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("host node0: 2 ranks"), "{}", r.stdout);
    assert!(r.stdout.contains("host node1: 2 ranks"), "{}", r.stdout);
    let files = |host: &str| {
        let mut names: Vec<String> = fs::read_dir(dir.path().join(host).join("iolab-work"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("data."))
            .collect();
        names.sort();
        names
    };
    assert_eq!(files("node0"), ["data.r0.t0", "data.r1.t0"]);
    assert_eq!(files("node1"), ["data.r2.t0", "data.r3.t0"]);
    let json: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(
        json["provenance"]["hosts"],
        serde_json::json!(["node0", "node1"])
    );
}

/// `{rank}` directories under a parent that does not exist: refused on every rank,
/// naming the parent.
#[test]
fn a_templated_dir_needs_its_parent() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut c = mpirun(2);
    c.args(["run", "--dir"]);
    c.arg(dir.path().join("missing/r{rank}"));
    c.args(["--size", "1MiB"]);
    let r = run_limited(c, Duration::from_secs(60));
    let line = the_one_error(&r);
    assert!(
        line.contains(&format!(
            "--dir {}/missing does not exist",
            path(dir.path())
        )),
        "{line}"
    );
}

/// Four simulated hosts with two targets each (a targets file places them by node);
/// node3's targets are on a file system that stalls every data write by 30 ms (a slow
/// controller). `iolab targets` under `mpirun` finds node3 as a slow node against the
/// other nodes' targets, no other node, and has one row per host.
#[test]
fn targets_on_four_hosts_flag_the_slow_node() {
    if !mpirun_available() || !uts_namespaces() {
        return;
    }
    let Some(slow) = crate::common::FaultFs::mount(&["write:stall=30ms:match=data."]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("id,node,path\n");
    for node in 0..4 {
        for t in 0..2 {
            let base = if node == 3 {
                Path::new(slow.dir()).to_path_buf()
            } else {
                dir.path().to_path_buf()
            };
            let target = base.join(format!("n{node}t{t}"));
            fs::create_dir(&target).unwrap();
            csv.push_str(&format!("n{node}t{t},node{node},{}\n", path(&target)));
        }
    }
    let list = dir.path().join("targets.csv");
    fs::write(&list, csv).unwrap();
    let json = dir.path().join("r.json");
    let mut c = mpirun_on_hosts(4, 1);
    c.env("IOLAB_DB", dir.path().join("db"));
    c.args(["targets", "--targets-file", path(&list)]);
    c.args([
        "--size",
        "1MiB",
        "--block-size",
        "64KiB",
        "--json",
        path(&json),
    ]);
    let r = run_limited(c, Duration::from_secs(180));
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("node node3: all 2 targets are slow"),
        "{}",
        r.stdout
    );
    let v: serde_json::Value = serde_json::from_slice(&fs::read(&json).unwrap()).unwrap();
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases[0]["extra"]["slow_nodes"], 1.0, "{}", phases[0]);
    for p in &phases[1..] {
        let on_node3 = p["params"]["node"] == "node3";
        assert_eq!(
            p["extra"]["node_slow"],
            if on_node3 { 1.0 } else { 0.0 },
            "{p}"
        );
        // (A target elsewhere may still be flagged alone when the machine is loaded:
        // page-cache writes of 1 MiB on 2 shared cores are not steady.)
        assert_eq!(p["ops"][0]["bytes"], 1024 * 1024);
    }
    let hosts: Vec<&str> = phases[0]["per_host"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["node0", "node1", "node2", "node3"]);
}

/// Reads across hosts: on two simulated hosts of two ranks sharing one directory, each
/// rank reads the data of the rank one host further on (shift 2, the ranks per host, so
/// no rank reads what its own host's page cache holds); with `{host}` directories the
/// ranks do not share data and nothing is shifted.
#[test]
fn reads_are_shifted_to_the_next_host() {
    if !mpirun_available() || !uts_namespaces() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let shift = |target: &str| {
        let json = dir.path().join("r.json");
        let mut c = mpirun_on_hosts(4, 2);
        c.args(["run", "--dir", target, "--rw", "read", "--size", "1MiB"]);
        c.args(["--no-store", "--json", path(&json)]);
        let r = run_limited(c, Duration::from_secs(120));
        assert_eq!(r.code, 0, "{}", r.stderr);
        let v: serde_json::Value = serde_json::from_slice(&fs::read(&json).unwrap()).unwrap();
        v["phases"][0]["params"]["read_shift"].clone()
    };
    assert_eq!(shift(path(dir.path())), "2");
    let per_host = dir.path().join("{host}");
    assert_eq!(shift(path(&per_host)), serde_json::Value::Null);
}
