//! `--serve`: the live page, `/metrics` and `/api/status` while a run lasts. A real
//! headless Chromium loads the page during a null-backend run and sees its figures; the
//! metrics parse as Prometheus text and their final counters equal the stored result.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{iolab, path, run};

/// A run with --serve on any free port, and the address it printed.
pub(crate) fn serving(extra: &[&str]) -> (Child, String) {
    serving_with(iolab(), extra)
}

/// `command` (iolab, or mpirun of it) running a null-backend run with --serve on any free
/// port, and the address rank 0 printed.
fn serving_with(command: Command, extra: &[&str]) -> (Child, String) {
    serving_command(command, &["run", "--backend", "null"], extra)
}

/// `command` (iolab, or mpirun of it) running `head` (a command and options), then
/// --serve on any free port, then `extra`; and the address rank 0 printed.
pub(crate) fn serving_command(
    mut command: Command,
    head: &[&str],
    extra: &[&str],
) -> (Child, String) {
    command
        .args(head)
        .args(["--serve", "--serve-linger", "4s", "-Q"])
        .args(extra);
    spawn_serving(command)
}

/// `command` spawned (with --serve among its arguments), and the address it printed.
pub(crate) fn spawn_serving(mut command: Command) -> (Child, String) {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iolab starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("live page at http://").nth(1) {
                let _ = tx.send(
                    rest.trim_end_matches(|c| c != '/')
                        .trim_end_matches('/')
                        .split('/')
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                );
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the address is printed");
    (child, addr)
}

/// (status code, body) of one request.
pub(crate) fn http(addr: &str, method: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("the server answers");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (code, body)
}

pub(crate) fn status(addr: &str) -> Value {
    serde_json::from_str(&http(addr, "GET", "/api/status").1).expect("JSON status")
}

#[test]
fn status_and_metrics_follow_the_run_and_end_equal_to_the_stored_result() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let (mut child, addr) = serving(&["--runtime", "3s", "--json", path(&json)]);
    std::thread::sleep(Duration::from_millis(1500));
    let a = status(&addr);
    std::thread::sleep(Duration::from_millis(1100));
    let b = status(&addr);
    assert_eq!(a["status"], "running", "{a}");
    let ops = |v: &Value| v["current"]["ops"].as_u64().unwrap_or(0);
    assert!(ops(&b) > ops(&a) && ops(&a) > 0, "{a}\n{b}");
    assert!(b["current"]["iops_now"].as_f64().unwrap() > 0.0, "{b}");
    // The last second's latency: p50 and p99, from every I/O's coarse bucket.
    let (p50, p99) = (
        b["current"]["p50_now"].as_f64().unwrap(),
        b["current"]["p99_now"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99 && p99 < 1.0, "{b}");
    let (_, live) = http(&addr, "GET", "/metrics");
    assert!(
        live.contains("iolab_phase_latency_now_seconds{") && live.contains("quantile=\"0.99\""),
        "{live}"
    );
    assert_eq!(http(&addr, "GET", "/nope").0, 404);
    assert_eq!(http(&addr, "POST", "/api/status").0, 405);
    // After the run, during --serve-linger: the final counters.
    let start = Instant::now();
    while status(&addr)["status"] == "running" {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the run did not end"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (code, text) = http(&addr, "GET", "/metrics");
    assert_eq!(code, 200);
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    let counted = |name: &str| -> f64 {
        scrape
            .samples
            .iter()
            .filter(|s| s.metric == name && s.labels.get("op") == Some("read"))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
                _ => 0.0,
            })
            .sum()
    };
    assert!(child.wait().unwrap().success());
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let read = stored["phases"][0]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "read")
        .unwrap()
        .clone();
    assert_eq!(
        counted("iolab_operations_total"),
        read["ops"].as_f64().unwrap()
    );
    assert_eq!(
        counted("iolab_bytes_total"),
        read["bytes"].as_f64().unwrap()
    );
    let sample = scrape
        .samples
        .iter()
        .find(|s| s.metric == "iolab_operations_total")
        .unwrap();
    assert_eq!(sample.labels.get("command"), Some("run"));
    // The finished phase's latency is a Prometheus summary: its count is the stored
    // operations', its quantiles the stored p50 and p99.
    let summary = scrape
        .samples
        .iter()
        .find(|s| s.metric == "iolab_latency_seconds" && s.labels.get("op") == Some("read"))
        .expect("a latency summary");
    let prometheus_parse::Value::Summary(qs) = &summary.value else {
        panic!("not a summary: {:?}", summary.value);
    };
    let q = |at: f64| qs.iter().find(|q| q.quantile == at).map(|q| q.count);
    let stored_p50 = read["latency"]["p50"].as_f64().unwrap() / 1e9;
    assert!(
        (q(0.5).unwrap() - stored_p50).abs() < 1e-12,
        "{qs:?} {read}"
    );
    let count = scrape
        .samples
        .iter()
        .find(|s| s.metric == "iolab_latency_seconds_count" && s.labels.get("op") == Some("read"))
        .map(|s| match s.value {
            prometheus_parse::Value::Untyped(v) | prometheus_parse::Value::Counter(v) => v,
            _ => -1.0,
        });
    assert_eq!(count, Some(read["ops"].as_f64().unwrap()));
}

