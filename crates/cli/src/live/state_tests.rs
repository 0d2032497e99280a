use iolab_core::LatencyHistogram;
use iolab_core::result::{OpCount, OpResult, PhaseKind, RankSummary};

use super::*;
use crate::live::targets::TargetInfo;
use iolab_core::units::Nanos;
use iolab_engine::Progress;

fn phase(name: &str, secs: u64, per_host: &[(&str, u64)]) -> PhaseResult {
    let mut p: PhaseResult = serde_json::from_value(serde_json::json!({
        "name": name, "kind": "data", "params": {}, "repetition": 0, "spec": null,
        "started_at_ms": 0, "ranks": per_host.len(), "workers": per_host.len(),
        "elapsed": secs * 1_000_000_000, "first_done": secs * 1_000_000_000, "ops": [],
        "timeline": {"interval": 1_000_000_000, "series": []},
        "cpu": {"user": 0, "system": 0, "wall": 0, "cpus": 1},
        "per_rank": [], "errors": [], "error_count": 0, "verify_failures": 0,
        "extra": {}, "warnings": [], "interrupted": false, "telemetry": null
    }))
    .unwrap();
    p.kind = PhaseKind::Data;
    let total: u64 = per_host.iter().map(|(_, n)| n).sum();
    let mut h = LatencyHistogram::new();
    h.record_n(100_000, total);
    let c = OpCount {
        ops: total,
        bytes: total * 4096,
    };
    p.ops = vec![OpResult::whole(OpKind::Read, c, p.elapsed, 0, h)];
    for (rank, (host, n)) in per_host.iter().enumerate() {
        let mut r: RankSummary = serde_json::from_value(serde_json::json!({
            "rank": rank, "host": host, "threads": 1, "elapsed": secs * 1_000_000_000,
            "first_done": 0, "ops": {}, "cpu": {"user": 0, "system": 0, "wall": 0, "cpus": 1},
            "errors": 0, "cpu_set": []
        }))
        .unwrap();
        r.ops.insert(
            OpKind::Read,
            OpCount {
                ops: *n,
                bytes: n * 4096,
            },
        );
        p.per_rank.push(r);
    }
    p
}

/// A progress report of 2 workers, `done` of them finished.
fn at<'a>(
    phase: &'a str,
    elapsed: Nanos,
    ops: u64,
    bytes: u64,
    done: u32,
    latency: &'a [u64],
) -> Progress<'a> {
    Progress {
        phase,
        elapsed,
        ops,
        bytes,
        workers_done: done,
        workers: 2,
        latency,
        counted: &[],
        per_rank: &[],
        per_unit: &[],
    }
}

#[test]
fn ticks_make_per_second_samples_and_rates() {
    use iolab_core::live_latency::{BUCKETS, bucket};
    let mut s = LiveState::default();
    // The second's 1000 reads: 980 of 100 µs and 20 of 10 ms, in two ticks.
    let mut first = vec![0u64; BUCKETS];
    first[bucket(100_000)] = 500;
    let mut second = vec![0u64; BUCKETS];
    second[bucket(100_000)] = 480;
    second[bucket(10_000_000)] = 20;
    s.tick(&at("read", Nanos::from_millis(100), 100, 409_600, 0, &[]));
    s.tick(&at(
        "read",
        Nanos::from_millis(600),
        600,
        2_457_600,
        0,
        &first,
    ));
    s.tick(&at(
        "read",
        Nanos::from_millis(1100),
        1100,
        4_505_600,
        0,
        &second,
    ));
    s.tick(&at(
        "read",
        Nanos::from_millis(1500),
        1500,
        6_144_000,
        1,
        &[],
    ));
    let c = s.current.as_ref().unwrap();
    // One sample for the first tick of the phase, one after a second.
    assert_eq!(c.samples.len(), 2);
    assert!((c.samples[1].iops - 1000.0).abs() < 1e-6, "{:?}", c.samples);
    // Its p50 and p99 within a coarse bucket (19 %) of 100 µs and 10 ms.
    let (p50, p99) = (c.p50_now.unwrap(), c.p99_now.unwrap());
    assert!((100e-6..=125e-6).contains(&p50), "{p50}");
    assert!((10e-3..=12.5e-3).contains(&p99), "{p99}");
    assert_eq!((c.workers_done, c.workers), (1, 2));
    assert!((c.iops_mean - 1000.0).abs() < 1e-6);
    assert_eq!(s.phases.len(), 1);
}

