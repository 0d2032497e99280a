//! The reports of three reference studies (S1 NFS versions, S3 HCI record, S5 ZFS matrix)
//! in headless Chromium: a script added to a copy of each page opens every `<details>`,
//! measures every chart's text where Chromium laid it out (its box against the chart's
//! own box: a title must never be clipped) and lists the tables and charts; the test
//! reads that back from the DOM Chromium dumps. Without Chromium on PATH the tests say so
//! loudly and pass.

mod chromium;
mod fixtures;

use std::path::Path;

use chromium::{chromium, run_chromium, skip_without_chromium};
use fixtures::studies::{hci, nfs, zfs};
use iolab_core::result::RunRecord;
use iolab_report::{ReportOptions, Units, compare, render_html};
use serde_json::Value;

/// Measures the page from inside: heights with the detail folded and unfolded, each
/// chart's kind, title, heading lines and every text's box against the chart's box (CSS
/// pixels, so rotation and scaling are Chromium's), and the tables' classes.
const MEASURE: &str = r#"<script>
(function () {
  const folded = document.documentElement.scrollHeight;
  const details = document.querySelectorAll('details');
  details.forEach(d => d.open = true);
  const unfolded = document.documentElement.scrollHeight;
  const charts = [];
  for (const svg of document.querySelectorAll('svg.chart')) {
    const box = svg.getBoundingClientRect();
    const outside = [];
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (r.width === 0) { outside.push('not laid out: ' + t.textContent); continue; }
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 ||
          r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) {
        outside.push(t.getAttribute('class') + ': ' + t.textContent);
      }
    }
    const heading = svg.querySelector('text.chart-title');
    charts.push({
      kind: svg.dataset.chart,
      marks: svg.dataset.marks,
      title: svg.querySelector('title').textContent,
      lines: heading.querySelectorAll('tspan').length,
      outside: outside,
    });
  }
  const tables = [...document.querySelectorAll('table')].map(t => t.className);
  const pre = document.createElement('pre');
  pre.id = 'iolab-measure';
  pre.textContent = JSON.stringify({folded, unfolded, details: details.length, charts, tables});
  document.body.appendChild(pre);
})();
</script>"#;

/// The report of `runs` in Chromium, measured; None without Chromium.
fn measured(name: &str, runs: &[RunRecord], opts: &ReportOptions) -> Option<(String, Value)> {
    let Some(chromium) = chromium() else {
        skip_without_chromium();
        return None;
    };
    let html = render_html(runs, opts);
    assert!(!html.contains("<script"), "the report itself has no script");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-studies");
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join(format!("{name}.html"));
    std::fs::write(
        &page,
        html.replace("</body>", &format!("{MEASURE}\n</body>")),
    )
    .unwrap();
    let dom = run_chromium(
        &chromium,
        &page,
        &["--window-size=1280,2000".into(), "--dump-dom".into()],
    );
    let marker = "<pre id=\"iolab-measure\">";
    let start = dom.find(marker).expect("the script ran") + marker.len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    Some((html, serde_json::from_str(&json).expect("the measures")))
}

/// Every chart's text inside its box; the charts' (kind, marks, title) in order.
fn charts_fit(m: &Value) -> Vec<(String, String, String)> {
    let charts = m["charts"].as_array().unwrap();
    assert!(!charts.is_empty());
    for c in charts {
        let outside = c["outside"].as_array().unwrap();
        assert!(outside.is_empty(), "{}: clipped {outside:?}", c["title"]);
    }
    charts
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap().to_string();
            (s("kind"), s("marks"), s("title"))
        })
        .collect()
}

