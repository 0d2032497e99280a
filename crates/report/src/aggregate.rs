//! Runs turned into series: an [`Aggregate`] holds, per group of phases ([`Group`]: a
//! workload, maybe one row of a matrix) and per side (a run, or several runs taken
//! together), the [`Point`]s of its sweep; each point holds per operation an [`OpPoint`]
//! with the repetitions' figures as a [`Spread`] and the merged latency percentiles.

use iolab_core::histogram::{LatencyHistogram, LatencySummary};
use iolab_core::result::{OpKind, PhaseKind, PhaseResult, RunRecord};
use iolab_core::stats::Spread;
use iolab_core::units::ByteCount;
use serde::Serialize;

use crate::measure::{Measure, at_phrase, params_text};
use crate::sweep::{GroupPlan, Params, plan_groups};

/// Series of one or more sides, grouped alike so that they can be overlaid and compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Aggregate {
    pub sides: Vec<SideInfo>,
    pub groups: Vec<Group>,
}

/// One side of a report or comparison: its display name and the runs it pools.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SideInfo {
    /// The runs' label when they share one, else their ids ("r12, r13").
    pub name: String,
    pub run_ids: Vec<String>,
}

/// A workload (phases sharing a name), split by any second varying parameter.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    pub name: String,
    pub kind: PhaseKind,
    /// The values of the other varying parameters that define this group (a matrix).
    pub split: Params,
    /// The swept parameter ("threads"), None for a single point.
    pub swept: Option<String>,
    /// Every swept value seen on any side, in numeric order.
    pub values: Vec<String>,
    /// Parameters with one value in the whole group.
    pub fixed: Params,
    /// The operations seen, with their figure of merit.
    pub ops: Vec<GroupOp>,
    /// Per side (same order as [`Aggregate::sides`]), the points in swept order; empty
    /// when the side has no phase of this group.
    pub sides: Vec<Vec<Point>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GroupOp {
    pub op: OpKind,
    pub measure: Measure,
}

/// One swept value of one side: all repetitions of the same phase.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// The swept value (None for a single-point group).
    pub value: Option<String>,
    /// The params of the first repetition.
    pub params: Params,
    /// The phases pooled here, as (run index within the side, phase index).
    pub phases: Vec<PhaseRef>,
    pub ops: Vec<OpPoint>,
    /// A data phase's total IOPS (reads and writes together, as the HCI study quotes its
    /// record) over the repetitions; None for a phase that moved no data.
    pub total_iops: Option<Spread>,
    /// True when the phase mixes two or more operations that move data (randrw).
    pub mixed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PhaseRef {
    pub run: usize,
    pub phase: usize,
}

/// One operation at one point: the figure of merit and its companions over repetitions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpPoint {
    pub op: OpKind,
    /// The group's measure for this op (bandwidth in bytes/s or a rate in ops/s).
    pub value: Spread,
    pub bandwidth: Spread,
    pub iops: Spread,
    /// Percentiles of all repetitions' latencies together (histograms merged).
    pub latency: LatencySummary,
    pub errors: u64,
    /// The shortest repetition's phase time (s) and its fewest operations of this op:
    /// too little to compare below `MIN_COMPARE_SECS` or `MIN_COMPARE_OPS`.
    pub shortest_s: f64,
    pub fewest_ops: u64,
}

/// A phase shorter than this is too short to compare with another run.
pub const MIN_COMPARE_SECS: f64 = 1.0;
/// An operation counted fewer times than this is too short to compare.
pub const MIN_COMPARE_OPS: u64 = 1_000;

impl OpPoint {
    /// Whether any repetition was too short for its figure to be compared.
    pub fn too_short(&self) -> bool {
        self.shortest_s < MIN_COMPARE_SECS || self.fewest_ops < MIN_COMPARE_OPS
    }
}

impl Group {
    /// The ops whose rates are headlines: all but auxiliary ones (fsync beside writes),
    /// unless they are all the group has.
    pub fn headline_ops(&self) -> Vec<GroupOp> {
        let main: Vec<GroupOp> = self
            .ops
            .iter()
            .copied()
            .filter(|o| !o.op.is_auxiliary())
            .collect();
        if main.is_empty() {
            self.ops.clone()
        } else {
            main
        }
    }

