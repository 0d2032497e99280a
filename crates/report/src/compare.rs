//! The comparison the NFS study ends with: for every metric (a group's op and measure), the
//! [`Peak`] of the baseline and of the candidate, where each was reached, the change in %
//! and whether it is within the measured [`Noise`]; and the change at every swept value
//! ([`PointChange`]: per thread count), since two peaks can sit at different thread
//! counts. [`Comparison`] holds the [`MetricRow`]s.

use iolab_core::result::{OpKind, RunRecord};
use iolab_core::stats::{Spread, percent_change};
use iolab_core::units::ByteCount;
use serde::Serialize;

use crate::aggregate::{Aggregate, Group, GroupOp, OpPoint, Point, SideInfo, aggregate_sides};
use crate::measure::{IOPS_BLOCK_LIMIT, Measure, Units, at_phrase, change_words};
use crate::sweep::Params;

/// Baseline (A, the old version) against candidate (B, the new one).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline: SideInfo,
    pub candidate: SideInfo,
    pub rows: Vec<MetricRow>,
}

/// One metric on both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricRow {
    /// "seq-write write bandwidth", "randread-4KiB read IOPS", "create ops/s".
    pub metric: String,
    /// The group: phase name and matrix split.
    pub phase: String,
    pub split: Params,
    pub op: OpKind,
    pub measure: Measure,
    /// The swept parameter the peaks are located on.
    pub swept: Option<String>,
    pub baseline: Option<Peak>,
    pub candidate: Option<Peak>,
    /// (candidate - baseline) / baseline in %, when both exist and the baseline is not 0.
    pub change_percent: Option<f64>,
    pub noise: Noise,
    /// The change at every swept value either side measured, in swept order; empty for a
    /// single point.
    pub points: Vec<PointChange>,
}

/// One metric at one swept value on both sides: "at 16 threads, 979 MiB/s against 700".
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointChange {
    /// The swept value ("16").
    pub at: String,
    /// Each side's figure over its repetitions, when it measured this value.
    pub baseline: Option<Spread>,
    pub candidate: Option<Spread>,
    /// (candidate - baseline) / baseline in %.
    pub change_percent: Option<f64>,
    pub noise: Noise,
}

/// The best mean figure of a side and where it was reached.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Peak {
    /// Mean over repetitions, in the measure's unit (bytes/s or ops/s).
    pub value: f64,
    /// The swept value of the peak ("32"), None for a single point.
    pub at: Option<String>,
    /// The repetitions at the peak.
    pub spread: Spread,
    /// A repetition at the peak was too short to compare (see [`OpPoint::too_short`]).
    pub too_short: bool,
}

/// Whether a change stands out of the noise the repetitions measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Noise {
    /// The 95 % confidence intervals overlap, or the change is below the larger CV.
    Within,
    /// Larger than the noise.
    Beyond,
    /// No repetitions, so the noise is not known.
    Unknown,
    /// A side's phase lasted under a second or counted too few operations: whatever the
    /// change, it says nothing.
    TooShort,
}

impl Noise {
    pub fn describe(self) -> &'static str {
        match self {
            Noise::Within => "within noise",
            Noise::Beyond => "beyond noise",
            Noise::Unknown => "noise unknown",
            Noise::TooShort => "too short to compare",
        }
    }
}

/// Which sides have a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    Both,
    BaselineOnly,
    CandidateOnly,
}

impl MetricRow {
    pub fn presence(&self) -> Presence {
        match (&self.baseline, &self.candidate) {
            (Some(_), None) => Presence::BaselineOnly,
            (None, Some(_)) => Presence::CandidateOnly,
            _ => Presence::Both,
        }
    }

    /// Where a peak was reached: "32 threads"; None for a single point.
    pub fn at_phrase(&self, peak: &Peak) -> Option<String> {
        Some(at_phrase(self.swept.as_ref()?, peak.at.as_ref()?))
    }

    /// Where a point lies: "16 threads"; empty for a single point.
    pub fn point_phrase(&self, point: &PointChange) -> String {
        self.swept
            .as_ref()
            .map(|k| at_phrase(k, &point.at))
            .unwrap_or_default()
    }

    /// A peak for people: "4.47 GiB/s at 32 threads".
    pub fn peak_text(&self, peak: &Peak) -> String {
        self.peak_text_in(peak, Units::Binary)
    }

