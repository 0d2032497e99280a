//! Statistics and defect detection over per-target figures, a pure function of a list
//! of [`TargetFigure`] so measured runs and imported results (beegfs-ctl) share it, and
//! [`TargetsPhase`], one measured direction of a targets run as the renderers read it.
//! [`analyze`] returns a [`TargetAnalysis`]: minimum and maximum with their ids, average,
//! aggregate, median and MAD, a [`TargetVerdict`] per target, targets flagged as slow
//! ([`SlowTarget`]) or whole nodes ([`SlowNode`]), and % of rated figures ([`Theoretical`]).
//!
//! A target is slow when it lies at least `threshold` percent below its reference AND is
//! an outlier by the modified z-score of its log rate, 0.6745 (ln x - median) / MAD < -3.5
//! (Iglewicz and Hoaglin; median and MAD of the reference's log rates): robust
//! statistics, so a few bad targets cannot drag the reference down with them, and a
//! uniform set flags nothing.
//!
//! Nodes are judged first, each against the targets of all *other* nodes (leave one
//! out): with two nodes the overall median falls between a healthy and a slow node and
//! flags neither, but each node against the other finds the slow one. A node whose
//! targets are all (or at least three in four, and two or more) slow against the others
//! is flagged once as a node, its cause likely shared. Single targets are then judged
//! against the targets of the nodes not flagged (all targets when too few remain), and
//! the analysis says which reference it used.

use std::collections::BTreeMap;

use crate::result::PhaseResult;
use crate::spec::{Rated, RatedUnit, RwKind};
use crate::stats::{mad, median};
use serde::{Deserialize, Serialize};

/// One phase (write or read) over all targets.
#[derive(Debug)]
pub struct TargetsPhase {
    pub rw: RwKind,
    /// The phase as a whole: time, timeline, CPU, per-rank rows, and the statistics in
    /// `extra` (operations are in the targets' phases).
    pub summary: PhaseResult,
    /// One phase per target ("target 19"), in the order of the suite's target set.
    pub targets: Vec<PhaseResult>,
    pub analysis: Option<TargetAnalysis>,
}

/// Modified z-score below which a target is an outlier.
pub const OUTLIER_Z: f64 = -3.5;
/// Fewer targets than this cannot be compared with their peers.
pub const MIN_TARGETS: usize = 3;

/// One target's measured figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetFigure {
    pub id: String,
    pub node: String,
    /// The service on `node` the target belongs to, where one machine runs several
    /// (BeeGFS's "node006-numa0-1"); shown in place of the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// Bytes per second.
    pub throughput: f64,
    /// Operations per second (0 when unknown).
    pub iops: f64,
    pub rated: Option<Rated>,
}

/// The slowest or fastest target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Extreme {
    pub id: String,
    pub node: String,
    /// The service on `node` the target belongs to, where one machine runs several
    /// (BeeGFS's "node006-numa0-1"); shown in place of the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    pub throughput: f64,
}

/// How one target compares with its peers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetVerdict {
    pub id: String,
    pub node: String,
    /// The service on `node` the target belongs to, where one machine runs several
    /// (BeeGFS's "node006-numa0-1"); shown in place of the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    pub throughput: f64,
    /// Signed distance from the median in percent (-18.0: 18 % below).
    pub vs_median_percent: f64,
    /// Modified z-score (None when the MAD is 0).
    pub robust_z: Option<f64>,
    pub slow: bool,
    /// Slow as part of a slow node.
    pub node_slow: bool,
    pub percent_of_rated: Option<f64>,
}

/// A target flagged on its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowTarget {
    pub id: String,
    pub node: String,
    /// The service on `node` the target belongs to, where one machine runs several
    /// (BeeGFS's "node006-numa0-1"); shown in place of the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    pub throughput: f64,
    /// How far below the median, in percent (positive).
    pub below_median_percent: f64,
}