    /// "seq-write", or "seq-write [block_size=4KiB]" for a matrix row.
    pub fn label(&self) -> String {
        if self.split.is_empty() {
            self.name.clone()
        } else {
            format!("{} [{}]", self.name, params_text(&self.split))
        }
    }

    /// The metric of an op: "seq-write write bandwidth", "randread-4KiB read IOPS",
    /// "create ops/s" (a phase named after its only operation).
    pub fn metric_name(&self, op: GroupOp) -> String {
        if self.split.is_empty() && self.name == op.op.name() {
            format!("{} {}", self.name, op.measure.word())
        } else {
            format!("{} {} {}", self.label(), op.op.name(), op.measure.word())
        }
    }

    /// The measure of `op` in this group, if it was seen.
    pub fn measure(&self, op: OpKind) -> Option<Measure> {
        self.ops.iter().find(|o| o.op == op).map(|o| o.measure)
    }

    /// True when some point of the group mixes operations (its total IOPS is a figure).
    pub fn is_mixed(&self) -> bool {
        self.sides.iter().flatten().any(|p| p.mixed)
    }

    /// The point of `side` at swept value `value`.
    pub fn point(&self, side: usize, value: Option<&str>) -> Option<&Point> {
        self.sides
            .get(side)?
            .iter()
            .find(|p| p.value.as_deref() == value)
    }

    /// The point of `side` where `op`'s mean figure is highest.
    pub fn peak(&self, side: usize, op: OpKind) -> Option<(&Point, &OpPoint)> {
        self.sides
            .get(side)?
            .iter()
            .filter_map(|p| p.op(op).map(|o| (p, o)))
            .max_by(|a, b| a.1.value.mean.total_cmp(&b.1.value.mean))
    }

    /// "at 32 threads" for a point, empty for a single-point group.
    pub fn at(&self, point: &Point) -> Option<String> {
        Some(at_phrase(self.swept.as_ref()?, point.value.as_ref()?))
    }
}

impl Point {
    pub fn op(&self, op: OpKind) -> Option<&OpPoint> {
        self.ops.iter().find(|o| o.op == op)
    }

    /// The total IOPS of a mixed phase.
    pub fn total(&self) -> Option<&Spread> {
        self.total_iops.as_ref()
    }

    /// The most repetitions any op was measured with.
    pub fn repetitions(&self) -> usize {
        self.ops.iter().map(|o| o.value.n).max().unwrap_or(0)
    }
}

/// One operation at one point of one side, flattened for tables and documents: where it
/// was measured and its figure of merit over the repetitions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpreadRow {
    pub side: String,
    pub group: String,
    pub split: Params,
    pub swept_param: Option<String>,
    pub swept_value: Option<String>,
    pub op: OpKind,
    pub measure: Measure,
    pub unit: &'static str,
    /// Mean, sample standard deviation, coefficient of variation (stddev / mean), 95 %
    /// confidence interval half-width, min and max over the `n` repetitions.
    #[serde(flatten)]
    pub spread: Spread,
    /// CV over 10 %.
    pub noisy: bool,
}

impl SpreadRow {
    /// "seq-write", or "seq-write [block_size=4KiB]" for a matrix row.
    pub fn label(&self) -> String {
        if self.split.is_empty() {
            self.group.clone()
        } else {
            format!("{} [{}]", self.group, params_text(&self.split))
        }
    }

    /// "8 threads", empty for a single-point group.
    pub fn at(&self) -> String {
        match (&self.swept_param, &self.swept_value) {
            (Some(k), Some(v)) => at_phrase(k, v),
            _ => String::new(),
        }
    }
}

impl Aggregate {
    /// True when some figure was measured more than once.
    pub fn has_repetitions(&self) -> bool {
        self.groups
            .iter()
            .flat_map(|g| g.sides.iter().flatten())
            .any(|p| p.repetitions() > 1)
    }

