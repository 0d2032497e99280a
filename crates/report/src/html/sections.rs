//! The page: a header, a table of contents and one `<section>` per part (runs, summary
//! with the figures against the rated ones, a KV cache run's trials and criteria,
//! warnings, comparison, throughput and IOPS, metadata, latency, timelines, result
//! tables, parameters, environment), each present only when it has something to show. The overview stays short: per-group detail
//! (latency percentiles, per-second timelines with their device charts) is folded in
//! `<details>`.

use std::fmt::Write as _;

use iolab_core::result::RunRecord;

use super::chart::Chart;
use super::charts::{latency_iops_charts, metadata_charts, percentile_charts, sweep_charts};
use super::escape;
use super::matrix_charts::matrix_charts;
use super::timeline_charts::timeline_blocks;
use super::train_charts::train_charts;
use crate::ReportOptions;
use crate::aggregate::Aggregate;
use crate::compare::{Comparison, Noise, Presence};
use crate::comparison_text::{
    POINTS_HEADING, POINTS_NOTE, comparison_table, points_table, swept_rows,
};
use crate::environment::environment_table;
use crate::ladder::ladder_outcome;
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

const STYLE: &str = include_str!("style.css");

const SWEEP_NOTE: &str = "Points and bars are means over the repetitions; whiskers span \
the lowest to the highest repetition. Compared runs are dashed with hollow markers \
(lines) or pale (bars); in a sync-against-async chart each run has its colour and the \
sync writes are dashed.";

const TRAIN_NOTE: &str = "iolab train: AU per epoch as stored (DLIO's definition, \
docs/figures.md), in the order the epochs ran, and for an accelerator search the mean \
AU of each count's epochs (whiskers: the lowest and highest epoch), each point pass or \
fail against MLPerf's threshold (dashed).";

const TIMELINE_NOTE: &str = "Per-second rates of the phase where the first run peaked \
(first repetition), every run overlaid; beside it, the block devices and CPUs of the \
first run's host sampled meanwhile.";

const LATENCY_NOTE: &str = "Percentiles of all repetitions' latencies together, at the \
point where the first run peaked. Latency against IOPS labels each p99 point with its \
queue depth (QD) or thread count (T).";

/// (id, heading, body) of each section shown.
type Section = (&'static str, &'static str, String);

/// The whole document.
pub fn page(title: &str, runs: &[RunRecord], model: &ReportModel, opts: &ReportOptions) -> String {
    let agg = &model.agg;
    let units = opts.units;
    let mut sections: Vec<Section> = vec![("runs", "Runs", runs_table(runs).to_html("runs"))];
    // Each run's headline figures, phase by phase, before the detail: the subject's
    // open, the compared runs' folded (a matrix of 24 phases per run is long).
    let mut headline = String::new();
    for (i, run) in runs
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.phases.is_empty())
    {
        let mut body = crate::text::summary_table(&run.phases, units).to_html("summary");
        if let Some(rows) = model.rated.get(i).filter(|r| !r.is_empty()) {
            body.push_str("<h4>Against the rated maximum</h4>\n");
            body.push_str(&rated_table(rows).to_html("rated"));
            let _ = writeln!(body, "<p class=\"note\">{}</p>", escape(RATED_NOTE));
        }
        let name = escape(&run_name(run));
        if i == 0 {
            let _ = write!(headline, "<h3>{name}</h3>\n{body}");
        } else {
            let _ = write!(
                headline,
                "<details class=\"detail\"><summary>{name}: every phase</summary>\n{body}</details>\n"
            );
        }
    }
    if !headline.is_empty() {
        sections.push(("summary", "Summary", headline));
    }
    let names: Vec<String> = agg.sides.iter().map(|s| s.name.clone()).collect();
    let kvcache = super::kvcache::kvcache_html(runs, &names);
    if !kvcache.is_empty() {
        sections.push(("kvcache", "KV cache", kvcache));
    }
    if !model.warnings.is_empty() {
        let items: String = model
            .warnings
            .iter()
            .map(|w| format!("<li><b>{}</b>: {}</li>\n", escape(&w.side), escape(&w.text)))
            .collect();
        let body = format!("<ul class=\"warnings\">\n{items}</ul>\n");
        sections.push(("warnings", "Warnings", body));
    }
    if let Some(c) = &opts.comparison {
        sections.push(("comparison", "Comparison", comparison_html(c, units)));
    }
    let ladders = ladders_html(runs, agg);
    if !ladders.is_empty() {
        sections.push(("ladder", "Latency ladder", ladders));
    }
    chart_sections(&mut sections, runs, model, units);
    sections.push(("results", "Results", results_html(runs, model, units)));
    sections.push(("parameters", "Parameters", parameters_html(runs, agg)));
    sections.push(("environment", "Environment", environment_html(runs, agg)));
    document(title, &sections)
}