/// A node most of whose targets are slow: one cause (controller, NUMA, firmware) is
/// likelier than several bad targets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowNode {
    pub node: String,
    pub slow: usize,
    pub targets: usize,
    pub ids: Vec<String>,
    /// The node's median below `reference`, in percent (positive).
    pub below_median_percent: f64,
    /// The median of the targets on all other nodes, bytes per second.
    #[serde(default)]
    pub reference: f64,
}

/// Measured figures against rated ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Theoretical {
    pub unit: RatedUnit,
    /// Sum of the rated figures of the rated targets.
    pub rated_total: f64,
    /// Sum of their measured figures, in the same unit.
    pub measured_total: f64,
    pub percent: f64,
    /// Targets with a rated figure (of this unit) out of all.
    pub rated_targets: usize,
}

/// Everything [`analyze`] finds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetAnalysis {
    pub count: usize,
    pub min: Extreme,
    pub max: Extreme,
    /// Mean throughput per target.
    pub average: f64,
    /// Sum of the targets' throughputs.
    pub aggregate: f64,
    /// The median single targets are judged against: of the targets on nodes not
    /// flagged, or of all targets (see `reference`).
    pub median: f64,
    /// Median absolute deviation from that median (unscaled).
    pub mad: f64,
    /// What `median` is the median of ("all 22 targets", "the 18 targets on nodes not
    /// flagged").
    #[serde(default)]
    pub reference: String,
    pub threshold_percent: f64,
    /// In the order of the input.
    pub targets: Vec<TargetVerdict>,
    /// Slow targets not already covered by a slow node, slowest first.
    pub slow_targets: Vec<SlowTarget>,
    pub slow_nodes: Vec<SlowNode>,
    pub theoretical: Option<Theoretical>,
    /// Why some figure could not be given ("too few targets to compare").
    pub notes: Vec<String>,
}

impl TargetAnalysis {
    pub fn verdict(&self, node: &str, id: &str) -> Option<&TargetVerdict> {
        self.targets.iter().find(|t| t.node == node && t.id == id)
    }

    /// Nothing flagged.
    pub fn is_clean(&self) -> bool {
        self.slow_targets.is_empty() && self.slow_nodes.is_empty()
    }
}

fn percent_vs(value: f64, reference: f64) -> f64 {
    if reference == 0.0 {
        0.0
    } else {
        (value - reference) / reference * 100.0
    }
}

/// A figure in the unit it is rated in (MB/s: decimal megabytes per second).
fn in_unit(f: &TargetFigure, unit: RatedUnit) -> f64 {
    match unit {
        RatedUnit::MegabytesPerSec => f.throughput / 1e6,
        RatedUnit::Iops => f.iops,
    }
}

/// Analyzes per-target figures; None for an empty list. `threshold_percent`: how far
/// below the median a target must be to be flagged.
pub fn analyze(figures: &[TargetFigure], threshold_percent: f64) -> Option<TargetAnalysis> {
    let values: Vec<f64> = figures.iter().map(|f| f.throughput).collect();
    median(&values)?;
    let aggregate: f64 = values.iter().sum();
    let comparable = figures.len() >= MIN_TARGETS;
    let mut notes = Vec::new();
    if !comparable {
        notes.push(format!(
            "{} target{} too few to compare with their peers (need {MIN_TARGETS})",
            figures.len(),
            if figures.len() == 1 { " is" } else { "s are" }
        ));
    }
    let slow_at = comparable.then_some(threshold_percent);
    let slow_nodes = match slow_at {
        Some(t) => slow_nodes(figures, t),
        None => Vec::new(),
    };
    // Single targets against the nodes not flagged, when enough of them remain.
    let on_slow_node = |f: &TargetFigure| slow_nodes.iter().any(|n| n.node == f.node);
    let healthy: Vec<f64> = figures
        .iter()
        .filter(|f| !on_slow_node(f))
        .map(|f| f.throughput)
        .collect();
    let (reference_values, reference) = if !slow_nodes.is_empty() && healthy.len() >= MIN_TARGETS {
        let text = format!("the {} targets on nodes not flagged", healthy.len());
        (healthy, text)
    } else {
        (values.clone(), format!("all {} targets", figures.len()))
    };
    let med = median(&reference_values)?;
    let spread = mad(&reference_values).unwrap_or(0.0);
    let scale = LogScale::of(&reference_values);
    let mut targets: Vec<TargetVerdict> = figures
        .iter()
        .map(|f| verdict(f, med, scale, slow_at))
        .collect();
    for (t, f) in targets.iter_mut().zip(figures) {
        if let Some(n) = slow_nodes.iter().find(|n| n.node == f.node) {
            t.node_slow = n.ids.contains(&f.id);
            t.slow |= t.node_slow;
        }
    }
    let mut slow_targets: Vec<SlowTarget> = targets
        .iter()
        .filter(|t| t.slow && !t.node_slow)
        .map(|t| SlowTarget {
            id: t.id.clone(),
            node: t.node.clone(),
            service: t.service.clone(),
            throughput: t.throughput,
            below_median_percent: -t.vs_median_percent,
        })
        .collect();
    slow_targets.sort_by(|a, b| a.throughput.total_cmp(&b.throughput));
    let theoretical = theoretical(figures, &mut notes);
    Some(TargetAnalysis {
        count: figures.len(),
        min: extreme(figures, |a, b| a < b),
        max: extreme(figures, |a, b| a > b),
        average: aggregate / figures.len() as f64,
        aggregate,
        median: med,
        mad: spread,
        reference,
        threshold_percent,
        targets,
        slow_targets,
        slow_nodes,
        theoretical,
        notes,
    })
}