/// The front-ends serve the page too: each phase of an mdtest, IOR and fio command line
/// is listed as it ends, and the run ends complete.
#[test]
fn the_front_ends_serve_the_live_page() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let file = format!("{d}/f");
    let md = format!("{d}/md");
    let cases: [(Vec<&str>, Vec<&str>); 3] = [
        (
            vec!["mdtest", "-n", "500", "-u", "-F", "-d", &md],
            vec!["create", "stat", "read", "remove"],
        ),
        (
            vec![
                "ior", "-a", "POSIX", "-b", "4m", "-t", "1m", "-w", "-r", "-o", &file,
            ],
            vec!["write", "read"],
        ),
        (
            vec![
                "fio",
                "--name=w",
                "--rw=write",
                "--bs=64k",
                "--size=4m",
                "--directory",
                &d,
            ],
            vec!["w"],
        ),
    ];
    for (args, phases) in cases {
        let mut command = iolab();
        command
            .arg(args[0])
            .args(["--no-store", "--serve", "--serve-linger", "4s"])
            .args(&args[1..]);
        let (mut child, addr) = spawn_serving(command);
        let start = Instant::now();
        let mut s = status(&addr);
        while s["status"] == "running" {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{args:?} did not end"
            );
            std::thread::sleep(Duration::from_millis(100));
            s = status(&addr);
        }
        assert_eq!(s["status"], "complete", "{args:?}: {s}");
        assert_eq!(s["command"], args[0], "{s}");
        let names: Vec<&str> = s["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, phases, "{args:?}: {s}");
        assert!(child.wait().unwrap().success(), "{args:?}");
    }
}

