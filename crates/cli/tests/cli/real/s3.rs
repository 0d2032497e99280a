//! `iolab s3` against real S3 servers: SeaweedFS from scripts/seaweedfs.sh (and Ceph's
//! RADOS Gateway from scripts/ceph.sh --rgw for the operations once). Every
//! operation with the counts and bytes the server holds afterwards, warp's mixed shares,
//! the safety of a bucket iolab did not make, and the faults: wrong keys and a missing
//! bucket (one line, exit 2, nothing stored), the server killed mid-run (exit 1, stored
//! as failed), a server that stops answering (--stall-timeout).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Cluster;
use crate::common::{Ran, iolab, path};

/// `iolab s3` on the cluster with its keys in the environment.
fn s3(c: &Cluster, args: &[&str]) -> Ran {
    Ran::from(command(c, args).output().expect("iolab runs"))
}

fn command(c: &Cluster, args: &[&str]) -> Command {
    let mut cmd = iolab();
    cmd.arg("s3")
        .args(["--endpoint", c.var("AWS_ENDPOINT_URL")])
        .env("AWS_ACCESS_KEY_ID", c.var("AWS_ACCESS_KEY_ID"))
        .env("AWS_SECRET_ACCESS_KEY", c.var("AWS_SECRET_ACCESS_KEY"))
        .env("AWS_CONFIG_FILE", "/nonexistent")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        .env_remove("AWS_PROFILE")
        .args(args);
    cmd
}

/// An S3 request with curl's SigV4; returns (HTTP status, body).
fn curl(c: &Cluster, method: &str, path: &str, body: Option<&[u8]>) -> (u16, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-o", "-", "-w", "\n%{http_code}", "-X", method])
        .args(["--aws-sigv4", "aws:amz:us-east-1:s3", "--user"])
        .arg(format!(
            "{}:{}",
            c.var("AWS_ACCESS_KEY_ID"),
            c.var("AWS_SECRET_ACCESS_KEY")
        ));
    if body.is_some() {
        cmd.args(["--data-binary", "@-"]);
    }
    cmd.arg(format!("{}/{path}", c.var("AWS_ENDPOINT_URL")));
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = cmd.spawn().expect("curl runs");
    if let Some(b) = body {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b).unwrap();
    } else {
        drop(child.stdin.take());
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
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
    assert_eq!(curl(&c, "GET", "iolab-all?list-type=2", None).0, 404);

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
    let (code, listing) = curl(&c, "GET", "iolab-parts?list-type=2", None);
    assert_eq!(code, 200);
    assert_eq!(listing.matches("<Key>").count(), 1, "{listing}");
    assert!(listing.contains(".iolab-run"), "{listing}");

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
    assert_eq!(
        curl(&c, "PUT", "iolab-parts/theirs.txt", Some(b"not iolab's")).0,
        200
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
    assert_eq!(
        curl(&c, "GET", "iolab-parts/theirs.txt", None),
        (200, "not iolab's".into())
    );

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
    let (_, listing) = curl(&c, "GET", "iolab-parts?list-type=2", None);
    assert_eq!(
        listing.matches("<Key>").count(),
        2,
        "the marker and theirs.txt: {listing}"
    );
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
    assert_eq!(curl(&c, "PUT", "iolab-kill", None).0, 200);
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
    assert_eq!(curl(&c, "PUT", "iolab-stall", None).0, 200);
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
fn s3_workloads_on_ceph_rgw() {
    let c = Cluster::up("ceph", &["--rgw", "--no-mount"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rgw.json");
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
    let run = json(&out);
    assert_eq!(op(&run, 0, "put"), (12, (12 * 11) << 20));
    assert_eq!(run["phases"][0]["extra"]["parts"], 36.0);
    assert_eq!(op(&run, 1, "get"), (12, (12 * 11) << 20));
    assert_eq!(op(&run, 2, "stat"), (12, 0));
    assert_eq!(run["phases"][3]["extra"]["keys_listed"], 12.0);
    // 6 objects per worker in requests of up to 5 keys.
    assert_eq!(op(&run, 4, "delete").0, 4);
    let (code, body) = curl(&c, "GET", "iolab-rgw?list-type=2", None);
    assert_eq!(code, 404, "{body}");
    assert!(body.contains("NoSuchBucket"), "{body}");
}
