//! Golden tests of every renderer on the two fixture runs (v7.4 against v7.3): Markdown,
//! CSV, JSON, the comparison in text, Markdown and CSV, and the structure of the HTML
//! report's charts (kinds, titles, axes, ticks, series, legends).

mod fixtures;
mod svg;

use iolab_core::result::RunRecord;
use iolab_report::{
    Format, Noise, Presence, ReportOptions, Units, compare, compare_sides, default_comparison,
    render, render_comparison_csv, render_comparison_markdown, render_comparison_text, render_csv,
    render_html, render_json, render_markdown, render_points_csv,
};

#[test]
fn markdown_report() {
    let runs = fixtures::report_runs();
    insta::assert_snapshot!(render_markdown(&runs, default_comparison(&runs).as_ref()));
}

/// The fixture runs' report as `iolab report v7.4 --vs v7.3` writes it.
fn compared() -> String {
    let runs = fixtures::report_runs();
    let opts = ReportOptions {
        comparison: default_comparison(&runs),
        ..ReportOptions::default()
    };
    render_html(&runs, &opts)
}

#[test]
fn csv_one_row_per_phase_and_op() {
    let csv = render_csv(&fixtures::report_runs());
    let phases: usize = fixtures::report_runs().iter().map(|r| r.phases.len()).sum();
    assert_eq!(csv.lines().count(), 1 + phases);
    insta::assert_snapshot!(csv);
}

#[test]
fn csv_of_sweep_points() {
    insta::assert_snapshot!(render_points_csv(&fixtures::report_runs()));
}

#[test]
fn comparison_text() {
    let c = compare(&fixtures::v73(), &fixtures::v74());
    insta::assert_snapshot!(render_comparison_text(&c, Units::Binary));
}

#[test]
fn comparison_markdown() {
    let c = compare(&fixtures::v73(), &fixtures::v74());
    insta::assert_snapshot!(render_comparison_markdown(&c, Units::Binary));
}

#[test]
fn comparison_csv() {
    let c = compare(&fixtures::v73(), &fixtures::v74());
    insta::assert_snapshot!(render_comparison_csv(&c));
}

#[test]
fn comparison_reads_like_the_nfs_study() {
    let c = compare(&fixtures::v73(), &fixtures::v74());
    let row = |metric: &str| c.rows.iter().find(|r| r.metric == metric).unwrap();
    let rand = row("randread-4KiB read IOPS");
    assert_eq!(c.phrase(rand), "randread-4KiB read IOPS peak: 42% lower");
    assert_eq!(rand.baseline.as_ref().unwrap().at.as_deref(), Some("8"));
    assert_eq!(rand.noise, Noise::Unknown);
    let write = row("seq-write write bandwidth");
    assert_eq!(write.noise, Noise::Beyond);
    assert_eq!(
        write.peak_text(write.candidate.as_ref().unwrap()),
        "4.80 GiB/s at 8 threads"
    );
    // v7.3 read at 8 threads is noisy (16 % apart): its change is within the noise.
    assert_eq!(row("seq-read read bandwidth").noise, Noise::Within);
    assert_eq!(row("mkdir ops/s").presence(), Presence::CandidateOnly);
}

#[test]
fn sides_pool_runs_with_one_label() {
    // Two copies of each run per side: same figures, so twice the repetitions.
    let a = [fixtures::v73(), fixtures::v73()];
    let b = [fixtures::v74(), fixtures::v74()];
    let c = compare_sides(&a, &b);
    let rand = c
        .rows
        .iter()
        .find(|r| r.metric == "randread-4KiB read IOPS")
        .unwrap();
    assert_eq!(rand.baseline.as_ref().unwrap().spread.n, 2);
    assert_eq!(rand.noise, Noise::Beyond);
    assert_eq!(c.baseline.name, "v7.3");
}

#[test]
fn json_is_the_run_itself() {
    let run = fixtures::v74();
    let text = render_json(std::slice::from_ref(&run));
    let back: RunRecord = serde_json::from_str(&text).unwrap();
    let again = render_json(std::slice::from_ref(&back));
    assert!(same_json(
        &serde_json::from_str(&text).unwrap(),
        &serde_json::from_str(&again).unwrap()
    ));
    assert_eq!(back.phases.len(), run.phases.len());
    assert_eq!(back.label, run.label);
    let both = render(
        Format::Json,
        &fixtures::report_runs(),
        &ReportOptions::default(),
    );
    let back: Vec<RunRecord> = serde_json::from_str(&both).unwrap();
    assert_eq!(back.len(), 2);
}

