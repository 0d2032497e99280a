//! `iolab s3` against real S3 servers: SeaweedFS from scripts/seaweedfs.sh (and Ceph's
//! RADOS Gateway from scripts/ceph.sh --rgw for the operations once). Every
//! operation with the counts and bytes the server holds afterwards, warp's mixed shares,
//! the safety of a bucket iolab did not make, and the faults: wrong keys and a missing
//! bucket (one line, exit 2, nothing stored), the server killed mid-run (exit 1, stored
//! as failed), a server that stops answering (--stall-timeout). On RGW the gateway's
//! own counters (perf dump) against iolab's, and its throttling (503 SlowDown) counted,
//! retried and shown.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use iolab_backend::object::{
    ObjectBackend, ObjectCompletion, ObjectOp, ObjectRequest, S3Client, S3Options,
};
use iolab_core::spec::{Addressing, S3Endpoint};
use serde_json::Value;

use super::Cluster;
use crate::common::{Ran, iolab, path};

/// `iolab s3` on the cluster with its keys in the environment.
fn s3(c: &Cluster, args: &[&str]) -> Ran {
    Ran::from(command(c, args).output().expect("iolab runs"))
}

fn command(c: &Cluster, args: &[&str]) -> Command {
    command_at(c, c.var("AWS_ENDPOINT_URL"), args)
}

/// `iolab s3` with the cluster's keys, at `endpoint` (one or several, comma-separated).
fn command_at(c: &Cluster, endpoint: &str, args: &[&str]) -> Command {
    let mut cmd = iolab();
    cmd.arg("s3")
        .args(["--endpoint", endpoint])
        .env("AWS_ACCESS_KEY_ID", c.var("AWS_ACCESS_KEY_ID"))
        .env("AWS_SECRET_ACCESS_KEY", c.var("AWS_SECRET_ACCESS_KEY"))
        .env("AWS_CONFIG_FILE", "/nonexistent")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        .env_remove("AWS_PROFILE")
        .args(args);
    cmd
}

/// A client of the server beside iolab's runs (iolab's own S3 client, used bare): curl's
/// SigV4 mis-signs query strings on these servers.
fn client(c: &Cluster, bucket: &str) -> S3Client {
    S3Client::new(S3Options {
        endpoints: vec![S3Endpoint::parse(c.var("AWS_ENDPOINT_URL")).unwrap()],
        bucket: bucket.into(),
        addressing: Addressing::Path,
        region: "us-east-1".into(),
        access_key: c.var("AWS_ACCESS_KEY_ID").into(),
        secret_key: c.var("AWS_SECRET_ACCESS_KEY").into(),
        session_token: None,
        tls: None,
        sign_payload: true,
        part_size: None,
        part_concurrency: 1,
        attempts: 3,
        io_timeout: Duration::from_secs(60),
        seed: 3,
        first_endpoint: 0,
    })
    .unwrap()
}

fn request(c: &Cluster, bucket: &str, op: ObjectOp<'_>, key: &str) -> ObjectCompletion {
    client(c, bucket).run(ObjectRequest { op, key, tag: 0 })
}

/// The keys in `bucket` (one page), or the status that refused the listing.
fn keys(c: &Cluster, bucket: &str) -> Result<u64, u16> {
    let op = ObjectOp::List {
        prefix: "",
        token: None,
        max_keys: 1000,
    };
    let r = request(c, bucket, op, "");
    match r.error {
        None => Ok(r.items),
        Some(e) => Err(e.status().unwrap_or(0)),
    }
}

fn make_bucket(c: &Cluster, bucket: &str) {
    let r = request(c, bucket, ObjectOp::CreateBucket, "");
    assert!(r.error.is_none(), "{:?}", r.error);
}

fn json(file: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// Operations and bytes of `op` in phase `i`.
fn op(run: &Value, i: usize, op: &str) -> (u64, u64) {
    let o = run["phases"][i]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == op)
        .unwrap_or_else(|| panic!("no {op} in phase {i}: {}", run["phases"][i]));
    (o["ops"].as_u64().unwrap(), o["bytes"].as_u64().unwrap())
}

