//! Time series of one phase per group (the subject's peak point): the per-second rates of
//! every side overlaid ([`timeline_blocks`]), and beside them the device and CPU samples
//! taken while the subject's phase ran: device throughput, device IOPS, average queue
//! size, await, utilization.

use iolab_core::result::{PhaseResult, RunRecord};
use iolab_core::telemetry::{DeviceSeries, Telemetry};

use super::axis::Unit;
use super::chart::{Chart, Marks, Pt, Series, Span, XAxis, YAxis};
use super::charts::{chosen_value, color_for, noun, y_axis};
use crate::aggregate::{Aggregate, Group};
use crate::measure::Units;
use crate::report_tables::{series_name, sides_of};
use crate::timeline::{phase_timeline, telemetry_times};

fn time_axis() -> XAxis {
    XAxis::Numeric {
        title: "Time since phase start".to_string(),
        unit: Unit::Seconds,
    }
}

/// Per group with a timeline: the timeline chart, then the telemetry charts.
pub fn timeline_blocks(runs: &[RunRecord], agg: &Aggregate, units: Units) -> Vec<Vec<Chart>> {
    agg.groups
        .iter()
        .filter_map(|g| {
            let value = chosen_value(g)?;
            let phases: Vec<(usize, &PhaseResult)> = sides_of(g)
                .into_iter()
                .filter_map(|side| {
                    let point = g.point(side, value.as_deref())?;
                    let r = point.phases.first()?;
                    Some((side, runs.get(side)?.phases.get(r.phase)?))
                })
                .collect();
            let chart = timeline_chart(agg, g, &phases, units)?;
            let mut block = vec![chart];
            if let Some((0, phase)) = phases.first()
                && let Some(t) = &phase.telemetry
            {
                block.extend(telemetry_charts(g, phase, t, units));
            }
            Some(block)
        })
        .collect()
}

fn timeline_chart(
    agg: &Aggregate,
    g: &Group,
    phases: &[(usize, &PhaseResult)],
    units: Units,
) -> Option<Chart> {
    let measure = g.ops.first()?.measure;
    let ops: Vec<_> = g
        .ops
        .iter()
        .filter(|o| o.measure == measure)
        .map(|o| o.op)
        .collect();
    let mut series = Vec::new();
    for (side, phase) in phases {
        for s in phase_timeline(phase).series {
            let Some(index) = ops.iter().position(|op| *op == s.op) else {
                continue;
            };
            let name = series_name(agg, s.op.name(), *side);
            let points = s
                .times_s
                .iter()
                .zip(&s.values)
                .map(|(t, v)| Pt {
                    x: *t,
                    y: *v,
                    range: None,
                    label: None,
                    tip: format!("{name}: {} at {t:.1} s", measure.format_in(*v, units)),
                })
                .collect();
            series.push(Series {
                name,
                points,
                dashed: *side > 0,
                color: color_for(index, ops.len(), *side),
            });
        }
    }
    if series.iter().all(|s| s.points.is_empty()) {
        return None;
    }
    let at = phases
        .first()
        .and_then(|(side, _)| g.point(*side, chosen_value(g)?.as_deref()))
        .and_then(|p| g.at(p))
        .map(|a| format!(" at {a}"))
        .unwrap_or_default();
    // The first side's pause, shaded where it lay.
    let spans = phases
        .first()
        .and_then(|(_, p)| p.pause())
        .map(|p| Span {
            from: p.start.as_secs_f64(),
            to: (p.start + p.length).as_secs_f64(),
            label: format!(
                "no completion for {:.1} s, {} I/Os retried",
                p.length.as_secs_f64(),
                p.ios_retried
            ),
        })
        .into_iter()
        .collect();
    Some(Chart {
        kind: "timeline",
        marks: Marks::Lines,
        title: format!("{}{at}: per-second {}", g.label(), noun(measure)),
        x: time_axis(),
        y: y_axis(measure, false, units),
        series,
        spans,
    })
}

