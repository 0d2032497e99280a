//! How a run of several phases ends, in text: [`summary_table`] gives the headline figure
//! of every phase (the total IOPS of a mixed one), and [`render_summary`] adds what the
//! reference studies tabulate: each matrix as one table per operation, and the figures
//! against the rated ones.

use std::fmt::Write as _;

use iolab_core::result::{OpResult, PhaseKind, PhaseResult, RunRecord};

use crate::matrix_tables::{matrix_axes, matrix_table, matrix_title};
use crate::measure::Units;
use crate::model::ReportModel;
use crate::phase_words::phase_settings;
use crate::rated::{RATED_NOTE, rated_table};
use crate::table::Table;

/// The headline figure of every phase in one table, as a run ends: its settings and
/// each main operation's bandwidth (data) or rate (metadata), a mixed phase's total IOPS
/// first.
pub fn summary_table(phases: &[PhaseResult], units: Units) -> Table {
    let mut t = Table::new(&["#", "phase", "settings", "result"]);
    for (i, p) in phases.iter().enumerate() {
        let main: Vec<&OpResult> = p.ops.iter().filter(|o| !o.op.is_auxiliary()).collect();
        // Small blocks are quoted in IOPS, large ones in bandwidth (as the reports
        // compare a block-size sweep).
        let small = crate::measure::block_size_of(&p.params).is_some_and(|b| b.get() < 64 * 1024);
        let mut figures: Vec<String> = main
            .iter()
            .map(|o| {
                if small && p.kind != PhaseKind::Meta {
                    format!("{} {} IOPS", o.op.name(), o.iops.human())
                } else if o.op.moves_data() && p.kind != PhaseKind::Meta {
                    format!("{} {}", o.op.name(), units.bandwidth(o.bandwidth.get()))
                } else {
                    format!("{} {}/s", o.op.name(), o.iops.human())
                }
            })
            .collect();
        // A mixed phase's headline is its total IOPS, as the studies quote it; the
        // operations follow it.
        if let Some((total, _, _)) = crate::phase_words::mixed_total(p) {
            figures.insert(0, format!("total {} IOPS", total.human()));
        }
        t.push(vec![
            (i + 1).to_string(),
            p.name.clone(),
            phase_settings(p).join(", "),
            figures.join(", "),
        ]);
    }
    t
}

/// The headline of every phase, then each matrix of the run as one table per operation,
/// then its figures against the rated ones.
pub fn render_summary(run: &RunRecord, units: Units) -> String {
    let mut out = summary_table(&run.phases, units).to_text();
    let model = ReportModel::build(std::slice::from_ref(run));
    for m in &model.matrices {
        for figure in &m.figures {
            let _ = write!(
                out,
                "\n{} ({})\n{}",
                matrix_title(&model.agg, m, 0, *figure),
                matrix_axes(m).trim_end_matches('.').to_lowercase(),
                matrix_table(&model.agg, m, 0, *figure, units).to_text()
            );
        }
    }
    if let Some(rows) = model.rated.first().filter(|r| !r.is_empty()) {
        let _ = write!(
            out,
            "\nagainst the rated maximum\n{}{RATED_NOTE}\n",
            rated_table(rows).to_text()
        );
    }
    out
}
