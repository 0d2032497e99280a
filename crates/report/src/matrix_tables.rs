//! A [`Matrix`] as tables, shared by the text, Markdown and HTML renderers: one per side
//! and figure ([`matrix_table`]: rows the swept values, columns the split ones, each cell
//! the figure and its mean latency), the latency percentiles of every cell
//! ([`matrix_latency_table`]), and the order of a report's results ([`result_blocks`]:
//! a matrix where its first group stood, the other groups as they are).

use iolab_core::units::Nanos;

use crate::aggregate::Aggregate;
use crate::matrix::{Figure, Matrix, value_heading};
use crate::measure::{Units, axis_name};
use crate::report_tables::{figure_cell_in, sides_of};
use crate::table::Table;

/// Explains the cells of [`matrix_table`].
pub const MATRIX_NOTE: &str = "Each cell: bandwidth (large blocks) or IOPS (blocks under \
64 KiB), then the mean latency of the operation; a table per configuration (run) and \
operation.";

/// What a report's results section shows, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultBlock {
    /// A group of [`Aggregate::groups`] on its own.
    Group(usize),
    /// A matrix of [`crate::matrix::matrices`].
    Matrix(usize),
}

/// The groups in order, each matrix once in place of its groups.
pub fn result_blocks(agg: &Aggregate, matrices: &[Matrix]) -> Vec<ResultBlock> {
    let mut out = Vec::new();
    for i in 0..agg.groups.len() {
        match matrices.iter().position(|m| m.holds(i)) {
            Some(m) if !out.contains(&ResultBlock::Matrix(m)) => out.push(ResultBlock::Matrix(m)),
            Some(_) => {}
            None => out.push(ResultBlock::Group(i)),
        }
    }
    out
}

/// The sides that measured some cell of `m`.
pub fn matrix_sides(agg: &Aggregate, m: &Matrix) -> Vec<usize> {
    let mut sides: Vec<usize> = m
        .column_groups(agg)
        .into_iter()
        .flat_map(sides_of)
        .collect();
    sides.sort_unstable();
    sides.dedup();
    sides
}

/// "async-seq-write · hdd": a table's title, the side named when the report has several.
pub fn matrix_title(agg: &Aggregate, m: &Matrix, side: usize, figure: Figure) -> String {
    let label = m.figure_label(figure);
    if agg.sides.len() > 1 {
        format!("{label} · {}", agg.sides[side].name)
    } else {
        label
    }
}

/// "Rows: threads; columns: block size.": how to read a matrix's tables.
pub fn matrix_axes(m: &Matrix) -> String {
    format!(
        "Rows: {}; columns: {}.",
        axis_name(&m.rows_key).to_lowercase(),
        axis_name(&m.cols_key).to_lowercase()
    )
}

/// Rows x columns of one side and figure: each cell its figure and, for an operation, its
/// mean latency in a column beside it.
pub fn matrix_table(
    agg: &Aggregate,
    m: &Matrix,
    side: usize,
    figure: Figure,
    units: Units,
) -> Table {
    let latency = matches!(figure, Figure::Op(_));
    let mut headers = vec![axis_name(&m.rows_key)];
    for col in &m.cols {
        let heading = value_heading(&m.cols_key, col);
        headers.push(format!(">{heading}"));
        if latency {
            headers.push(format!(">{heading} mean latency"));
        }
    }
    let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new(&refs);
    for row in &m.rows {
        let mut cells = vec![value_heading(&m.rows_key, row)];
        for col in 0..m.cols.len() {
            let cell = m.cell(agg, side, figure, row, col);
            cells.push(
                cell.map(|c| figure_cell_in(c.measure, &c.value, units))
                    .unwrap_or_else(|| "—".to_string()),
            );
            if latency {
                cells.push(
                    cell.and_then(|c| c.mean_latency_ns)
                        .map(|ns| Nanos(ns.round() as u64).human())
                        .unwrap_or_else(|| "—".to_string()),
                );
            }
        }
        t.push(cells);
    }
    t
}

