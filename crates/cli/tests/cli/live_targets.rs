//! `iolab targets --serve`: one row per storage target of the current phase on the live
//! page, in `/api/status` and `/metrics` while the targets run; once a phase ended, the
//! targets' counters equal the stored target phases' and their rows carry the report's
//! flags. In one process, in headless Chromium, and under `mpirun` on simulated hosts.

use std::collections::BTreeMap;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{iolab, path};
use crate::live::{http, serving_command, status};
use crate::live_page::{chromium, dump_dom, text_of};

/// A Prometheus scrape's samples of `metric`, by the values of `labels`.
fn samples(text: &str, metric: &str, labels: &[&str]) -> BTreeMap<Vec<String>, f64> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .map(|s| {
            let key = labels
                .iter()
                .map(|k| s.labels.get(k).unwrap_or_default().to_string())
                .collect();
            let v = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            };
            (key, v)
        })
        .collect()
}

/// The samples of `metric` by (target, host, op).
fn by_target(text: &str, metric: &str) -> BTreeMap<Vec<String>, f64> {
    samples(text, metric, &["target", "host", "op"])
}

/// Polls `/api/status` until `ok` holds (the state it held in), or panics after `limit`.
fn await_status(addr: &str, limit: Duration, ok: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let s = status(addr);
        if ok(&s) {
            return s;
        }
        assert!(start.elapsed() < limit, "never came: {s}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn targets_now(s: &Value) -> Vec<Value> {
    s["current"]["targets_now"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// What the stored result says of each target: (id, host, op) -> (ops, bytes), and each
/// target's (slow, node_slow) flags.
type Stored = (
    BTreeMap<Vec<String>, (f64, f64)>,
    BTreeMap<(String, String), (Value, Value)>,
);

fn stored_targets(json: &std::path::Path) -> Stored {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let (mut counts, mut flags) = (BTreeMap::new(), BTreeMap::new());
    for p in v["phases"].as_array().unwrap() {
        let Some(id) = p["params"]["id"].as_str() else {
            continue;
        };
        let host = p["params"]["host"].as_str().unwrap().to_string();
        for o in p["ops"].as_array().unwrap() {
            let key = vec![
                id.to_string(),
                host.clone(),
                o["op"].as_str().unwrap().into(),
            ];
            let e: &mut (f64, f64) = counts.entry(key).or_default();
            e.0 += o["ops"].as_f64().unwrap();
            e.1 += o["bytes"].as_f64().unwrap();
        }
        let f = (p["extra"]["slow"].clone(), p["extra"]["node_slow"].clone());
        flags.insert((id.to_string(), host), f);
    }
    (counts, flags)
}

/// Once the run ended: the targets' counters in `/metrics` equal the stored target
/// phases' operations and bytes, and the status rows carry the stored flags. Returns
/// the final status and metrics.
fn final_figures_are_the_stored(
    addr: &str,
    child: &mut Child,
    json: &std::path::Path,
) -> (Value, String) {
    let end = await_status(addr, Duration::from_secs(120), |s| s["status"] != "running");
    let (_, text) = http(addr, "GET", "/metrics");
    assert!(child.wait().unwrap().success());
    let (counts, flags) = stored_targets(json);
    assert!(!counts.is_empty());
    let ops = by_target(&text, "iolab_target_operations_total");
    let bytes = by_target(&text, "iolab_target_bytes_total");
    let got: BTreeMap<_, _> = ops
        .iter()
        .map(|(k, v)| (k.clone(), (*v, bytes[k])))
        .collect();
    assert_eq!(got, counts, "{text}");
    for row in end["targets"].as_array().unwrap() {
        let key = (
            row["id"].as_str().unwrap().to_string(),
            row["host"].as_str().unwrap().to_string(),
        );
        let (slow, node_slow) = &flags[&key];
        let as_number = |b: &Value| Value::from(if b.as_bool().unwrap() { 1.0 } else { 0.0 });
        assert_eq!(
            (&as_number(&row["slow"]), &as_number(&row["node_slow"])),
            (slow, node_slow)
        );
    }
    (end, text)
}

/// Three targets on the null backend for 4 s: while they run, the status and the
/// metrics have a row per target whose counts grow; after the run, the targets'
/// counters equal the stored result's, and the host counters count each operation once.
#[test]
fn target_rows_follow_the_run_and_end_equal_to_the_stored_targets() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let (mut child, addr) = serving_command(
        iolab(),
        &["targets", "--backend", "null"],
        &["--runtime", "4s", "--json", path(&json), "/a", "/b", "/c"],
    );
    let a = await_status(&addr, Duration::from_secs(30), |s| {
        targets_now(s).len() == 3
    });
    std::thread::sleep(Duration::from_millis(1200));
    let b = status(&addr);
    let (rows_a, rows_b) = (targets_now(&a), targets_now(&b));
    let ids: Vec<&str> = rows_b.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["/a", "/b", "/c"], "{b}");
    for (ra, rb) in rows_a.iter().zip(&rows_b) {
        assert!(rb["ops"].as_u64() > ra["ops"].as_u64(), "{ra}\n{rb}");
        assert!(rb["bytes_per_sec"].as_f64().unwrap() > 0.0, "{rb}");
        assert!(rb["host"].as_str().is_some_and(|h| !h.is_empty()));
        assert_eq!(rb["flag"], Value::Null, "flags come at the end: {rb}");
    }
    let (_, live) = http(&addr, "GET", "/metrics");
    let now = by_target(&live, "iolab_target_phase_operations_total");
    let targets: Vec<&str> = now.keys().map(|k| k[0].as_str()).collect();
    assert_eq!(targets, ["/a", "/b", "/c"], "{live}");
    assert!(now.values().all(|v| *v > 0.0), "{live}");

    let (end, text) = final_figures_are_the_stored(&addr, &mut child, &json);
    let names: Vec<&str> = end["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["write-4KiB"], "targets are rows, not phases: {end}");
    // Each operation counted once by host: the targets' operations, not twice them.
    let (counts, _) = stored_targets(&json);
    let all: f64 = counts.values().map(|(n, _)| n).sum();
    let by_host = samples(&text, "iolab_host_operations_total", &["host", "op"]);
    assert_eq!(by_host.values().sum::<f64>(), all, "{text}");
    // And once by phase: the targets' phases count under the phase they are part of.
    let by_phase = samples(&text, "iolab_operations_total", &["phase", "op"]);
    assert_eq!(
        by_phase.keys().map(|k| k[0].as_str()).collect::<Vec<_>>(),
        ["write-4KiB"]
    );
    assert_eq!(by_phase.values().sum::<f64>(), all, "{text}");
}

/// Headless Chromium during the read phase of a write-then-read run of three targets:
/// a row per target of the running phase, and a row per target of the finished write
/// phase with its flag.
#[test]
fn chromium_sees_a_row_per_target() {
    let Some(chromium) = chromium("chromium_sees_a_row_per_target") else {
        return;
    };
    let (mut child, addr) = serving_command(
        iolab(),
        &["targets", "--backend", "null"],
        // Long enough for Chromium to start during the read phase on a loaded machine
        // (7 s was not, with a build beside it: the page came after the phase).
        &["--write", "--read", "--runtime", "15s", "/a", "/b", "/c"],
    );
    await_status(&addr, Duration::from_secs(30), |s| {
        !s["targets"].as_array().unwrap().is_empty() && targets_now(s).len() == 3
    });
    let dom = dump_dom(chromium, &addr);
    let _ = child.kill();
    let _ = child.wait();
    let table = |id: &str| -> Vec<Vec<String>> {
        let at = dom.find(&format!("<table id=\"{id}\"")).expect(id);
        let body = &dom[at..];
        let body = &body[..body.find("</table>").unwrap()];
        body.split("<tr")
            .skip(2)
            .map(|tr| {
                tr.split("<td")
                    .skip(1)
                    .map(|td| {
                        let start = td.find('>').unwrap() + 1;
                        td[start..].split('<').next().unwrap().to_string()
                    })
                    .collect()
            })
            .collect()
    };
    assert!(!dom.contains("id=\"targets_now_part\" hidden"), "{dom}");
    let now = table("targets_now");
    let ids: Vec<&str> = now.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(ids, ["/a", "/b", "/c"], "{dom}");
    assert!(now.iter().all(|r| r[6].ends_with("/s")), "{now:?}");
    let done = table("targets");
    assert_eq!(done.len(), 3, "{dom}");
    assert_eq!(text_of(&dom, "targets_phase"), "write-4KiB");
    assert!(
        done.iter().all(|r| r[8] == "ok" || r[8] == "slow"),
        "{done:?}"
    );
}

/// Four simulated hosts of one rank, five targets each (more than a progress tick
/// carries per rank, so they come in turn); node3's targets are on a file system that
/// stalls every data write by 30 ms. While they run, rank 0's page has a row for each of
/// the 20 targets, on its host; after the run, the counters equal the stored targets'
/// and node3's targets are flagged as a slow node, as the report flags them.
#[cfg(feature = "mpi")]
#[test]
fn under_mpirun_every_hosts_targets_have_rows_and_the_slow_node_is_flagged() {
    use crate::mpi::mpirun_available;
    use crate::mpi_faults::{mpirun_on_hosts, uts_namespaces};
    if !mpirun_available() || !uts_namespaces() {
        return;
    }
    let Some(slow) = crate::common::FaultFs::mount(&["write:stall=30ms:match=data."]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("id,node,path\n");
    for node in 0..4 {
        for t in 0..5 {
            let base = if node == 3 {
                std::path::Path::new(slow.dir()).to_path_buf()
            } else {
                dir.path().to_path_buf()
            };
            let target = base.join(format!("n{node}t{t}"));
            std::fs::create_dir(&target).unwrap();
            csv.push_str(&format!("n{node}t{t},node{node},{}\n", path(&target)));
        }
    }
    let list = dir.path().join("targets.csv");
    std::fs::write(&list, csv).unwrap();
    let json = dir.path().join("r.json");
    let mut mpirun = mpirun_on_hosts(4, 1);
    mpirun.env("IOLAB_DB", dir.path().join("db"));
    let (mut child, addr) = serving_command(
        mpirun,
        &["targets", "--targets-file", path(&list)],
        &[
            "--size",
            "16MiB",
            "--block-size",
            "256KiB",
            "--json",
            path(&json),
        ],
    );
    let during = await_status(&addr, Duration::from_secs(60), |s| {
        targets_now(s).len() == 20
    });
    let mut hosts: Vec<String> = targets_now(&during)
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["host"].as_str().unwrap(),
                r["id"].as_str().unwrap()
            )
        })
        .collect();
    hosts.sort();
    let want: Vec<String> = (0..4)
        .flat_map(|n| (0..5).map(move |t| format!("node{n} n{n}t{t}")))
        .collect();
    assert_eq!(hosts, want, "{during}");
    let (end, text) = final_figures_are_the_stored(&addr, &mut child, &json);
    let rows = end["targets"].as_array().unwrap();
    assert_eq!(rows.len(), 20, "{end}");
    let flagged = samples(&text, "iolab_target_slow", &["target", "host", "kind"]);
    for row in rows {
        let on_node3 = row["host"] == "node3";
        assert_eq!(row["node_slow"], on_node3, "{row}");
        if on_node3 {
            assert_eq!(row["flag"], "on a slow node", "{row}");
        }
        let key = |kind: &str| {
            vec![
                row["id"].as_str().unwrap().to_string(),
                row["host"].as_str().unwrap().to_string(),
                kind.to_string(),
            ]
        };
        assert_eq!(flagged[&key("node")], if on_node3 { 1.0 } else { 0.0 });
    }
}
