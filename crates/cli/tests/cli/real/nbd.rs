//! A network block device in user space: nbdkit's memory plugin from scripts/nbd.sh,
//! reached through libnbd with `--backend nbd`. Written and verified at QD 1 and 16; the
//! error filter fails a run with its errors counted and named; the delay filter shows in
//! the latency histogram; `iolab pts` and `iolab targets` run on exports; bad input is one
//! line; `down` leaves no process or file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Ran, iolab, json_of, path, peer_on_path, run};

/// One export of scripts/nbd.sh, taken down on drop.
struct Nbd {
    state: PathBuf,
    env: BTreeMap<String, String>,
    _dir: tempfile::TempDir,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/nbd.sh")
}

impl Nbd {
    /// `up` with `args` in a state directory of its own (under /tmp: a Unix socket's
    /// path is short). None (the test skips) where nbdkit is missing outside the suite.
    fn up(args: &[&str]) -> Option<Nbd> {
        if !peer_on_path("nbdkit", "--version") {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("iolab-nbd-")
            .tempdir_in("/tmp")
            .unwrap();
        let state = dir.path().join("nbd");
        let out = Command::new(script())
            .arg("up")
            .arg("--state")
            .arg(&state)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "nbd.sh up failed\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let env = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Some(Nbd {
            state,
            env,
            _dir: dir,
        })
    }

    fn uri(&self) -> &str {
        &self.env["NBD_URI"]
    }

    fn pid(&self) -> u32 {
        self.env["NBD_PID"].parse().unwrap()
    }

    fn down(&self) -> Ran {
        Ran::from(
            Command::new(script())
                .arg("down")
                .arg("--state")
                .arg(&self.state)
                .output()
                .unwrap(),
        )
    }
}

impl Drop for Nbd {
    fn drop(&mut self) {
        let _ = self.down();
    }
}

/// Whether `pid` runs (a zombie, dead but not yet reaped, does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim().to_string()))
        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
}

/// `op`'s bytes in phase `i` of a run's JSON.
fn bytes(doc: &serde_json::Value, i: usize, op: &str) -> u64 {
    doc["phases"][i]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == op)
        .and_then(|o| o["bytes"].as_u64())
        .unwrap_or(0)
}

