//! The S3 client against a real server (SeaweedFS): every request the workloads make,
//! with the bytes and counts the server gives back, and its errors as users see them.

mod support;

use iolab_backend::object::{ObjectBackend, ObjectOp, ObjectRequest, S3Client, S3Options};
use iolab_core::spec::{Addressing, S3Endpoint};
use std::time::Duration;
use support::s3_server::{S3Server, bucket, server};

fn client(s: &S3Server, bucket: &str) -> S3Client {
    client_with(s, bucket, |_| {})
}

fn client_with(s: &S3Server, bucket: &str, f: impl FnOnce(&mut S3Options)) -> S3Client {
    let mut o = S3Options {
        endpoints: vec![S3Endpoint::parse(&s.endpoint).unwrap()],
        bucket: bucket.to_string(),
        addressing: Addressing::Path,
        region: "us-east-1".into(),
        access_key: s.access_key.clone(),
        secret_key: s.secret_key.clone(),
        session_token: None,
        tls: None,
        sign_payload: true,
        part_size: None,
        part_concurrency: 1,
        attempts: 3,
        io_timeout: Duration::from_secs(30),
        seed: 7,
        first_endpoint: 0,
    };
    f(&mut o);
    S3Client::new(o).unwrap()
}

fn req<'a>(op: ObjectOp<'a>, key: &'a str) -> ObjectRequest<'a> {
    ObjectRequest { op, key, tag: 9 }
}

#[test]
fn put_get_head_list_delete_round_trip() {
    let Some(s) = server() else { return };
    let b = bucket("round-trip");
    let mut c = client(s, &b);
    let made = c.run(req(ObjectOp::CreateBucket, ""));
    assert!(made.error.is_none(), "{:?}", made.error);
    for i in 0..25u64 {
        let key = format!("p/o{i:03}");
        let r = c.run(req(
            ObjectOp::Put {
                size: 1000 + i,
                data_offset: i,
            },
            &key,
        ));
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!((r.bytes, r.tag), (1000 + i, 9));
    }
    let g = c.run(req(ObjectOp::Get { range: None }, "p/o007"));
    assert!(g.error.is_none(), "{:?}", g.error);
    assert_eq!((g.bytes, g.length), (1007, Some(1007)));
    assert!(g.first_byte.is_some());
    let g = c.run(req(
        ObjectOp::Get {
            range: Some((100, 50)),
        },
        "p/o007",
    ));
    assert_eq!((g.status, g.bytes), (206, 50));
    let h = c.run(req(ObjectOp::Head, "p/o011"));
    assert_eq!((h.status, h.length, h.bytes), (200, Some(1011), 0));
    // Pages of 10: 10, 10, 5.
    let mut token: Option<String> = None;
    let mut pages = Vec::new();
    loop {
        let r = c.run(req(
            ObjectOp::List {
                prefix: "p/",
                token: token.as_deref(),
                max_keys: 10,
            },
            "",
        ));
        assert!(r.error.is_none(), "{:?}", r.error);
        pages.push(r.items);
        if !r.truncated {
            break;
        }
        token = c.next_token().map(str::to_string);
        assert!(token.is_some());
    }
    assert_eq!(pages, [10, 10, 5]);
    let d = c.run(req(ObjectOp::Delete, "p/o000"));
    assert!(d.error.is_none(), "{:?}", d.error);
    let keys: Vec<String> = (1..25).map(|i| format!("p/o{i:03}")).collect();
    let d = c.run(req(ObjectOp::DeleteMany { keys: &keys }, ""));
    assert!(d.error.is_none(), "{:?}", d.error);
    assert_eq!(d.items, 24);
    let r = c.run(req(
        ObjectOp::List {
            prefix: "p/",
            token: None,
            max_keys: 1000,
        },
        "",
    ));
    assert_eq!(r.items, 0);
    let gone = c.run(req(ObjectOp::Head, "p/o003"));
    assert_eq!(gone.error.as_ref().and_then(|e| e.status()), Some(404));
    let r = c.run(req(ObjectOp::DeleteBucket, ""));
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(c.status_counts().iter().any(|(s, n)| *s == 404 && *n == 1));
}

