//! Reads the charts back out of a report, from our own HTML or from the DOM a browser
//! dumps: per `<svg class="chart">` its kind, title, axis titles, tick labels, series
//! (name, declared and drawn points) and legend entries. [`describe`] prints that
//! structure for golden tests.
#![allow(dead_code)]

use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq)]
pub struct SvgChart {
    pub kind: String,
    /// "lines" or "bars".
    pub marks: String,
    pub title: String,
    pub declared_series: usize,
    pub x_title: String,
    pub y_title: String,
    pub x_ticks: Vec<String>,
    pub y_ticks: Vec<String>,
    /// (name, data-points, markers drawn: circles or bars)
    pub series: Vec<(String, usize, usize)>,
    pub legend: Vec<String>,
}

/// The value of attribute `name` in a tag's text.
pub fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = tag[start..].find('"')? + start;
    Some(tag[start..end].to_string())
}

/// Each element carrying exactly `class="CLASS"`: (its opening tag, its text up to the
/// next tag).
fn elements<'a>(s: &'a str, class: &str) -> Vec<(&'a str, &'a str)> {
    let key = format!("class=\"{class}\"");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = s[from..].find(&key) {
        let at = from + i;
        let open = s[..at].rfind('<').unwrap_or(0);
        let close = s[at..].find('>').map(|j| at + j).unwrap_or(s.len() - 1);
        let text_end = s[close + 1..]
            .find('<')
            .map(|j| close + 1 + j)
            .unwrap_or(s.len());
        out.push((&s[open..=close], &s[close + 1..text_end]));
        from = close + 1;
    }
    out
}

fn texts(s: &str, class: &str) -> Vec<String> {
    elements(s, class)
        .into_iter()
        .map(|(_, t)| unescape(t.trim()))
        .collect()
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Every chart of a page, in document order.
pub fn charts(html: &str) -> Vec<SvgChart> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = html[from..].find("<svg") {
        let start = from + i;
        let end = html[start..]
            .find("</svg>")
            .map(|j| start + j)
            .unwrap_or(html.len());
        let svg = &html[start..end];
        from = end;
        let head = &svg[..svg.find('>').unwrap_or(svg.len())];
        if attr(head, "class").as_deref() != Some("chart") {
            continue;
        }
        out.push(chart(svg, head));
    }
    out
}

fn chart(svg: &str, head: &str) -> SvgChart {
    let title_start = svg.find("<title>").map(|i| i + 7).unwrap_or(0);
    let title_end = svg[title_start..].find("</title>").unwrap_or(0) + title_start;
    let series = elements(svg, "series")
        .into_iter()
        .map(|(tag, _)| {
            let at = svg.find(tag).unwrap_or(0);
            let body_end = svg[at..].find("</g>").map(|j| at + j).unwrap_or(svg.len());
            (
                unescape(&attr(tag, "data-name").unwrap_or_default()),
                attr(tag, "data-points")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                svg[at..body_end].matches("<circle").count()
                    + svg[at..body_end].matches("<rect class=\"bar\"").count(),
            )
        })
        .collect();
    SvgChart {
        kind: attr(head, "data-chart").unwrap_or_default(),
        marks: attr(head, "data-marks").unwrap_or_default(),
        title: unescape(&svg[title_start..title_end]),
        declared_series: attr(head, "data-series")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        x_title: texts(svg, "axis-title x-title").join(" | "),
        y_title: texts(svg, "axis-title y-title").join(" | "),
        x_ticks: texts(svg, "tick x-tick"),
        y_ticks: texts(svg, "tick y-tick"),
        series,
        legend: texts(svg, "legend-label"),
    }
}

/// The structure of the charts as text, one block per chart.
pub fn describe(charts: &[SvgChart]) -> String {
    let mut out = String::new();
    for c in charts {
        let _ = writeln!(out, "[{} {}] {}", c.kind, c.marks, c.title);
        let _ = writeln!(out, "  x: {} | ticks: {}", c.x_title, c.x_ticks.join(", "));
        let _ = writeln!(out, "  y: {} | ticks: {}", c.y_title, c.y_ticks.join(", "));
        for (name, points, circles) in &c.series {
            let _ = writeln!(out, "  series {name}: {points} points, {circles} drawn");
        }
        let _ = writeln!(out, "  legend: {}", c.legend.join("; "));
    }
    out
}
