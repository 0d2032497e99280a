//! The comparison's tests: peaks, places, one-sided metrics, noise, short phases, and a
//! block-size sweep judged by IOPS at small blocks and bandwidth at large ones.
use super::*;
use crate::comparison_text::comparison_table;
use crate::test_support::{counted, data_phase, meta_phase, op_result, phase, run_with};

fn runs() -> (RunRecord, RunRecord) {
    let old = run_with(
        "v7.3",
        vec![
            counted(data_phase("randread", "1", 0, OpKind::Read, 50.0)),
            counted(data_phase("randread", "8", 0, OpKind::Read, 100.0)),
            counted(data_phase("randread", "8", 1, OpKind::Read, 100.0)),
            counted(meta_phase("stat", "4", 0, OpKind::Stat, 1000)),
        ],
    );
    let new = run_with(
        "v7.4",
        vec![
            counted(data_phase("randread", "1", 0, OpKind::Read, 58.0)),
            counted(data_phase("randread", "1", 1, OpKind::Read, 58.0)),
            counted(data_phase("randread", "8", 0, OpKind::Read, 40.0)),
            counted(data_phase("randread", "8", 1, OpKind::Read, 42.0)),
            counted(meta_phase("create", "4", 0, OpKind::Create, 500)),
        ],
    );
    (old, new)
}

#[test]
fn peaks_changes_and_places() {
    let (old, new) = runs();
    let c = compare(&old, &new);
    assert_eq!(c.baseline.name, "v7.3");
    assert_eq!(c.candidate.name, "v7.4");
    let r = &c.rows[0];
    assert_eq!(r.metric, "randread read bandwidth");
    let (a, b) = (r.baseline.as_ref().unwrap(), r.candidate.as_ref().unwrap());
    let mib = 1024.0 * 1024.0;
    assert!((a.value / mib - 100.0).abs() < 1e-6);
    assert_eq!(a.at.as_deref(), Some("8"));
    assert!((b.value / mib - 58.0).abs() < 1e-6);
    assert_eq!(b.at.as_deref(), Some("1"));
    assert!((r.change_percent.unwrap() + 42.0).abs() < 1e-6);
    assert_eq!(r.noise, Noise::Beyond);
    assert_eq!(r.peak_text(a), "100 MiB/s at 8 threads");
    assert_eq!(c.phrase(r), "randread read bandwidth peak: 42% lower");
}

#[test]
fn one_sided_metrics_are_listed_as_such() {
    let (old, new) = runs();
    let c = compare(&old, &new);
    let metrics: Vec<(&str, Presence)> = c
        .rows
        .iter()
        .map(|r| (r.metric.as_str(), r.presence()))
        .collect();
    assert_eq!(
        metrics,
        [
            ("randread read bandwidth", Presence::Both),
            ("stat ops/s", Presence::BaselineOnly),
            ("create ops/s", Presence::CandidateOnly),
        ]
    );
    assert_eq!(c.phrase(&c.rows[2]), "create ops/s: only in v7.4");
    assert_eq!(c.rows[1].noise, Noise::Unknown);
}

#[test]
fn an_fsync_beside_writes_is_no_headline() {
    let with_fsync = |mib: f64, fsyncs: u64| {
        let mut p = counted(data_phase("seq-write", "4", 0, OpKind::Write, mib));
        p.ops.push(op_result(OpKind::Fsync, fsyncs, 0));
        p.ops[1].ops = 10_000;
        p
    };
    let c = compare(
        &run_with("a", vec![with_fsync(100.0, 50)]),
        &run_with("b", vec![with_fsync(90.0, 40)]),
    );
    let metrics: Vec<&str> = c.rows.iter().map(|r| r.metric.as_str()).collect();
    assert_eq!(metrics, ["seq-write write bandwidth"]);
    // Nor in the report's tables (its latency stays in the latency table).
    let runs = [
        run_with("b", vec![with_fsync(90.0, 40)]),
        run_with("a", vec![with_fsync(100.0, 50)]),
    ];
    let md = crate::render_markdown(&runs, None);
    let header = md.lines().find(|l| l.starts_with("| Phase")).unwrap();
    assert!(header.contains("write · b bandwidth"), "{header}");
    assert!(!header.contains("fsync"), "{header}");
    let html = crate::render_html(&runs, &crate::ReportOptions::default());
    assert!(!html.contains("fsync · b ops/s"));
    // An fsync phase of its own is its own headline.
    let alone = |n| {
        let mut p = phase("fsync", &[]);
        p.ops.push(op_result(OpKind::Fsync, n, 0));
        p
    };
    let c = compare(
        &run_with("a", vec![alone(10)]),
        &run_with("b", vec![alone(9)]),
    );
    assert_eq!(c.rows.len(), 1);
    assert_eq!(c.rows[0].op, OpKind::Fsync);
}

