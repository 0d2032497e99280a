//! The aggregate's tests: groups, sides and their names, repetitions pooled into mean,
//! SD, CV and 95 % CI in every format.
use super::*;
use crate::test_support::{data_phase, run_with};

#[test]
fn repetitions_pool_into_a_spread() {
    let run = run_with(
        "v1",
        vec![
            data_phase("seq-write", "1", 0, OpKind::Write, 100.0),
            data_phase("seq-write", "1", 1, OpKind::Write, 120.0),
            data_phase("seq-write", "2", 0, OpKind::Write, 200.0),
            data_phase("seq-write", "2", 1, OpKind::Write, 200.0),
        ],
    );
    let agg = aggregate(&run);
    assert_eq!(agg.sides[0].name, "v1");
    let g = &agg.groups[0];
    assert_eq!(g.swept.as_deref(), Some("threads"));
    assert_eq!(g.ops[0].measure, Measure::Bandwidth);
    let p1 = g.point(0, Some("1")).unwrap().op(OpKind::Write).unwrap();
    // MiB/s figures: 100 and 120 -> mean 110, stddev 14.142, t(1) = 12.706.
    let mib = 1024.0 * 1024.0;
    assert_eq!(p1.value.n, 2);
    assert!((p1.value.mean / mib - 110.0).abs() < 1e-9);
    assert!((p1.value.stddev / mib - 200f64.sqrt()).abs() < 1e-9);
    assert!((p1.value.cv - 200f64.sqrt() / 110.0).abs() < 1e-12);
    assert!((p1.value.ci95 / mib - 12.706 * 10.0).abs() < 1e-6);
    assert!(p1.value.is_noisy());
    assert_eq!(p1.latency.count, 2 * 1000);
    let (peak, _) = g.peak(0, OpKind::Write).unwrap();
    assert_eq!(peak.value.as_deref(), Some("2"));
    assert_eq!(g.at(peak).unwrap(), "2 threads");
    assert_eq!(g.metric_name(g.ops[0]), "seq-write write bandwidth");
}

#[test]
fn small_blocks_are_judged_by_iops_and_sides_keep_their_order() {
    let mut a = data_phase("randread-4KiB", "1", 0, OpKind::Read, 10.0);
    a.params.insert("block_size".into(), "4KiB".into());
    let mut b = a.clone();
    b.params.insert("threads".into(), "4".into());
    let runs = [
        run_with("new", vec![a, b.clone()]),
        run_with("new", vec![b]),
    ];
    let agg = aggregate_runs(&runs);
    assert_eq!(agg.sides[0].name, "new");
    assert_eq!(agg.sides[1].name, "new #2");
    let g = &agg.groups[0];
    assert_eq!(g.ops[0].measure, Measure::Iops);
    assert_eq!(g.metric_name(g.ops[0]), "randread-4KiB read IOPS");
    assert_eq!(g.values, ["1", "4"]);
    assert_eq!(g.sides[0].len(), 2);
    assert_eq!(g.sides[1].len(), 1);
    assert_eq!(g.sides[1][0].value.as_deref(), Some("4"));
}

/// Three repetitions at 100, 110 and 120 MiB/s: mean 110, SD 10, CV 9.09 %, 95 % CI
/// half-width t(2) · SD / √3 = 4.303 · 10 / 1.732 = 24.84 MiB/s; not noisy. A second
/// phase at 100, 120, 140: SD 20, CV 16.7 %, noisy.
#[test]
fn every_format_gives_mean_sd_cv_and_ci_of_repetitions() {
    let mib = 1024.0 * 1024.0;
    let mut phases = Vec::new();
    for (rep, (a, b)) in [(100.0, 100.0), (110.0, 120.0), (120.0, 140.0)]
        .into_iter()
        .enumerate()
    {
        phases.push(data_phase("steady", "1", rep as u32, OpKind::Write, a));
        phases.push(data_phase("noisy", "1", rep as u32, OpKind::Read, b));
    }
    let run = run_with("v1", phases);
    let ci = 4.303 * 10.0 / 3f64.sqrt();

    let rows = aggregate(&run).spread_rows();
    let steady = &rows[0];
    assert_eq!((steady.group.as_str(), steady.spread.n), ("steady", 3));
    assert!((steady.spread.mean / mib - 110.0).abs() < 1e-9);
    assert!((steady.spread.stddev / mib - 10.0).abs() < 1e-9);
    assert!((steady.spread.cv - 1.0 / 11.0).abs() < 1e-12);
    assert!((steady.spread.ci95 / mib - ci).abs() < 1e-9);
    assert!(!steady.noisy && rows[1].noisy);

    let text = crate::text::render_run(&run);
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("repetitions ("))
        .collect();
    assert_eq!(
        table[1..4],
        [
            "phase   op     n       mean          SD     CV       95% CI",
            "steady  write  3  110 MiB/s  10.0 MiB/s   9.1%  ±24.8 MiB/s",
            "noisy   read   3  120 MiB/s  20.0 MiB/s  16.7%  ±49.7 MiB/s  *",
        ],
        "{text}"
    );

    let md = crate::render_markdown(std::slice::from_ref(&run), None);
    assert!(md.contains("SD is the standard deviation and CV the coefficient"));
    assert!(
        md.contains("| steady | 110 MiB/s ±22.6% | 10.0 MiB/s | 9.1% |"),
        "{md}"
    );
    assert!(
        md.contains("| noisy | 120 MiB/s ±41.4% * | 20.0 MiB/s | 16.7% |"),
        "{md}"
    );

    let csv = crate::render_csv(std::slice::from_ref(&run));
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for line in csv.lines().skip(1).filter(|l| l.contains(",steady,")) {
        let cells: Vec<&str> = line.split(',').collect();
        let num = |name: &str| cells[col(name)].parse::<f64>().unwrap();
        assert_eq!(num("n"), 3.0);
        assert!((num("mean") / mib - 110.0).abs() < 1e-9);
        assert!((num("stddev") / mib - 10.0).abs() < 1e-9);
        assert!((num("cv") - 1.0 / 11.0).abs() < 1e-12);
        assert!((num("ci95") / mib - ci).abs() < 1e-9);
        assert_eq!(cells[col("noisy")], "false");
    }

    let json: serde_json::Value =
        serde_json::from_str(&crate::render_json(std::slice::from_ref(&run))).unwrap();
    let s = &json["statistics"][1];
    assert_eq!(s["group"], "noisy");
    assert_eq!(s["n"], 3);
    assert!((s["mean"].as_f64().unwrap() / mib - 120.0).abs() < 1e-9);
    assert!((s["stddev"].as_f64().unwrap() / mib - 20.0).abs() < 1e-9);
    assert!((s["cv"].as_f64().unwrap() - 1.0 / 6.0).abs() < 1e-12);
    assert!((s["ci95"].as_f64().unwrap() / mib - 2.0 * ci).abs() < 1e-9);
    assert_eq!(s["noisy"], true);
    assert_eq!(s["unit"], "bytes/s");
    // The document is still the run.
    let back: RunRecord = serde_json::from_value(json).unwrap();
    assert_eq!(back, run);
}
