use super::*;

#[test]
fn bytes_per_token_are_the_references() {
    let bpt: Vec<u64> = KvModel::ALL
        .iter()
        .map(|m| m.shape().bytes_per_token())
        .collect();
    assert_eq!(bpt, [24_576, 131_072, 524_288, 131_072, 327_680]);
}

#[test]
fn hit_rate_and_token_rates() {
    let f = KvCacheFigures {
        duration: Nanos::from_secs(2),
        tokens_generated: 1000,
        storage_time: Nanos::from_secs(4),
        hits: 3,
        misses: 1,
        ..Default::default()
    };
    assert_eq!(f.wall_tokens_per_sec(), 500.0);
    assert_eq!(f.storage_tokens_per_sec(), 250.0);
    assert_eq!(f.hit_rate(), 0.75);
    // No CPU operations: the CPU criterion is left out, as the reference does.
    assert_eq!(f.criteria().len(), 3);
    assert!(f.passed());
}

#[test]
fn the_worst_ranks_p95_is_judged() {
    let ms = Nanos::from_millis;
    assert_eq!(WorstRank::of(&[(ms(300), ms(1))]), None);
    let w = WorstRank::of(&[(ms(50), ms(600)), (ms(300), ms(100)), (ms(20), ms(2))]).unwrap();
    assert_eq!(
        w,
        WorstRank {
            ranks: 3,
            read_device_p95: ms(300),
            read_rank: 1,
            write_device_p95: ms(600),
            write_rank: 0,
        }
    );
    let mut f = KvCacheFigures {
        hits: 1,
        ..Default::default()
    };
    // The merged histogram's p95 would pass; the worst rank's fails.
    f.storage.read_device.p95 = ms(60);
    f.worst_rank = Some(w);
    assert_eq!(f.read_device_p95(), ms(300));
    let failed: Vec<_> = f
        .criteria()
        .into_iter()
        .filter(|c| !c.passed())
        .map(|c| c.name)
        .collect();
    assert_eq!(
        failed,
        [
            "storage write device p95 (ms)",
            "storage read device p95 (ms)"
        ]
    );
    assert_eq!(f.scored()[4], ("read device p95 ms", 300.0));
}

/// A trial stored before 2026-12-08 had only `decode_bytes_read`, the decode steps'
/// bytes: it loads with that as the decode steps' figure, and kv-cache.py's decode
/// bytes read recomputed from the tiers where that is exact (no demotion).
#[test]
fn a_trial_stored_before_the_decode_split_still_loads_and_reports() {
    let mut f = KvCacheFigures {
        decode_bytes_read: ByteCount(700),
        decode_step_bytes_read: Some(ByteCount(300)),
        ..Default::default()
    };
    f.storage.bytes_read = ByteCount(600);
    f.cpu.bytes_read = ByteCount(100);
    let mut old = serde_json::to_value(&f).unwrap();
    let o = old.as_object_mut().unwrap();
    assert_eq!(o["decode_step_bytes_read"], 300);
    o.remove("decode_step_bytes_read");
    o["decode_bytes_read"] = 300.into();
    let back: KvCacheFigures = serde_json::from_value(old.clone()).unwrap();
    assert_eq!(back.decode_step_bytes(), ByteCount(300));
    assert_eq!(back.decode_bytes(), Some(ByteCount(700)));
    assert_eq!(back.scored()[6].1, 700.0 / GIB);
    // With CPU entries demoted, their reads cannot be told from the requests':
    // not known, and the report says so instead of a figure.
    old["cpu"]["evictions"] = 1.into();
    let demoted: KvCacheFigures = serde_json::from_value(old).unwrap();
    assert_eq!(demoted.decode_bytes(), None);
    assert!(demoted.scored()[6].1.is_nan());
    // A new trial reports what it stored.
    assert_eq!(f.decode_bytes(), Some(ByteCount(700)));
    assert_eq!(f.decode_step_bytes(), ByteCount(300));
}