/// IO500 and the ladder tell the page their phases up front, each with an estimate, so
/// that the page (and the terminal's bar) shows phase n of N and an ETA; every planned
/// phase is done by the end (a ladder that meets its objective at every step).
#[test]
fn io500_and_ladder_plan_their_phases() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("io500").display().to_string();
    // The result directory in the test's own directory, not the current one.
    let results = dir.path().join("results").display().to_string();
    let cases: [Vec<&str>; 2] = [
        vec![
            "io500",
            "--dir",
            &d,
            "--stonewall",
            "1s",
            "--files-per-rank",
            "300",
            "--ior-easy-block",
            "4MiB",
            "--ior-hard-segments",
            "40",
            "--result-dir",
            &results,
        ],
        vec![
            "ladder",
            "--backend",
            "null",
            "--max",
            "4",
            "--step-time",
            "1s",
            "--slo",
            "p99<=1s",
        ],
    ];
    for args in cases {
        let mut command = iolab();
        command
            .args(&args)
            .args(["--no-store", "--serve", "--serve-linger", "4s", "-Q"]);
        let (mut child, addr) = spawn_serving(command);
        let start = Instant::now();
        let mut s = status(&addr);
        while s["phases"].as_array().is_none_or(|p| p.is_empty()) {
            assert!(start.elapsed() < Duration::from_secs(30), "{args:?}: {s}");
            std::thread::sleep(Duration::from_millis(50));
            s = status(&addr);
        }
        let planned = s["phases"].as_array().unwrap().clone();
        assert!(
            planned
                .iter()
                .all(|p| p["estimate_secs"].as_f64().is_some()),
            "{args:?}: {s}"
        );
        if args[0] == "io500" {
            assert_eq!(planned[0]["name"], "ior-easy-write", "{s}");
            assert!(planned.len() >= 12, "{s}");
        } else {
            // Queue depths 1, 2 and 4.
            assert_eq!(planned.len(), 3, "{s}");
        }
        while s["status"] == "running" {
            assert!(
                start.elapsed() < Duration::from_secs(90),
                "{args:?} did not end"
            );
            assert!(s["eta_secs"].as_f64().is_some(), "{args:?}: no ETA: {s}");
            std::thread::sleep(Duration::from_millis(100));
            s = status(&addr);
        }
        assert_eq!(s["status"], "complete", "{args:?}: {s}");
        let phases = s["phases"].as_array().unwrap();
        assert_eq!(phases.len(), planned.len(), "{args:?}: {s}");
        assert!(
            phases.iter().all(|p| p["took_secs"].as_f64().is_some()),
            "{args:?}: {s}"
        );
        assert!(child.wait().unwrap().success(), "{args:?}");
    }
}

#[test]
fn a_port_in_use_is_refused_before_the_run() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let r = run(&[
        "run",
        "--backend",
        "null",
        "--runtime",
        "1s",
        "--serve",
        &addr,
    ])
    .expect(2);
    assert!(
        r.error_line()
            .contains(&format!("--serve {addr}: cannot listen on {addr}")),
        "{}",
        r.stderr
    );
    let r = run(&[
        "run",
        "--backend",
        "null",
        "--runtime",
        "1s",
        "--serve",
        "not an address",
    ])
    .expect(2);
    assert!(
        r.error_line()
            .contains("--serve not an address: not an address"),
        "{}",
        r.stderr
    );
}

/// Under `mpirun -np 4` on four simulated hosts (UTS namespaces), rank 0 serves: the page's
/// host rows name the four hosts once the phase has ended.
#[cfg(feature = "mpi")]
#[test]
fn under_mpirun_the_page_shows_every_host() {
    use crate::mpi::mpirun_available;
    if !mpirun_available() || !crate::mpi_faults::uts_namespaces() {
        return;
    }
    let (mut child, addr) = serving_with(
        crate::mpi_faults::mpirun_on_hosts(4, 1),
        // Long enough for Chromium to load the page while the phase runs on a loaded
        // machine (with 8 s the page once came after it: an empty hosts table).
        &["--runtime", "15s", "--no-store"],
    );
    // While the phase runs: its hosts, each with its ranks' counts.
    std::thread::sleep(Duration::from_millis(1500));
    let during = status(&addr);
    let now: Vec<&str> = during["current"]["hosts_now"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(now, ["node0", "node1", "node2", "node3"], "{during}");
    // And the page itself draws a row for each of them.
    if let Some(chromium) = crate::live_page::chromium("under_mpirun_the_page_shows_every_host") {
        let dom = crate::live_page::dump_dom(chromium, &addr);
        let table = dom
            .split("id=\"hosts_now\"")
            .nth(1)
            .and_then(|t| t.split("</table>").next())
            .unwrap_or_default();
        for host in ["node0", "node1", "node2", "node3"] {
            assert!(
                table.contains(&format!(">{host}<")),
                "{host} not on the page: {table}"
            );
        }
    }
    let start = Instant::now();
    let mut s = status(&addr);
    while s["status"] == "running" {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the run did not end"
        );
        std::thread::sleep(Duration::from_millis(200));
        s = status(&addr);
    }
    let hosts: Vec<&str> = s["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["node0", "node1", "node2", "node3"], "{s}");
    assert!(child.wait().unwrap().success());
}