#[test]
fn s3_workloads_on_seaweedfs() {
    let c = Cluster::up("seaweedfs", &["--no-mount"]);
    let dir = tempfile::tempdir().unwrap();

    // Every operation, one pass each, in a bucket iolab makes and removes.
    let out = dir.path().join("all.json");
    s3(
        &c,
        &[
            "--bucket",
            "iolab-all",
            "--create-bucket",
            "--ops",
            "put,get,stat,list,delete",
            "--objects",
            "40",
            "--object-size",
            "100KiB",
            "-c",
            "4",
            "--list-page",
            "7",
            "--json",
            path(&out),
        ],
    )
    .expect(0);
    let run = json(&out);
    assert_eq!(run["status"], "complete");
    assert_eq!(op(&run, 0, "put"), (40, 40 * 102_400));
    assert_eq!(op(&run, 1, "get"), (40, 40 * 102_400));
    assert_eq!(op(&run, 2, "stat"), (40, 0));
    // Each of 4 workers lists its 10 keys in pages of 7: 2 pages each.
    assert_eq!(op(&run, 3, "list").0, 8);
    assert_eq!(run["phases"][3]["extra"]["keys_listed"], 40.0);
    assert_eq!(op(&run, 4, "delete").0, 40);
    assert_eq!(run["phases"][1]["extra"]["ttfb_count"], 40.0);
    // The bucket iolab made is gone.
    assert_eq!(keys(&c, "iolab-all"), Err(404));

    // Multipart uploads, ranged GETs, log2-random sizes and batched deletes; the server's
    // own listing holds what iolab says it wrote, and nothing is left after.
    let out = dir.path().join("parts.json");
    s3(
        &c,
        &[
            "--bucket",
            "iolab-parts",
            "--create-bucket",
            "--ops",
            "put,get,delete",
            "--objects",
            "6",
            "--object-size",
            "12MiB",
            "--part-size",
            "5MiB",
            "-c",
            "2",
            "--range-size",
            "1MiB",
            "--batch",
            "4",
            "--keep",
            "--json",
            path(&out),
        ],
    )
    .expect(0);
    let run = json(&out);
    assert_eq!(op(&run, 0, "put"), (6, (6 * 12) << 20));
    assert_eq!(run["phases"][0]["extra"]["parts"], 18.0);
    assert_eq!(op(&run, 1, "get"), (6, 6 << 20));
    // 3 objects per worker in requests of up to 4 keys: one request each.
    assert_eq!(op(&run, 2, "delete").0, 2);
    assert_eq!(run["phases"][2]["extra"]["objects_deleted"], 6.0);
    // --keep left the marker only (the delete phase removed the objects) and the bucket.
    assert_eq!(keys(&c, "iolab-parts"), Ok(1));
    let marker = format!(
        "{}.iolab-run",
        run["phases"][0]["params"]["prefix"].as_str().unwrap()
    );
    assert!(
        request(&c, "iolab-parts", ObjectOp::Head, &marker)
            .error
            .is_none()
    );

    // warp's mixed shares over a prepared pool, for a time.
    let out = dir.path().join("mixed.json");
    s3(
        &c,
        &[
            "--bucket",
            "iolab-parts",
            "--ops",
            "mixed",
            "--duration",
            "3s",
            "--objects",
            "40",
            "--object-size",
            "4KiB",
            "-c",
            "4",
            "--json",
            path(&out),
        ],
    )
    .expect(0);
    let run = json(&out);
    let counts: Vec<u64> = ["get", "stat", "put", "delete"]
        .iter()
        .map(|o| op(&run, 0, o).0)
        .collect();
    let total: u64 = counts.iter().sum();
    assert!(total > 200, "{counts:?}");
    for (n, share) in counts.iter().zip([0.45, 0.30, 0.15, 0.10]) {
        let got = *n as f64 / total as f64;
        assert!((got - share).abs() < 0.04, "{counts:?}");
    }
    let extra = &run["phases"][0]["extra"];
    assert!(
        extra["window_get_ops_per_sec"].as_f64().unwrap() > 0.0,
        "{extra}"
    );
    assert!(extra["window_end_ns"].as_f64().unwrap() > 2.5e9, "{extra}");

    // The bucket iolab did not make stays, with what others put in it.
    let theirs = ObjectOp::Put {
        size: 11,
        data_offset: 5,
    };
    assert!(
        request(&c, "iolab-parts", theirs, "theirs.txt")
            .error
            .is_none()
    );
    s3(
        &c,
        &[
            "--bucket",
            "iolab-parts",
            "--ops",
            "put,delete",
            "--objects",
            "5",
            "--object-size",
            "1KiB",
        ],
    )
    .expect(0);
    let r = request(&c, "iolab-parts", ObjectOp::Head, "theirs.txt");
    assert_eq!((r.status, r.length), (200, Some(11)), "{:?}", r.error);

    // Refused before any load, with one line and exit 2, nothing stored.
    let db = dir.path().join("r.db");
    let r = s3(
        &c,
        &[
            "--bucket",
            "iolab-missing",
            "--ops",
            "put",
            "--db",
            path(&db),
        ],
    )
    .expect(2);
    let line = r.error_line();
    assert!(
        line.contains("bucket 'iolab-missing' does not exist"),
        "{line}"
    );
    assert!(line.contains("--create-bucket"), "{line}");
    let r = Ran::from(
        command(
            &c,
            &["--bucket", "iolab-parts", "--ops", "put", "--db", path(&db)],
        )
        .env("AWS_SECRET_ACCESS_KEY", "wrong")
        .output()
        .unwrap(),
    )
    .expect(2);
    let line = r.error_line();
    assert!(
        line.contains("403") && line.contains("SignatureDoesNotMatch"),
        "{line}"
    );
    assert!(line.contains("secret key"), "{line}");
    let listed = crate::common::run(&["results", "list", "--db", path(&db)]);
    assert!(!listed.stdout.contains("s3"), "{}", listed.stdout);
    assert_eq!(keys(&c, "iolab-parts"), Ok(2), "the marker and theirs.txt");
}