    /// Every side × group × swept value × op, in group and swept order.
    pub fn spread_rows(&self) -> Vec<SpreadRow> {
        let mut rows = Vec::new();
        for g in &self.groups {
            for (si, points) in g.sides.iter().enumerate() {
                for p in points {
                    for o in &p.ops {
                        let measure = g.measure(o.op).unwrap_or(Measure::OpsRate);
                        rows.push(SpreadRow {
                            side: self.sides[si].name.clone(),
                            group: g.name.clone(),
                            split: g.split.clone(),
                            swept_param: g.swept.clone(),
                            swept_value: p.value.clone(),
                            op: o.op,
                            measure,
                            unit: measure.unit(),
                            spread: o.value,
                            noisy: o.value.is_noisy(),
                        });
                    }
                }
            }
        }
        rows
    }
}

/// One run, as a single side.
pub fn aggregate(run: &RunRecord) -> Aggregate {
    aggregate_sides(&[std::slice::from_ref(run)])
}

/// Several runs, each its own side, grouped alike (a report with `--vs`).
pub fn aggregate_runs(runs: &[RunRecord]) -> Aggregate {
    let sides: Vec<&[RunRecord]> = runs.iter().map(std::slice::from_ref).collect();
    aggregate_sides(&sides)
}

/// Several sides, each pooling one or more runs: phases with the same name and params in
/// the runs of one side are repetitions of one point.
pub fn aggregate_sides(sides: &[&[RunRecord]]) -> Aggregate {
    let phases: Vec<Vec<&PhaseResult>> = sides
        .iter()
        .map(|runs| runs.iter().flat_map(|r| &r.phases).collect())
        .collect();
    let groups = plan_groups(&phases)
        .into_iter()
        .map(|plan| build_group(plan, sides))
        .collect();
    Aggregate {
        sides: side_infos(sides),
        groups,
    }
}

fn side_infos(sides: &[&[RunRecord]]) -> Vec<SideInfo> {
    let mut infos: Vec<SideInfo> = sides
        .iter()
        .enumerate()
        .map(|(i, runs)| SideInfo {
            name: side_name(runs).unwrap_or_else(|| format!("run {}", i + 1)),
            run_ids: runs.iter().map(|r| r.id.clone()).collect(),
        })
        .collect();
    // Two sides with one label still need two names.
    for i in 1..infos.len() {
        if infos[..i].iter().any(|s| s.name == infos[i].name) {
            infos[i].name = format!("{} #{}", infos[i].name, i + 1);
        }
    }
    infos
}

fn side_name(runs: &[RunRecord]) -> Option<String> {
    let first = runs.first()?;
    if let Some(label) = &first.label
        && runs.iter().all(|r| r.label.as_ref() == Some(label))
    {
        return Some(label.clone());
    }
    let ids: Vec<&str> = runs
        .iter()
        .map(|r| r.id.as_str())
        .filter(|id| !id.is_empty())
        .collect();
    (!ids.is_empty()).then(|| ids.join(", "))
}

fn build_group(plan: GroupPlan, sides: &[&[RunRecord]]) -> Group {
    let block = largest_block(&plan, sides);
    let measure = |op: OpKind| Measure::choose(op, plan.kind, block);
    let sides_points: Vec<Vec<Point>> = sides
        .iter()
        .map(|runs| side_points(&plan, runs, &measure))
        .collect();
    let mut ops: Vec<OpKind> = sides_points
        .iter()
        .flatten()
        .flat_map(|p| p.ops.iter().map(|o| o.op))
        .collect();
    ops.sort();
    ops.dedup();
    Group {
        ops: ops
            .into_iter()
            .map(|op| GroupOp {
                op,
                measure: measure(op),
            })
            .collect(),
        name: plan.name,
        kind: plan.kind,
        split: plan.split,
        swept: plan.swept,
        values: plan.values,
        fixed: plan.fixed,
        sides: sides_points,
    }
}

/// The largest block_size of the group's phases, when they have one.
fn largest_block(plan: &GroupPlan, sides: &[&[RunRecord]]) -> Option<ByteCount> {
    sides
        .iter()
        .flat_map(|runs| runs.iter().flat_map(|r| &r.phases))
        .filter(|p| plan.contains(p))
        .filter_map(|p| crate::measure::block_size_of(&p.params))
        .max()
}

