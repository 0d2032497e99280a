//! A chart as data ([`Chart`]: axes, [`Series`] of [`Pt`]s, drawn as lines or bars) and
//! its drawing as one inline `<svg class="chart" data-chart="KIND">` with a `<title>`, a
//! heading wrapped to fit the chart's width, titled axes with units, tick labels, one
//! `<g class="series">` per series and a legend. One element per line, so the structure
//! is easy to check. [`super::marks`] draws the series, [`super::legend`] the legend.

use std::fmt::Write as _;

use super::axis::{Ticks, Unit, linear_ticks, log_ticks};
use super::escape;
use super::legend::{LEGEND_ROW, legend_layout, legend_svg};
use super::lettering::wrap;
use super::marks::{bars_svg, series_svg};

pub(super) const WIDTH: f64 = 640.0;
const PLOT_HEIGHT: f64 = 260.0;
/// The plot's top under a one-line heading; each more line of heading adds a line.
const TOP: f64 = 44.0;
pub(super) const RIGHT: f64 = 24.0;
pub(super) const CHAR_WIDTH: f64 = 6.6;
/// The heading's font size and line height (style.css: .chart-title).
const TITLE_PX: f64 = 15.0;
const TITLE_LINE: f64 = 19.0;
/// Room kept free on each side of the heading.
const TITLE_MARGIN: f64 = 10.0;

/// How a chart marks its values: lines join points of a numeric axis (threads, queue
/// depth, time); bars stand for categories with no order between them that a line could
/// follow (block sizes, read shares, configurations).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marks {
    Lines,
    Bars,
}

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
    /// The data-chart attribute: sweep, metadata, sync-async, latency-percentiles,
    /// latency-iops, timeline, device-throughput, device-iops, device-queue, device-await,
    /// utilization.
    pub kind: &'static str,
    pub title: String,
    pub marks: Marks,
    pub x: XAxis,
    pub y: YAxis,
    pub series: Vec<Series>,
    /// Stretches of the x axis shaded behind the series (a timeline's pause).
    pub spans: Vec<Span>,
}

/// A shaded stretch of the x axis, from `from` to `to`, named by `label`.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub from: f64,
    pub to: f64,
    pub label: String,
}

/// Where the plot area lies and how values map onto it.
pub(super) struct Frame {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
    pub x: Ticks,
    pub categories: usize,
    pub y: Ticks,
}

impl Frame {
    pub fn px(&self, x: f64) -> f64 {
        if self.categories > 0 {
            self.left + (x + 0.5) * self.width / self.categories as f64
        } else {
            self.left + self.x.fraction(x) * self.width
        }
    }

    pub fn py(&self, y: f64) -> f64 {
        self.top + (1.0 - self.y.fraction(y)).clamp(0.0, 1.0) * self.height
    }

    /// The y of the bottom of the plot, where bars stand.
    pub fn floor(&self) -> f64 {
        self.top + self.height
    }

    /// The width of one category.
    pub fn band(&self) -> f64 {
        self.width / self.categories.max(1) as f64
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
            // Bars stand on zero; so does a linear axis.
            linear_ticks(max, self.y.unit)
        }
    }

    /// The heading in lines that fit the chart's width.
    pub fn title_lines(&self) -> Vec<String> {
        wrap(&self.title, WIDTH - 2.0 * TITLE_MARGIN, TITLE_PX)
    }

    fn frame(&self, top: f64) -> Frame {
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
            top,
            width: WIDTH - left - RIGHT,
            height: PLOT_HEIGHT,
            x,
            categories,
            y,
        }
    }

    /// The chart as an inline SVG element.
    pub fn to_svg(&self) -> String {
        let lines = self.title_lines();
        let top = TOP + (lines.len() - 1) as f64 * TITLE_LINE;
        let f = self.frame(top);
        let bars = self.marks == Marks::Bars;
        let legend = legend_layout(&self.series, f.left);
        let height = top + PLOT_HEIGHT + 58.0 + legend.rows as f64 * LEGEND_ROW + 8.0;
        let total: usize = self.series.iter().map(|s| s.points.len()).sum();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"{}\" \
             data-marks=\"{}\" data-series=\"{}\" data-points=\"{total}\" \
             viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" role=\"img\">",
            self.kind,
            if bars { "bars" } else { "lines" },
            self.series.len()
        );
        let _ = writeln!(out, "<title>{}</title>", escape(&self.title));
        let _ = writeln!(
            out,
            "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"#fff\"/>"
        );
        let _ = write!(
            out,
            "<text class=\"chart-title\" x=\"{}\" y=\"24\" text-anchor=\"middle\">",
            WIDTH / 2.0
        );
        for (i, line) in lines.iter().enumerate() {
            let dy = if i == 0 { 0.0 } else { TITLE_LINE };
            let _ = write!(
                out,
                "<tspan x=\"{}\" dy=\"{dy}\">{}</tspan>",
                WIDTH / 2.0,
                escape(line)
            );
        }
        out.push_str("</text>\n");
        out.push_str(&self.y_axis(&f));
        out.push_str(&self.x_axis(&f));
        out.push_str(&spans_svg(&self.spans, &f));
        let mut labels = Vec::new();
        for (i, s) in self.series.iter().enumerate() {
            if bars {
                out.push_str(&bars_svg(s, (i, self.series.len()), &f));
            } else {
                out.push_str(&series_svg(s, &f, &mut labels));
            }
        }
        out.push_str(&legend_svg(
            &self.series,
            &legend,
            top + PLOT_HEIGHT + 62.0,
            bars,
        ));
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
        let (cx, cy) = (14.0, f.top + f.height / 2.0);
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
        let base = f.floor();
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

/// Shaded stretches behind the series, each with its label at the top and as a tooltip.
fn spans_svg(spans: &[Span], f: &Frame) -> String {
    let mut out = String::new();
    for s in spans {
        let (x0, x1) = (f.px(s.from), f.px(s.to));
        let _ = writeln!(
            out,
            "<g class=\"span\"><title>{label}</title><rect x=\"{x0:.1}\" y=\"{:.1}\" \
             width=\"{:.1}\" height=\"{:.1}\"/><text x=\"{:.1}\" y=\"{:.1}\" \
             text-anchor=\"middle\">{label}</text></g>",
            f.top,
            (x1 - x0).max(1.0),
            f.height,
            (x0 + x1) / 2.0,
            f.top + 14.0,
            label = escape(&s.label)
        );
    }
    out
}