#[test]
fn phases_too_short_are_not_compared() {
    // 10 writes in one second against 5: -50 %, but 10 operations say nothing.
    let a = run_with("a", vec![data_phase("w", "1", 0, OpKind::Write, 10.0)]);
    let b = run_with("b", vec![data_phase("w", "1", 0, OpKind::Write, 5.0)]);
    let c = compare(&a, &b);
    assert_eq!(c.rows[0].noise, Noise::TooShort);
    assert_eq!(
        c.phrase(&c.rows[0]),
        "w write bandwidth peak: 50% lower (too short to compare: under 1 s or 1,000 operations)"
    );
    // Enough operations but a few milliseconds.
    let mut quick = counted(data_phase("w", "1", 0, OpKind::Write, 10.0));
    quick.elapsed = iolab_core::units::Nanos::from_millis(3);
    let long = counted(data_phase("w", "1", 0, OpKind::Write, 5.0));
    let c = compare(
        &run_with("a", vec![long.clone()]),
        &run_with("b", vec![quick]),
    );
    assert_eq!(c.rows[0].noise, Noise::TooShort);
    let c = compare(
        &run_with("a", vec![long.clone()]),
        &run_with("b", vec![long]),
    );
    assert_eq!(c.rows[0].noise, Noise::Unknown);
}

#[test]
fn noise_from_confidence_intervals_and_cv() {
    let s = |v: &[f64]| Spread::of(v).unwrap();
    // No repetitions anywhere: unknown.
    assert_eq!(noise(&s(&[100.0]), &s(&[50.0]), -50.0), Noise::Unknown);
    // Overlapping intervals: within.
    let a = s(&[100.0, 110.0]);
    let b = s(&[104.0, 114.0]);
    assert_eq!(noise(&a, &b, 3.8), Noise::Within);
    // Tight, far apart: beyond.
    let a = s(&[100.0, 100.5]);
    let b = s(&[120.0, 120.5]);
    assert_eq!(noise(&a, &b, 19.9), Noise::Beyond);
    // One side repeated; the single point falls inside its interval.
    assert_eq!(noise(&s(&[90.0, 110.0]), &s(&[101.0]), 1.0), Noise::Within);
    // Change below the larger CV, intervals apart: within.
    let a = s(&[100.0, 100.0, 100.0, 130.0]);
    let b = s(&[150.0, 151.0, 150.0, 151.0]);
    assert!(a.cv > 0.12);
    assert_eq!(noise(&a, &b, 10.0), Noise::Within);
}

/// The hci preset's shape: randrw at 90 and 70 % reads, 4KiB and 2MiB blocks; reads
/// and writes at `iops` 4KiB IOPS and `ops_2m` 2MiB operations per second.
fn hci(label: &str, iops: u64, ops_2m: u64) -> RunRecord {
    let mut phases = Vec::new();
    for mix in ["90", "70"] {
        for (bs, ops, size) in [("4KiB", iops, 4096), ("2MiB", ops_2m, 2 << 20)] {
            let mut p = phase("randrw", &[("rwmix_read", mix), ("block_size", bs)]);
            p.ops.push(op_result(OpKind::Read, ops, ops * size));
            p.ops
                .push(op_result(OpKind::Write, ops / 2, ops / 2 * size));
            phases.push(p);
        }
    }
    run_with(label, phases)
}