/// Equal JSON, floats within 1e-12 (serde_json may move a float's last bit on the way
/// back without its float_roundtrip feature).
fn same_json(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value::*;
    match (a, b) {
        (Number(x), Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 1e-12 * x.abs().max(y.abs()).max(1.0)
        }
        (Array(x), Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y)),
        (Object(x), Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

#[test]
fn html_chart_structure() {
    let html = compared();
    insta::assert_snapshot!(svg::describe(&svg::charts(&html)));
}

#[test]
fn html_charts_device_queue_size_and_await() {
    let html = compared();
    let charts = svg::charts(&html);
    let find = |kind: &str| {
        charts
            .iter()
            .find(|c| c.kind == kind)
            .unwrap_or_else(|| panic!("no {kind} chart"))
    };
    let queue = find("device-queue");
    assert_eq!(
        queue.title,
        "seq-write: device average queue size on node01"
    );
    assert_eq!(queue.y_title, "Average queue size, requests");
    assert_eq!(queue.y_ticks.last().unwrap(), "8", "aqu-sz 8 fits the axis");
    assert_eq!(queue.legend, ["nvme0n1"]);
    let wait = find("device-await");
    assert_eq!(wait.y_title, "Await (µs)");
    // 0.4 ms of write await, on a microsecond axis; reads stayed at zero and are left out.
    assert_eq!(wait.y_ticks.last().unwrap(), "400");
    assert_eq!(wait.legend, ["nvme0n1 write"]);
    assert!(html.contains("nvme0n1 write: 0.4 ms at"), "tooltips in ms");
    assert!(html.contains("nvme0n1: 8.0 requests at"));
}

#[test]
fn html_is_self_contained() {
    let html = compared();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for banned in ["<script", "<link", "@import", "url(", "https://"] {
        assert!(!html.contains(banned), "the report contains {banned}");
    }
    let http: Vec<&str> = html.matches("http://").collect();
    let svgs = html.matches("<svg").count();
    assert_eq!(http.len(), svgs, "only the SVG namespace may name a URL");
    for c in svg::charts(&html) {
        assert!(!c.title.is_empty(), "{} has no title", c.kind);
        assert_eq!(c.declared_series, c.series.len(), "{}", c.title);
        assert_eq!(c.legend.len(), c.series.len(), "{}", c.title);
        assert!(
            !c.x_title.is_empty() && !c.y_title.is_empty(),
            "{}",
            c.title
        );
        for (name, points, drawn) in &c.series {
            assert_eq!(points, drawn, "{}: {name}", c.title);
        }
        for tick in c.x_ticks.iter().chain(&c.y_ticks) {
            // No "4000.0": a whole tick of three digits or more has no decimals.
            let whole = tick.trim_end_matches(".0").replace(',', "");
            assert!(!(tick.ends_with(".0") && whole.len() >= 3), "{tick}");
        }
    }
    for section in [
        "comparison",
        "sweeps",
        "metadata",
        "latency",
        "timelines",
        "environment",
    ] {
        assert!(
            html.contains(&format!("<section id=\"{section}\">")),
            "{section}"
        );
    }
    assert!(html.contains("randread-4KiB read IOPS peak: 42% lower"));
}

#[test]
fn one_run_has_no_comparison() {
    let html = render_html(&[fixtures::v73()], &ReportOptions::default());
    assert!(!html.contains("<section id=\"comparison\">"));
    assert!(html.contains("data-chart=\"sweep\""));
    let md = render_markdown(&[fixtures::v73()], None);
    assert!(!md.contains("## Comparison"));
    assert!(
        md.contains("| unknown"),
        "the missing kernel shows as unknown"
    );
}

#[test]
fn empty_and_odd_inputs_render() {
    let empty: [RunRecord; 0] = [];
    for format in Format::ALL {
        let _ = render(format, &empty, &ReportOptions::default());
    }
    // A run without phases, and one whose phase completed nothing.
    let mut bare = fixtures::v73();
    bare.phases.clear();
    bare.provenance.inventory = None;
    let mut idle = fixtures::v74();
    idle.phases.truncate(1);
    for op in &mut idle.phases[0].ops {
        *op = iolab_core::result::OpResult::whole(
            op.op,
            Default::default(),
            iolab_core::units::Nanos::ZERO,
            0,
            Default::default(),
        );
    }
    idle.phases[0].timeline = Default::default();
    idle.phases[0].telemetry = None;
    let runs = [idle, bare];
    for format in Format::ALL {
        assert!(
            !render(format, &runs, &ReportOptions::default()).is_empty(),
            "{format}"
        );
    }
    let html = render_html(&runs, &ReportOptions::default());
    assert!(html.contains("<section id=\"environment\">"));
    assert_eq!("md".parse::<Format>(), Ok(Format::Markdown));
    assert!("pdf".parse::<Format>().is_err());
}

#[test]
fn a_matrix_becomes_one_group_per_row() {
    // block size {4KiB, 128KiB} x threads {1, 64}: charts per block size, by threads.
    let mut run = fixtures::v74();
    run.phases.retain(|p| p.name == "randread-4KiB");
    let mut big: Vec<_> = run.phases.clone();
    for p in &mut big {
        p.params.insert("block_size".into(), "128KiB".into());
    }
    run.phases.extend(big);
    for p in &mut run.phases {
        p.name = "randread".into();
    }
    let agg = iolab_report::aggregate(&run);
    let labels: Vec<String> = agg.groups.iter().map(|g| g.label()).collect();
    assert_eq!(
        labels,
        ["randread [block_size=4KiB]", "randread [block_size=128KiB]"]
    );
    let metrics: Vec<String> = agg.groups.iter().map(|g| g.metric_name(g.ops[0])).collect();
    assert_eq!(
        metrics,
        [
            "randread [block_size=4KiB] read IOPS",
            "randread [block_size=128KiB] read bandwidth"
        ]
    );
    let html = render_html(std::slice::from_ref(&run), &ReportOptions::default());
    // One chart per block size (each in its measure), lines along threads.
    let charts: Vec<(String, String)> = svg::charts(&html)
        .into_iter()
        .filter(|c| c.kind == "matrix" || c.kind == "sweep")
        .map(|c| (c.title, c.marks))
        .collect();
    let chart = |t: &str| (t.to_string(), "lines".to_string());
    assert_eq!(
        charts,
        [
            chart("randread at 4KiB: IOPS vs threads"),
            chart("randread at 128KiB: throughput vs threads")
        ]
    );
    // And one table per run and operation: threads down, block sizes across.
    let md = render_markdown(std::slice::from_ref(&run), None);
    assert!(md.contains("\n### randread\n"), "{md}");
    let header = md.lines().find(|l| l.starts_with("| Threads")).unwrap();
    assert_eq!(
        header
            .split('|')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect::<Vec<_>>(),
        [
            "Threads",
            "4KiB",
            "4KiB mean latency",
            "128KiB",
            "128KiB mean latency"
        ]
    );
}