/// The target `better` prefers over all others (the first of equals).
fn extreme(figures: &[TargetFigure], better: fn(f64, f64) -> bool) -> Extreme {
    let best = figures
        .iter()
        .reduce(|a, b| {
            if better(b.throughput, a.throughput) {
                b
            } else {
                a
            }
        })
        .expect("analyze checked the list is not empty");
    Extreme {
        id: best.id.clone(),
        node: best.node.clone(),
        service: best.service.clone(),
        throughput: best.throughput,
    }
}

/// The median and MAD of the logarithms of a reference's rates: rates are ratios of
/// each other (a target at half the rate is as far below as one at twice is above), so
/// the outlier test works on their logarithms. On the rates themselves, a reference that
/// spreads widely (page-cache writes: 0.5 to 3 GB/s) has a MAD so large that a node a
/// thousand times slower was no outlier.
#[derive(Clone, Copy, Debug)]
struct LogScale {
    median: f64,
    mad: f64,
}

impl LogScale {
    fn of(values: &[f64]) -> Option<LogScale> {
        let logs: Vec<f64> = values.iter().map(|v| log_rate(*v)).collect();
        Some(LogScale {
            median: median(&logs)?,
            mad: mad(&logs)?,
        })
    }
}

/// A rate's natural logarithm, with 1 byte/s as the floor (a target that did nothing).
fn log_rate(v: f64) -> f64 {
    v.max(1.0).ln()
}

/// One target against the median; `slow_at`: the threshold, when targets are
/// comparable at all. The outlier test is the modified z-score of the log rate against
/// `scale` (the reference's).
fn verdict(
    f: &TargetFigure,
    med: f64,
    scale: Option<LogScale>,
    slow_at: Option<f64>,
) -> TargetVerdict {
    let vs = percent_vs(f.throughput, med);
    let z = scale
        .filter(|s| s.mad > 0.0)
        .map(|s| 0.6745 * (log_rate(f.throughput) - s.median) / s.mad);
    let outlier = z.is_none_or(|z| z < OUTLIER_Z);
    TargetVerdict {
        id: f.id.clone(),
        node: f.node.clone(),
        service: f.service.clone(),
        throughput: f.throughput,
        vs_median_percent: vs,
        robust_z: z,
        slow: slow_at.is_some_and(|t| vs <= -t && outlier),
        node_slow: false,
        percent_of_rated: f
            .rated
            .filter(|r| r.value > 0.0)
            .map(|r| in_unit(f, r.unit) / r.value * 100.0),
    }
}