/// The points of one side, in swept order.
fn side_points(
    plan: &GroupPlan,
    runs: &[RunRecord],
    measure: &dyn Fn(OpKind) -> Measure,
) -> Vec<Point> {
    let mut pooled: Vec<(Params, Vec<PhaseRef>)> = Vec::new();
    for (ri, run) in runs.iter().enumerate() {
        for (pi, phase) in run.phases.iter().enumerate() {
            if !plan.contains(phase) {
                continue;
            }
            let key = plan.point_key(phase);
            let at = PhaseRef { run: ri, phase: pi };
            match pooled.iter_mut().find(|(k, _)| *k == key) {
                Some((_, refs)) => refs.push(at),
                None => pooled.push((key, vec![at])),
            }
        }
    }
    let mut points: Vec<Point> = pooled
        .into_iter()
        .map(|(_, refs)| {
            let phases: Vec<&PhaseResult> =
                refs.iter().map(|r| &runs[r.run].phases[r.phase]).collect();
            Point {
                value: plan.value_of(phases[0]),
                params: phases[0].params.clone(),
                ops: op_points(&phases, measure),
                total_iops: total_iops(&phases),
                mixed: phases.iter().any(|p| is_mixed(p)),
                phases: refs,
            }
        })
        .collect();
    let rank = |p: &Point| {
        p.value
            .as_ref()
            .and_then(|v| plan.values.iter().position(|x| x == v))
    };
    points.sort_by_key(rank);
    points
}

/// True when a data phase mixes two or more operations that move data.
fn is_mixed(p: &PhaseResult) -> bool {
    p.kind == PhaseKind::Data
        && p.ops
            .iter()
            .filter(|o| o.op.moves_data() && !o.op.is_auxiliary())
            .count()
            > 1
}

/// The IOPS of every main operation moving data added up, per repetition (randrw: reads
/// and writes; an fsync beside writes is no part of it); None for phases without data.
fn total_iops(phases: &[&PhaseResult]) -> Option<Spread> {
    let moves =
        |p: &PhaseResult| p.kind == PhaseKind::Data && p.ops.iter().any(|o| o.op.moves_data());
    if !phases.iter().any(|p| moves(p)) {
        return None;
    }
    let totals: Vec<f64> = phases
        .iter()
        .map(|p| {
            p.ops
                .iter()
                .filter(|o| o.op.moves_data() && !o.op.is_auxiliary())
                .map(|o| o.iops.get())
                .sum()
        })
        .collect();
    Spread::of(&totals)
}

/// Per op, the repetitions' figures and merged latencies.
fn op_points(phases: &[&PhaseResult], measure: &dyn Fn(OpKind) -> Measure) -> Vec<OpPoint> {
    let mut ops: Vec<OpKind> = phases
        .iter()
        .flat_map(|p| p.ops.iter().map(|o| o.op))
        .collect();
    ops.sort();
    ops.dedup();
    ops.into_iter()
        .filter_map(|op| {
            let results: Vec<_> = phases.iter().filter_map(|p| p.op(op)).collect();
            let bandwidth: Vec<f64> = results.iter().map(|o| o.bandwidth.get()).collect();
            let iops: Vec<f64> = results.iter().map(|o| o.iops.get()).collect();
            let mut merged = LatencyHistogram::new();
            for o in &results {
                merged.merge(&o.histogram);
            }
            let latency = if merged.is_empty() {
                results.first()?.latency
            } else {
                merged.summary()
            };
            let bandwidth = Spread::of(&bandwidth)?;
            let iops = Spread::of(&iops)?;
            Some(OpPoint {
                op,
                value: if measure(op) == Measure::Bandwidth {
                    bandwidth
                } else {
                    iops
                },
                bandwidth,
                iops,
                latency,
                errors: results.iter().map(|o| o.errors).sum(),
                shortest_s: phases
                    .iter()
                    .filter(|p| p.op(op).is_some())
                    .map(|p| p.elapsed.as_secs_f64())
                    .fold(f64::INFINITY, f64::min),
                fewest_ops: results.iter().map(|o| o.ops).min().unwrap_or(0),
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;
