//! `iolab targets` end to end under `mpirun --oversubscribe` (MPI build only).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Ran;
use crate::targets::s;

fn mpirun(np: u32, args: &[&str]) -> Option<Ran> {
    let available = Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !available {
        eprintln!("SKIPPED: mpirun is not on PATH (install openmpi-bin)");
        return None;
    }
    let mut child = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            &np.to_string(),
        ])
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .env("IOLAB_DB", crate::common::test_db())
        .env_remove("RUST_BACKTRACE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun starts");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("mpirun hung: {:?}", child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    Some(Ran {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    })
}

#[test]
fn four_ranks_share_their_hosts_targets_all_at_once_and_one_at_a_time() {
    let dirs: Vec<tempfile::TempDir> = (0..6).map(|_| tempfile::tempdir().unwrap()).collect();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    for mode in ["--write", "--one-at-a-time"] {
        let mut args = vec![
            "targets",
            mode,
            "--size",
            "256KiB",
            "--block-size",
            "64KiB",
            "--no-store",
            "--json",
            s(&json),
        ];
        args.extend(dirs.iter().map(|d| s(d.path())));
        let r = mpirun(4, &args).map(|r| r.expect(0));
        let Some(r) = r else { return };
        assert_eq!(
            r.stdout.matches("write results: 6 targets").count(),
            1,
            "{}",
            r.stdout
        );
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let phases = v["phases"].as_array().unwrap();
        assert_eq!(phases.len(), 7);
        assert_eq!(phases[0]["ranks"], 4);
        let ranks: Vec<&str> = phases[1..]
            .iter()
            .map(|p| p["params"]["rank"].as_str().unwrap())
            .collect();
        assert_eq!(ranks, vec!["0", "1", "2", "3", "0", "1"]);
        for p in &phases[1..] {
            assert_eq!(p["ops"][0]["bytes"], 256 * 1024);
        }
        for d in &dirs {
            assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        }
    }
}

#[test]
fn two_ranks_stream_both_ways() {
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("net.json");
    let args = [
        "net",
        "--size",
        "8MiB",
        "--streams",
        "2",
        "--no-store",
        "--json",
        s(&json),
    ];
    let Some(r) = mpirun(2, &args) else { return };
    let r = r.expect(0);
    assert!(r.stdout.contains("net-forward"), "{}", r.stdout);
    assert!(r.stdout.contains("net-reverse"), "{}", r.stdout);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let names: Vec<&str> = v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["net-forward", "net 0->1", "net-reverse", "net 1->0"]
    );
    assert_eq!(v["phases"][1]["ops"][0]["bytes"], 16 << 20);
    assert_eq!(v["phases"][3]["ops"][0]["bytes"], 16 << 20);
}
