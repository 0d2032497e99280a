//! The tables every report shows, as [`Table`]s of formatted cells, shared by the Markdown
//! and HTML renderers: the runs, a group's figures per swept value, its latency
//! percentiles, the environment. Also the cell formats ([`figure_cell`], [`utc_text`]).

use iolab_core::result::{RunRecord, RunStatus};
use iolab_core::stats::Spread;

use crate::aggregate::{Aggregate, Group, GroupOp};
use crate::compare::{Judged, judged};
use crate::environment::EnvTable;
use crate::measure::{Measure, Units, axis_name};
use crate::table::Table;

/// Explains the cells of [`group_table`].
pub const FIGURE_NOTE: &str = "Figures are means over the repetitions; ± is the half-width \
of the 95% confidence interval of the mean; SD is the standard deviation and CV the \
coefficient of variation (SD / mean) over the repetitions; * marks a noisy figure (CV over \
10%).";

/// "1.20 GiB/s" for one measurement; "1.20 GiB/s ±3.1%" (95 % CI) over repetitions, with
/// "*" when noisy; bandwidth in `units`.
pub fn figure_cell_in(measure: Measure, s: &Spread, units: Units) -> String {
    let mut cell = measure.format_in(s.mean, units);
    if s.n > 1 && s.mean != 0.0 {
        cell.push_str(&format!(" ±{:.1}%", s.ci95 / s.mean.abs() * 100.0));
    }
    if s.is_noisy() {
        cell.push_str(" *");
    }
    cell
}

/// Milliseconds since the epoch as "2023-11-14 22:13 UTC".
pub fn utc_text(ms: i64) -> String {
    let t = iolab_core::civil::UtcTime::from_ms(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        t.year, t.month, t.day, t.hour, t.minute
    )
}

fn status_text(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Incomplete => "incomplete",
        RunStatus::Complete => "complete",
        RunStatus::Interrupted => "interrupted",
        RunStatus::Failed => "failed",
        RunStatus::Running => "running",
        RunStatus::Abandoned => "abandoned",
    }
}

/// One row per run: id, label, kind, status, start, target, iolab version, revision.
pub fn runs_table(runs: &[RunRecord]) -> Table {
    let mut t = Table::new(&[
        "Run", "Label", "Kind", "Status", "Started", "Target", "iolab", "Git",
    ]);
    for r in runs {
        t.push(vec![
            r.id.clone(),
            r.label.clone().unwrap_or_default(),
            r.kind.clone(),
            status_text(r.status).to_string(),
            utc_text(r.started_at_ms),
            r.provenance.target.clone(),
            r.provenance.iolab_version.clone(),
            r.provenance.git_revision.clone().unwrap_or_default(),
        ]);
    }
    t
}

/// Column title of an op on a side: "write" alone, "write · v7.4" with several sides.
pub fn series_name(agg: &Aggregate, op: &str, side: usize) -> String {
    if agg.sides.len() > 1 {
        format!("{op} · {}", agg.sides[side].name)
    } else {
        op.to_string()
    }
}

/// Sides that have points in `g`.
pub fn sides_of(g: &Group) -> Vec<usize> {
    (0..g.sides.len())
        .filter(|i| !g.sides[*i].is_empty())
        .collect()
}

/// A column of [`group_table`]: an op's figure in a measure, or the total IOPS of a mixed
/// phase, on a side.
enum Column {
    Op(GroupOp, Measure, usize),
    Total(usize),
}

/// Swept value × (op, side): the figure of merit of each cell, and the total IOPS of a
/// mixed phase (reads and writes together).
pub fn group_table(agg: &Aggregate, g: &Group, units: Units) -> Table {
    // SD and CV after each figure, when something was repeated.
    let repeated = g.sides.iter().flatten().any(|p| p.repetitions() > 1);
    let (headers, columns) = group_columns(agg, g, repeated);
    let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new(&refs);
    let values: Vec<Option<&str>> = if g.swept.is_some() {
        g.values.iter().map(|v| Some(v.as_str())).collect()
    } else {
        vec![None]
    };
    for value in values {
        let mut row = vec![value.unwrap_or(&g.name).to_string()];
        for column in &columns {
            let (measure, spread) = column_figure(g, column, value);
            row.push(
                spread
                    .as_ref()
                    .map(|s| figure_cell_in(measure, s, units))
                    .unwrap_or_else(|| "—".to_string()),
            );
            if repeated {
                match spread {
                    Some(s) if s.n > 1 => {
                        row.push(measure.format_in(s.stddev, units));
                        row.push(format!("{:.1}%", s.cv * 100.0));
                    }
                    _ => row.extend(["—".to_string(), "—".to_string()]),
                }
            }
        }
        t.push(row);
    }
    t
}