/// The latency percentiles of every cell of `m`: row, column, op, side, mean ... max.
pub fn matrix_latency_table(agg: &Aggregate, m: &Matrix) -> Table {
    let mut headers = vec![axis_name(&m.rows_key), axis_name(&m.cols_key)];
    headers.push("Op".into());
    if agg.sides.len() > 1 {
        headers.push("Run".into());
    }
    for h in ["mean", "p50", "p90", "p99", "p99.9", "p99.99", "max"] {
        headers.push(format!(">{h}"));
    }
    let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new(&refs);
    for side in matrix_sides(agg, m) {
        for row in &m.rows {
            for (col, g) in m.column_groups(agg).into_iter().enumerate() {
                let Some(p) = g.point(side, Some(row)) else {
                    continue;
                };
                for o in p.ops.iter().filter(|o| o.latency.count > 0) {
                    let mut cells = vec![
                        value_heading(&m.rows_key, row),
                        value_heading(&m.cols_key, &m.cols[col]),
                        o.op.name().to_string(),
                    ];
                    if agg.sides.len() > 1 {
                        cells.push(agg.sides[side].name.clone());
                    }
                    let l = &o.latency;
                    cells.push(Nanos(l.mean.round() as u64).human());
                    cells.extend(l.percentiles().iter().map(|(_, v)| v.human()));
                    cells.push(l.max.human());
                    t.push(cells);
                }
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::aggregate_runs;
    use crate::matrix::matrices;
    use crate::test_support::{op_result, phase, run_with};
    use iolab_core::result::{OpKind, RunRecord};

    /// randrw over read share {100, 70} x block size {4KiB, 2MiB}.
    fn hci(label: &str, iops: u64) -> RunRecord {
        let mut phases = Vec::new();
        for mix in ["100", "70"] {
            for (bs, size) in [("4KiB", 4096u64), ("2MiB", 2 << 20)] {
                let mut p = phase("randrw", &[("rwmix_read", mix), ("block_size", bs)]);
                let ops = if bs == "4KiB" { iops } else { 100 };
                let reads = ops * mix.parse::<u64>().unwrap() / 100;
                p.ops.push(op_result(OpKind::Read, reads, reads * size));
                if reads < ops {
                    p.ops
                        .push(op_result(OpKind::Write, ops - reads, (ops - reads) * size));
                }
                phases.push(p);
            }
        }
        run_with(label, phases)
    }

    #[test]
    fn a_read_share_by_block_size_matrix_shows_totals() {
        let runs = [hci("b", 20_000), hci("a", 10_000)];
        let agg = aggregate_runs(&runs);
        let ms = matrices(&agg);
        assert_eq!(ms.len(), 1);
        let m = &ms[0];
        assert_eq!(m.rows, ["4KiB", "2MiB"]);
        assert_eq!(m.cols, ["70", "100"]);
        assert_eq!(
            m.figures,
            [
                Figure::Op(OpKind::Read),
                Figure::Op(OpKind::Write),
                Figure::TotalIops
            ]
        );
        assert_eq!(
            matrix_title(&agg, m, 1, Figure::TotalIops),
            "randrw total IOPS · a"
        );
        let t = matrix_table(&agg, m, 0, Figure::TotalIops, Units::Binary);
        assert_eq!(t.headers, ["Block size", "70% reads", "100% reads"]);
        // 100 % reads: its reads are its total.
        assert_eq!(t.rows[0], ["4KiB", "20.0k IOPS", "20.0k IOPS"]);
        let t = matrix_table(&agg, m, 0, Figure::Op(OpKind::Read), Units::Decimal);
        assert_eq!(t.headers[1..3], ["70% reads", "70% reads mean latency"]);
        assert_eq!(t.rows[0][1..3], ["14.0k IOPS", "100 µs"]);
        // 70 reads of 2 MiB a second: 147 MB/s.
        assert_eq!(t.rows[1][1], "147 MB/s");
        assert_eq!(
            result_blocks(&agg, &ms),
            [ResultBlock::Matrix(0)],
            "the matrix stands for its groups"
        );
        let lat = matrix_latency_table(&agg, m);
        assert_eq!(lat.rows.len(), 2 * (3 + 3), "{}", lat.to_text());
    }
}
