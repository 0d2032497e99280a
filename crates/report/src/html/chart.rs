//! A chart as data ([`Chart`]: axes, [`Series`] of [`Pt`]s) and its drawing as one inline
//! `<svg class="chart" data-chart="KIND">` with a `<title>`, titled axes with units, tick
//! labels, one `<g class="series">` per series and a legend. One element per line, so the
//! structure is easy to check.

use std::fmt::Write as _;

use super::axis::{Ticks, Unit, linear_ticks, log_ticks};
use super::escape;

/// Colour-blind-safe palette (Okabe-Ito, then Tableau), one colour per series in order.
const PALETTE: [&str; 10] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#7f3c8d", "#8c564b",
    "#4d4d4d", "#bcbd22",
];

const WIDTH: f64 = 640.0;
const PLOT_HEIGHT: f64 = 260.0;
const TOP: f64 = 44.0;
const RIGHT: f64 = 24.0;
const CHAR_WIDTH: f64 = 6.6;
const LEGEND_ROW: f64 = 20.0;

#[derive(Clone, Debug, PartialEq)]
pub enum XAxis {
    /// Evenly spaced categories (swept values, percentiles); a point's x is the index.
    Categories { title: String, labels: Vec<String> },
    /// A numeric axis from zero.
    Numeric { title: String, unit: Unit },
}

#[derive(Clone, Debug, PartialEq)]
pub struct YAxis {
    /// The title; the unit of the ticks is appended in parentheses when it has one.
    pub title: String,
    pub unit: Unit,
    pub log: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Pt {
    pub x: f64,
    pub y: f64,
    /// The range over repetitions (min, max), drawn as a bar when it has a width.
    pub range: Option<(f64, f64)>,
    /// Text drawn beside the point (latency-vs-IOPS charts name the queue depth).
    pub label: Option<String>,
    /// The tooltip.
    pub tip: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Pt>,
    /// Compared runs are dashed with hollow markers.
    pub dashed: bool,
    /// Index into the palette.
    pub color: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// The data-chart attribute: sweep, metadata, latency-percentiles, latency-iops,
    /// timeline, device-throughput, device-iops, device-queue, device-await, utilization.
    pub kind: &'static str,
    pub title: String,
    pub x: XAxis,
    pub y: YAxis,
    pub series: Vec<Series>,
}

/// Where the plot area lies and how values map onto it.
struct Frame {
    left: f64,
    width: f64,
    height: f64,
    x: Ticks,
    categories: usize,
    y: Ticks,
}

impl Frame {
    fn px(&self, x: f64) -> f64 {
        if self.categories > 0 {
            self.left + (x + 0.5) * self.width / self.categories as f64
        } else {
            self.left + self.x.fraction(x) * self.width
        }
    }

    fn py(&self, y: f64) -> f64 {
        TOP + (1.0 - self.y.fraction(y)) * self.height
    }
}

impl Chart {
    fn points(&self) -> impl Iterator<Item = &Pt> {
        self.series.iter().flat_map(|s| &s.points)
    }

    fn y_ticks(&self) -> Ticks {
        if self.y.log {
            let pos: Vec<f64> = self.points().map(|p| p.y).filter(|y| *y > 0.0).collect();
            let min = pos.iter().copied().fold(f64::INFINITY, f64::min);
            let max = pos.iter().copied().fold(0.0, f64::max);
            log_ticks(min, max, self.y.unit)
        } else {
            let max = self
                .points()
                .map(|p| p.range.map_or(p.y, |(_, hi)| hi.max(p.y)))
                .fold(0.0, f64::max);
            linear_ticks(max, self.y.unit)
        }
    }

    fn frame(&self) -> Frame {
        let y = self.y_ticks();
        let widest = y
            .labels
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(1);
        let left = 34.0 + widest as f64 * CHAR_WIDTH;
        let (x, categories) = match &self.x {
            XAxis::Categories { labels, .. } => (linear_ticks(1.0, Unit::Count), labels.len()),
            XAxis::Numeric { unit, .. } => {
                let max = self.points().map(|p| p.x).fold(0.0, f64::max);
                (linear_ticks(max, *unit), 0)
            }
        };
        Frame {
            left,
            width: WIDTH - left - RIGHT,
            height: PLOT_HEIGHT,
            x,
            categories,
            y,
        }
    }

    /// The chart as an inline SVG element.
    pub fn to_svg(&self) -> String {
        let f = self.frame();
        let legend = legend_layout(&self.series, f.left);
        let height = TOP + PLOT_HEIGHT + 58.0 + legend.rows as f64 * LEGEND_ROW + 8.0;
        let total: usize = self.series.iter().map(|s| s.points.len()).sum();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"{}\" \
             data-series=\"{}\" data-points=\"{total}\" viewBox=\"0 0 {WIDTH} {height}\" \
             width=\"{WIDTH}\" height=\"{height}\" role=\"img\">",
            self.kind,
            self.series.len()
        );
        let _ = writeln!(out, "<title>{}</title>", escape(&self.title));
        let _ = writeln!(
            out,
            "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"#fff\"/>"
        );
        let _ = writeln!(
            out,
            "<text class=\"chart-title\" x=\"{}\" y=\"24\" text-anchor=\"middle\">{}</text>",
            WIDTH / 2.0,
            escape(&self.title)
        );
        out.push_str(&self.y_axis(&f));
        out.push_str(&self.x_axis(&f));
        let mut labels = Vec::new();
        for s in &self.series {
            out.push_str(&series_svg(s, &f, &mut labels));
        }
        out.push_str(&legend_svg(&self.series, &legend, TOP + PLOT_HEIGHT + 62.0));
        out.push_str("</svg>\n");
        out
    }