#[test]
fn finished_phases_count_by_op_and_host_and_correct_the_eta() {
    let mut s = LiveState {
        phases: ["w", "r"]
            .iter()
            .map(|n| PlannedPhase {
                name: n.to_string(),
                estimate_secs: Some(10.0),
                ..PlannedPhase::default()
            })
            .collect(),
        ..LiveState::default()
    };
    s.tick(&at("w", Nanos::from_secs(1), 10, 40_960, 0, &[]));
    assert_eq!(s.eta_secs, Some(19.0));
    s.phase_done(&phase("w", 20, &[("node1", 300), ("node2", 200)]));
    // The first phase took twice its estimate: the second should too.
    assert_eq!(s.eta_secs, Some(20.0));
    assert_eq!(s.position(), (2, 2));
    assert_eq!(
        s.counted[&(OpKind::Read, "node1".to_string())],
        (300, 300 * 4096)
    );
    assert_eq!(
        s.counted[&(OpKind::Read, "node2".to_string())],
        (200, 200 * 4096)
    );
    assert_eq!(s.hosts.len(), 2);
    assert!(s.current.is_none());
    assert_eq!(s.phases[0].headline, ["read 100 KiB/s"]);
    assert_eq!(s.latency[0].op, "read");
}

/// A run that planned nothing (or nothing with an estimate) has no ETA, not "0 s left".
#[test]
fn without_estimates_there_is_no_eta() {
    let mut s = LiveState::default();
    s.tick(&at("w", Nanos::from_secs(1), 10, 40_960, 0, &[]));
    s.phase_done(&phase("w", 20, &[("node1", 300)]));
    assert_eq!(s.eta_secs, None);
    assert_eq!(s.position(), (1, 1));
}

#[test]
fn ranks_add_up_by_host_with_rates_per_second() {
    use iolab_engine::RankProgress;
    let rank = |host: &str, ops: u64| RankProgress {
        host: host.into(),
        ops,
        bytes: ops * 4096,
    };
    let mut s = LiveState::default();
    let first = [rank("a", 100), rank("a", 100), rank("b", 50)];
    s.tick(&Progress {
        per_rank: &first,
        ..at("read", Nanos::from_millis(100), 250, 250 * 4096, 0, &[])
    });
    let mid = [rank("a", 600), rank("a", 600), rank("b", 300)];
    s.tick(&Progress {
        per_rank: &mid,
        ..at("read", Nanos::from_millis(600), 1500, 1500 * 4096, 0, &[])
    });
    let second = [rank("a", 1100), rank("a", 1100), rank("b", 550)];
    s.tick(&Progress {
        per_rank: &second,
        ..at("read", Nanos::from_millis(1100), 2750, 2750 * 4096, 0, &[])
    });
    let hosts = &s.current.as_ref().unwrap().hosts_now;
    assert_eq!(hosts.len(), 2);
    assert_eq!(
        (hosts[0].host.as_str(), hosts[0].ranks, hosts[0].ops),
        ("a", 2, 2200)
    );
    // Host a: 2000 reads over the second since the first sample; b: 500.
    assert!((hosts[0].iops - 2000.0).abs() < 1e-6, "{hosts:?}");
    assert!((hosts[1].iops - 500.0).abs() < 1e-6, "{hosts:?}");
    assert!((hosts[1].bytes_per_sec - 500.0 * 4096.0).abs() < 1e-3);
}

fn target(id: &str, host: &str) -> TargetInfo {
    TargetInfo {
        id: id.into(),
        host: host.into(),
        path: format!("/t/{id}"),
    }
}