fn tables(m: &Value) -> Vec<String> {
    m["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

fn count(charts: &[(String, String, String)], kind: &str, marks: &str) -> usize {
    charts
        .iter()
        .filter(|(k, m, _)| k == kind && m == marks)
        .count()
}

#[test]
fn s1_nfs_versions_in_chromium() {
    let runs = [nfs("v7.4"), nfs("v7.3")];
    let opts = ReportOptions {
        comparison: Some(compare(&runs[1], &runs[0])),
        units: Units::Decimal,
        ..ReportOptions::default()
    };
    let Some((html, m)) = measured("s1", &runs, &opts) else {
        return;
    };
    let charts = charts_fit(&m);
    // Throughput and IOPS against threads, both versions overlaid, in lines.
    assert_eq!(count(&charts, "sweep", "lines"), 4, "{charts:?}");
    // One metadata chart per operation, not one log chart of all three.
    let meta: Vec<&str> = charts
        .iter()
        .filter(|c| c.0 == "metadata")
        .map(|c| c.2.as_str())
        .collect();
    assert_eq!(
        meta,
        [
            "md-create: rate vs threads",
            "md-stat: rate vs threads",
            "md-remove: rate vs threads"
        ]
    );
    let t = tables(&m);
    assert!(t.contains(&"comparison".to_string()), "{t:?}");
    assert!(t.contains(&"comparison points".to_string()), "{t:?}");
    // Decimal units, as the study quotes them.
    assert!(html.contains("<td class=\"num\">7.00 GB/s</td>"));
    assert!(html.contains("Throughput (GB/s)"));
}

#[test]
fn s3_hci_record_in_chromium() {
    let runs = [hci()];
    let Some((html, m)) = measured("s3", &runs, &ReportOptions::default()) else {
        return;
    };
    let charts = charts_fit(&m);
    // Read shares are categories: bars, one chart per block size, each in its measure.
    let titles: Vec<&str> = charts
        .iter()
        .filter(|c| c.0 == "matrix")
        .map(|c| c.2.as_str())
        .collect();
    assert_eq!(
        titles,
        [
            "randrw at 4KiB: IOPS vs read share",
            "randrw at 2MiB: throughput vs read share"
        ]
    );
    assert_eq!(count(&charts, "matrix", "bars"), 2);
    assert_eq!(
        count(&charts, "sweep", "lines"),
        0,
        "no line joins 4KiB to 2MiB"
    );
    let t = tables(&m);
    assert!(t.contains(&"rated".to_string()), "{t:?}");
    assert_eq!(t.iter().filter(|t| *t == "figures matrix").count(), 3);
    assert!(
        html.contains("<td class=\"num\">101%</td>"),
        "6.67M of 6.6M rated"
    );
}

#[test]
fn s5_zfs_matrix_in_chromium() {
    let runs = [zfs("optane-ssd"), zfs("hdd-only")];
    let Some((html, m)) = measured("s5", &runs, &ReportOptions::default()) else {
        return;
    };
    let charts = charts_fit(&m);
    // Sync against async overlaid: one chart per write pattern and block size.
    let sync: Vec<&str> = charts
        .iter()
        .filter(|c| c.0 == "sync-async")
        .map(|c| c.2.as_str())
        .collect();
    assert_eq!(
        sync,
        [
            "sync-seq-write against async-seq-write at 4KiB: IOPS vs threads",
            "sync-seq-write against async-seq-write at 128KiB: throughput vs threads",
            "sync-rand-write against async-rand-write at 4KiB: IOPS vs threads",
            "sync-rand-write against async-rand-write at 128KiB: throughput vs threads",
        ]
    );
    assert_eq!(
        count(&charts, "matrix", "lines"),
        4,
        "the reads, per block size"
    );
    assert_eq!(
        count(&charts, "sweep", "lines"),
        0,
        "no two-point chart per group"
    );
    // A matrix table per configuration and operation: 6 operations x 2 configurations.
    let t = tables(&m);
    assert_eq!(t.iter().filter(|t| *t == "figures matrix").count(), 12);
    // The long device titles wrap instead of being clipped ("... on vm").
    let device = charts
        .iter()
        .find(|c| c.0 == "device-await")
        .expect("a device chart");
    assert!(device.2.ends_with("on vm"), "{}", device.2);
    let lines = m["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "device-await")
        .unwrap()["lines"]
        .as_u64()
        .unwrap();
    assert!(lines >= 2, "{} in {lines} line", device.2);
    // The detail is folded: the page is shorter closed than open.
    let (folded, unfolded) = (
        m["folded"].as_f64().unwrap(),
        m["unfolded"].as_f64().unwrap(),
    );
    assert!(m["details"].as_u64().unwrap() >= 12);
    assert!(
        folded * 2.0 < unfolded,
        "folded {folded} px, open {unfolded} px"
    );
    assert!(html.contains("<summary>async-seq-write [block_size=128KiB] at 64 threads"));
}
