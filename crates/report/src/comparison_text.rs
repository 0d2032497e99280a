//! The comparison for people: [`comparison_table`] lays a [`Comparison`]'s peaks out as a
//! [`Table`] and [`points_table`] its change at every swept value (both shared by the
//! text, Markdown and HTML renderers); [`render_comparison_text`] prints them for the
//! terminal with the study's phrases.

use std::fmt::Write as _;

use crate::compare::{Comparison, MetricRow, Noise, Presence};
use crate::measure::{Units, signed_percent};
use crate::table::Table;

/// Shown for a side that lacks a metric.
const MISSING: &str = "—";

/// Says what [`points_table`] holds, as its heading.
pub const POINTS_HEADING: &str = "Change at every point of the sweep";

/// Explains [`points_table`] under its heading.
pub const POINTS_NOTE: &str = "Each metric at every swept value both runs measured (per \
thread count): two peaks can sit at different thread counts.";

/// The comparison as a table: metric, each side's peak and where, change and noise.
pub(crate) fn comparison_table(c: &Comparison, units: Units) -> Table {
    let a = format!(">{} peak", c.baseline.name);
    let b = format!(">{} peak", c.candidate.name);
    let mut t = Table::new(&["Metric", &a, "at", &b, "at", ">Change", "Noise"]);
    for row in &c.rows {
        let (a_value, a_at) = peak_cells(row, row.baseline.as_ref(), units);
        let (b_value, b_at) = peak_cells(row, row.candidate.as_ref(), units);
        let (change, noise) = match row.presence() {
            Presence::BaselineOnly => (format!("only in {}", c.baseline.name), String::new()),
            Presence::CandidateOnly => (format!("only in {}", c.candidate.name), String::new()),
            Presence::Both => change_cells(row.change_percent, row.noise),
        };
        t.push(vec![
            row.metric.clone(),
            a_value,
            a_at,
            b_value,
            b_at,
            change,
            noise,
        ]);
    }
    t
}

fn change_cells(change: Option<f64>, noise: Noise) -> (String, String) {
    (
        change
            .map(signed_percent)
            .unwrap_or_else(|| MISSING.to_string()),
        noise.describe().to_string(),
    )
}

/// The rows of metrics measured on both sides at more than one swept value.
pub(crate) fn swept_rows(c: &Comparison) -> impl Iterator<Item = &MetricRow> {
    c.rows
        .iter()
        .filter(|r| r.presence() == Presence::Both && r.points.len() > 1)
}

/// Every metric at every swept value: metric, where, each side's figure, change, noise.
pub(crate) fn points_table(c: &Comparison, units: Units) -> Table {
    let a = format!(">{}", c.baseline.name);
    let b = format!(">{}", c.candidate.name);
    let mut t = Table::new(&["Metric", "at", &a, &b, ">Change", "Noise"]);
    for row in swept_rows(c) {
        for p in &row.points {
            let cell = |s: Option<&iolab_core::stats::Spread>| {
                s.map(|s| row.measure.format_in(s.mean, units))
                    .unwrap_or_else(|| MISSING.to_string())
            };
            let (change, noise) = match (&p.baseline, &p.candidate) {
                (Some(_), Some(_)) => change_cells(p.change_percent, p.noise),
                _ => (MISSING.to_string(), String::new()),
            };
            t.push(vec![
                row.metric.clone(),
                row.point_phrase(p),
                cell(p.baseline.as_ref()),
                cell(p.candidate.as_ref()),
                change,
                noise,
            ]);
        }
    }
    t
}

fn peak_cells(
    row: &MetricRow,
    peak: Option<&crate::compare::Peak>,
    units: Units,
) -> (String, String) {
    match peak {
        None => (MISSING.to_string(), String::new()),
        Some(p) => (
            row.measure.format_in(p.value, units),
            row.at_phrase(p).unwrap_or_default(),
        ),
    }
}

/// "v7.4 against v7.3 (baseline)", the table of peaks, one phrase per metric, then the
/// change at every point of the sweep.
pub fn render_comparison_text(c: &Comparison, units: Units) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} against {} (baseline): peak of each metric over its sweep",
        c.candidate.name, c.baseline.name
    );
    if c.rows.is_empty() {
        out.push_str("no metric to compare\n");
        return out;
    }
    out.push('\n');
    out.push_str(&comparison_table(c, units).to_text());
    out.push('\n');
    for note in c.noise_notes() {
        let _ = writeln!(out, "{note}");
    }
    for row in &c.rows {
        let _ = writeln!(out, "{}", c.phrase(row));
    }
    if swept_rows(c).next().is_some() {
        let _ = writeln!(out, "\n{}\n{POINTS_NOTE}\n", POINTS_HEADING.to_lowercase());
        out.push_str(&points_table(c, units).to_text());
    }
    out
}
