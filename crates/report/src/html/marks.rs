//! The marks of a chart's series: [`series_svg`] draws a line with its markers, range
//! bars and point labels; [`bars_svg`] draws one bar per category, the series of a chart
//! side by side within each category.

use std::fmt::Write as _;

use super::chart::{CHAR_WIDTH, Frame, Pt, Series};
use super::escape;

/// Colour-blind-safe palette (Okabe-Ito, then Tableau), one colour per series in order.
const PALETTE: [&str; 10] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#7f3c8d", "#8c564b",
    "#4d4d4d", "#bcbd22",
];

/// Share of a category's width its bars take together.
const BAR_GROUP: f64 = 0.8;

pub(super) fn color(s: &Series) -> &'static str {
    PALETTE[s.color % PALETTE.len()]
}

/// True when a label of `chars` characters at (x, y) would overlap one already placed.
fn crowded(placed: &[(f64, f64, f64)], x: f64, y: f64, chars: usize) -> bool {
    let w = chars as f64 * CHAR_WIDTH * 0.9;
    placed
        .iter()
        .any(|(px, py, pw)| (x - px).abs() < w.max(*pw) && (y - py).abs() < 11.0)
}

/// One series: its line, its markers with tooltips, range bars and point labels (labels
/// that would overlap one already in `labels` are left out).
pub(super) fn series_svg(s: &Series, f: &Frame, labels: &mut Vec<(f64, f64, f64)>) -> String {
    let color = color(s);
    let mut out = format!(
        "<g class=\"series\" data-name=\"{}\" data-points=\"{}\">\n",
        escape(&s.name),
        s.points.len()
    );
    let visible: Vec<&Pt> = s.points.iter().filter(|p| !f.y.log || p.y > 0.0).collect();
    let path: Vec<String> = visible
        .iter()
        .map(|p| format!("{:.1},{:.1}", f.px(p.x), f.py(p.y)))
        .collect();
    let dash = if s.dashed {
        " stroke-dasharray=\"7 4\""
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "<polyline class=\"line\" points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>",
        path.join(" ")
    );
    for p in visible {
        out.push_str(&point_svg(s, p, (f.px(p.x), f.py(p.y)), f, labels));
    }
    out.push_str("</g>\n");
    out
}

/// A point: its range bar, its marker with a tooltip and its label when there is room.
fn point_svg(
    s: &Series,
    p: &Pt,
    (x, y): (f64, f64),
    f: &Frame,
    labels: &mut Vec<(f64, f64, f64)>,
) -> String {
    let color = color(s);
    let fill = if s.dashed { "#fff" } else { color };
    let radius = if s.points.len() > 16 { 2.0 } else { 3.5 };
    let mut out = String::new();
    if let Some((lo, hi)) = p.range.filter(|(lo, hi)| hi > lo && !f.y.log) {
        let (y1, y2) = (f.py(lo), f.py(hi));
        let _ = writeln!(
            out,
            "<path class=\"err\" d=\"M{:.1} {y1:.1}H{:.1}M{x:.1} {y1:.1}V{y2:.1}M{:.1} {y2:.1}H{:.1}\" stroke=\"{color}\" fill=\"none\"/>",
            x - 4.0,
            x + 4.0,
            x - 4.0,
            x + 4.0
        );
    }
    let _ = writeln!(
        out,
        "<circle class=\"point\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{radius}\" fill=\"{fill}\" stroke=\"{color}\" stroke-width=\"1.5\"><title>{}</title></circle>",
        escape(&p.tip)
    );
    let (lx, ly) = (x + 5.0, y - 6.0);
    if let Some(label) = p
        .label
        .as_ref()
        .filter(|l| !crowded(labels, lx, ly, l.chars().count()))
    {
        labels.push((lx, ly, label.chars().count() as f64 * CHAR_WIDTH * 0.9));
        let _ = writeln!(
            out,
            "<text class=\"point-label\" x=\"{lx:.1}\" y=\"{ly:.1}\" fill=\"{color}\">{}</text>",
            escape(label)
        );
    }
    out
}

/// Series `index` of `count` as bars: each point a bar from the floor to its value in its
/// category, beside the other series' bars; a range over repetitions as a whisker;
/// compared runs (dashed series) pale with a dashed outline.
pub(super) fn bars_svg(s: &Series, (index, count): (usize, usize), f: &Frame) -> String {
    let color = color(s);
    let mut out = format!(
        "<g class=\"series\" data-name=\"{}\" data-points=\"{}\">\n",
        escape(&s.name),
        s.points.len()
    );
    let group = f.band() * BAR_GROUP;
    let width = group / count.max(1) as f64;
    let (fill, dash) = if s.dashed {
        (" fill-opacity=\"0.3\"", " stroke-dasharray=\"4 2\"")
    } else {
        ("", "")
    };
    for p in s.points.iter().filter(|p| !f.y.log || p.y > 0.0) {
        let x = f.px(p.x) - group / 2.0 + index as f64 * width;
        let y = f.py(p.y);
        let _ = writeln!(
            out,
            "<rect class=\"bar\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\"{fill} stroke=\"{color}\"{dash}><title>{}</title></rect>",
            (width - 1.0).max(1.0),
            (f.floor() - y).max(0.0),
            escape(&p.tip)
        );
        if let Some((lo, hi)) = p.range.filter(|(lo, hi)| hi > lo && !f.y.log) {
            let cx = x + width / 2.0;
            let (y1, y2) = (f.py(lo), f.py(hi));
            let _ = writeln!(
                out,
                "<path class=\"err\" d=\"M{:.1} {y1:.1}H{:.1}M{cx:.1} {y1:.1}V{y2:.1}M{:.1} {y2:.1}H{:.1}\" stroke=\"#222\" fill=\"none\"/>",
                cx - 3.0,
                cx + 3.0,
                cx - 3.0,
                cx + 3.0
            );
        }
    }
    out.push_str("</g>\n");
    out
}