/// A minute of 64 KiB PUTs on two connections into `bucket`, started in the background.
fn spawn_put(c: &Cluster, bucket: &str, more: &[&str]) -> std::process::Child {
    let mut args = vec![
        "--bucket",
        bucket,
        "--ops",
        "put",
        "--duration",
        "60s",
        "--object-size",
        "64KiB",
        "-c",
        "2",
    ];
    args.extend_from_slice(more);
    command(c, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn s3_server_killed_mid_run_fails_stored() {
    let c = Cluster::up("seaweedfs", &["--no-mount"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    make_bucket(&c, "iolab-kill");
    let child = spawn_put(&c, "iolab-kill", &["--attempts", "2", "--db", path(&db)]);
    std::thread::sleep(Duration::from_secs(3));
    for pid in c.pids() {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let started = Instant::now();
    let r = Ran::from(child.wait_with_output().unwrap());
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "it took {:?}",
        started.elapsed()
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    // Each of the two workers may see its request fail before the stop reaches it.
    assert!(
        r.stdout.contains("ERRORS: 1") || r.stdout.contains("ERRORS: 2"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("PUT s3://iolab-kill/") && r.stdout.contains("is the S3 server running"),
        "{}",
        r.stdout
    );
    // Cleanup could not reach the server: it says what is left.
    assert!(
        r.stderr
            .contains("could not remove all of the run's objects"),
        "{}",
        r.stderr
    );
    let listed = crate::common::run(&["results", "list", "--db", path(&db)]);
    assert!(listed.stdout.contains("failed"), "{}", listed.stdout);
}

#[test]
fn s3_stall_timeout_ends_a_run_on_a_server_that_stopped_answering() {
    let c = Cluster::up("seaweedfs", &["--no-mount"]);
    make_bucket(&c, "iolab-stall");
    let child = spawn_put(&c, "iolab-stall", &["--stall-timeout", "2s"]);
    std::thread::sleep(Duration::from_secs(2));
    let pids = c.pids();
    for pid in &pids {
        let _ = Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .status();
    }
    let started = Instant::now();
    let r = Ran::from(child.wait_with_output().unwrap());
    for pid in &pids {
        let _ = Command::new("kill")
            .args(["-CONT", &pid.to_string()])
            .status();
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "it took {:?}",
        started.elapsed()
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("stalled in put-64KiB"), "{}", r.stderr);
    assert!(
        r.stderr.contains("completed no operation for"),
        "{}",
        r.stderr
    );
}

#[test]
fn s3_buffers_beyond_memory_are_refused_before_any_request() {
    // A listener that would see any request: none may come.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    // 4096 workers x (2 MiB payload + 257 connections' 256 KiB receive buffers) = 266 GiB.
    let r = Ran::from(
        iolab()
            .args(["s3", "--endpoint", &endpoint, "--bucket", "iolab-mem"])
            .args([
                "-c",
                "4096",
                "--object-size",
                "20MiB",
                "--part-size",
                "5MiB",
            ])
            .args(["--part-concurrency", "256", "--db", path(&db)])
            .env("AWS_ACCESS_KEY_ID", "k")
            .env("AWS_SECRET_ACCESS_KEY", "s")
            .env("AWS_CONFIG_FILE", "/nonexistent")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
            .env_remove("AWS_PROFILE")
            .output()
            .unwrap(),
    )
    .expect(2);
    let line = crate::common::error_line(&r);
    assert!(
        line.starts_with(
            "iolab: error: --part-concurrency: --concurrency 4096 x --part-concurrency 256: 66.5 MiB per worker (payload, request log, receive buffers of 257 connections per endpoint) needs 266 GiB of I/O buffers on "
        ) && line.ends_with("): lower one of them"),
        "{line}"
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(listener.accept().is_err(), "a request was sent");
    let listed = crate::common::run(&["results", "list", "--db", path(&db)]);
    assert!(!listed.stdout.contains(" s3 "), "{}", listed.stdout);
}

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

/// What one connection's client sent.
type Sent = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

/// A TCP relay on 127.0.0.1 to `to` (host:port) that keeps, per connection, what the
/// client sent, so a test can read the requests that went through it.
struct Relay {
    endpoint: String,
    sent: std::sync::Arc<std::sync::Mutex<Vec<Sent>>>,
}

impl Relay {
    fn to(to: &str) -> Relay {
        use std::io::{Read, Write};
        use std::sync::{Arc, Mutex};
        let to = to.to_string();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent: Arc<Mutex<Vec<Sent>>> = Arc::default();
        let all = sent.clone();
        std::thread::spawn(move || {
            for c in listener.incoming().flatten() {
                let Ok(s) = std::net::TcpStream::connect(&to) else {
                    continue;
                };
                let mine: Sent = Arc::default();
                all.lock().unwrap().push(mine.clone());
                let (mut from, mut up) = (c.try_clone().unwrap(), s.try_clone().unwrap());
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 << 10];
                    while let Ok(n @ 1..) = from.read(&mut buf) {
                        mine.lock().unwrap().extend_from_slice(&buf[..n]);
                        if up.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = up.shutdown(std::net::Shutdown::Write);
                });
                std::thread::spawn(move || {
                    let (mut s, mut c) = (s, c);
                    let _ = std::io::copy(&mut s, &mut c);
                    let _ = c.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        Relay {
            endpoint: format!("http://127.0.0.1:{port}"),
            sent,
        }
    }

    /// The request lines ("PUT /b/k HTTP/1.1") and Host headers the clients sent, in
    /// the order of each connection. A request line follows the previous request's
    /// body with no line break between: it is found as the last method word of a line
    /// ending in " HTTP/1.1" (bodies are random bytes, never such text).
    fn requests(&self) -> (Vec<String>, Vec<String>) {
        let (mut lines, mut hosts) = (Vec::new(), Vec::new());
        for conn in self.sent.lock().unwrap().iter() {
            let bytes = conn.lock().unwrap();
            for l in bytes.split(|&b| b == b'\n') {
                let l = l.strip_suffix(b"\r").unwrap_or(l);
                if l.ends_with(b" HTTP/1.1") {
                    let start = ["GET /", "PUT /", "HEAD /", "DELETE /", "POST /"]
                        .iter()
                        .filter_map(|m| l.windows(m.len()).rposition(|w| w == m.as_bytes()))
                        .max();
                    if let Some(Ok(r)) = start.map(|i| std::str::from_utf8(&l[i..])) {
                        lines.push(r.to_string());
                    }
                } else if l.len() > 5 && l[..5].eq_ignore_ascii_case(b"host:") {
                    hosts.push(String::from_utf8_lossy(&l[5..]).trim().to_string());
                }
            }
        }
        (lines, hosts)
    }
}

/// SeaweedFS's own S3 counters (its Prometheus metrics) for `bucket`: the sum of
/// `name` over the lines with that bucket (and `type`, when given).
fn weed_counter(metrics: &str, name: &str, bucket: &str, kind: Option<&str>) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| l.contains(&format!("bucket=\"{bucket}\"")))
        .filter(|l| kind.is_none_or(|k| l.contains(&format!("type=\"{k}\""))))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

fn weed_metrics(c: &Cluster) -> String {
    let out = Command::new("curl")
        .args(["-sf", "--max-time", "10"])
        .arg(format!("http://{}/metrics", c.var("SEAWEEDFS_METRICS")))
        .output()
        .unwrap();
    assert!(out.status.success(), "weed's metrics did not answer");
    String::from_utf8(out.stdout).unwrap()
}

/// A certificate authority and a server certificate for `localhost` and
/// `iolab-tls.localhost` (the virtual-host name of the test's bucket: rustls, as
/// webpki, takes no wildcard over a one-label name such as `*.localhost`) signed by
/// it, made with openssl in `dir`: (ca, cert, key).
fn certificates(dir: &std::path::Path) -> (String, String, String) {
    let p = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let ext = p("ext");
    std::fs::write(
        &ext,
        "subjectAltName=DNS:localhost,DNS:iolab-tls.localhost\nbasicConstraints=CA:FALSE\n\
         extendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let (ca, ca_key, cert, key, csr) =
        (p("ca.pem"), p("ca.key"), p("s.pem"), p("s.key"), p("s.csr"));
    for args in [
        vec![
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", &ca_key, "-out", &ca,
        ]
        .into_iter()
        .chain(["-days", "2", "-subj", "/CN=iolab test CA"])
        .collect::<Vec<&str>>(),
        vec![
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr,
        ]
        .into_iter()
        .chain(["-subj", "/CN=localhost"])
        .collect(),
        vec!["x509", "-req", "-in", &csr, "-CA", &ca, "-CAkey", &ca_key]
            .into_iter()
            .chain([
                "-CAcreateserial",
                "-out",
                &cert,
                "-days",
                "2",
                "-extfile",
                &ext,
            ])
            .collect(),
    ] {
        let out = Command::new("openssl")
            .args(&args)
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (ca, cert, key)
}

/// `iolab s3 ARGS` at `endpoint`, 4 KiB objects, its JSON result (the run must succeed).
fn run_at(c: &Cluster, endpoint: &str, args: &[&str], out: &std::path::Path) -> Value {
    let ran = Ran::from(
        command_at(c, endpoint, args)
            .args(["--object-size", "4KiB", "--json", path(out)])
            .output()
            .unwrap(),
    )
    .expect(0);
    eprintln!("{}", ran.stdout);
    json(out)
}

#[test]
fn s3_endpoints_addressing_tls_and_counters_on_seaweedfs() {
    let dir = tempfile::tempdir().unwrap();
    let d = |f: &str| dir.path().join(f);
    let (ca, cert, key) = certificates(dir.path());
    let c = Cluster::up(
        "seaweedfs",
        &[
            "--no-mount",
            "--metrics",
            "--s3-domain",
            "localhost",
            "--s3-tls",
            &cert,
            &key,
        ],
    );
    let server = c
        .var("AWS_ENDPOINT_URL")
        .trim_start_matches("http://")
        .to_string();
    let size = 4096u64;
    let count = |l: &[String], m: &str| l.iter().filter(|r| r.starts_with(m)).count() as u64;

    // Two endpoints (two relays to the one gateway): each worker sends its requests to
    // them in turn, so each gets half. SeaweedFS's own counters agree with iolab's; weed
    // drops a bucket's series when the bucket goes, so the test makes and removes it.
    make_bucket(&c, "iolab-rr");
    let (r1, r2) = (Relay::to(&server), Relay::to(&server));
    let two = format!("{},{}", r1.endpoint, r2.endpoint);
    let args = [
        "--bucket",
        "iolab-rr",
        "--ops",
        "put,get,stat,delete",
        "--objects",
        "40",
    ];
    let run = run_at(&c, &two, &[&args[..], &["-c", "2"]].concat(), &d("rr.json"));
    let (puts, put_bytes) = op(&run, 0, "put");
    let (gets, get_bytes) = op(&run, 1, "get");
    let (stats, deletes) = (op(&run, 2, "stat").0, op(&run, 3, "delete").0);
    assert_eq!(
        (puts, put_bytes, gets, get_bytes),
        (40, 40 * size, 40, 40 * size)
    );
    assert_eq!((stats, deletes), (40, 40));
    let (a, b) = (r1.requests().0, r2.requests().0);
    let both = |m: &str| count(&a, m) + count(&b, m);
    for m in [
        "PUT /iolab-rr/",
        "GET /iolab-rr/",
        "HEAD /iolab-rr/",
        "DELETE /iolab-rr/",
    ] {
        let (x, y) = (count(&a, m), count(&b, m));
        assert!(x + y >= 40, "{m}: {x} + {y}");
        assert!(
            x.abs_diff(y) <= 4,
            "{m}: {x} at the first endpoint, {y} at the second"
        );
    }
    // The run's requests: its objects and its (empty) marker object.
    assert_eq!(both("PUT /iolab-rr/"), puts + 1);
    assert_eq!(both("DELETE /iolab-rr/"), deletes + 1);
    let m = weed_metrics(&c);
    let counter = |n, t| weed_counter(&m, n, "iolab-rr", t);
    let total = |t| counter("SeaweedFS_s3_request_total", Some(t));
    // The gateway counted the test's own bucket PUT too, and counts HEADs as GETs.
    assert_eq!(total("PUT"), both("PUT ") + 1, "{m}");
    assert_eq!(total("GET"), gets + stats, "{m}");
    assert_eq!(
        total("GET"),
        both("GET /iolab-rr/") + both("HEAD /iolab-rr/")
    );
    assert_eq!(total("DELETE"), deletes + 1, "{m}");
    assert_eq!(counter("SeaweedFS_s3_uploaded_objects", None), puts + 1);
    assert_eq!(counter("SeaweedFS_s3_deleted_objects", None), deletes + 1);
    assert_eq!(
        counter("SeaweedFS_s3_bucket_traffic_received_bytes_total", None),
        put_bytes
    );
    assert_eq!(
        counter("SeaweedFS_s3_bucket_traffic_sent_bytes_total", None),
        get_bytes
    );
    let r = request(&c, "iolab-rr", ObjectOp::DeleteBucket, "");
    assert!(r.error.is_none(), "{:?}", r.error);

    // A dead endpoint beside a live one: each try sent to it fails to connect and is
    // tried again at the next endpoint, so the run completes, the failed tries counted
    // as retries and as answers with no status (docs/s3.md, "Endpoints").
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let r3 = Relay::to(&server);
    let args = [
        "--bucket",
        "iolab-dead",
        "--create-bucket",
        "--ops",
        "put,delete",
    ];
    let more = ["--objects", "10", "-c", "1", "--attempts", "2"];
    let endpoints = format!("{},{dead}", r3.endpoint);
    let run = run_at(
        &c,
        &endpoints,
        &[&args[..], &more].concat(),
        &d("dead.json"),
    );
    assert_eq!(op(&run, 0, "put"), (10, 10 * size));
    assert_eq!(op(&run, 1, "delete").0, 10);
    // Each try goes to the next endpoint in turn: after a retry at the live one the
    // next request tries the dead one first again.
    let extra = &run["phases"][0]["extra"];
    assert_eq!(extra["retries"], extra["http_0"], "{extra}");
    assert!(extra["retries"].as_f64().unwrap() >= 5.0, "{extra}");
    assert!(count(&r3.requests().0, "PUT /iolab-dead/") >= 10);

    // Virtual-host addressing: the bucket in the Host header (BUCKET.localhost, the
    // gateway's -s3.domainName), not in the path; the connection goes to the endpoint.
    let r4 = Relay::to(&server);
    let vh = r4.endpoint.replace("127.0.0.1", "localhost");
    let args = [
        "--bucket",
        "iolab-vh",
        "--create-bucket",
        "--addressing",
        "virtual",
    ];
    let more = ["--ops", "put,get,list,delete", "--objects", "10", "-c", "2"];
    let run = run_at(&c, &vh, &[&args[..], &more].concat(), &d("vh.json"));
    assert_eq!(op(&run, 0, "put"), (10, 10 * size));
    assert_eq!(op(&run, 1, "get"), (10, 10 * size));
    assert_eq!(run["phases"][2]["extra"]["keys_listed"], 10.0);
    assert_eq!(op(&run, 3, "delete").0, 10);
    let (lines, hosts) = r4.requests();
    let port = vh.rsplit(':').next().unwrap();
    assert!(count(&lines, "PUT /") >= 10, "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains("iolab-vh")), "{lines:?}");
    assert!(
        hosts
            .iter()
            .all(|h| *h == format!("iolab-vh.localhost:{port}")),
        "{hosts:?}"
    );
    assert_eq!(
        keys(&c, "iolab-vh"),
        Err(404),
        "the bucket iolab made is gone"
    );

    // TLS: the gateway's https port with a certificate of a CA of the test's own, for
    // path-style (localhost) and virtual-host (iolab-tls.localhost) names.
    let https = c.var("SEAWEEDFS_S3_HTTPS_ENDPOINT");
    for addressing in ["path", "virtual"] {
        let args = [
            "--bucket",
            "iolab-tls",
            "--create-bucket",
            "--addressing",
            addressing,
        ];
        let more = [
            "--ca-cert",
            &ca,
            "--ops",
            "put,get,delete",
            "--objects",
            "10",
        ];
        let out = d(&format!("tls-{addressing}.json"));
        let run = run_at(&c, https, &[&args[..], &more, &["-c", "2"]].concat(), &out);
        assert_eq!(op(&run, 0, "put"), (10, 10 * size), "{addressing}");
        assert_eq!(op(&run, 1, "get"), (10, 10 * size), "{addressing}");
        assert_eq!(op(&run, 2, "delete").0, 10, "{addressing}");
    }
    // Without the CA the server's certificate is refused: one line, before any load.
    let r = Ran::from(
        command_at(
            &c,
            https,
            &["--bucket", "iolab-tls", "--create-bucket", "--ops", "put"],
        )
        .args(["--objects", "4", "--object-size", "4KiB"])
        .env_remove("AWS_CA_BUNDLE")
        .output()
        .unwrap(),
    );
    let line = r.expect(2).error_line();
    assert!(
        line.contains("invalid peer certificate") && line.contains("--ca-cert"),
        "{line}"
    );
    assert_eq!(keys(&c, "iolab-tls"), Err(404), "nothing made");
}
