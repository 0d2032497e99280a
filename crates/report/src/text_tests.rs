use super::*;
use crate::phase_words::param_words;
use crate::test_support::{data_phase, phase, run_with};
use iolab_core::result::{OpCount, OpKind};

fn io500_run(valid: bool) -> RunRecord {
    let mut p = phase("ior-easy-write", &[]);
    let total = OpCount {
        ops: 10,
        bytes: 10 << 30,
    };
    // As imported from an IO500 directory: figures, but no latencies and no CPU.
    p.ops.push(OpResult::whole(
        OpKind::Write,
        total,
        Nanos::SECOND,
        0,
        iolab_core::histogram::LatencyHistogram::new(),
    ));
    let mut run = run_with("io", vec![p]);
    run.kind = "io500".into();
    run.spec = serde_json::json!({
        "score": {"bandwidth": 1.2345671, "iops": 12.345678, "total": 4.1234564, "valid": valid}
    });
    run
}

#[test]
fn a_mix_with_two_sizes_names_both() {
    let params = |pairs: &[(&str, &str)]| -> crate::sweep::Params {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(
        param_words(&params(&[
            ("block_size", "4KiB"),
            ("write_block_size", "64KiB"),
            ("rwmix_read", "70")
        ])),
        ["4KiB reads", "64KiB writes", "70% reads"]
    );
    assert_eq!(
        param_words(&params(&[("block_size", "4KiB"), ("rwmix_read", "70")])),
        ["4KiB", "70% reads"]
    );
}

#[test]
fn ranks_and_hosts_get_a_line_each() {
    use iolab_core::result::RankSummary;
    let mut p = data_phase("seq-write", "1", 0, OpKind::Write, 300.0);
    let rank = |rank: u32, host: &str, mib: u64, secs: u64| RankSummary {
        rank,
        host: host.into(),
        threads: 1,
        elapsed: Nanos(secs * 1_000_000_000),
        first_done: Nanos(secs * 1_000_000_000),
        ops: [(
            OpKind::Write,
            OpCount {
                ops: mib,
                bytes: mib << 20,
            },
        )]
        .into_iter()
        .collect(),
        cpu: CpuUsage::default(),
        errors: 0,
        cpu_set: vec![0, 1],
    };
    p.per_rank = vec![
        rank(0, "n1", 100, 1),
        rank(1, "n1", 100, 1),
        rank(2, "n2", 100, 2),
    ];
    let text = render_phase(&p);
    assert!(
        text.contains("  host n1: 2 ranks, 2 workers, 200 IOPS, 200 MiB/s, cpu 0.0% of 2 CPUs\n"),
        "{text}"
    );
    assert!(text.contains("  host n2: 1 rank, 1 worker, "), "{text}");
    // Rank 2 took 2 s for its 100 MiB.
    assert!(
        text.contains("  rank 2 on n2: 50.0 IOPS, 50.0 MiB/s, done at 2.00 s"),
        "{text}"
    );
    // One rank: no lines.
    p.per_rank.truncate(1);
    assert!(!render_phase(&p).contains("rank 0 on"));
}

#[test]
fn io500_runs_show_their_score_line() {
    let text = render_run(&io500_run(true));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1],
        "[SCORE ] Bandwidth 1.234567 GiB/s : IOPS 12.345678 kiops : TOTAL 4.123456"
    );
    let invalid = render_run(&io500_run(false));
    assert!(invalid.contains("TOTAL 4.123456 [INVALID]\n"), "{invalid}");
    // Another kind with the same field, or an io500 run without it: no score line.
    let mut other = io500_run(true);
    other.kind = "study".into();
    assert!(!render_run(&other).contains("[SCORE ]"));
    let mut bare = io500_run(true);
    bare.spec = serde_json::Value::Null;
    assert!(!render_run(&bare).contains("[SCORE ]"));
    let md = crate::render_markdown(&[io500_run(false)], None);
    assert!(!md.contains("Latency of"), "{md}");
    assert!(
        md.contains("```\n[SCORE ] Bandwidth 1.234567 GiB/s : IOPS 12.345678 kiops : TOTAL 4.123456 [INVALID]\n```"),
        "{md}"
    );
}

#[test]
fn imported_phases_have_no_latency_or_cpu_lines() {
    let text = render_run(&io500_run(true));
    assert!(text.contains("write   IOPS"), "{text}");
    assert!(!text.contains("lat "), "{text}");
    assert!(!text.contains("cpu:"), "{text}");
    // A measured phase keeps both.
    let mut p = data_phase("w", "1", 0, OpKind::Write, 10.0);
    p.cpu = CpuUsage {
        user: Nanos(500_000_000),
        system: Nanos(250_000_000),
        wall: Nanos::SECOND,
        cpus: 2,
    };
    let text = render_phase(&p);
    assert!(text.contains("lat min 100.0 µs"), "{text}");
    assert!(
        text.contains("cpu: usr 50.0% sys 25.0% of one CPU (37.5% of 2 CPUs)"),
        "{text}"
    );
}
