//! `iolab kvcache --serve`: the live page shows the trials while they run, and its final
//! counters are the stored run's.

use super::json_of;
use crate::common::path;

/// `--serve`: the live page's plan lists the trials while they run, each second of a
/// trial shows its tokens/s, storage bandwidth and device p95 (in /api/status and as
/// /metrics gauges labelled by the trial's phase), and the final counters by phase are
/// the stored phases'.
#[test]
fn kvcache_serves_its_trials_live_and_ends_equal_to_the_stored() {
    use crate::live::{http, serving_command, status};
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("k.json");
    let (mut child, addr) = serving_command(
        crate::common::iolab(),
        &["kvcache", "--model", "tiny-1b", "--users", "2"],
        &[
            "--duration",
            "2s",
            "--trials",
            "2",
            "--generation-mode",
            "none",
            "--dir",
            path(dir.path()),
            "--json",
            path(&json),
            "--no-store",
        ],
    );
    // The plan comes once the run has started, before its first trial ends.
    let mut s = status(&addr);
    let start = std::time::Instant::now();
    while s["phases"].as_array().is_none_or(|p| p.is_empty()) {
        assert!(start.elapsed().as_secs() < 30, "no plan: {s}");
        std::thread::sleep(std::time::Duration::from_millis(50));
        s = status(&addr);
    }
    assert_eq!(s["status"], "running", "{s}");
    let names: Vec<&str> = s["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["kvcache trial 1", "kvcache trial 2"], "{s}");
    assert!(s["eta_secs"].as_f64().unwrap() > 0.0, "{s}");
    let mut seconds = Vec::new();
    let mut gauges = Vec::new();
    while status(&addr)["status"] == "running" {
        assert!(start.elapsed().as_secs() < 120, "the run never ended");
        let s = status(&addr);
        if !s["kvcache"].is_null() && s["status"] == "running" {
            let (_, metrics) = http(&addr, "GET", "/metrics");
            gauges.extend(
                metrics
                    .lines()
                    .filter(|l| l.starts_with("iolab_kvcache_tokens_per_second{"))
                    .map(str::to_string),
            );
            seconds.push(s);
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    live_seconds_shown(&seconds, &gauges);
    let (_, metrics) = http(&addr, "GET", "/metrics");
    assert!(child.wait().unwrap().success());
    let v = json_of(&json);
    for p in v["phases"].as_array().unwrap() {
        for op in p["ops"].as_array().unwrap() {
            let line = format!(
                "iolab_operations_total{{op=\"{}\",phase=\"{}\",",
                op["op"].as_str().unwrap(),
                p["name"].as_str().unwrap()
            );
            let got = metrics
                .lines()
                .find(|l| l.starts_with(&line))
                .and_then(|l| l.rsplit(' ').next())
                .unwrap_or_else(|| panic!("{line} in {metrics}"));
            assert_eq!(got, op["ops"].to_string(), "{line}");
        }
    }
}

/// The seconds the live page showed while the trials ran: each of a trial's phase (the
/// running phase), for its 2 users, with the rates of what it did, at least one second
/// writing entries; the tokens/s gauge labelled by phase first, as every series.
fn live_seconds_shown(seconds: &[serde_json::Value], gauges: &[String]) {
    assert!(!seconds.is_empty(), "no second of a trial was shown");
    for s in seconds {
        let k = &s["kvcache"];
        let phase = k["phase"].as_str().unwrap();
        assert!(
            ["kvcache trial 1", "kvcache trial 2"].contains(&phase),
            "{s}"
        );
        assert_eq!(k["users"], 2, "{s}");
        for rate in [
            "tokens_per_sec",
            "read_bytes_per_sec",
            "write_bytes_per_sec",
        ] {
            assert!(k[rate].as_f64().unwrap() >= 0.0, "{rate}: {s}");
        }
    }
    assert!(
        seconds.iter().any(
            |s| s["kvcache"]["write_bytes_per_sec"].as_f64().unwrap() > 0.0
                && s["kvcache"]["write_device_p95"].as_f64().unwrap() > 0.0
        ),
        "no second wrote an entry: {seconds:?}"
    );
    assert!(!gauges.is_empty(), "no kvcache gauge in /metrics");
    for g in gauges {
        assert!(
            g.starts_with("iolab_kvcache_tokens_per_second{phase=\"kvcache trial ")
                && g.contains("\",command=\"kvcache\",label=\"\",run=\""),
            "{g}"
        );
    }
}