/// The headers and columns of [`group_table`]: each headline op in each measure it is
/// judged by (a sweep over 4KiB and 2MiB blocks: IOPS and bandwidth) per side, then the
/// total IOPS of a mixed group per side; SD and CV beside each when `repeated`.
fn group_columns(agg: &Aggregate, g: &Group, repeated: bool) -> (Vec<String>, Vec<Column>) {
    let first = g
        .swept
        .as_deref()
        .map(axis_name)
        .unwrap_or_else(|| "Phase".to_string());
    let mut headers = vec![first];
    let mut columns = Vec::new();
    let mut push = |header: String, column: Column| {
        headers.push(header);
        if repeated {
            headers.push(">SD".into());
            headers.push(">CV".into());
        }
        columns.push(column);
    };
    // Auxiliary operations (an fsync beside writes) are no headline rate: their count
    // grows with the workers by construction. Their latency is in the latency table.
    for op in g.headline_ops() {
        let mut measures: Vec<Measure> = judged(g, op).iter().map(|j| j.measure).collect();
        measures.dedup();
        for measure in measures {
            for side in sides_of(g) {
                let name = series_name(agg, op.op.name(), side);
                push(
                    format!(">{name} {}", measure.word()),
                    Column::Op(op, measure, side),
                );
            }
        }
    }
    if g.is_mixed() {
        for side in sides_of(g) {
            let name = series_name(agg, "total", side);
            push(format!(">{name} IOPS"), Column::Total(side));
        }
    }
    (headers, columns)
}

/// A column's figure at swept value `value`, in its measure.
fn column_figure(g: &Group, column: &Column, value: Option<&str>) -> (Measure, Option<Spread>) {
    match column {
        Column::Op(op, measure, side) => {
            let read = Judged {
                measure: *measure,
                small_blocks: None,
            };
            let spread = g
                .point(*side, value)
                .and_then(|p| p.op(op.op))
                .map(|o| read.spread(*op, o));
            (*measure, spread)
        }
        Column::Total(side) => (
            Measure::Iops,
            g.point(*side, value).and_then(|p| p.total()).copied(),
        ),
    }
}

/// Latency percentiles of every point: swept value, op, side, p50 ... p99.99, max.
pub fn latency_table(agg: &Aggregate, g: &Group) -> Table {
    let first = g.swept.as_deref().map(axis_name);
    let mut headers: Vec<String> = first.iter().cloned().collect();
    headers.push("Op".into());
    if agg.sides.len() > 1 {
        headers.push("Run".into());
    }
    for h in ["mean", "p50", "p90", "p99", "p99.9", "p99.99", "max"] {
        headers.push(format!(">{h}"));
    }
    let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new(&refs);
    for side in sides_of(g) {
        for p in &g.sides[side] {
            // Imported results have no latency samples: no row of zeros.
            for o in p.ops.iter().filter(|o| o.latency.count > 0) {
                let mut row: Vec<String> = Vec::new();
                if first.is_some() {
                    row.push(p.value.clone().unwrap_or_default());
                }
                row.push(o.op.name().to_string());
                if agg.sides.len() > 1 {
                    row.push(agg.sides[side].name.clone());
                }
                let l = &o.latency;
                row.push(iolab_core::units::Nanos(l.mean.round() as u64).human());
                row.extend(l.percentiles().iter().map(|(_, v)| v.human()));
                row.push(l.max.human());
                t.push(row);
            }
        }
    }
    t
}

/// The environment with one column per run.
pub fn environment_rows(env: &EnvTable) -> Table {
    let mut headers = vec!["Section".to_string(), "Item".to_string()];
    headers.extend(env.columns.iter().cloned());
    let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new(&refs);
    for row in &env.rows {
        let mut cells = vec![row.section.to_string(), row.item.clone()];
        cells.extend(row.values.iter().cloned());
        t.push(cells);
    }
    t
}

/// The named figures of a group's phase, a column per run.
pub fn extra_table(runs: &[RunRecord], agg: &Aggregate, g: &Group) -> Table {
    let phase = |run: &RunRecord| run.phases.iter().find(|p| p.name == g.name).cloned();
    let found: Vec<_> = runs
        .iter()
        .map(|r| phase(r).map(|p| crate::phase_figures::listed(&p)))
        .collect();
    let mut keys: Vec<&String> = found.iter().flatten().flat_map(|p| p.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut headers = vec!["Figure"];
    headers.extend(agg.sides.iter().map(|s| s.name.as_str()));
    let mut table = Table::new(&headers);
    for k in keys {
        let mut row = vec![crate::extra::label(k)];
        for p in &found {
            row.push(
                p.as_ref()
                    .and_then(|p| p.get(k))
                    .map(|v| crate::extra::value(k, *v))
                    .unwrap_or_default(),
            );
        }
        table.push(row);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_utc() {
        assert_eq!(utc_text(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_text(1_700_000_000_000), "2023-11-14 22:13 UTC");
        assert_eq!(utc_text(951_782_400_000), "2000-02-29 00:00 UTC");
    }

    #[test]
    fn figure_cells_show_ci_and_noise() {
        let one = Spread::of(&[1000.0]).unwrap();
        assert_eq!(
            figure_cell_in(Measure::OpsRate, &one, Units::Binary),
            "1.00k ops/s"
        );
        let two = Spread::of(&[1000.0, 1300.0]).unwrap();
        assert_eq!(
            figure_cell_in(Measure::Iops, &two, Units::Decimal),
            "1.15k IOPS ±165.7% *"
        );
    }
}
