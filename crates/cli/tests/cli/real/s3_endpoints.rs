//! `iolab s3` on SeaweedFS through its endpoints: several endpoints, path and
//! virtual-host addressing, TLS with a test authority, and the server's own counters
//! (its Prometheus metrics) against iolab's. A TCP relay shows the requests sent.

use std::process::Command;

use iolab_backend::object::ObjectOp;
use serde_json::Value;

use super::Cluster;
use super::s3::{command_at, json, keys, make_bucket, op, request};
use crate::common::{Ran, path};

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
