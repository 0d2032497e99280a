//! `iolab s3` against Ceph's RADOS Gateway (scripts/ceph.sh --rgw): every operation once,
//! the gateway's own counters (perf dump on its admin socket) against iolab's, and its
//! throttling (503 SlowDown) counted, retried and shown.

use std::process::Command;

use serde_json::Value;

use super::Cluster;
use super::s3::{json, keys, op, s3};
use crate::common::{Ran, path};

/// The gateway's own counters (`perf dump` on its admin socket): `rgw` and
/// `simple-throttler` sections, flattened to `section.name`.
fn rgw_counters(c: &Cluster) -> std::collections::BTreeMap<String, u64> {
    let asok = c.state().join("run/client.rgw.a.asok");
    let out = Command::new("ceph")
        .arg("--admin-daemon")
        .arg(&asok)
        .args(["perf", "dump"])
        .output()
        .expect("ceph runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut m = std::collections::BTreeMap::new();
    for section in ["rgw", "simple-throttler"] {
        for (k, n) in v[section].as_object().unwrap() {
            if let Some(n) = n.as_u64() {
                m.insert(format!("{section}.{k}"), n);
            }
        }
    }
    m
}

fn rgw_config(c: &Cluster, key: &str, value: &str) {
    let asok = c.state().join("run/client.rgw.a.asok");
    let ok = Command::new("ceph")
        .arg("--admin-daemon")
        .arg(&asok)
        .args(["config", "set", key, value])
        .output()
        .expect("ceph runs")
        .status
        .success();
    assert!(ok, "config set {key} {value}");
}

/// `iolab s3` PUTs of `objects` 4 KiB objects on 8 connections with `attempts` tries,
/// into the bucket of the RGW test (while the gateway throttles).
fn throttled_put(c: &Cluster, objects: &str, attempts: &str, more: &[&str]) -> Ran {
    let mut args = vec![
        "--bucket",
        "iolab-rgw",
        "--create-bucket",
        "--ops",
        "put",
        "--objects",
        objects,
        "--object-size",
        "4KiB",
        "-c",
        "8",
        "--attempts",
        attempts,
    ];
    args.extend_from_slice(more);
    s3(c, &args)
}

#[test]
fn s3_workloads_on_ceph_rgw() {
    let c = Cluster::up("ceph", &["--rgw", "--no-mount"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rgw.json");
    let before = rgw_counters(&c);
    s3(
        &c,
        &[
            "--bucket",
            "iolab-rgw",
            "--create-bucket",
            "--ops",
            "put,get,stat,list,delete",
            "--objects",
            "12",
            "--object-size",
            "11MiB",
            "--part-size",
            "5MiB",
            "-c",
            "2",
            "--batch",
            "5",
            "--json",
            path(&out),
        ],
    )
    .expect(0);
    let after = rgw_counters(&c);
    let d = |k: &str| after[k] - before[k];
    let run = json(&out);
    assert_eq!(op(&run, 0, "put"), (12, (12 * 11) << 20));
    assert_eq!(run["phases"][0]["extra"]["parts"], 36.0);
    assert_eq!(op(&run, 1, "get"), (12, (12 * 11) << 20));
    assert_eq!(op(&run, 2, "stat"), (12, 0));
    assert_eq!(run["phases"][3]["extra"]["keys_listed"], 12.0);
    // 6 objects per worker in requests of up to 5 keys.
    assert_eq!(op(&run, 4, "delete").0, 4);
    assert_eq!(keys(&c, "iolab-rgw"), Err(404));

    // The gateway counted what iolab says it did: a PUT per part and one for the run's
    // marker (empty), the bytes of every part; a GET per GET and per HEAD, and the bytes
    // of every GET less one each (RGW adds `end - ofs` with an inclusive end).
    assert_eq!(d("rgw.put"), 36 + 1, "{before:?}\n{after:?}");
    assert_eq!(d("rgw.put_b"), (12 * 11) << 20);
    assert_eq!(d("rgw.get"), 12 + 12);
    assert_eq!(d("rgw.get_b"), ((12 * 11) << 20) - 12);
    assert_eq!(d("simple-throttler.throttle"), 0);

    // Throttling: one request at a time (rgw_max_concurrent_requests), the rest answered
    // 503 SlowDown. Retried as warp does, every one counted and shown, and the gateway's
    // own count of the requests it throttled is iolab's count of 503s.
    rgw_config(&c, "rgw_max_concurrent_requests", "1");
    let out = dir.path().join("slow.json");
    let before = rgw_counters(&c);
    // No cleanup under the throttle: its deletes would be throttled too.
    let r = throttled_put(&c, "300", "50", &["--keep", "--json", path(&out)]).expect(0);
    let after = rgw_counters(&c);
    let d = |k: &str| after[k] - before[k];
    let run = json(&out);
    assert_eq!(op(&run, 0, "put"), (300, 300 * 4096));
    let extra = &run["phases"][0]["extra"];
    let slowed = extra["http_503"].as_f64().unwrap_or(0.0) as u64;
    assert!(slowed > 0, "no 503 with one request at a time: {extra}");
    assert_eq!(extra["retries"].as_f64().unwrap() as u64, slowed, "{extra}");
    assert_eq!(d("simple-throttler.throttle"), slowed, "{extra}");
    assert!(
        r.stdout
            .contains(&format!("503 x{slowed}; retries {slowed}")),
        "{}",
        r.stdout
    );
    // Without retries the first SlowDown ends the run, named with its S3 code; the
    // cleanup retries with its own attempts and removes what the run wrote.
    // The bucket holds the 300 objects kept above and their run's marker.
    let kept = Ok(300 + 1);
    let out = dir.path().join("one.json");
    let r = throttled_put(&c, "2000", "1", &["--json", path(&out)]);
    rgw_config(&c, "rgw_max_concurrent_requests", "1024");
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("503 SlowDown"), "{}", r.stdout);
    let written = op(&json(&out), 0, "put").0;
    eprintln!("the run stopped by a 503 had written {written} objects");
    assert!(!r.stderr.contains("could not remove"), "{}", r.stderr);
    assert_eq!(keys(&c, "iolab-rgw"), kept, "{}", r.stderr);
    // Workers that failed at their first request have no "first done" figure to show.
    assert!(
        !r.stdout
            .lines()
            .any(|l| l.contains("first done at") && l.trim_end().ends_with(':')),
        "{}",
        r.stdout
    );
}
