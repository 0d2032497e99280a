//! The charts of the matrices ([`crate::matrix`]): one chart per block size (each in its
//! own measure: throughput for large blocks, IOPS for small), along the matrix's other
//! parameter, every run overlaid; a matrix written with O_SYNC drawn together with its
//! twin written without ("sync against async"), each run in its colour, sync dashed.

use super::chart::{Chart, Pt, Series, XAxis};
use super::charts::{marks_for, noun, y_axis};
use crate::matrix::{Figure, Matrix, value_heading};
use crate::matrix_tables::matrix_sides;
use crate::measure::{Measure, Units, axis_name};
use crate::model::ReportModel;
use crate::report_tables::series_name;

/// How a matrix is cut into charts: one chart per value of `per` ("block_size"), the
/// other parameter along the x axis.
struct Cut<'a> {
    per: &'a str,
    along: &'a str,
    /// One chart per value of `per`, the x axis its values of `along`.
    per_values: &'a [String],
    along_values: &'a [String],
    /// True when `per` is the column parameter.
    per_column: bool,
}

fn cut(m: &Matrix) -> Cut<'_> {
    if m.rows_key == "block_size" && m.cols_key != "block_size" {
        Cut {
            per: &m.rows_key,
            along: &m.cols_key,
            per_values: &m.rows,
            along_values: &m.cols,
            per_column: false,
        }
    } else {
        Cut {
            per: &m.cols_key,
            along: &m.rows_key,
            per_values: &m.cols,
            along_values: &m.rows,
            per_column: true,
        }
    }
}

/// Every matrix's charts, a sync pair in one chart per block size.
pub fn matrix_charts(model: &ReportModel, units: Units) -> Vec<Chart> {
    let mut charts = Vec::new();
    let paired = |i: usize| model.sync_pairs.iter().any(|(a, s)| *a == i || *s == i);
    for (a, s) in &model.sync_pairs {
        charts.extend(charts_of(model, &[*a, *s], units));
    }
    for i in (0..model.matrices.len()).filter(|i| !paired(*i)) {
        charts.extend(charts_of(model, &[i], units));
    }
    charts
}

/// One chart per value of the cut's `per` parameter over the matrices `which` (one, or an
/// async and a sync twin).
fn charts_of(model: &ReportModel, which: &[usize], units: Units) -> Vec<Chart> {
    let first = &model.matrices[which[0]];
    let c = cut(first);
    let pair = which.len() == 2;
    let mut charts = Vec::new();
    for (k, per_value) in c.per_values.iter().enumerate() {
        let Some(measure) = chart_measure(model, which, &c, k) else {
            continue;
        };
        let mut series = chart_series(model, which, (&c, k), measure, units);
        series.retain(|s| !s.points.is_empty());
        if series.is_empty() {
            continue;
        }
        let what = if pair {
            let sync = &model.matrices[which[1]];
            format!("{} against {}", sync.name, first.name)
        } else {
            first.name.clone()
        };
        charts.push(Chart {
            kind: if pair { "sync-async" } else { "matrix" },
            title: format!(
                "{what} at {}: {} vs {}",
                value_heading(c.per, per_value),
                noun(measure),
                axis_name(c.along).to_lowercase()
            ),
            marks: marks_for(c.along),
            x: XAxis::Categories {
                title: axis_name(c.along),
                labels: c
                    .along_values
                    .iter()
                    .map(|v| value_heading(c.along, v))
                    .collect(),
            },
            y: y_axis(measure, false, units),
            series,
            spans: Vec::new(),
        });
    }
    charts
}

/// The series of chart `k` of the cut: per matrix of `which`, figure of `measure` and
/// side. A sync pair names its series "async" and "sync", each run in its colour, sync
/// dashed; a single matrix names them by figure, compared runs dashed.
fn chart_series(
    model: &ReportModel,
    which: &[usize],
    (c, k): (&Cut<'_>, usize),
    measure: Measure,
    units: Units,
) -> Vec<Series> {
    let agg = &model.agg;
    let pair = which.len() == 2;
    let mut series = Vec::new();
    for (mi, index) in which.iter().enumerate() {
        let m = &model.matrices[*index];
        let figures: Vec<Figure> = m
            .figures
            .iter()
            .copied()
            .filter(|f| figure_measure(model, m, c, k, *f) == Some(measure))
            .collect();
        for (fi, figure) in figures.iter().enumerate() {
            for side in matrix_sides(agg, m) {
                let (name, color, dashed) = if pair {
                    let sync = m.fixed.get("sync").map(String::as_str).unwrap_or("false");
                    let mut label = value_heading("sync", sync);
                    if figures.len() > 1 {
                        label = format!("{label} {}", figure_name(*figure));
                    }
                    (series_name(agg, &label, side), side, mi == 1)
                } else {
                    let name = series_name(agg, figure_name(*figure), side);
                    let color = if figures.len() > 1 { fi } else { side };
                    (name, color, side > 0)
                };
                let points = points(model, m, c, (k, *figure, side), &name, units);
                series.push(Series {
                    name,
                    points,
                    dashed,
                    color,
                });
            }
        }
    }
    series
}

/// "read", "total" (a legend entry).
fn figure_name(f: Figure) -> &'static str {
    match f {
        Figure::Op(op) => op.name(),
        Figure::TotalIops => "total",
    }
}

/// The measure of `figure` in chart `k` of the cut: the first cell that has one.
fn figure_measure(
    model: &ReportModel,
    m: &Matrix,
    c: &Cut<'_>,
    k: usize,
    figure: Figure,
) -> Option<Measure> {
    (0..c.along_values.len()).find_map(|x| {
        let (row, col) = place(m, c, k, x);
        matrix_sides(&model.agg, m)
            .into_iter()
            .find_map(|side| m.cell(&model.agg, side, figure, row, col))
            .map(|cell| cell.measure)
    })
}

/// A chart's measure: that of its first operation.
fn chart_measure(model: &ReportModel, which: &[usize], c: &Cut<'_>, k: usize) -> Option<Measure> {
    let m = &model.matrices[which[0]];
    m.figures
        .iter()
        .find_map(|f| figure_measure(model, m, c, k, *f))
}

/// The (row value, column index) of chart `k` at x index `x`.
fn place<'a>(m: &'a Matrix, c: &Cut<'_>, k: usize, x: usize) -> (&'a str, usize) {
    if c.per_column {
        (&m.rows[x], k)
    } else {
        (&m.rows[k], x)
    }
}

fn points(
    model: &ReportModel,
    m: &Matrix,
    c: &Cut<'_>,
    (k, figure, side): (usize, Figure, usize),
    name: &str,
    units: Units,
) -> Vec<Pt> {
    (0..c.along_values.len())
        .filter_map(|x| {
            let (row, col) = place(m, c, k, x);
            let cell = m.cell(&model.agg, side, figure, row, col)?;
            let v = cell.value;
            Some(Pt {
                x: x as f64,
                y: v.mean,
                range: (v.n > 1).then_some((v.min, v.max)),
                label: None,
                tip: format!(
                    "{name}: {} at {}, {}",
                    cell.measure.format_in(v.mean, units),
                    value_heading(c.along, &c.along_values[x]),
                    value_heading(c.per, &c.per_values[k])
                ),
            })
        })
        .collect()
}
