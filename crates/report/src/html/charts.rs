//! The charts of an [`Aggregate`]: per data group and measure, the figure against the swept
//! parameter ([`sweep_charts`]: lines along threads or queue depth, bars over block sizes
//! or read shares); each metadata op's rate against threads ([`metadata_charts`]);
//! latency percentiles at the subject's peak ([`percentile_charts`]); latency against
//! IOPS over a queue-depth or thread sweep ([`latency_iops_charts`]). Every side is
//! overlaid, compared runs dashed.

use iolab_core::result::PhaseKind;

use super::axis::Unit;
use super::chart::{Chart, Marks, Pt, Series, XAxis, YAxis};
use crate::aggregate::{Aggregate, Group, GroupOp, Point};
use crate::compare::{Judged, judged};
use crate::measure::{Measure, Units, axis_name};
use crate::model::ReportModel;
use crate::report_tables::{series_name, sides_of};
use crate::sweep::is_numeric_axis;

/// A y axis for a measure: "Throughput (GiB/s)" (or "(GB/s)" in decimal units), "IOPS",
/// "Rate (ops/s)".
pub(super) fn y_axis(measure: Measure, log: bool, units: Units) -> YAxis {
    let bytes = match units {
        Units::Binary => Unit::BytesPerSec,
        Units::Decimal => Unit::DecimalBytesPerSec,
    };
    let (title, unit) = match measure {
        Measure::Bandwidth => ("Throughput", bytes),
        Measure::Iops => ("IOPS", Unit::Count),
        Measure::OpsRate => ("Rate, ops/s", Unit::Count),
    };
    YAxis {
        title: if log {
            format!("{title} (log scale)")
        } else {
            title.to_string()
        },
        unit,
        log,
    }
}

pub(super) fn noun(measure: Measure) -> &'static str {
    match measure {
        Measure::Bandwidth => "throughput",
        Measure::Iops => "IOPS",
        Measure::OpsRate => "rate",
    }
}

/// The measures a group's ops are judged by (a sweep over 4KiB and 2MiB blocks: IOPS and
/// throughput), in order of first use.
fn measures(g: &Group) -> Vec<Measure> {
    let mut out: Vec<Measure> = Vec::new();
    for op in g.headline_ops() {
        for j in judged(g, op) {
            if !out.contains(&j.measure) {
                out.push(j.measure);
            }
        }
    }
    out
}

/// Every point of an op, read in `measure`.
fn in_measure(measure: Measure) -> Judged {
    Judged {
        measure,
        small_blocks: None,
    }
}

/// One series of `op` on `side`, x being the index of the swept value in `values`, y the
/// op's figure in `measure`.
fn op_series(
    agg: &Aggregate,
    g: &Group,
    (op, side, measure): (GroupOp, usize, Measure),
    (values, units): (&[String], Units),
    color: usize,
) -> Series {
    let name = series_name(agg, &op_label(g, op), side);
    let judged = in_measure(measure);
    let points = g.sides[side]
        .iter()
        .filter_map(|p| {
            let o = judged.spread(op, p.op(op.op)?);
            let x = values.iter().position(|v| Some(v) == p.value.as_ref())?;
            let at = g.at(p).map(|a| format!(" at {a}")).unwrap_or_default();
            Some(Pt {
                x: x as f64,
                y: o.mean,
                range: (o.n > 1).then_some((o.min, o.max)),
                label: None,
                tip: format!("{name}: {}{at}", measure.format_in(o.mean, units)),
            })
        })
        .collect();
    Series {
        name,
        points,
        dashed: side > 0,
        color,
    }
}

/// The colour of a line: one per run when a chart shows one metric, else one per metric
/// (the runs told apart by dashes).
pub(super) fn color_for(metric: usize, metrics: usize, side: usize) -> usize {
    if metrics <= 1 { side } else { metric }
}

/// An op as a metadata series names it: "create", or "mdtest stat" when the phase is
/// named otherwise.
fn op_label(g: &Group, op: GroupOp) -> String {
    if g.kind == PhaseKind::Meta && g.label() != op.op.name() {
        format!("{} {}", g.label(), op.op.name())
    } else {
        op.op.name().to_string()
    }
}

