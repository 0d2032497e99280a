//! The self-contained HTML report: [`render_html`] writes one page with inline CSS and
//! inline SVG charts (no script, no external resource: HPC nodes are often offline).
//! [`chart`] draws a chart, [`axis`] its scales, [`marks`] its lines or bars, [`legend`]
//! its legend and [`lettering`] measures its text; [`charts`] and [`timeline_charts`]
//! decide which charts a report has, [`sections`] lays out the page.

mod axis;
mod chart;
mod charts;
mod kvcache;
mod legend;
mod lettering;
mod marks;
mod matrix_charts;
pub mod pts;
mod sections;
mod timeline_charts;
mod train_charts;

use iolab_core::result::RunRecord;

use crate::ReportOptions;
use crate::model::ReportModel;

pub use crate::table::escape;

/// The report of `runs` (the first is the subject, the others are overlaid on its charts)
/// as one HTML document, with `opts.comparison` when one is given: a report compares only
/// when asked to (`iolab report A --vs B`, `iolab compare --format html`), never as a side
/// effect of showing several runs (`iolab results export`).
pub fn render_html(runs: &[RunRecord], opts: &ReportOptions) -> String {
    let model = ReportModel::build(runs);
    let title = opts.title.clone().unwrap_or_else(|| {
        let names: Vec<&str> = model.agg.sides.iter().map(|s| s.name.as_str()).collect();
        format!("iolab report: {}", names.join(" vs "))
    });
    sections::page(&title, runs, &model, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