/// Each ladder run's objective, highest load within it and knee, then its steps.
fn ladders_html(runs: &[RunRecord], agg: &Aggregate) -> String {
    let mut out = String::new();
    for (run, side) in runs.iter().zip(&agg.sides) {
        let Some(l) = ladder_outcome(run) else {
            continue;
        };
        if runs.len() > 1 {
            let _ = writeln!(out, "<h3>{}</h3>", escape(&side.name));
        }
        for s in l.sentences() {
            let _ = writeln!(out, "<p>{}</p>", escape(&s));
        }
        out.push_str(&l.table().to_html("ladder"));
    }
    out
}

/// The sections of charts: sweeps and matrices, metadata, latency, timelines.
fn chart_sections(
    sections: &mut Vec<Section>,
    runs: &[RunRecord],
    model: &ReportModel,
    units: Units,
) {
    let agg = &model.agg;
    let mut sweeps = matrix_charts(model, units);
    sweeps.extend(sweep_charts(model, units));
    push_charts(
        sections,
        ("sweeps", "Throughput and IOPS"),
        SWEEP_NOTE,
        &sweeps,
    );
    let metadata = metadata_charts(agg, units);
    push_charts(sections, ("metadata", "Metadata"), SWEEP_NOTE, &metadata);
    let names: Vec<String> = agg.sides.iter().map(|s| s.name.clone()).collect();
    let train = train_charts(runs, &names);
    push_charts(sections, ("training", "Training"), TRAIN_NOTE, &train);
    // The curves of a matrix's groups (two or three points each) join the detail.
    let curves = latency_iops_charts(agg, &|i| !model.in_matrix(i));
    let mut percentiles = latency_iops_charts(agg, &|i| model.in_matrix(i));
    percentiles.extend(percentile_charts(agg));
    if !curves.is_empty() || !percentiles.is_empty() {
        let mut body = format!("<p class=\"note\">{}</p>\n", escape(LATENCY_NOTE));
        if !curves.is_empty() {
            let _ = write!(body, "<div class=\"charts\">\n{}</div>\n", svgs(&curves));
        }
        if !percentiles.is_empty() {
            let _ = write!(
                body,
                "<details class=\"detail\"><summary>Latency of every group ({} charts)</summary>\n<div class=\"charts\">\n{}</div>\n</details>\n",
                percentiles.len(),
                svgs(&percentiles)
            );
        }
        sections.push(("latency", "Latency", body));
    }
    let blocks = timeline_blocks(runs, agg, units);
    if !blocks.is_empty() {
        sections.push(("timelines", "Timelines", timelines_html(&blocks)));
    }
}

/// The test bed, one column per run; rows that differ between runs are highlighted.
fn environment_html(runs: &[RunRecord], agg: &Aggregate) -> String {
    let names: Vec<String> = agg.sides.iter().map(|s| s.name.clone()).collect();
    let env = environment_table(runs, &names);
    let classes: Vec<&str> = env
        .rows
        .iter()
        .map(|r| {
            if r.values.iter().any(|v| *v != r.values[0]) {
                "differs"
            } else {
                ""
            }
        })
        .collect();
    environment_rows(&env).to_html_rows("environment", &classes)
}