/// Nodes most of whose targets are slow against the targets of all other nodes (each
/// node left out of its own reference), slowest first.
fn slow_nodes(figures: &[TargetFigure], threshold_percent: f64) -> Vec<SlowNode> {
    let mut by_node: BTreeMap<&str, Vec<&TargetFigure>> = BTreeMap::new();
    for f in figures {
        by_node.entry(f.node.as_str()).or_default().push(f);
    }
    if by_node.len() < 2 {
        return Vec::new();
    }
    let mut nodes = Vec::new();
    for (node, members) in &by_node {
        let others: Vec<f64> = figures
            .iter()
            .filter(|f| f.node != *node)
            .map(|f| f.throughput)
            .collect();
        let Some(reference) = median(&others) else {
            continue;
        };
        let scale = LogScale::of(&others);
        let slow: Vec<&TargetFigure> = members
            .iter()
            .copied()
            .filter(|f| verdict(f, reference, scale, Some(threshold_percent)).slow)
            .collect();
        if slow.len() < 2 || slow.len() * 4 < members.len() * 3 {
            continue;
        }
        let node_values: Vec<f64> = members.iter().map(|f| f.throughput).collect();
        let node_median = median(&node_values).unwrap_or(0.0);
        nodes.push(SlowNode {
            node: node.to_string(),
            slow: slow.len(),
            targets: members.len(),
            ids: slow.iter().map(|f| f.id.clone()).collect(),
            below_median_percent: -percent_vs(node_median, reference),
            reference,
        });
    }
    nodes.sort_by(|a, b| b.below_median_percent.total_cmp(&a.below_median_percent));
    nodes
}

/// The aggregate as % of the sum of rated figures, when targets carry them.
fn theoretical(figures: &[TargetFigure], notes: &mut Vec<String>) -> Option<Theoretical> {
    let rated: Vec<(&TargetFigure, Rated)> = figures
        .iter()
        .filter_map(|f| f.rated.map(|r| (f, r)))
        .collect();
    let unit = rated.first()?.1.unit;
    if rated.iter().any(|(_, r)| r.unit != unit) {
        notes.push(
            "rated figures mix MB/s and IOPS: no aggregate % of theoretical (each target still has its own)"
                .to_string(),
        );
        return None;
    }
    if rated.len() < figures.len() {
        notes.push(format!(
            "only {} of {} targets have a rated figure: % of theoretical covers those",
            rated.len(),
            figures.len()
        ));
    }
    let rated_total: f64 = rated.iter().map(|(_, r)| r.value).sum();
    let measured_total: f64 = rated.iter().map(|(f, _)| in_unit(f, unit)).sum();
    Some(Theoretical {
        unit,
        rated_total,
        measured_total,
        percent: if rated_total > 0.0 {
            measured_total / rated_total * 100.0
        } else {
            0.0
        },
        rated_targets: rated.len(),
    })
}

/// Where a target is, as a user names it: its service where it has one, else its node.
pub fn place<'a>(node: &'a str, service: &'a Option<String>) -> &'a str {
    service.as_deref().unwrap_or(node)
}

/// The findings in words, one line each: slow nodes first, then single targets.
pub fn flag_lines(a: &TargetAnalysis) -> Vec<String> {
    let mut lines = Vec::new();
    for n in &a.slow_nodes {
        let how_many = if n.slow == n.targets {
            format!("all {} targets", n.targets)
        } else {
            format!("{} of {} targets", n.slow, n.targets)
        };
        lines.push(format!(
            "node {}: {how_many} are slow, {:.1}% below the median of the other nodes' targets (targets {}): a node-level cause (controller, NUMA, firmware) is likely",
            n.node,
            n.below_median_percent,
            n.ids.join(", ")
        ));
    }
    let of = if a.slow_nodes.is_empty() {
        String::new()
    } else {
        format!(" of {}", a.reference)
    };
    for t in &a.slow_targets {
        lines.push(format!(
            "target {} on node {}: {:.1}% below the median{of}",
            t.id,
            place(&t.node, &t.service),
            t.below_median_percent
        ));
    }
    lines
}

#[cfg(test)]
#[path = "targets_tests.rs"]
mod tests;