/// Telemetry series from (name, values), drawn at `scale` times the values (await in ms
/// on a latency axis in ns) with tooltips in the values' own `unit`; a series that stayed
/// at zero (reads during a write phase) is left out, and colours follow the order of
/// those kept.
fn series_of(
    times: &[f64],
    unit: &str,
    scale: f64,
    lines: Vec<(String, &Vec<f64>)>,
) -> Vec<Series> {
    lines
        .into_iter()
        .filter(|(_, values)| values.iter().any(|v| *v != 0.0))
        .enumerate()
        .map(|(color, (name, values))| Series {
            points: times
                .iter()
                .zip(values)
                .map(|(t, v)| Pt {
                    x: *t,
                    y: *v * scale,
                    range: None,
                    label: None,
                    tip: format!("{name}: {v:.1}{unit} at {t:.1} s"),
                })
                .collect(),
            name,
            dashed: false,
            color,
        })
        .collect()
}

/// The lines of each telemetry chart: (kind, what, y axis, unit of tooltips, scale from
/// values to the axis, lines).
type TelemetryLines<'a> = (
    &'static str,
    &'static str,
    YAxis,
    &'static str,
    f64,
    Vec<(String, &'a Vec<f64>)>,
);

/// Nanoseconds in a millisecond: await is stored in ms, latency axes are in ns.
const NS_PER_MS: f64 = 1e6;

fn telemetry_lines(t: &Telemetry, units: Units) -> [TelemetryLines<'_>; 5] {
    let per_device = |pick: &dyn Fn(&DeviceSeries) -> [&Vec<f64>; 2]| {
        t.devices
            .iter()
            .flat_map(|d| {
                let [read, write] = pick(d);
                [
                    (format!("{} read", d.name), read),
                    (format!("{} write", d.name), write),
                ]
            })
            .collect::<Vec<_>>()
    };
    let c = &t.cpu;
    let mut busy: Vec<(String, &Vec<f64>)> = t
        .devices
        .iter()
        .map(|d| (format!("{} busy", d.name), &d.util_percent))
        .collect();
    busy.push(("CPU user".into(), &c.user_percent));
    busy.push(("CPU system".into(), &c.system_percent));
    busy.push(("CPU iowait".into(), &c.iowait_percent));
    let axis = |title: &str, unit| YAxis {
        title: title.to_string(),
        unit,
        log: false,
    };
    [
        (
            "device-throughput",
            "device throughput",
            axis(
                "Throughput",
                match units {
                    Units::Binary => Unit::BytesPerSec,
                    Units::Decimal => Unit::DecimalBytesPerSec,
                },
            ),
            " B/s",
            1.0,
            per_device(&|d| [&d.read_bytes_per_sec, &d.write_bytes_per_sec]),
        ),
        (
            "device-iops",
            "device IOPS",
            axis("IOPS", Unit::Count),
            " IOPS",
            1.0,
            per_device(&|d| [&d.read_iops, &d.write_iops]),
        ),
        (
            "device-queue",
            "device average queue size",
            axis("Average queue size, requests", Unit::Count),
            " requests",
            1.0,
            t.devices
                .iter()
                .map(|d| (d.name.clone(), &d.queue_size))
                .collect(),
        ),
        (
            "device-await",
            "device await (queueing included)",
            axis("Await", Unit::Latency),
            " ms",
            NS_PER_MS,
            per_device(&|d| [&d.read_await_ms, &d.write_await_ms]),
        ),
        (
            "utilization",
            "device busy and CPU",
            axis("Busy", Unit::Percent),
            "%",
            1.0,
            busy,
        ),
    ]
}

/// Device throughput, IOPS, average queue size, await, and utilization with host CPU,
/// for one phase.
fn telemetry_charts(g: &Group, phase: &PhaseResult, t: &Telemetry, units: Units) -> Vec<Chart> {
    let times = telemetry_times(phase, t);
    let host = match t.host.as_str() {
        "" => String::new(),
        h => format!(" on {h}"),
    };
    telemetry_lines(t, units)
        .into_iter()
        .map(|(kind, what, y, unit, scale, lines)| Chart {
            kind,
            marks: Marks::Lines,
            title: format!("{}: {what}{host}", g.label()),
            x: time_axis(),
            y,
            series: series_of(&times, unit, scale, lines),
            spans: Vec::new(),
        })
        .filter(|c| !c.series.is_empty())
        .collect()
}
