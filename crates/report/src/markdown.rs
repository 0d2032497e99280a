//! Markdown a user pastes into a paper or a blog post: the runs, the comparison, per group
//! the figures per swept value and the latency percentiles, the parameters, the test-bed
//! table and the warnings. [`render_markdown`] for a report, [`render_comparison_markdown`]
//! for `iolab compare`.

use std::fmt::Write as _;

use iolab_core::result::RunRecord;

use crate::aggregate::{Aggregate, aggregate_runs};
use crate::compare::Comparison;
use crate::comparison_text::comparison_table;
use crate::environment::environment_table;
use crate::measure::{axis_name, params_text};
use crate::report_tables::{
    FIGURE_NOTE, environment_rows, extra_table, group_table, latency_table, runs_table,
};
use crate::warnings;

/// The report of `runs` (the first is the subject), with `comparison` when one is given.
pub fn render_markdown(runs: &[RunRecord], comparison: Option<&Comparison>) -> String {
    let agg = aggregate_runs(runs);
    let mut out = String::new();
    let title = agg
        .sides
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(" vs ");
    let _ = writeln!(out, "# iolab report: {title}\n");
    out.push_str(&runs_table(runs).to_markdown());
    for run in runs {
        if let Some(score) = crate::text::io500_score_line(run) {
            let _ = writeln!(out, "\nIO500 score of {}:\n\n```\n{score}\n```", run.id);
        }
    }
    if let Some(c) = comparison {
        out.push('\n');
        out.push_str(&comparison_section(c, "##"));
    }
    out.push_str(&crate::ladder::ladders_markdown(runs, &agg));
    out.push_str(&results_section(runs, &agg));
    out.push_str(&parameters_section(runs, &agg));
    out.push_str("\n## Environment\n\n");
    let names: Vec<String> = agg.sides.iter().map(|s| s.name.clone()).collect();
    out.push_str(&environment_rows(&environment_table(runs, &names)).to_markdown());
    let list = warnings::collect(runs, &agg);
    if !list.is_empty() {
        out.push_str("\n## Warnings\n\n");
        for w in list {
            let _ = writeln!(out, "- **{}**: {}", w.side, w.text.replace('\n', " "));
        }
    }
    out
}

fn comparison_section(c: &Comparison, level: &str) -> String {
    let mut out = format!(
        "{level} Comparison: {} against {} (baseline)\n\n",
        c.candidate.name, c.baseline.name
    );
    if c.rows.is_empty() {
        out.push_str("No metric to compare.\n");
        return out;
    }
    out.push_str(&comparison_table(c).to_markdown());
    out.push('\n');
    for note in c.noise_notes() {
        let _ = writeln!(out, "{note}\n");
    }
    for row in &c.rows {
        let _ = writeln!(out, "- {}", c.phrase(row));
    }
    out
}

/// The comparison alone, as `iolab compare --markdown` prints it.
pub fn render_comparison_markdown(c: &Comparison) -> String {
    comparison_section(c, "#")
}

fn results_section(runs: &[RunRecord], agg: &Aggregate) -> String {
    let mut out = String::from("\n## Results\n\n");
    let _ = writeln!(out, "{FIGURE_NOTE}");
    for g in &agg.groups {
        let _ = writeln!(out, "\n### {}\n", g.label());
        if let Some(key) = &g.swept {
            let _ = writeln!(out, "Swept: {}.", axis_name(key).to_lowercase());
        }
        if !g.fixed.is_empty() {
            let _ = writeln!(out, "Parameters: {}.", params_text(&g.fixed));
        }
        out.push('\n');
        if g.ops.is_empty() {
            // A summary of figures kept by name (a targets run's statistics): a table of
            // them, not an empty table of operations.
            out.push_str(&extra_table(runs, agg, g).to_markdown());
            continue;
        }
        out.push_str(&group_table(agg, g).to_markdown());
        let latency = latency_table(agg, g);
        if !latency.rows.is_empty() {
            let _ = writeln!(out, "\nLatency of {}:\n", g.label());
            out.push_str(&latency.to_markdown());
        }
    }
    out
}

fn parameters_section(runs: &[RunRecord], agg: &Aggregate) -> String {
    let mut out = String::from("\n## Parameters\n");
    for (run, side) in runs.iter().zip(&agg.sides) {
        if run.spec.is_null() {
            continue;
        }
        let spec = serde_json::to_string_pretty(&run.spec).unwrap_or_default();
        let _ = writeln!(
            out,
            "\n{} ({}):\n\n```json\n{spec}\n```",
            side.name, run.kind
        );
    }
    out
}
