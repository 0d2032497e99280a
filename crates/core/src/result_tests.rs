use super::*;

#[test]
fn op_result_figures() {
    let mut h = LatencyHistogram::new();
    h.record_n(100_000, 1000);
    let r = OpResult::new(
        OpKind::Read,
        CountAt {
            count: OpCount {
                ops: 1000,
                bytes: 4096 * 1000,
            },
            at: Nanos::SECOND,
        },
        CountAt {
            count: OpCount {
                ops: 500,
                bytes: 4096 * 500,
            },
            at: Nanos::from_millis(250),
        },
        0,
        h,
    );
    assert_eq!(r.iops.get(), 1000.0);
    assert_eq!(r.bandwidth.get(), 4_096_000.0);
    assert_eq!(r.first_done_iops.get(), 2000.0);
    assert_eq!(r.latency.count, 1000);
}

#[test]
fn timelines_merge_by_interval_and_op() {
    let mut a = Timeline {
        interval: Nanos::SECOND,
        series: vec![OpSeries {
            op: OpKind::Read,
            ops: vec![1, 2],
            bytes: vec![10, 20],
            latency_sum: vec![5, 5],
        }],
        ..Default::default()
    };
    let b = Timeline {
        interval: Nanos::SECOND,
        series: vec![
            OpSeries {
                op: OpKind::Write,
                ops: vec![7],
                bytes: vec![70],
                latency_sum: vec![1],
            },
            OpSeries {
                op: OpKind::Read,
                ops: vec![1, 1, 1],
                bytes: vec![1, 1, 1],
                latency_sum: vec![0, 0, 9],
            },
        ],
        ..Default::default()
    };
    a.merge(&b);
    assert_eq!(a.series(OpKind::Read).unwrap().ops, vec![2, 3, 1]);
    assert_eq!(a.series(OpKind::Write).unwrap().bytes, vec![70]);
    assert_eq!(a.series[0].op, OpKind::Read);
}

#[test]
fn cpu_percentages() {
    let c = CpuUsage {
        user: Nanos::from_millis(500),
        system: Nanos::from_millis(1000),
        wall: Nanos::SECOND,
        cpus: 2,
    };
    assert_eq!(c.percent_of_one_cpu(), 150.0);
    assert_eq!(c.percent_of_all(), 75.0);
    assert_eq!(c.user_percent(), 50.0);
}

#[test]
fn runs_cpu_time_adds_up_and_keeps_the_most_cpus() {
    let run = |ms: u64, cpus| CpuUsage {
        user: Nanos::from_millis(ms),
        system: Nanos::from_millis(2 * ms),
        wall: Nanos::SECOND,
        cpus,
    };
    let mut all = CpuUsage::default();
    all.add_time_of(&run(10, 1));
    all.add_time_of(&run(30, 2));
    all.add_time_of(&run(5, 1));
    assert_eq!(all.user, Nanos::from_millis(45));
    assert_eq!(all.system, Nanos::from_millis(90));
    assert_eq!(
        all.wall,
        Nanos::ZERO,
        "a run's wall time is not the runs' sum"
    );
    assert_eq!(all.cpus, 2);
}

fn rank(rank: u32, host: &str, cpus: u32, cpu_set: Vec<u32>) -> RankSummary {
    RankSummary {
        rank,
        host: host.into(),
        threads: 1,
        elapsed: Nanos::SECOND,
        first_done: Nanos::SECOND,
        ops: BTreeMap::from([(OpKind::Write, OpCount { ops: 10, bytes: 40 })]),
        cpu: CpuUsage {
            user: Nanos(300_000_000),
            system: Nanos(100_000_000),
            wall: Nanos::SECOND,
            cpus,
        },
        errors: 0,
        cpu_set,
    }
}

#[test]
fn hosts_count_their_cpus_once() {
    // Ranks bound to separate cores, ranks sharing all of them, and old records.
    let bound = [rank(0, "a", 1, vec![0]), rank(1, "a", 1, vec![1])];
    let shared = [rank(0, "a", 2, vec![0, 1]), rank(1, "a", 2, vec![0, 1])];
    let old = [rank(0, "a", 2, vec![]), rank(1, "a", 2, vec![])];
    assert_eq!(host_cpus(&bound), 2);
    assert_eq!(host_cpus(&shared), 2);
    assert_eq!(host_cpus(&old), 2);

    let rows = [
        rank(0, "a", 2, vec![0, 1]),
        rank(1, "b", 2, vec![0, 1]),
        rank(2, "a", 2, vec![0, 1]),
    ];
    let h = per_host(&rows, Nanos(2 * Nanos::SECOND.0));
    assert_eq!(h.len(), 2);
    assert_eq!((h[0].host.as_str(), h[0].ranks.clone()), ("a", vec![0, 2]));
    assert_eq!((h[0].ops, h[0].bytes.0, h[0].workers), (20, 80, 2));
    assert_eq!((h[0].iops.get(), h[0].bandwidth.get()), (10.0, 40.0));
    // 0.8 s of CPU over the phase's 2 s, on the host's 2 CPUs.
    assert_eq!(h[0].cpu.percent_of_one_cpu(), 40.0);
    assert_eq!(h[0].cpu.percent_of_all(), 20.0);
    assert_eq!(h[1].ranks, vec![1]);
}
