//! A stored `iolab kvcache` run's HTML report, drawn by a real headless Chromium.

use super::json_of;
use crate::common::{chromium_dom, path};

/// A stored kvcache run's HTML report, loaded in a real headless Chromium: the
/// trial's scored figures (tokens/s, hit rate) and its criteria with their verdict show
/// the stored values, its per-second timeline (reads and writes of the storage tier)
/// and its latency chart are drawn, with a point per second.
#[test]
fn chromium_draws_a_kvcache_runs_timeline_and_latency_charts() {
    let Some(chromium) =
        crate::live_page::chromium("chromium_draws_a_kvcache_runs_timeline_and_latency_charts")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let with_db = crate::results::with_db;
    with_db(
        &db,
        &[
            "kvcache",
            "--model",
            "tiny-1b",
            "--users",
            "2",
            "--duration",
            "3s",
            "--generation-mode",
            "none",
            "--dir",
            path(&work),
            "--label",
            "kv",
            "--json",
            path(&dir.path().join("k.json")),
            "-Q",
        ],
    )
    .expect(0);
    let stored = json_of(&dir.path().join("k.json"));
    let html = dir.path().join("r.html");
    with_db(&db, &["report", "kv", "--html", path(&html)]).expect(0);
    let dom = chromium_dom(chromium, &format!("file://{}", html.display()), None);
    let chart = |kind: &str| {
        let at = dom
            .find(&format!("data-chart=\"{kind}\""))
            .unwrap_or_else(|| panic!("no {kind} chart in {dom}"));
        let end = dom[at..].find("</svg>").unwrap();
        dom[at..at + end].to_string()
    };
    let timeline = chart("timeline");
    assert!(
        timeline.contains("<title>kvcache trial 1: per-second throughput"),
        "{timeline}"
    );
    // A point a second for reads and for writes, each with its figure.
    for op in ["read", "write"] {
        assert!(
            timeline.contains(&format!("<title>{op}: ")) && timeline.contains(" at 1.0 s"),
            "{op}: {timeline}"
        );
    }
    let latency = chart("latency-percentiles");
    assert!(latency.contains("<title>"), "{latency}");
    kvcache_figures_shown(&dom, &stored);
}

/// The KV cache section of a report's DOM shows the stored trial's figures: its
/// tokens/s and hit rate as the text report prints them, each criterion's value and
/// verdict.
fn kvcache_figures_shown(dom: &str, stored: &serde_json::Value) {
    let at = dom
        .find("<section id=\"kvcache\">")
        .expect("a KV cache section");
    let section = &dom[at..at + dom[at..].find("</section>").unwrap()];
    let extra = &stored["phases"][0]["extra"];
    let cell = |v: String| format!("<td class=\"num\">{v}</td>");
    let x = |k: &str| {
        extra[k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k} in {extra}"))
    };
    for (k, v) in [
        (
            "wall-clock tokens/s",
            format!("{:.1}", x("wall-clock tokens/s")),
        ),
        ("storage tokens/s", format!("{:.1}", x("storage tokens/s"))),
        ("cache hit rate", format!("{:.3}", x("cache hit rate"))),
    ] {
        assert!(section.contains(&cell(v.clone())), "{k} {v} in {section}");
    }
    let hit = x("cache hit rate");
    let verdict = if hit > 0.3 { "PASS" } else { "FAIL" };
    let row = format!(
        "<td>cache hit rate</td>{}{}<td>{verdict}</td>",
        cell(format!("{hit:.3}")),
        cell("&gt; 0.3".into())
    );
    assert!(section.contains(&row), "{row} in {section}");
    let read_p95 = format!("{:.3}", x("read device p95 ms"));
    assert!(
        section.contains(&format!(
            "<td>storage read device p95 (ms)</td>{}",
            cell(read_p95)
        )),
        "{section}"
    );
}