#[test]
fn a_block_size_sweep_is_judged_by_iops_at_small_blocks_and_bandwidth_at_large() {
    let c = compare(&hci("a", 10_000, 500), &hci("b", 15_000, 450));
    let t = comparison_table(&c, crate::Units::Binary).to_text();
    let rows: Vec<(String, String, String, String)> = c
        .rows
        .iter()
        .map(|r| {
            let (a, b) = (r.baseline.as_ref().unwrap(), r.candidate.as_ref().unwrap());
            (
                r.metric.clone(),
                r.peak_text(a),
                r.peak_text(b),
                format!("{:+.0}", r.change_percent.unwrap()),
            )
        })
        .collect();
    let row = |m: &str, a: &str, b: &str, ch: &str| {
        (m.to_string(), a.to_string(), b.to_string(), ch.to_string())
    };
    assert_eq!(
        rows[..4],
        [
            row(
                "randrw [rwmix_read=70] read IOPS",
                "10.0k IOPS at block size 4KiB",
                "15.0k IOPS at block size 4KiB",
                "+50"
            ),
            row(
                "randrw [rwmix_read=70] read bandwidth",
                "1000 MiB/s at block size 2MiB",
                "900 MiB/s at block size 2MiB",
                "-10"
            ),
            row(
                "randrw [rwmix_read=70] write IOPS",
                "5.00k IOPS at block size 4KiB",
                "7.50k IOPS at block size 4KiB",
                "+50"
            ),
            row(
                "randrw [rwmix_read=70] write bandwidth",
                "500 MiB/s at block size 2MiB",
                "450 MiB/s at block size 2MiB",
                "-10"
            ),
        ],
        "{t}"
    );
    assert_eq!(c.rows.len(), 8, "the same for 90 % reads:\n{t}");
}

#[test]
fn a_sweep_of_large_blocks_only_keeps_one_measure() {
    let big = |label: &str, mib: f64| {
        run_with(
            label,
            ["1MiB", "2MiB"]
                .into_iter()
                .map(|bs| {
                    let mut p = data_phase("seq", "1", 0, OpKind::Read, mib);
                    p.params.insert("block_size".into(), bs.into());
                    p
                })
                .collect(),
        )
    };
    let c = compare(&big("a", 100.0), &big("b", 110.0));
    let metrics: Vec<&str> = c.rows.iter().map(|r| r.metric.as_str()).collect();
    assert_eq!(metrics, ["seq read bandwidth"]);
}

#[test]
fn a_mix_by_block_size_matrix_is_charted_per_block_size_in_bars() {
    let runs = [hci("b", 15_000, 450), hci("a", 10_000, 500)];
    let html = crate::render_html(&runs, &crate::ReportOptions::default());
    for title in [
        "randrw at 4KiB: IOPS vs read share",
        "randrw at 2MiB: throughput vs read share",
    ] {
        let at = html
            .find(title)
            .unwrap_or_else(|| panic!("no chart {title}"));
        let svg = &html[html[..at].rfind("<svg").unwrap()..at];
        assert!(svg.contains("data-marks=\"bars\""), "{title}: {svg}");
    }
    // Reads, writes and their total at 4 KiB; no 2 MiB point joined to a 4 KiB one.
    assert!(html.contains("read · b: 15.0k IOPS at 90% reads, 4KiB"));
    assert!(html.contains("total · b: 22.5k IOPS at 90% reads, 4KiB"));
    assert!(!html.contains("IOPS vs block size"));
    let md = crate::render_markdown(&runs, crate::default_comparison(&runs).as_ref());
    assert!(md.contains("\nrandrw read · b:\n"), "{md}");
    let header = md
        .lines()
        .find(|l| l.starts_with("| Block size"))
        .expect("a matrix table");
    for column in ["70% reads", "70% reads mean latency", "90% reads"] {
        assert!(header.contains(column), "{header}");
    }
    let row = md.lines().find(|l| l.starts_with("| 4KiB")).unwrap();
    assert!(row.contains("15.0k IOPS"), "{row}");
    assert!(md.contains("| randrw [rwmix_read=70] read IOPS "), "{md}");
}

#[test]
fn a_block_size_sweep_alone_is_drawn_in_bars_with_its_total() {
    let mut runs = [hci("b", 15_000, 450), hci("a", 10_000, 500)];
    for r in &mut runs {
        r.phases.retain(|p| p.params["rwmix_read"] == "90");
    }
    let html = crate::render_html(&runs, &crate::ReportOptions::default());
    let at = html
        .find("<title>randrw: IOPS vs block size</title>")
        .expect("a sweep chart");
    let svg = &html[html[..at].rfind("<svg").unwrap()..at];
    assert!(svg.contains("data-marks=\"bars\""), "{svg}");
    assert!(html.contains("total · b: 22.5k IOPS at block size 4KiB"));
    let md = crate::render_markdown(&runs, None);
    let header = md.lines().find(|l| l.starts_with("| Block size")).unwrap();
    assert!(header.contains("total · b IOPS"), "{header}");
}