    /// [`MetricRow::peak_text`] in `units`: "4.80 GB/s at 32 threads".
    pub fn peak_text_in(&self, peak: &Peak, units: Units) -> String {
        let value = self.measure.format_in(peak.value, units);
        match self.at_phrase(peak) {
            Some(at) => format!("{value} at {at}"),
            None => value,
        }
    }
}

impl Comparison {
    /// What the table's noise column leaves unsaid, once under it.
    pub fn noise_notes(&self) -> Vec<&'static str> {
        let has = |n: Noise| self.rows.iter().any(|r| r.noise == n);
        let mut notes = Vec::new();
        if has(Noise::Unknown) {
            notes.push(
                "noise unknown: one run per side measures no noise; repeat the phases (study --repeat N) on both sides to tell a change from noise",
            );
        }
        if has(Noise::TooShort) {
            notes.push(
                "too short to compare: a phase under 1 s or with fewer than 1,000 operations of the op; its change says nothing, run it longer",
            );
        }
        notes
    }

    /// The row in words, as the NFS study phrases it: "randread-4KiB read IOPS peak: 42%
    /// lower", "create ops/s: only in v7.4".
    pub fn phrase(&self, row: &MetricRow) -> String {
        match (row.presence(), row.change_percent) {
            (Presence::BaselineOnly, _) => {
                format!("{}: only in {}", row.metric, self.baseline.name)
            }
            (Presence::CandidateOnly, _) => {
                format!("{}: only in {}", row.metric, self.candidate.name)
            }
            (Presence::Both, Some(change)) => {
                let noise = match row.noise {
                    Noise::Within => " (within noise)",
                    Noise::TooShort => " (too short to compare: under 1 s or 1,000 operations)",
                    _ => "",
                };
                format!("{} peak: {}{noise}", row.metric, change_words(change))
            }
            (Presence::Both, None) => format!("{} peak: no change computable", row.metric),
        }
    }
}

/// Compares two runs: `baseline` (A) against `candidate` (B).
pub fn compare(baseline: &RunRecord, candidate: &RunRecord) -> Comparison {
    compare_sides(
        std::slice::from_ref(baseline),
        std::slice::from_ref(candidate),
    )
}

/// Compares two sets of runs (e.g. all runs labelled "v7.3" against all labelled "v7.4"):
/// runs of a side with the same phase name and params are repetitions.
pub fn compare_sides(baseline: &[RunRecord], candidate: &[RunRecord]) -> Comparison {
    compare_aggregate(&aggregate_sides(&[baseline, candidate]), 0, 1)
}

/// Compares two sides of an aggregate (indices into `agg.sides`).
pub fn compare_aggregate(agg: &Aggregate, baseline: usize, candidate: usize) -> Comparison {
    let rows = agg
        .groups
        .iter()
        .flat_map(|g| {
            g.headline_ops().into_iter().flat_map(move |op| {
                judged(g, op)
                    .into_iter()
                    .map(move |j| metric_row(g, op, j, baseline, candidate))
            })
        })
        .filter(|r| r.baseline.is_some() || r.candidate.is_some())
        .collect();
    Comparison {
        baseline: agg.sides[baseline].clone(),
        candidate: agg.sides[candidate].clone(),
        rows,
    }
}

/// A figure a group's op is judged by, over the points it applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Judged {
    pub measure: Measure,
    /// Only blocks smaller than [`IOPS_BLOCK_LIMIT`] (true), only larger ones (false), or
    /// every point (None).
    pub small_blocks: Option<bool>,
}

impl Judged {
    pub fn admits(&self, p: &Point) -> bool {
        match self.small_blocks {
            None => true,
            Some(small) => block_size(p).is_some_and(|b| (b.get() < IOPS_BLOCK_LIMIT) == small),
        }
    }

    /// The figure of `o` this measure reads.
    pub fn spread(&self, op: GroupOp, o: &OpPoint) -> Spread {
        match self.measure {
            m if m == op.measure => o.value,
            Measure::Iops => o.iops,
            Measure::Bandwidth => o.bandwidth,
            Measure::OpsRate => o.value,
        }
    }
}

fn block_size(p: &Point) -> Option<ByteCount> {
    crate::measure::block_size_of(&p.params)
}

