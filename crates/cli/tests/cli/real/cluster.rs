//! `Cluster`: one run of `scripts/<system>.sh up` in a temporary state directory, its env
//! file parsed, and `down` on drop (or explicitly, with the leftovers checked).

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Cluster {
    script: PathBuf,
    state: PathBuf,
    pub env: BTreeMap<String, String>,
    down: bool,
    _dir: tempfile::TempDir,
}

fn script(system: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts")
        .join(format!("{system}.sh"))
}

/// `KEY=value` lines (values optionally in double quotes), comments skipped.
fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

impl Cluster {
    /// Brings `system` up with `args` added to `up --state DIR --ports auto`. Panics with
    /// the script's output when it fails: on CI the script installs what it needs.
    pub fn up(system: &str, args: &[&str]) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("iolab-real-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let state = dir.path().join(system);
        let script = script(system);
        let out = Command::new(&script)
            .arg("up")
            .arg("--state")
            .arg(&state)
            .args(["--ports", "auto"])
            .args(args)
            .output()
            .expect("the script runs");
        let mut cluster = Cluster {
            script,
            state,
            env: BTreeMap::new(),
            down: false,
            _dir: dir,
        };
        assert!(
            out.status.success(),
            "{system}.sh up failed\n--- stdout\n{}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.env = parse_env(&String::from_utf8_lossy(&out.stdout));
        cluster
    }

    pub fn var(&self, key: &str) -> &str {
        self.env
            .get(key)
            .unwrap_or_else(|| panic!("{key} not in the env file: {:?}", self.env))
    }

    pub fn state(&self) -> &Path {
        &self.state
    }

    /// PIDs the script recorded (every `*.pid` file in the state directory or its `run`).
    pub fn pids(&self) -> Vec<i32> {
        [self.state.clone(), self.state.join("run")]
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flat_map(|d| d.flatten())
            .filter(|e| e.path().extension().is_some_and(|x| x == "pid"))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter_map(|s| s.trim().parse().ok())
            .collect()
    }

    fn run_down(&mut self) -> std::process::Output {
        self.down = true;
        Command::new(&self.script)
            .arg("down")
            .arg("--state")
            .arg(&self.state)
            .output()
            .expect("the script runs")
    }

    /// Takes the cluster down and asserts that none of its processes, mounts, ports or
    /// files is left.
    pub fn down_and_check(mut self, ports: &[u16]) {
        let pids = self.pids();
        assert!(!pids.is_empty(), "no PID files in {}", self.state.display());
        let out = self.run_down();
        assert!(
            out.status.success(),
            "down failed\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for pid in pids {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // A zombie waits for its reaper only; it holds nothing.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            assert!(
                stat.is_empty() || state.starts_with('Z'),
                "pid {pid} still runs after down: {stat}"
            );
        }
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let prefix = self.state.to_str().unwrap();
        assert!(
            !mounts.lines().any(|l| l.contains(prefix)),
            "a mount under {prefix} is left:\n{mounts}"
        );
        for &port in ports {
            assert!(
                TcpStream::connect(("127.0.0.1", port)).is_err(),
                "port {port} still listens after down"
            );
        }
        assert!(!self.state.exists(), "{} is left", self.state.display());
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.down {
            let out = self.run_down();
            if !out.status.success() {
                eprintln!("down failed: {}", String::from_utf8_lossy(&out.stderr));
            }
        }
    }
}

#[test]
fn env_lines_parse_with_and_without_quotes() {
    let e = parse_env("# c\nA=1\nB=\"2 3\"\nC=\n");
    assert_eq!(e["A"], "1");
    assert_eq!(e["B"], "2 3");
    assert_eq!(e["C"], "");
    assert_eq!(e.len(), 3);
}