fn document(title: &str, sections: &[Section]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{t}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <header><h1>{t}</h1></header>",
        t = escape(title)
    );
    out.push_str("<nav>");
    for (id, heading, _) in sections {
        let _ = write!(out, "<a href=\"#{id}\">{heading}</a> ");
    }
    out.push_str("</nav>\n<main>\n");
    for (id, heading, body) in sections {
        let _ = write!(
            out,
            "<section id=\"{id}\">\n<h2>{heading}</h2>\n{body}</section>\n"
        );
    }
    let _ = writeln!(
        out,
        "</main>\n<footer>Made by iolab {}. Self-contained: no script, no external resource.</footer>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION")
    );
    out
}

fn svgs(charts: &[Chart]) -> String {
    charts
        .iter()
        .map(|c| format!("<figure>\n{}</figure>\n", c.to_svg()))
        .collect()
}

/// Each group's timeline, with the device and CPU charts of its phase beside it, folded
/// in a `<details>` of its own: a study of many phases lists them, one line each.
fn timelines_html(blocks: &[Vec<Chart>]) -> String {
    let mut out = format!("<p class=\"note\">{}</p>\n", escape(TIMELINE_NOTE));
    for block in blocks {
        let Some(first) = block.first() else { continue };
        let devices = if block.len() > 1 {
            format!(" and {} device and CPU charts", block.len() - 1)
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "<details class=\"detail\"><summary>{}{}</summary>\n<div class=\"charts\">\n{}</div>\n</details>\n",
            escape(&first.title),
            escape(&devices),
            svgs(block)
        );
    }
    out
}

fn push_charts(
    sections: &mut Vec<Section>,
    (id, heading): (&'static str, &'static str),
    note: &str,
    charts: &[Chart],
) {
    if !charts.is_empty() {
        let body = format!(
            "<p class=\"note\">{}</p>\n<div class=\"charts\">\n{}</div>\n",
            escape(note),
            svgs(charts)
        );
        sections.push((id, heading, body));
    }
}

/// The comparison table with changes coloured (higher is better for every measure) and
/// the study's phrases under it.
fn comparison_html(c: &Comparison, units: Units) -> String {
    let mut out = format!(
        "<p>{} against {} (baseline): the peak of each metric over its sweep.</p>\n",
        escape(&c.candidate.name),
        escape(&c.baseline.name)
    );
    if c.rows.is_empty() {
        out.push_str("<p>No metric to compare.</p>\n");
        return out;
    }
    let classes: Vec<&str> = c
        .rows
        .iter()
        .map(|row| change_class(row.presence(), row.noise, row.change_percent))
        .collect();
    let html = comparison_table(c, units).to_html_rows("comparison", &classes);
    out.push_str(&html);
    for note in c.noise_notes() {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    out.push_str("<ul class=\"phrases\">\n");
    for row in &c.rows {
        let _ = writeln!(out, "<li>{}</li>", escape(&c.phrase(row)));
    }
    out.push_str("</ul>\n");
    if swept_rows(c).next().is_some() {
        let classes: Vec<&str> = swept_rows(c)
            .flat_map(|row| &row.points)
            .map(|p| {
                let both = p.baseline.is_some() && p.candidate.is_some();
                let presence = if both {
                    Presence::Both
                } else {
                    Presence::BaselineOnly
                };
                change_class(presence, p.noise, p.change_percent)
            })
            .collect();
        let _ = writeln!(
            out,
            "<h3>{POINTS_HEADING}</h3>\n<p class=\"note\">{}</p>",
            escape(POINTS_NOTE)
        );
        out.push_str(&points_table(c, units).to_html_rows("comparison points", &classes));
    }
    out
}

/// The class a row of changes is coloured by: up, down, same, noise or one-side.
fn change_class(presence: Presence, noise: Noise, change: Option<f64>) -> &'static str {
    match (presence, noise, change) {
        (Presence::Both, Noise::Within | Noise::TooShort, _) => "noise",
        (Presence::Both, _, Some(ch)) if ch > 0.0 => "up",
        (Presence::Both, _, Some(ch)) if ch < 0.0 => "down",
        (Presence::Both, _, _) => "same",
        _ => "one-side",
    }
}

