//! The charts of an [`Aggregate`]: per data group and measure, the figure against the swept
//! parameter ([`sweep_charts`]); metadata rates against threads ([`metadata_charts`]);
//! latency percentiles at the subject's peak ([`percentile_charts`]); latency against
//! IOPS over a queue-depth or thread sweep ([`latency_iops_charts`]). Every side is
//! overlaid, compared runs dashed.

use iolab_core::result::PhaseKind;

use super::axis::Unit;
use super::chart::{Chart, Pt, Series, XAxis, YAxis};
use crate::aggregate::{Aggregate, Group, GroupOp, Point};
use crate::compare::{Judged, judged};
use crate::measure::{Measure, axis_name};
use crate::report_tables::{series_name, sides_of};
use crate::sweep::value_order;

/// A y axis for a measure: "Throughput (GiB/s)", "IOPS", "Rate (ops/s)".
pub(super) fn y_axis(measure: Measure, log: bool) -> YAxis {
    let (title, unit) = match measure {
        Measure::Bandwidth => ("Throughput", Unit::BytesPerSec),
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
    values: &[String],
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
                tip: format!("{name}: {}{at}", measure.format(o.mean)),
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

/// Figure vs swept value, one chart per data group and measure with a sweep.
pub fn sweep_charts(agg: &Aggregate) -> Vec<Chart> {
    let mut charts = Vec::new();
    for g in agg.groups.iter().filter(|g| g.kind != PhaseKind::Meta) {
        let Some(key) = &g.swept else { continue };
        for measure in measures(g) {
            let mut series = Vec::new();
            let ops: Vec<GroupOp> = g
                .headline_ops()
                .into_iter()
                .filter(|o| judged(g, *o).iter().any(|j| j.measure == measure))
                .collect();
            for (i, op) in ops.iter().enumerate() {
                for side in sides_of(g) {
                    let color = color_for(i, ops.len(), side);
                    let series_of = (*op, side, measure);
                    series.push(op_series(agg, g, series_of, &g.values, color));
                }
            }
            charts.push(Chart {
                kind: "sweep",
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
                y: y_axis(measure, false),
                series,
            });
        }
    }
    charts
}

/// Metadata rates vs the swept parameter (threads), every metadata group of one swept
/// parameter in one chart, one line per op and side; log scale when rates differ tenfold.
pub fn metadata_charts(agg: &Aggregate) -> Vec<Chart> {
    let meta: Vec<&Group> = agg
        .groups
        .iter()
        .filter(|g| g.kind == PhaseKind::Meta && g.swept.is_some())
        .collect();
    let mut keys: Vec<&String> = meta.iter().filter_map(|g| g.swept.as_ref()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|key| {
            let groups: Vec<&&Group> = meta
                .iter()
                .filter(|g| g.swept.as_ref() == Some(key))
                .collect();
            let mut values: Vec<String> = groups.iter().flat_map(|g| g.values.clone()).collect();
            values.sort_by(|a, b| value_order(a, b));
            values.dedup();
            let metrics: Vec<(&Group, GroupOp)> = groups
                .iter()
                .flat_map(|g| g.headline_ops().into_iter().map(move |op| (**g, op)))
                .collect();
            let mut series = Vec::new();
            for (i, (g, op)) in metrics.iter().enumerate() {
                for side in sides_of(g) {
                    let color = color_for(i, metrics.len(), side);
                    series.push(op_series(agg, g, (*op, side, op.measure), &values, color));
                }
            }
            let log = spans_decade(&series);
            Chart {
                kind: "metadata",
                title: format!("Metadata rates vs {}", axis_name(key).to_lowercase()),
                x: XAxis::Categories {
                    title: axis_name(key),
                    labels: values,
                },
                y: y_axis(Measure::OpsRate, log),
                series,
            }
        })
        .collect()
}

/// True when the series' peaks differ by ten times or more.
fn spans_decade(series: &[Series]) -> bool {
    let peaks: Vec<f64> = series
        .iter()
        .filter_map(|s| s.points.iter().map(|p| p.y).reduce(f64::max))
        .filter(|v| *v > 0.0)
        .collect();
    let hi = peaks.iter().copied().fold(0.0, f64::max);
    let lo = peaks.iter().copied().fold(f64::INFINITY, f64::min);
    hi >= 10.0 * lo
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
pub fn latency_iops_charts(agg: &Aggregate) -> Vec<Chart> {
    let mut charts = Vec::new();
    for g in agg.groups.iter().filter(|g| g.kind == PhaseKind::Data) {
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