/// What a group's op is judged by. A sweep over block sizes on both sides of
/// [`IOPS_BLOCK_LIMIT`] (4KiB and 2MiB) is judged twice, as storage studies read it: IOPS
/// over the small blocks, bandwidth over the large ones. Anything else by its measure
/// over every point.
pub(crate) fn judged(g: &Group, op: GroupOp) -> Vec<Judged> {
    let whole = Judged {
        measure: op.measure,
        small_blocks: None,
    };
    if g.swept.as_deref() != Some("block_size") || op.measure == Measure::OpsRate {
        return vec![whole];
    }
    let blocks: Vec<ByteCount> = g.sides.iter().flatten().filter_map(block_size).collect();
    let small = |b: &ByteCount| b.get() < IOPS_BLOCK_LIMIT;
    let straddles = blocks.iter().any(small) && blocks.iter().any(|b| !small(b));
    if !straddles {
        return vec![whole];
    }
    vec![
        Judged {
            measure: Measure::Iops,
            small_blocks: Some(true),
        },
        Judged {
            measure: Measure::Bandwidth,
            small_blocks: Some(false),
        },
    ]
}

fn metric_row(
    g: &Group,
    op: GroupOp,
    judged: Judged,
    baseline: usize,
    candidate: usize,
) -> MetricRow {
    let peak = |side: usize| {
        g.sides
            .get(side)?
            .iter()
            .filter(|p| judged.admits(p))
            .filter_map(|p| {
                let o = p.op(op.op)?;
                Some((p, judged.spread(op, o), o.too_short()))
            })
            .max_by(|a, b| a.1.mean.total_cmp(&b.1.mean))
            .map(|(p, spread, too_short)| Peak {
                value: spread.mean,
                at: p.value.clone(),
                spread,
                too_short,
            })
    };
    let (a, b) = (peak(baseline), peak(candidate));
    let change_percent = match (&a, &b) {
        (Some(a), Some(b)) => percent_change(a.value, b.value),
        _ => None,
    };
    let noise = match (&a, &b, change_percent) {
        (Some(a), Some(b), _) if a.too_short || b.too_short => Noise::TooShort,
        (Some(a), Some(b), Some(change)) => noise(&a.spread, &b.spread, change),
        _ => Noise::Unknown,
    };
    let shown = GroupOp {
        op: op.op,
        measure: judged.measure,
    };
    let points = point_changes(g, op, judged, baseline, candidate);
    MetricRow {
        metric: g.metric_name(shown),
        phase: g.name.clone(),
        split: g.split.clone(),
        op: op.op,
        measure: judged.measure,
        swept: g.swept.clone(),
        baseline: a,
        candidate: b,
        change_percent,
        noise,
        points,
    }
}

/// The change at every swept value of `g` either side measured (and `judged` admits).
fn point_changes(
    g: &Group,
    op: GroupOp,
    judged: Judged,
    baseline: usize,
    candidate: usize,
) -> Vec<PointChange> {
    if g.swept.is_none() {
        return Vec::new();
    }
    let figure = |side: usize, value: &str| {
        let p = g.point(side, Some(value)).filter(|p| judged.admits(p))?;
        let o = p.op(op.op)?;
        Some((judged.spread(op, o), o.too_short()))
    };
    g.values
        .iter()
        .filter_map(|value| {
            let (a, b) = (figure(baseline, value), figure(candidate, value));
            if a.is_none() && b.is_none() {
                return None;
            }
            let change_percent = match (&a, &b) {
                (Some(a), Some(b)) => percent_change(a.0.mean, b.0.mean),
                _ => None,
            };
            let noise = match (&a, &b, change_percent) {
                (Some(a), Some(b), _) if a.1 || b.1 => Noise::TooShort,
                (Some(a), Some(b), Some(change)) => noise(&a.0, &b.0, change),
                _ => Noise::Unknown,
            };
            Some(PointChange {
                at: value.clone(),
                baseline: a.map(|a| a.0),
                candidate: b.map(|b| b.0),
                change_percent,
                noise,
            })
        })
        .collect()
}

/// Within the noise when the 95 % confidence intervals overlap (a side without
/// repetitions is a point) or the change is smaller than the larger CV; unknown without
/// repetitions on either side.
pub fn noise(a: &Spread, b: &Spread, change_percent: f64) -> Noise {
    let repeated = |s: &Spread| s.n > 1;
    if !repeated(a) && !repeated(b) {
        return Noise::Unknown;
    }
    let half = |s: &Spread| if repeated(s) { s.ci95 } else { 0.0 };
    let overlap = a.mean - half(a) <= b.mean + half(b) && b.mean - half(b) <= a.mean + half(a);
    let max_cv = [a, b]
        .iter()
        .filter(|s| repeated(s))
        .map(|s| s.cv)
        .fold(0.0, f64::max);
    if overlap || change_percent.abs() < max_cv * 100.0 {
        Noise::Within
    } else {
        Noise::Beyond
    }
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