    fn y_axis(&self, f: &Frame) -> String {
        let mut out = String::from("<g class=\"axis y-axis\">\n");
        for (v, label) in f.y.values.iter().zip(&f.y.labels) {
            let y = f.py(*v);
            let _ = writeln!(
                out,
                "<line class=\"grid\" x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>",
                f.left,
                f.left + f.width
            );
            let _ = writeln!(
                out,
                "<text class=\"tick y-tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                f.left - 6.0,
                y + 4.0,
                escape(label)
            );
        }
        let title = match &f.y.unit_label {
            Some(u) => format!("{} ({u})", self.y.title),
            None => self.y.title.clone(),
        };
        let (cx, cy) = (14.0, TOP + f.height / 2.0);
        let _ = writeln!(
            out,
            "<text class=\"axis-title y-title\" x=\"{cx}\" y=\"{cy}\" text-anchor=\"middle\" \
             transform=\"rotate(-90 {cx} {cy})\">{}</text>",
            escape(&title)
        );
        out.push_str("</g>\n");
        out
    }

    fn x_axis(&self, f: &Frame) -> String {
        let base = TOP + f.height;
        let mut out = String::from("<g class=\"axis x-axis\">\n");
        let _ = writeln!(
            out,
            "<line class=\"baseline\" x1=\"{:.1}\" y1=\"{base}\" x2=\"{:.1}\" y2=\"{base}\"/>",
            f.left,
            f.left + f.width
        );
        let (title, ticks): (String, Vec<(f64, String)>) = match &self.x {
            XAxis::Categories { title, labels } => (
                title.clone(),
                labels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| (i as f64, l.clone()))
                    .collect(),
            ),
            XAxis::Numeric { title, .. } => {
                let t = match &f.x.unit_label {
                    Some(u) => format!("{title} ({u})"),
                    None => title.clone(),
                };
                (
                    t,
                    f.x.values.iter().copied().zip(f.x.labels.clone()).collect(),
                )
            }
        };
        for (v, label) in ticks {
            let x = f.px(v);
            let _ = writeln!(
                out,
                "<line class=\"tick-mark\" x1=\"{x:.1}\" y1=\"{base}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>",
                base + 5.0
            );
            let _ = writeln!(
                out,
                "<text class=\"tick x-tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                base + 19.0,
                escape(&label)
            );
        }
        let _ = writeln!(
            out,
            "<text class=\"axis-title x-title\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            f.left + f.width / 2.0,
            base + 42.0,
            escape(&title)
        );
        out.push_str("</g>\n");
        out
    }
}

fn color(s: &Series) -> &'static str {
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
fn series_svg(s: &Series, f: &Frame, labels: &mut Vec<(f64, f64, f64)>) -> String {
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

/// Legend entries placed in rows under the x axis title.
struct LegendLayout {
    rows: usize,
    /// (x, row) per entry.
    places: Vec<(f64, usize)>,
}

fn legend_layout(series: &[Series], left: f64) -> LegendLayout {
    let mut places = Vec::new();
    let (mut x, mut row) = (left, 0);
    for s in series {
        // Legend labels are set a little larger than ticks.
        let w = 34.0 + s.name.chars().count() as f64 * CHAR_WIDTH * 1.1 + 16.0;
        if x + w > WIDTH - RIGHT && x > left {
            x = left;
            row += 1;
        }
        places.push((x, row));
        x += w;
    }
    LegendLayout {
        rows: if series.is_empty() { 0 } else { row + 1 },
        places,
    }
}

fn legend_svg(series: &[Series], layout: &LegendLayout, top: f64) -> String {
    let mut out = String::from("<g class=\"legend\">\n");
    for (s, (x, row)) in series.iter().zip(&layout.places) {
        let color = color(s);
        let y = top + *row as f64 * LEGEND_ROW;
        let dash = if s.dashed {
            " stroke-dasharray=\"7 4\""
        } else {
            ""
        };
        let fill = if s.dashed { "#fff" } else { color };
        let _ = writeln!(
            out,
            "<g class=\"legend-entry\" data-name=\"{name}\"><line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/><circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{fill}\" stroke=\"{color}\" stroke-width=\"1.5\"/><text class=\"legend-label\" x=\"{:.1}\" y=\"{:.1}\">{name}</text></g>",
            x + 26.0,
            x + 13.0,
            x + 32.0,
            y + 4.0,
            name = escape(&s.name)
        );
    }
    out.push_str("</g>\n");
    out
}