#[test]
fn multipart_upload_in_parts_reads_back_whole() {
    let Some(s) = server() else { return };
    let b = bucket("multipart");
    let mut c = client_with(s, &b, |o| o.part_size = Some(5 << 20));
    assert!(c.run(req(ObjectOp::CreateBucket, "")).error.is_none());
    let size = (11 << 20) + 3;
    let r = c.run(req(
        ObjectOp::Put {
            size,
            data_offset: 1,
        },
        "big",
    ));
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!((r.bytes, r.items), (size, 3));
    let g = c.run(req(ObjectOp::Get { range: None }, "big"));
    assert_eq!(g.bytes, size);
    c.run(req(ObjectOp::Delete, "big"));
    assert!(c.run(req(ObjectOp::DeleteBucket, "")).error.is_none());
}

/// A TCP relay to `to` that counts the connections open at once, at most.
struct Relay {
    endpoint: String,
    most: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

fn relay(to: &str) -> Relay {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let to = to.trim_start_matches("http://").to_string();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let (open, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let m = most.clone();
    std::thread::spawn(move || {
        for c in listener.incoming().flatten() {
            let Ok(s) = std::net::TcpStream::connect(&to) else {
                continue;
            };
            let now = open.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(now, Ordering::SeqCst);
            let (mut a, mut b) = (c.try_clone().unwrap(), s.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut a, &mut b);
                let _ = b.shutdown(std::net::Shutdown::Write);
            });
            let open = open.clone();
            std::thread::spawn(move || {
                let (mut s, mut c) = (s, c);
                let _ = std::io::copy(&mut s, &mut c);
                let _ = c.shutdown(std::net::Shutdown::Write);
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    Relay { endpoint, most }
}

#[test]
fn parts_at_once_assemble_the_same_object_as_parts_in_turn() {
    let Some(s) = server() else { return };
    let b = bucket("parts-at-once");
    let r = relay(&s.endpoint);
    let mut one = client_with(s, &b, |o| o.part_size = Some(5 << 20));
    let mut four = client_with(s, &b, |o| {
        o.endpoints = vec![S3Endpoint::parse(&r.endpoint).unwrap()];
        o.part_size = Some(5 << 20);
        o.part_concurrency = 4;
    });
    assert!(one.run(req(ObjectOp::CreateBucket, "")).error.is_none());
    // 5 parts (the last 3 bytes) over 4 senders; the same body number as the other.
    let size = (20 << 20) + 3;
    let put = ObjectOp::Put {
        size,
        data_offset: 5,
    };
    let a = one.run(req(put, "in-turn"));
    assert!(a.error.is_none(), "{:?}", a.error);
    let p = four.run(req(put, "at-once"));
    assert!(p.error.is_none(), "{:?}", p.error);
    assert_eq!((p.bytes, p.items, a.items), (size, 5, 5));
    // The worker's connection plus four part senders' were open together.
    assert_eq!(r.most.load(std::sync::atomic::Ordering::SeqCst), 5);
    // The server assembled five parts ("-5") of the same bytes in the same order: the
    // multipart ETag is the MD5 of the parts' MD5s.
    let ha = one.run(req(ObjectOp::Head, "in-turn"));
    let hp = one.run(req(ObjectOp::Head, "at-once"));
    assert_eq!((ha.length, hp.length), (Some(size), Some(size)));
    let etag = hp.etag.clone().unwrap_or_default();
    assert!(etag.trim_matches('"').ends_with("-5"), "{etag}");
    assert_eq!(ha.etag, hp.etag);
    // A second upload reuses the senders (and their connections).
    let p = four.run(req(put, "again"));
    assert!(p.error.is_none(), "{:?}", p.error);
    assert_eq!(r.most.load(std::sync::atomic::Ordering::SeqCst), 5);
    assert_eq!(
        one.run(req(ObjectOp::Get { range: None }, "again")).bytes,
        size
    );
    for k in ["in-turn", "at-once", "again"] {
        assert!(one.run(req(ObjectOp::Delete, k)).error.is_none());
    }
    assert!(one.run(req(ObjectOp::DeleteBucket, "")).error.is_none());
}

#[test]
fn wrong_keys_and_missing_bucket_say_what_to_fix() {
    let Some(s) = server() else { return };
    let mut c = client_with(s, "iolab-no-such-bucket", |o| o.secret_key = "wrong".into());
    let r = c.run(req(ObjectOp::HeadBucket, ""));
    let e = r.error.expect("refused");
    assert_eq!(e.status(), Some(403), "{e}");
    // SeaweedFS makes a missing bucket on an admin's PUT (-s3.autoCreateBucket): iolab
    // asks with HEAD before it writes.
    let mut c = client(s, "iolab-no-such-bucket");
    let r = c.run(req(ObjectOp::HeadBucket, ""));
    let e = r.error.expect("refused");
    assert_eq!((e.status(), e.code()), (Some(404), Some("NotFound")), "{e}");
    assert_eq!(r.retries, 0, "a 404 is not retried");
}

#[test]
fn a_dead_endpoint_is_retried_then_named() {
    // A port nothing listens on: refused at once, tried `attempts` times.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let s = S3Server::fake(&format!("http://127.0.0.1:{port}"));
    let mut c = client_with(&s, "bkt", |o| o.attempts = 2);
    let r = c.run(req(ObjectOp::Head, "k"));
    let e = r.error.expect("no server");
    assert_eq!(r.retries, 1);
    let msg = e.to_string();
    assert!(
        msg.contains(&format!(
            "HEAD s3://bkt/k at http://127.0.0.1:{port} failed"
        )),
        "{msg}"
    );
    assert!(msg.contains("is the S3 server running"), "{msg}");
}

/// A given body (an entry demoted from the tier above) is what the object holds, sent in
/// one PUT or in parts, in turn or at once: the server's ETag is its MD5 (a multipart
/// object's, the MD5 of its parts' MD5s). The client holds it for that PUT only (the
/// next is the payload again) and refuses a PUT of another size before sending.
#[test]
fn a_given_body_is_what_the_object_holds_in_one_put_or_in_parts() {
    use iolab_backend::object::BodySource;
    use md5::{Digest, Md5};
    use std::sync::Arc;
    let Some(s) = server() else { return };
    let b = bucket("given-body");
    let part = 5u64 << 20;
    let mut one = client(s, &b);
    let mut in_turn = client_with(s, &b, |o| o.part_size = Some(part));
    let mut at_once = client_with(s, &b, |o| {
        o.part_size = Some(part);
        o.part_concurrency = 3;
    });
    assert!(one.run(req(ObjectOp::CreateBucket, "")).error.is_none());
    let size = (11u64 << 20) + 3;
    let mut bytes = vec![0u8; size as usize];
    iolab_core::rng::Rng::new(3).fill(&mut bytes);
    let hex = |d: &[u8]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let whole = hex(&Md5::digest(&bytes));
    let mut of_parts = Vec::new();
    for p in bytes.chunks(part as usize) {
        of_parts.extend_from_slice(&Md5::digest(p));
    }
    let parts = format!("{}-3", hex(&Md5::digest(&of_parts)));
    let body = Arc::new(bytes);
    let put = ObjectOp::Put {
        size,
        data_offset: 0,
    };
    for (c, key, etag) in [
        (&mut one, "single", &whole),
        (&mut in_turn, "in-turn", &parts),
        (&mut at_once, "at-once", &parts),
    ] {
        let given: Arc<dyn BodySource> = body.clone();
        c.set_body(Some(given));
        let r = c.run(req(put, key));
        assert!(r.error.is_none(), "{key}: {:?}", r.error);
        assert_eq!(r.bytes, size, "{key}");
        assert_eq!(
            Arc::strong_count(&body),
            1,
            "{key}: the client let go of it"
        );
        let h = c.run(req(ObjectOp::Head, key));
        assert_eq!(h.length, Some(size), "{key}");
        assert_eq!(h.etag.unwrap_or_default().trim_matches('"'), etag, "{key}");
    }
    // The next PUT sends the client's payload again.
    assert!(one.run(req(put, "after")).error.is_none());
    let h = one.run(req(ObjectOp::Head, "after"));
    assert_ne!(h.etag.unwrap_or_default().trim_matches('"'), whole);
    // A PUT of another size than the body's: refused before anything is sent.
    one.set_body(Some(body.clone()));
    let short = ObjectOp::Put {
        size: size - 1,
        data_offset: 0,
    };
    let r = one.run(req(short, "short"));
    let e = r.error.expect("refused").to_string();
    assert!(e.contains("was given a body of"), "{e}");
    let h = one.run(req(ObjectOp::Head, "short"));
    assert_eq!(h.error.as_ref().and_then(|e| e.status()), Some(404));
    for k in ["single", "in-turn", "at-once", "after"] {
        assert!(one.run(req(ObjectOp::Delete, k)).error.is_none());
    }
    assert!(one.run(req(ObjectOp::DeleteBucket, "")).error.is_none());
}
