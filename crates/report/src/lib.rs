//! iolab-report: turns stored results ([`iolab_core::result::RunRecord`]) into what people
//! read. Computing comes first and returns values; renderers only format them.
//!
//! Computing:
//! - [`aggregate()`] / [`aggregate_runs`] / [`aggregate_sides`]: series per group of phases
//!   (same name; a matrix is split by its second parameter) and swept value, repetitions
//!   pooled into a [`Spread`](iolab_core::stats::Spread) (mean, stddev, CV, 95 % CI),
//!   latency percentiles from merged histograms.
//! - [`compare()`] / [`compare_sides`]: the table the NFS study ends with, baseline (A, the
//!   old version) against candidate (B): per metric the peaks, where they were reached, the
//!   change in % and whether it is within the noise.
//! - [`ladder_outcome`]: a ladder run's objective, highest load within it and knee;
//!   [`render_ladder`] the text `iolab ladder` prints as it ends.
//! - [`phase_timeline`]: a phase's per-second rates; [`warnings()`]: cache, errors,
//!   interrupted phases and noisy figures, per run.
//!
//! Rendering:
//! - [`text`]: the terminal summary of a run ([`text::render_run`]);
//!   [`render_comparison_text`] the comparison for the terminal.
//! - [`render_markdown`] and [`render_comparison_markdown`]: tables to paste into a paper.
//! - [`render_csv`] (one row per phase × op), [`render_points_csv`] (one row per sweep point
//!   × op with its statistics) and [`render_comparison_csv`].
//! - [`render_json`] (the runs themselves) and [`render_comparison_json`].
//! - [`render_html`]: one self-contained page (inline CSS and SVG, no script, no network)
//!   with the charts, the comparison, the parameters, the warnings and the test bed.
//! - [`audit`]: `iolab audit`'s findings.
//! - [`endurance`]: `iolab endurance`'s projection.
//! - [`listing`]: `iolab results list` in every format.
//! - [`study`]: a study's plan, opening line and closing summary.
//! - [`targets`]: `iolab targets` and `targets analyze` as BeeGFS StorageBench lays them out.
//! - [`render`] picks one of them by [`Format`].
//!
//! For `iolab report RUN --vs OLD`, pass `[run, old]` to the renderers (the first run is
//! the subject) and, as the comparison, `compare_sides(old_runs, runs)` with every run of
//! each label, as `iolab compare OLD RUN` computes it; [`render_html`] and
//! [`render_markdown`] compare the two runs themselves when given none.
#![forbid(unsafe_code)]

mod aggregate;
pub mod audit;
mod compare;
mod comparison_text;
mod csv;
mod environment;
mod error;
mod extra;
mod html;
mod inventory_text;
mod json;
mod ladder;
mod ladder_text;
mod markdown;
mod matrix;
mod matrix_tables;
mod measure;
mod model;
mod object;
mod phase_figures;
mod phase_words;
mod rated;
mod report_tables;
mod sweep;
pub mod table;
mod text_summary;
mod timeline;
mod warnings;

#[cfg(test)]
mod test_support;

pub mod checkpoint;
pub mod endurance;
pub mod kvcache;
mod kvcache_tables;
pub mod listing;
pub mod pts;
pub mod study;
pub mod targets;
pub mod text;
pub mod train;

use std::fmt;
use std::str::FromStr;

use iolab_core::result::RunRecord;

pub use aggregate::{
    Aggregate, Group, GroupOp, OpPoint, PhaseRef, Point, SideInfo, SpreadRow, aggregate,
    aggregate_runs, aggregate_sides,
};
pub use compare::{
    Comparison, MetricRow, Noise, Peak, PointChange, Presence, compare, compare_aggregate,
    compare_sides,
};
pub use comparison_text::render_comparison_text;
pub use csv::{render_comparison_csv, render_csv, render_points_csv};
pub use environment::{EnvRow, EnvTable, environment_table};
pub use error::ReportError;
pub use html::pts::{PtsPage, WindowPlot, render_pts_html};
pub use html::render_html;
pub use inventory_text::render_inventory_text;
pub use json::{render_comparison_json, render_json};
pub use ladder::{LadderOutcome, LadderStep, ladder_outcome};
pub use ladder_text::{ladder_warnings, render_ladder};
pub use markdown::{render_comparison_markdown, render_markdown, render_markdown_with};
pub use matrix::{Cell, Figure, Matrix, matrices, sync_pairs};
pub use measure::{Measure, Units, at_phrase, change_words};
pub use rated::{RatedRow, Scope, rated_of, rated_rows};
pub use sweep::value_order;
pub use timeline::{PhaseTimeline, TimelineSeries, phase_timeline};
pub use warnings::Warning;

/// What a report shows besides the runs, and how its figures read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportOptions {
    /// The page title; by default "iolab report: " and the runs' names.
    pub title: Option<String>,
    /// The comparison; none unless asked for (`iolab report A --vs B`, `iolab compare`).
    pub comparison: Option<Comparison>,
    /// Bandwidth in binary (MiB/s) or decimal (MB/s) units.
    pub units: Units,
}

/// An output format, as `--format` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Csv,
    Json,
    Html,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Text,
        Format::Markdown,
        Format::Csv,
        Format::Json,
        Format::Html,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Markdown => "markdown",
            Format::Csv => "csv",
            Format::Json => "json",
            Format::Html => "html",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = ReportError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" | "txt" => Ok(Format::Text),
            "markdown" | "md" => Ok(Format::Markdown),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "html" => Ok(Format::Html),
            _ => Err(ReportError::UnknownFormat {
                name: s.to_string(),
            }),
        }
    }
}

/// Renders `runs` (the first is the subject, the others compared with it) in `format`.
/// Text shows each run's summary; JSON is the run itself for one run, an array for more.
pub fn render(format: Format, runs: &[RunRecord], opts: &ReportOptions) -> String {
    match format {
        Format::Text => {
            let mut out: Vec<String> = runs
                .iter()
                .map(|r| text::render_run_in(r, opts.units))
                .collect();
            if let Some(c) = &opts.comparison {
                out.push(render_comparison_text(c, opts.units));
            }
            out.join("\n")
        }
        Format::Markdown => render_markdown_with(runs, opts),
        Format::Csv => render_csv(runs),
        Format::Json => render_json(runs),
        Format::Html => render_html(runs, opts),
    }
}

/// Everything a reader of `runs` must be warned about (cache, errors, interrupted phases,
/// noisy figures), each run its own side.
pub fn warnings(runs: &[RunRecord]) -> Vec<Warning> {
    warnings::collect(runs, &aggregate_runs(runs))
}

/// The second run (the baseline) against the first (the subject), as `iolab report FIRST
/// --vs SECOND` compares them. None for fewer than two runs.
pub fn default_comparison(runs: &[RunRecord]) -> Option<Comparison> {
    match runs {
        [subject, baseline, ..] => Some(compare(baseline, subject)),
        _ => None,
    }
}
