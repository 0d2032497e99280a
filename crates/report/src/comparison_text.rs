//! The comparison for people: [`comparison_table`] lays a [`Comparison`] out as a
//! [`Table`] (shared by the text, Markdown and HTML renderers) and
//! [`render_comparison_text`] prints it for the terminal with the study's phrases.

use std::fmt::Write as _;

use crate::compare::{Comparison, MetricRow, Presence};
use crate::measure::signed_percent;
use crate::table::Table;

/// Shown for a side that lacks a metric.
const MISSING: &str = "—";

/// The comparison as a table: metric, each side's peak and where, change and noise.
pub(crate) fn comparison_table(c: &Comparison) -> Table {
    let a = format!(">{} peak", c.baseline.name);
    let b = format!(">{} peak", c.candidate.name);
    let mut t = Table::new(&["Metric", &a, "at", &b, "at", ">Change", "Noise"]);
    for row in &c.rows {
        let (a_value, a_at) = peak_cells(row, row.baseline.as_ref());
        let (b_value, b_at) = peak_cells(row, row.candidate.as_ref());
        let (change, noise) = match row.presence() {
            Presence::BaselineOnly => (format!("only in {}", c.baseline.name), String::new()),
            Presence::CandidateOnly => (format!("only in {}", c.candidate.name), String::new()),
            Presence::Both => (
                row.change_percent
                    .map(signed_percent)
                    .unwrap_or_else(|| MISSING.to_string()),
                row.noise.describe().to_string(),
            ),
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

fn peak_cells(row: &MetricRow, peak: Option<&crate::compare::Peak>) -> (String, String) {
    match peak {
        None => (MISSING.to_string(), String::new()),
        Some(p) => (
            row.measure.format(p.value),
            row.at_phrase(p).unwrap_or_default(),
        ),
    }
}

/// "v7.4 against v7.3 (baseline)", the table, then one phrase per metric.
pub fn render_comparison_text(c: &Comparison) -> String {
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
    out.push_str(&comparison_table(c).to_text());
    out.push('\n');
    for note in c.noise_notes() {
        let _ = writeln!(out, "{note}");
    }
    for row in &c.rows {
        let _ = writeln!(out, "{}", c.phrase(row));
    }
    out
}