/// Figure vs swept value, one chart per data group and measure with a sweep (groups of a
/// matrix have the matrix's charts instead); a mixed phase's IOPS chart also shows its
/// total IOPS.
pub fn sweep_charts(model: &ReportModel, units: Units) -> Vec<Chart> {
    let agg = &model.agg;
    let mut charts = Vec::new();
    for (index, g) in agg.groups.iter().enumerate() {
        if g.kind == PhaseKind::Meta || model.in_matrix(index) {
            continue;
        }
        let Some(key) = &g.swept else { continue };
        for measure in measures(g) {
            let mut series = Vec::new();
            let ops: Vec<GroupOp> = g
                .headline_ops()
                .into_iter()
                .filter(|o| judged(g, *o).iter().any(|j| j.measure == measure))
                .collect();
            let total = measure == Measure::Iops && g.is_mixed();
            let metrics = ops.len() + usize::from(total);
            for (i, op) in ops.iter().enumerate() {
                for side in sides_of(g) {
                    let color = color_for(i, metrics, side);
                    let series_of = (*op, side, measure);
                    series.push(op_series(agg, g, series_of, (&g.values, units), color));
                }
            }
            if total {
                for side in sides_of(g) {
                    series.push(total_series(
                        agg,
                        g,
                        side,
                        color_for(ops.len(), metrics, side),
                    ));
                }
            }
            charts.push(Chart {
                kind: "sweep",
                marks: marks_for(key),
                title: format!(
                    "{}: {} vs {}",
                    g.label(),
                    noun(measure),
                    axis_name(key).to_lowercase()
                ),
                x: XAxis::Categories {
                    title: axis_name(key),
                    labels: g.values.clone(),
                },
                y: y_axis(measure, false, units),
                series,
                spans: Vec::new(),
            });
        }
    }
    charts
}

/// The total IOPS of a mixed group on `side` (reads and writes together).
fn total_series(agg: &Aggregate, g: &Group, side: usize, color: usize) -> Series {
    let name = series_name(agg, "total", side);
    let points = g.sides[side]
        .iter()
        .filter_map(|p| {
            let t = p.total()?;
            let x = g.values.iter().position(|v| Some(v) == p.value.as_ref())?;
            let at = g.at(p).map(|a| format!(" at {a}")).unwrap_or_default();
            Some(Pt {
                x: x as f64,
                y: t.mean,
                range: (t.n > 1).then_some((t.min, t.max)),
                label: None,
                tip: format!("{name}: {}{at}", Measure::Iops.format(t.mean)),
            })
        })
        .collect();
    Series {
        name,
        points,
        dashed: side > 0,
        color,
    }
}

/// Metadata rates vs the swept parameter (threads): one chart per operation (create,
/// stat, remove), every side overlaid, so each op's rate reads on a scale of its own.
pub fn metadata_charts(agg: &Aggregate, units: Units) -> Vec<Chart> {
    let mut charts = Vec::new();
    for g in agg.groups.iter().filter(|g| g.kind == PhaseKind::Meta) {
        let Some(key) = &g.swept else { continue };
        for op in g.headline_ops() {
            let series = sides_of(g)
                .into_iter()
                .map(|side| op_series(agg, g, (op, side, op.measure), (&g.values, units), side))
                .collect();
            charts.push(Chart {
                kind: "metadata",
                title: format!(
                    "{}: {} vs {}",
                    metric_title(g, op),
                    noun(op.measure),
                    axis_name(key).to_lowercase()
                ),
                marks: marks_for(key),
                x: XAxis::Categories {
                    title: axis_name(key),
                    labels: g.values.clone(),
                },
                y: y_axis(Measure::OpsRate, false, units),
                series,
                spans: Vec::new(),
            });
        }
    }
    charts
}

/// A group's op as a chart names it: "md-create" (a metadata phase's result named after
/// its op), "create", or "mdtest stat".
fn metric_title(g: &Group, op: GroupOp) -> String {
    let label = g.label();
    let name = op.op.name();
    if label == name || label.ends_with(&format!("-{name}")) {
        label
    } else {
        format!("{label} {name}")
    }
}

/// Lines along a numeric sweep, bars over categories.
pub(super) fn marks_for(key: &str) -> Marks {
    if is_numeric_axis(key) {
        Marks::Lines
    } else {
        Marks::Bars
    }
}

/// The point whose percentiles a group's chart shows: the subject's peak of its first op.
pub(super) fn chosen_value(g: &Group) -> Option<Option<String>> {
    let side = *sides_of(g).first()?;
    let op = g.ops.first()?;
    Some(g.peak(side, op.op)?.0.value.clone())
}