fn results_html(runs: &[RunRecord], model: &ReportModel, units: Units) -> String {
    let agg = &model.agg;
    let mut out = format!("<p class=\"note\">{}</p>\n", escape(FIGURE_NOTE));
    for block in &model.blocks {
        let g = match block {
            ResultBlock::Matrix(m) => {
                out.push_str(&matrix_html(agg, &model.matrices[*m], units));
                continue;
            }
            ResultBlock::Group(i) => &agg.groups[*i],
        };
        let _ = writeln!(
            out,
            "<div class=\"result\">\n<h3>{}</h3>",
            escape(&g.label())
        );
        if g.ops.is_empty() {
            // Figures kept by name (a targets run's statistics), not an empty table.
            out.push_str(&extra_table(runs, agg, g).to_html("figures"));
            out.push_str("</div>\n");
            continue;
        }
        out.push_str(&group_table(agg, g, units).to_html("figures"));
        let _ = writeln!(
            out,
            "<details><summary>Latency of {}</summary>\n{}</details>\n</div>",
            escape(&g.label()),
            latency_table(agg, g).to_html("latency")
        );
    }
    out
}

/// A matrix: one table per run and figure, its latencies folded.
fn matrix_html(agg: &Aggregate, m: &Matrix, units: Units) -> String {
    let mut out = format!(
        "<div class=\"matrix\" data-matrix=\"{}\">\n<h3>{}</h3>\n<p class=\"note\">{} {}</p>\n",
        escape(&m.name),
        escape(&m.name),
        escape(&matrix_axes(m)),
        escape(MATRIX_NOTE)
    );
    for side in matrix_sides(agg, m) {
        for figure in &m.figures {
            let _ = writeln!(
                out,
                "<div class=\"result\">\n<h4>{}</h4>",
                escape(&matrix_title(agg, m, side, *figure))
            );
            out.push_str(&matrix_table(agg, m, side, *figure, units).to_html("figures matrix"));
            out.push_str("</div>\n");
        }
    }
    let _ = writeln!(
        out,
        "<details><summary>Latency of {}</summary>\n{}</details>\n</div>",
        escape(&m.name),
        matrix_latency_table(agg, m).to_html("latency")
    );
    out
}

fn parameters_html(runs: &[RunRecord], agg: &Aggregate) -> String {
    let mut t = crate::table::Table::new(&["Group", "Swept", "Fixed parameters"]);
    for g in &agg.groups {
        t.push(vec![
            g.label(),
            g.swept.as_deref().map(axis_name).unwrap_or_default(),
            params_text(&g.fixed),
        ]);
    }
    let mut out = t.to_html("parameters");
    for (run, side) in runs.iter().zip(&agg.sides) {
        if run.spec.is_null() {
            continue;
        }
        let spec = serde_json::to_string_pretty(&run.spec).unwrap_or_default();
        let _ = writeln!(
            out,
            "<details><summary>Study specification of {} ({})</summary>\n<pre>{}</pre>\n</details>",
            escape(&side.name),
            escape(&run.kind),
            escape(&spec)
        );
    }
    out
}

/// A run as headings name it: its label, else its id.
fn run_name(run: &RunRecord) -> String {
    match &run.label {
        Some(l) if !l.is_empty() => format!("{} ({})", run.id, l),
        _ => run.id.clone(),
    }
}
