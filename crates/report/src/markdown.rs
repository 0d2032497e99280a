//! Markdown a user pastes into a paper or a blog post: the runs, each run's headline per
//! phase, its figures against the rated ones, the comparison (peaks and every point), per
//! group the figures per swept value and the latency percentiles (a matrix as one table
//! per run and operation), the parameters, the test-bed table and the warnings.
//! [`render_markdown`] for a report, [`render_comparison_markdown`] for `iolab compare`.

use std::fmt::Write as _;

use iolab_core::result::RunRecord;

use crate::ReportOptions;
use crate::aggregate::Aggregate;
use crate::compare::Comparison;
use crate::comparison_text::{
    POINTS_HEADING, POINTS_NOTE, comparison_table, points_table, swept_rows,
};
use crate::environment::environment_table;
use crate::matrix::Matrix;
use crate::matrix_tables::{
    MATRIX_NOTE, ResultBlock, matrix_axes, matrix_latency_table, matrix_sides, matrix_table,
    matrix_title,
};
use crate::measure::{Units, axis_name, params_text};
use crate::model::ReportModel;
use crate::rated::{RATED_NOTE, rated_table};
use crate::report_tables::{
    FIGURE_NOTE, environment_rows, extra_table, group_table, latency_table, runs_table,
};

/// The report of `runs` (the first is the subject), with `comparison` when one is given.
pub fn render_markdown(runs: &[RunRecord], comparison: Option<&Comparison>) -> String {
    render_markdown_with(
        runs,
        &ReportOptions {
            comparison: comparison.cloned(),
            ..ReportOptions::default()
        },
    )
}

/// The report of `runs` with `opts` (comparison, units).
pub fn render_markdown_with(runs: &[RunRecord], opts: &ReportOptions) -> String {
    let model = ReportModel::build(runs);
    let agg = &model.agg;
    let units = opts.units;
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
    out.push_str(&summary_section(runs, &model, units));
    if let Some(c) = &opts.comparison {
        out.push('\n');
        out.push_str(&comparison_section(c, "##", units));
    }
    out.push_str(&crate::ladder::ladders_markdown(runs, agg));
    out.push_str(&results_section(runs, &model, units));
    out.push_str(&parameters_section(runs, agg));
    out.push_str("\n## Environment\n\n");
    let names: Vec<String> = agg.sides.iter().map(|s| s.name.clone()).collect();
    out.push_str(&environment_rows(&environment_table(runs, &names)).to_markdown());
    if !model.warnings.is_empty() {
        out.push_str("\n## Warnings\n\n");
        for w in &model.warnings {
            let _ = writeln!(out, "- **{}**: {}", w.side, w.text.replace('\n', " "));
        }
    }
    out
}

/// Each run's headline figure per phase, then its figures against the rated ones.
fn summary_section(runs: &[RunRecord], model: &ReportModel, units: Units) -> String {
    let mut out = String::new();
    let shown: Vec<(usize, &RunRecord)> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.phases.is_empty())
        .collect();
    if shown.is_empty() {
        return out;
    }
    out.push_str("\n## Summary\n");
    for (i, run) in shown {
        if runs.len() > 1 {
            let _ = writeln!(out, "\n### {}", model.agg.sides[i].name);
        }
        out.push('\n');
        out.push_str(&crate::text::summary_table(&run.phases, units).to_markdown());
        if !model.rated[i].is_empty() {
            let _ = writeln!(out, "\nAgainst the rated maximum:\n");
            out.push_str(&rated_table(&model.rated[i]).to_markdown());
            let _ = writeln!(out, "\n{RATED_NOTE}");
        }
    }
    out
}

fn comparison_section(c: &Comparison, level: &str, units: Units) -> String {
    let mut out = format!(
        "{level} Comparison: {} against {} (baseline)\n\n",
        c.candidate.name, c.baseline.name
    );
    if c.rows.is_empty() {
        out.push_str("No metric to compare.\n");
        return out;
    }
    out.push_str(&comparison_table(c, units).to_markdown());
    out.push('\n');
    for note in c.noise_notes() {
        let _ = writeln!(out, "{note}\n");
    }
    for row in &c.rows {
        let _ = writeln!(out, "- {}", c.phrase(row));
    }
    if swept_rows(c).next().is_some() {
        let _ = writeln!(out, "\n{level}# {POINTS_HEADING}\n\n{POINTS_NOTE}\n");
        out.push_str(&points_table(c, units).to_markdown());
    }
    out
}

/// The comparison alone, as `iolab compare --format markdown` prints it.
pub fn render_comparison_markdown(c: &Comparison, units: Units) -> String {
    comparison_section(c, "#", units)
}

fn results_section(runs: &[RunRecord], model: &ReportModel, units: Units) -> String {
    let agg = &model.agg;
    let mut out = String::from("\n## Results\n\n");
    let _ = writeln!(out, "{FIGURE_NOTE}");
    for block in &model.blocks {
        let g = match block {
            ResultBlock::Matrix(m) => {
                out.push_str(&matrix_section(agg, &model.matrices[*m], units));
                continue;
            }
            ResultBlock::Group(i) => &agg.groups[*i],
        };
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
        out.push_str(&group_table(agg, g, units).to_markdown());
        let latency = latency_table(agg, g);
        if !latency.rows.is_empty() {
            let _ = writeln!(out, "\nLatency of {}:\n", g.label());
            out.push_str(&latency.to_markdown());
        }
    }
    out
}

/// A matrix: how to read it, one table per run and figure, then its latencies.
fn matrix_section(agg: &Aggregate, m: &Matrix, units: Units) -> String {
    let mut out = format!("\n### {}\n\n{} {MATRIX_NOTE}\n", m.name, matrix_axes(m));
    if !m.fixed.is_empty() {
        let _ = writeln!(out, "Parameters: {}.", params_text(&m.fixed));
    }
    for side in matrix_sides(agg, m) {
        for figure in &m.figures {
            let _ = writeln!(out, "\n{}:\n", matrix_title(agg, m, side, *figure));
            out.push_str(&matrix_table(agg, m, side, *figure, units).to_markdown());
        }
    }
    let latency = matrix_latency_table(agg, m);
    if !latency.rows.is_empty() {
        let _ = writeln!(out, "\nLatency of {}:\n", m.name);
        out.push_str(&latency.to_markdown());
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
