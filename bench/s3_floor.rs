//! The floor for `iolab s3`: iolab's own S3 client (crates/backend/src/object) in a bare
//! loop, no statistics, no phase runner, no histograms: what the client alone reaches.
//! bench/s3.py runs it beside `iolab s3` and boto3 on the same server.
//!
//! cargo build --release --locked -p iolab-backend --example s3_floor
//! s3_floor ENDPOINT BUCKET put|get|delete OBJECTS SIZE CONCURRENCY
//!
//! Keys `floor/w<worker>/<n>`, each worker its share of OBJECTS, one pass (put, then get
//! each once, then delete each newest first, as `iolab s3` does). Keys from
//! AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Prints one JSON line: requests, bytes,
//! seconds (from the moment every thread is ready to the last one done).

use std::sync::Barrier;
use std::time::{Duration, Instant};

use iolab_backend::object::{ObjectBackend, ObjectOp, ObjectRequest, S3Client, S3Options};
use iolab_core::spec::{Addressing, S3Endpoint};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 7 {
        eprintln!("usage: s3_floor ENDPOINT BUCKET put|get|delete OBJECTS SIZE CONCURRENCY");
        std::process::exit(2);
    }
    let (endpoint, bucket, op) = (&a[1], &a[2], a[3].as_str());
    let objects: u64 = a[4].parse().expect("OBJECTS");
    let size: u64 = a[5].parse().expect("SIZE in bytes");
    let concurrency: u64 = a[6].parse().expect("CONCURRENCY");
    let key = |v: &str| std::env::var(v).unwrap_or_else(|_| panic!("{v} is not set"));
    let opts = S3Options {
        endpoints: vec![S3Endpoint::parse(endpoint).expect("ENDPOINT")],
        bucket: bucket.clone(),
        addressing: Addressing::Path,
        region: "us-east-1".into(),
        access_key: key("AWS_ACCESS_KEY_ID"),
        secret_key: key("AWS_SECRET_ACCESS_KEY"),
        session_token: None,
        tls: None,
        sign_payload: true,
        part_size: None,
        part_concurrency: 1,
        attempts: 10,
        io_timeout: Duration::from_secs(300),
        seed: 1,
        first_endpoint: 0,
    };
    let ready = Barrier::new(concurrency as usize + 1);
    let (requests, bytes, secs) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..concurrency)
            .map(|w| {
                let (opts, ready) = (opts.clone(), &ready);
                s.spawn(move || {
                    let mut c = S3Client::new(opts).expect("client");
                    let share = objects / concurrency + u64::from(w < objects % concurrency);
                    let mut key = String::new();
                    let (mut n, mut moved) = (0u64, 0u64);
                    ready.wait();
                    for j in 0..share {
                        // iolab's delete phase takes each worker's objects newest first
                        // (its pool is a stack); the server's work depends on the order.
                        let i = if op == "delete" { share - 1 - j } else { j };
                        key.clear();
                        use std::fmt::Write;
                        let _ = write!(key, "floor/w{w}/{i}");
                        let op = match op {
                            "put" => ObjectOp::Put {
                                size,
                                data_offset: i,
                            },
                            "get" => ObjectOp::Get { range: None },
                            _ => ObjectOp::Delete,
                        };
                        let r = c.run(ObjectRequest {
                            op,
                            key: &key,
                            tag: 0,
                        });
                        if let Some(e) = r.error {
                            eprintln!("s3_floor: {e}");
                            std::process::exit(1);
                        }
                        n += 1;
                        moved += r.bytes;
                    }
                    (n, moved, Instant::now())
                })
            })
            .collect();
        ready.wait();
        let start = Instant::now();
        let mut total = (0, 0);
        let mut last = start;
        for h in handles {
            let (n, b, done) = h.join().expect("worker");
            total.0 += n;
            total.1 += b;
            last = last.max(done);
        }
        (total.0, total.1, (last - start).as_secs_f64())
    });
    println!("{{\"requests\": {requests}, \"bytes\": {bytes}, \"seconds\": {secs}}}");
}