/// Latency percentiles (p50 ... p99.99) per group at the subject's peak, one line per op
/// and side, on a log scale.
pub fn percentile_charts(agg: &Aggregate) -> Vec<Chart> {
    const LABELS: [&str; 5] = ["p50", "p90", "p99", "p99.9", "p99.99"];
    let mut charts = Vec::new();
    for g in &agg.groups {
        let Some(value) = chosen_value(g) else {
            continue;
        };
        let series = percentile_series(agg, g, value.as_deref());
        if series.is_empty() {
            continue;
        }
        let at = g
            .point(sides_of(g)[0], value.as_deref())
            .and_then(|p| g.at(p))
            .map(|a| format!(" at {a}"))
            .unwrap_or_default();
        charts.push(Chart {
            kind: "latency-percentiles",
            marks: Marks::Lines,
            title: format!("{}: latency percentiles{at}", g.label()),
            x: XAxis::Categories {
                title: "Percentile".to_string(),
                labels: LABELS.iter().map(|s| s.to_string()).collect(),
            },
            y: YAxis {
                title: "Latency".to_string(),
                unit: Unit::Latency,
                log: true,
            },
            series,
            spans: Vec::new(),
        });
    }
    charts
}

/// One series per op and side: the percentiles at swept value `value`.
fn percentile_series(agg: &Aggregate, g: &Group, value: Option<&str>) -> Vec<Series> {
    let mut series = Vec::new();
    for (i, op) in g.ops.iter().enumerate() {
        for side in sides_of(g) {
            let Some(o) = g.point(side, value).and_then(|p| p.op(op.op)) else {
                continue;
            };
            if o.latency.count == 0 {
                continue;
            }
            let name = series_name(agg, &op_label(g, *op), side);
            let points = o
                .latency
                .percentiles()
                .iter()
                .enumerate()
                .map(|(x, (label, v))| Pt {
                    x: x as f64,
                    y: v.0 as f64,
                    range: None,
                    label: None,
                    tip: format!("{name}: {label} {}", v.human()),
                })
                .collect();
            series.push(Series {
                name,
                points,
                dashed: side > 0,
                color: color_for(i, g.ops.len(), side),
            });
        }
    }
    series
}

/// Latency (p50 and p99) against IOPS for data groups sweeping queue depth, or threads
/// with small blocks: one line per op, side and percentile, points labelled with the
/// swept value.
/// Only the groups `wanted` (by index) are drawn.
pub fn latency_iops_charts(agg: &Aggregate, wanted: &dyn Fn(usize) -> bool) -> Vec<Chart> {
    let mut charts = Vec::new();
    let data = agg.groups.iter().enumerate();
    for (_, g) in data.filter(|(i, g)| g.kind == PhaseKind::Data && wanted(*i)) {
        // Queue-depth sweeps, and thread sweeps of small-block (IOPS) workloads.
        let small = g.ops.iter().any(|o| o.measure == Measure::Iops);
        let Some(key) = g
            .swept
            .as_deref()
            .filter(|k| *k == "queue_depth" || (*k == "threads" && small))
        else {
            continue;
        };
        if g.values.len() < 2 {
            continue;
        }
        let mut series = Vec::new();
        for (i, op) in g.ops.iter().enumerate() {
            for side in sides_of(g) {
                for (j, (pname, pick)) in [("p50", 0usize), ("p99", 2usize)].into_iter().enumerate()
                {
                    let name = series_name(agg, &format!("{} {pname}", op.op.name()), side);
                    let points = g.sides[side]
                        .iter()
                        .filter_map(|p| latency_point(g, p, *op, pick, &name))
                        .collect();
                    series.push(Series {
                        name,
                        points,
                        dashed: side > 0,
                        color: i * 2 + j,
                    });
                }
            }
        }
        series.retain(|s| !s.points.is_empty());
        if series.is_empty() {
            continue;
        }
        charts.push(Chart {
            kind: "latency-iops",
            marks: Marks::Lines,
            title: format!(
                "{}: latency vs IOPS over {}",
                g.label(),
                axis_name(key).to_lowercase()
            ),
            x: XAxis::Numeric {
                title: "IOPS".to_string(),
                unit: Unit::Count,
            },
            y: YAxis {
                title: "Latency".to_string(),
                unit: Unit::Latency,
                log: true,
            },
            series,
            spans: Vec::new(),
        });
    }
    charts
}

fn latency_point(g: &Group, p: &Point, op: GroupOp, pick: usize, name: &str) -> Option<Pt> {
    let o = p.op(op.op)?;
    if o.latency.count == 0 {
        return None;
    }
    let (_, lat) = o.latency.percentiles()[pick];
    let short = match g.swept.as_deref() {
        Some("queue_depth") => format!("QD{}", p.value.as_deref()?),
        _ => format!("{}T", p.value.as_deref()?),
    };
    Some(Pt {
        x: o.iops.mean,
        y: lat.0 as f64,
        range: None,
        label: (pick == 2).then(|| short.clone()),
        tip: format!(
            "{name}: {} at {} IOPS ({})",
            lat.human(),
            Measure::Iops.format(o.iops.mean).trim_end_matches(" IOPS"),
            g.at(p).unwrap_or_default()
        ),
    })
}
