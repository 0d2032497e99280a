//! A chart's legend: [`legend_layout`] places the entries in rows under the x axis,
//! [`legend_svg`] draws each with its line and marker, or its swatch for bars.

use std::fmt::Write as _;

use super::chart::{RIGHT, Series, WIDTH};
use super::escape;
use super::lettering::text_width;
use super::marks::color;

/// The height of a row of the legend.
pub(super) const LEGEND_ROW: f64 = 20.0;
/// The legend labels' font size (style.css: .legend-label).
const LABEL_PX: f64 = 12.5;

/// Legend entries placed in rows under the x axis title.
pub(super) struct LegendLayout {
    pub rows: usize,
    /// (x, row) per entry.
    places: Vec<(f64, usize)>,
}

pub(super) fn legend_layout(series: &[Series], left: f64) -> LegendLayout {
    let mut places = Vec::new();
    let (mut x, mut row) = (left, 0);
    for s in series {
        // The marker, the label (12.5 px, style.css: .legend-label) and a gap.
        let w = 32.0 + text_width(&s.name, LABEL_PX, false) + 16.0;
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

pub(super) fn legend_svg(series: &[Series], layout: &LegendLayout, top: f64, bars: bool) -> String {
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
        let name = escape(&s.name);
        let label = format!(
            "<text class=\"legend-label\" x=\"{:.1}\" y=\"{:.1}\">{name}</text>",
            x + 32.0,
            y + 4.0
        );
        if bars {
            let opacity = if s.dashed {
                " fill-opacity=\"0.3\""
            } else {
                ""
            };
            let dash = if s.dashed {
                " stroke-dasharray=\"4 2\""
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "<g class=\"legend-entry\" data-name=\"{name}\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"16\" height=\"10\" fill=\"{color}\"{opacity} stroke=\"{color}\"{dash}/>{label}</g>",
                x + 8.0,
                y - 5.0
            );
            continue;
        }
        let _ = writeln!(
            out,
            "<g class=\"legend-entry\" data-name=\"{name}\"><line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/><circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{fill}\" stroke=\"{color}\" stroke-width=\"1.5\"/>{label}</g>",
            x + 26.0,
            x + 13.0,
        );
    }
    out.push_str("</g>\n");
    out
}