#[test]
fn nbd_writes_verify_at_qd1_and_qd16_and_down_leaves_nothing() {
    let Some(nbd) = Nbd::up(&["--size", "32M"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let write = |qd: &str, size: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--backend",
            "nbd",
            "--nbd-uri",
            nbd.uri(),
            "--rw",
            "randwrite",
            "--random",
            "full-coverage",
            "--verify",
            "-q",
            qd,
            "-s",
            size,
            "--json",
            path(&json),
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    write("1", "4MiB", &[]).expect(0);
    let doc = json_of(&json);
    assert_eq!(doc["phases"].as_array().unwrap().len(), 2, "write, verify");
    assert_eq!(bytes(&doc, 0, "write"), 4 << 20);
    assert_eq!(bytes(&doc, 1, "read"), 4 << 20);
    assert_eq!(doc["phases"][1]["verify_failures"].as_u64(), Some(0));
    // The export now holds iolab's data: a second run is refused without --allow-destroy,
    // in one line naming the export.
    let refused = write("16", "8MiB", &[]).expect(2);
    assert_eq!(
        refused.error_line(),
        format!(
            "iolab: error: refusing to write to {}: it holds data (a non-zero byte at offset 0; iolab writes an NBD export only if its first and last MiB read as zeros); pass --allow-destroy to overwrite it (its contents will be lost)",
            nbd.uri()
        )
    );
    write("16", "8MiB", &["--allow-destroy"]).expect(0);
    let doc = json_of(&json);
    assert_eq!(bytes(&doc, 0, "write"), 8 << 20);
    assert_eq!(bytes(&doc, 1, "read"), 8 << 20);
    assert_eq!(doc["phases"][0]["spec"]["queue_depth"].as_u64(), Some(16));
    assert_eq!(doc["phases"][1]["verify_failures"].as_u64(), Some(0));

    let pid = nbd.pid();
    assert!(running(pid));
    nbd.down().expect(0);
    assert!(!running(pid), "nbdkit (pid {pid}) still runs after down");
    assert!(!nbd.state.exists(), "{} is left", nbd.state.display());
}

#[test]
fn nbd_error_filter_fails_the_run_with_its_errors_counted_and_named() {
    // Writes fail at 1 %; reads (the guard's probe) do not.
    let Some(nbd) = Nbd::up(&["--size", "16M", "--error-rate", "1%", "--error-on", "write"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    // 4096 writes at 1 %: the chance that none fails is 1e-18.
    let r = Ran::from(
        iolab()
            .args(["run", "--backend", "nbd", "--nbd-uri", nbd.uri()])
            .args(["--rw", "randwrite", "-t", "2", "-q", "16", "-s", "8MiB"])
            .args(["--json", path(&json)])
            .output()
            .unwrap(),
    )
    .expect(1);
    // Not "buffered": every I/O is an NBD command, libnbd caches nothing.
    assert!(r.stdout.contains("QD16, nbd, uncached, "), "{}", r.stdout);
    let doc = json_of(&json);
    let errors = doc["phases"][0]["error_count"].as_u64().unwrap();
    // An error ends its worker (as fio's without continue_on_error), with what it had in
    // flight: at most the two workers' 16 each.
    assert!((1..=32).contains(&errors), "{errors} errors");
    assert!(
        r.stderr.contains(&format!(
            "iolab: the benchmark ran but failed validation: {errors} I/O error"
        )),
        "{}",
        r.stderr
    );
    let lines: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.contains("bytes at offset") && l.contains(nbd.uri()))
        .collect();
    assert!(
        !lines.is_empty() && lines.len() as u64 <= errors,
        "{errors} errors\n{}",
        r.stdout
    );
    assert!(
        lines.iter().all(|l| l.contains("write of 4096 bytes")
            && l.contains("Input/output error (EIO)")
            && l.contains("the NBD server reported an I/O error: check the server's log")
            && !l.contains("dmesg")),
        "{lines:?}"
    );
}

#[test]
fn nbd_delay_filter_shows_in_the_latency_histogram() {
    let Some(nbd) = Nbd::up(&["--size", "16M", "--delay-read", "5ms"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    run(&[
        "run",
        "--backend",
        "nbd",
        "--nbd-uri",
        nbd.uri(),
        "--rw",
        "randread",
        "-q",
        "4",
        "-s",
        "1MiB",
        "--runtime",
        "1s",
        "--json",
        path(&json),
    ])
    .expect(0);
    let doc = json_of(&json);
    let read = &doc["phases"][0]["ops"][0];
    assert_eq!(read["op"], "read");
    let p50 = read["latency"]["p50"].as_f64().unwrap();
    let min = read["latency"]["min"].as_f64().unwrap();
    assert!(min >= 5e6, "min {min} ns under the 5 ms delay");
    assert!((5e6..50e6).contains(&p50), "p50 {p50} ns");
    // Four in flight, each 5 ms: at most 800 a second.
    let ops = read["ops"].as_u64().unwrap();
    assert!((100..=810).contains(&ops), "{ops} reads in 1 s");
    // Reads from a server: no page cache here to warn about.
    let warnings = doc["phases"][0]["warnings"].to_string();
    assert!(!warnings.contains("page cache"), "{warnings}");
}

#[test]
fn an_nbd_server_killed_mid_run_fails_it_without_a_hang() {
    let Some(nbd) = Nbd::up(&["--size", "16M"]) else {
        return;
    };
    let pid = nbd.pid().to_string();
    let child = iolab()
        .args([
            "run",
            "--backend",
            "nbd",
            "--nbd-uri",
            nbd.uri(),
            "--rw",
            "randread",
        ])
        .args([
            "-t",
            "2",
            "-q",
            "16",
            "-s",
            "4MiB",
            "--runtime",
            "20s",
            "--no-store",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let started = std::time::Instant::now();
    assert!(
        Command::new("kill")
            .args(["-9", &pid])
            .status()
            .unwrap()
            .success()
    );
    let r = Ran::from(child.wait_with_output().unwrap()).expect(1);
    assert!(
        started.elapsed().as_secs() < 5,
        "the run took {:?} to end after its server died",
        started.elapsed()
    );
    // The errors are counted (a worker ends at its connection's reset, or with every
    // command it had in flight failed: how many depends on the moment), each naming the
    // export.
    let count: usize = r
        .stderr
        .split("iolab: the benchmark ran but failed validation: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of errors in\n{}", r.stderr));
    assert!(count >= 1, "{}", r.stderr);
    let named: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.contains(nbd.uri()) && l.contains(" failed: "))
        .collect();
    assert!(
        !named.is_empty() && named.len() <= count,
        "{count} errors\n{}",
        r.stdout
    );
    assert!(
        named.iter().all(|l| l.contains("Connection reset by peer")
            || l.contains("Transport endpoint is not connected")),
        "{named:?}"
    );
}

#[test]
fn pts_and_targets_run_on_nbd_exports() {
    let (Some(a), Some(b)) = (Nbd::up(&["--size", "32M"]), Nbd::up(&["--size", "32M"])) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("pts.json");
    let r = run(&[
        "pts",
        "--backend",
        "nbd",
        "--nbd-uri",
        a.uri(),
        "--scale",
        "0.01",
        "--block-sizes",
        "4KiB",
        "--mixes",
        "0/100",
        "--max-rounds",
        "5",
        "-t",
        "2",
        "-q",
        "4",
        "--no-store",
        "--json",
        path(&json),
    ])
    .expect(0);
    assert!(
        r.stderr.contains("purge: 32.0 MiB discarded (NBD trim)"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("kind: NBD export"), "{}", r.stdout);
    let doc = json_of(&json);
    let phases = doc["phases"].as_array().unwrap();
    assert_eq!(phases[0]["name"], "pts-wipc");
    // Twice the active range in 128 KiB sequential writes.
    assert_eq!(bytes(&doc, 0, "write"), 64 << 20);
    assert_eq!(phases.len(), 6, "preconditioning and five rounds");
    assert!(
        phases[1..]
            .iter()
            .all(|p| p["extra"]["pts_iops"].as_f64().unwrap() > 0.0)
    );

    // `iolab targets` on two exports (the first, written by pts, with --allow-destroy).
    let json = dir.path().join("targets.json");
    run(&[
        "targets",
        "--backend",
        "nbd",
        a.uri(),
        b.uri(),
        "-s",
        "4MiB",
        "-q",
        "8",
        "--allow-destroy",
        "--no-store",
        "--json",
        path(&json),
    ])
    .expect(0);
    let doc = json_of(&json);
    let extra = &doc["phases"][0]["extra"];
    assert_eq!(extra["targets"].as_f64(), Some(2.0));
    assert_eq!(extra["total_bytes"].as_f64(), Some((8 << 20) as f64));
    // Without --allow-destroy, the export pts wrote is refused, naming it.
    let r = run(&[
        "targets",
        "--backend",
        "nbd",
        a.uri(),
        "-s",
        "1MiB",
        "--no-store",
    ])
    .expect(2);
    assert!(
        r.error_line()
            .contains(&format!("refusing to write to {}", a.uri()))
    );
}

#[test]
fn nbd_bad_input_is_one_line_naming_the_uri() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("none.sock");
    let uri = format!("nbd+unix:///?socket={}", sock.display());
    let json = dir.path().join("r.json");
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["run", "--rw", "write", "-s", "1MiB", "--json", path(&json)]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let ran = |extra: &[&str], env: Option<&str>| {
        let mut c = iolab();
        c.args(args(extra));
        if let Some(lib) = env {
            c.env("IOLAB_LIBNBD", lib);
        }
        Ran::from(c.output().unwrap()).expect(2).error_line()
    };
    let cases: Vec<(Vec<&str>, Option<&str>, String)> = vec![
        (
            vec!["--backend", "nbd", "--nbd-uri", &uri],
            None,
            format!(
                "iolab: error: cannot connect to the NBD export {uri}: nbd_connect_uri: connect: No such file or directory"
            ),
        ),
        (
            vec!["--backend", "nbd", "--nbd-uri", &uri],
            Some("libnbd-not-here.so.0"),
            "iolab: error: --backend nbd needs libnbd (libnbd-not-here.so.0), which cannot be loaded here (libnbd-not-here.so.0: cannot open shared object file: No such file or directory); install it (Debian/Ubuntu: apt-get install libnbd0; Fedora: dnf install libnbd)".into(),
        ),
        (
            vec!["--nbd-uri", &uri],
            None,
            "iolab: error: --nbd-uri: an NBD export is reached with --backend nbd, not --backend psync".into(),
        ),
        (
            vec!["--backend", "nbd", "--nbd-uri", "/dev/sdz"],
            None,
            "iolab: error: --nbd-uri: '/dev/sdz' is not an NBD URI: give nbd+unix:///?socket=SOCKET or nbd://HOST[:PORT][/EXPORT]".into(),
        ),
        (
            vec!["--backend", "nbd", "-d", path(dir.path())],
            None,
            "iolab: error: --backend nbd: it works on an NBD export: give it with --nbd-uri nbd+unix:///?socket=SOCKET or --nbd-uri nbd://HOST[:PORT]".into(),
        ),
    ];
    for (extra, env, want) in cases {
        assert_eq!(ran(&extra, env), want, "{extra:?}");
        // Nothing written: not the socket, not the result, nothing in the directory.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "{extra:?} left {left:?}");
    }
}