/// Three targets; the engine reports target 2 only every other tick (its rank has more
/// targets than a tick carries). Each target's rate is over the moments its own counts
/// were taken, so the one reported late is not made slow.
#[test]
fn target_rows_rate_over_the_moments_their_counts_were_taken() {
    use iolab_engine::UnitProgress;
    let unit = |unit: u32, ops: u64, ms: u64| UnitProgress {
        unit,
        rank: unit / 2,
        ops,
        bytes: ops * 4096,
        at: Nanos::from_millis(ms),
    };
    let mut s = LiveState {
        target_list: vec![target("a", "n0"), target("b", "n0"), target("c", "n1")],
        ..LiveState::default()
    };
    // Every target does 1000 operations a second; c's counts are from 100 ms before.
    let ticks = [
        (
            100,
            vec![unit(0, 100, 100), unit(1, 100, 100), unit(2, 100, 100)],
        ),
        (
            600,
            vec![unit(0, 600, 600), unit(1, 600, 600), unit(2, 500, 500)],
        ),
        (
            1200,
            vec![
                unit(0, 1200, 1200),
                unit(1, 1200, 1200),
                unit(2, 1100, 1100),
            ],
        ),
    ];
    for (ms, units) in &ticks {
        s.tick(&Progress {
            per_unit: units,
            ..at("write", Nanos::from_millis(*ms), 0, 0, 0, &[])
        });
    }
    let rows = &s.current.as_ref().unwrap().targets_now;
    let got: Vec<(&str, &str, u64)> = rows
        .iter()
        .map(|r| (r.id.as_str(), r.host.as_str(), r.ops))
        .collect();
    assert_eq!(
        got,
        [("a", "n0", 1200), ("b", "n0", 1200), ("c", "n1", 1100)]
    );
    for r in rows {
        assert!((r.iops - 1000.0).abs() < 1e-6, "{r:?}");
        assert!((r.bytes_per_sec - 1000.0 * 4096.0).abs() < 1e-3, "{r:?}");
        assert_eq!(
            (r.slow, r.flag.as_deref()),
            (None, None),
            "no flag while running"
        );
    }
}

/// A finished targets phase: a summary (its ranks' rows carry every operation) and one
/// phase per target. Each operation counts once by host and once by target, the phase
/// list shows the phase and not its targets, and the rows carry the report's flags.
#[test]
fn a_finished_targets_phase_counts_once_and_shows_the_reports_flags() {
    let mut s = LiveState {
        target_list: vec![target("a", "n0"), target("b", "n0"), target("c", "n1")],
        ..LiveState::default()
    };
    s.tick(&at("read", Nanos::from_millis(100), 10, 40_960, 0, &[]));
    let mut summary = phase("read", 2, &[("n0", 500), ("n1", 100)]);
    summary.ops.clear();
    summary
        .extra
        .insert("aggregate_bytes_per_sec".into(), 1024.0 * 1024.0);
    summary.extra.insert("slow_targets".into(), 1.0);
    let targets: Vec<PhaseResult> = [
        ("a", "n0", 300, 0.0),
        ("b", "n0", 200, 0.0),
        ("c", "n1", 100, 1.0),
    ]
    .iter()
    .map(|(id, host, n, slow)| {
        let mut p = phase(&format!("target {id}"), 2, &[(host, *n)]);
        p.params.insert("id".into(), id.to_string());
        p.params.insert("host".into(), host.to_string());
        p.params.insert("path".into(), format!("/t/{id}"));
        p.extra.insert("slow".into(), *slow);
        p.extra.insert("node_slow".into(), 0.0);
        p.extra.insert(
            "vs_median_percent".into(),
            if *slow > 0.0 { -50.0 } else { 0.0 },
        );
        p
    })
    .collect();
    s.targets_done(&summary, &targets);
    let names: Vec<&str> = s.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["read"]);
    assert_eq!(
        s.phases[0].headline,
        ["aggregate of 3 targets 1.00 MiB/s", "1 slow targets"]
    );
    assert!(s.current.is_none());
    let read = |host: &str| s.counted[&(OpKind::Read, host.to_string())];
    assert_eq!(
        (read("n0"), read("n1")),
        ((500, 500 * 4096), (100, 100 * 4096))
    );
    let by_target =
        |id: &str, host: &str| s.target_counted[&(id.to_string(), host.to_string(), OpKind::Read)];
    assert_eq!(by_target("b", "n0"), (200, 200 * 4096));
    assert_eq!(by_target("c", "n1"), (100, 100 * 4096));
    let flags: Vec<(&str, Option<bool>, Option<&str>)> = s
        .targets
        .iter()
        .map(|t| (t.id.as_str(), t.slow, t.flag.as_deref()))
        .collect();
    assert_eq!(
        flags,
        [
            ("a", Some(false), Some("ok")),
            ("b", Some(false), Some("ok")),
            ("c", Some(true), Some("slow"))
        ]
    );
    assert_eq!(s.targets_phase.as_deref(), Some("read"));
    assert_eq!(s.latency[0].op, "read");
    let text = super::super::metrics::render(&s).unwrap();
    assert!(
        text.contains(r#"iolab_target_operations_total{host="n1",op="read",target="c""#)
            && text
                .contains(r#"iolab_target_slow{host="n1",kind="target",phase="read",target="c""#),
        "{text}"
    );
}
