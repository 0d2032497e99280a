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
pub(super) fn s3(c: &Cluster, args: &[&str]) -> Ran {
    Ran::from(command(c, args).output().expect("iolab runs"))
}

pub(super) fn command(c: &Cluster, args: &[&str]) -> Command {
    command_at(c, c.var("AWS_ENDPOINT_URL"), args)
}

/// `iolab s3` with the cluster's keys, at `endpoint` (one or several, comma-separated).
pub(super) fn command_at(c: &Cluster, endpoint: &str, args: &[&str]) -> Command {
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
pub(super) fn client(c: &Cluster, bucket: &str) -> S3Client {
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

pub(super) fn request(c: &Cluster, bucket: &str, op: ObjectOp<'_>, key: &str) -> ObjectCompletion {
    client(c, bucket).run(ObjectRequest { op, key, tag: 0 })
}

/// The keys in `bucket` (one page), or the status that refused the listing.
pub(super) fn keys(c: &Cluster, bucket: &str) -> Result<u64, u16> {
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

pub(super) fn make_bucket(c: &Cluster, bucket: &str) {
    let r = request(c, bucket, ObjectOp::CreateBucket, "");
    assert!(r.error.is_none(), "{:?}", r.error);
}

pub(super) fn json(file: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// Operations and bytes of `op` in phase `i`.
pub(super) fn op(run: &Value, i: usize, op: &str) -> (u64, u64) {
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
    assert_eq!(
        line.matches("--create-bucket").count(),
        1,
        "the hint once: {line}"
    );
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
