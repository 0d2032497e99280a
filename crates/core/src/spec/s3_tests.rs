use super::*;

fn spec() -> S3Spec {
    S3Spec {
        bucket: "bkt".into(),
        ..S3Spec::default()
    }
}

#[test]
fn defaults_are_warps() {
    let s = S3Spec::default();
    assert_eq!(s.objects, 2500);
    assert_eq!(s.object_size, ByteCount(10 * MIB));
    assert_eq!(s.concurrency, 20);
    let m = s.shares();
    assert_eq!((m.get, m.stat, m.put, m.delete), (45.0, 30.0, 15.0, 10.0));
    assert_eq!(s.attempts, 10);
}

#[test]
fn log2_sizes_match_warps_formula() {
    // warp's GetExpRandSize(rng, 0, 10MiB) with the random float given.
    let max = 10 * MIB;
    let log_max = ((max - 1) as f64).log2();
    let log_min = log_max - 8.0;
    for u in [0.0, 0.05, 0.2, 0.5, 0.9, 0.999] {
        let want = if u * 8.0 > 1.0 {
            1 + 2f64.powf(u * 8.0 + log_min) as u64
        } else {
            1 + (u * 2f64.powf(log_min + 1.0)) as u64
        };
        assert_eq!(log2_size(u, 0, max), want, "u={u}");
    }
    // Every size within the bounds; as many in each upper power of two.
    let mut per_power = [0u32; 64];
    let n = 80_000;
    for i in 0..n {
        let s = log2_size((i as f64 + 0.5) / n as f64, 0, max);
        assert!((1..=max).contains(&s), "{s}");
        per_power[63 - s.leading_zeros() as usize] += 1;
    }
    // 2^16..2^23 each hold about 1/8 of the draws.
    for (p, count) in per_power.iter().enumerate().take(23).skip(17) {
        let share = *count as f64 / n as f64;
        assert!((0.11..0.14).contains(&share), "2^{p}: {share}");
    }
    // A small range draws evenly.
    assert_eq!(log2_size(0.0, 100, 105), 101);
    assert_eq!(log2_size(0.99, 100, 105), 105);
}

#[test]
fn validation_names_the_option() {
    let bad = |s: S3Spec| s.validate().unwrap_err().option;
    assert_eq!(bad(S3Spec::default()), "--bucket");
    assert_eq!(
        bad(S3Spec {
            bucket: "AB".into(),
            ..spec()
        }),
        "--bucket"
    );
    assert_eq!(
        bad(S3Spec {
            part_size: Some(ByteCount(MIB)),
            ..spec()
        }),
        "--part-size"
    );
    for (part_size, part_concurrency) in [
        (None, 4),
        (Some(ByteCount(5 * MIB)), 0),
        (Some(ByteCount(5 * MIB)), 257),
    ] {
        assert_eq!(
            bad(S3Spec {
                part_size,
                part_concurrency,
                ..spec()
            }),
            "--part-concurrency"
        );
    }
    assert_eq!(
        bad(S3Spec {
            ops: vec![S3Op::Mixed],
            ..spec()
        }),
        "--duration"
    );
    assert_eq!(
        bad(S3Spec {
            ops: vec![S3Op::Mixed],
            duration: Some(TimeSpan::from_secs(1)),
            delete_distrib: 20.0,
            ..spec()
        }),
        "--delete-distrib"
    );
    assert_eq!(
        bad(S3Spec {
            batch: 1001,
            ..spec()
        }),
        "--batch"
    );
    assert_eq!(
        bad(S3Spec {
            endpoints: vec!["127.0.0.1:8333".into()],
            ..spec()
        }),
        "--endpoint"
    );
    spec().validate().unwrap();
}

#[test]
fn endpoints_parse() {
    let e = S3Endpoint::parse("http://127.0.0.1:8333").unwrap();
    assert_eq!((e.tls, e.host.as_str(), e.port), (false, "127.0.0.1", 8333));
    assert_eq!(e.authority(), "127.0.0.1:8333");
    let e = S3Endpoint::parse("https://S3.Example.com/").unwrap();
    assert_eq!((e.tls, e.port), (true, 443));
    assert_eq!(e.authority(), "s3.example.com");
    let e = S3Endpoint::parse("http://[::1]:9000").unwrap();
    assert_eq!((e.host.as_str(), e.port), ("[::1]", 9000));
    assert!(S3Endpoint::parse("http://h/path").is_err());
    assert!(S3Endpoint::parse("http://h:x").is_err());
}
