//! The comparison the NFS study ends with: for every metric (a group's op and measure), the
//! [`Peak`] of the baseline and of the candidate, where each was reached, the change in %
//! and whether it is within the measured [`Noise`]. [`Comparison`] holds the [`MetricRow`]s.

use iolab_core::result::{OpKind, RunRecord};
use iolab_core::stats::{Spread, percent_change};
use iolab_core::units::ByteCount;
use serde::Serialize;

use crate::aggregate::{Aggregate, Group, GroupOp, OpPoint, Point, SideInfo, aggregate_sides};
use crate::measure::{IOPS_BLOCK_LIMIT, Measure, at_phrase, change_words};
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

    /// A peak for people: "4.47 GiB/s at 32 threads".
    pub fn peak_text(&self, peak: &Peak) -> String {
        let value = self.measure.format(peak.value);
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
    p.params.get("block_size")?.parse().ok()
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
    }
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
mod tests {
    use super::*;
    use crate::comparison_text::comparison_table;
    use crate::test_support::{counted, data_phase, meta_phase, op_result, phase, run_with};

    fn runs() -> (RunRecord, RunRecord) {
        let old = run_with(
            "v7.3",
            vec![
                counted(data_phase("randread", "1", 0, OpKind::Read, 50.0)),
                counted(data_phase("randread", "8", 0, OpKind::Read, 100.0)),
                counted(data_phase("randread", "8", 1, OpKind::Read, 100.0)),
                counted(meta_phase("stat", "4", 0, OpKind::Stat, 1000)),
            ],
        );
        let new = run_with(
            "v7.4",
            vec![
                counted(data_phase("randread", "1", 0, OpKind::Read, 58.0)),
                counted(data_phase("randread", "1", 1, OpKind::Read, 58.0)),
                counted(data_phase("randread", "8", 0, OpKind::Read, 40.0)),
                counted(data_phase("randread", "8", 1, OpKind::Read, 42.0)),
                counted(meta_phase("create", "4", 0, OpKind::Create, 500)),
            ],
        );
        (old, new)
    }

    #[test]
    fn peaks_changes_and_places() {
        let (old, new) = runs();
        let c = compare(&old, &new);
        assert_eq!(c.baseline.name, "v7.3");
        assert_eq!(c.candidate.name, "v7.4");
        let r = &c.rows[0];
        assert_eq!(r.metric, "randread read bandwidth");
        let (a, b) = (r.baseline.as_ref().unwrap(), r.candidate.as_ref().unwrap());
        let mib = 1024.0 * 1024.0;
        assert!((a.value / mib - 100.0).abs() < 1e-6);
        assert_eq!(a.at.as_deref(), Some("8"));
        assert!((b.value / mib - 58.0).abs() < 1e-6);
        assert_eq!(b.at.as_deref(), Some("1"));
        assert!((r.change_percent.unwrap() + 42.0).abs() < 1e-6);
        assert_eq!(r.noise, Noise::Beyond);
        assert_eq!(r.peak_text(a), "100 MiB/s at 8 threads");
        assert_eq!(c.phrase(r), "randread read bandwidth peak: 42% lower");
    }

    #[test]
    fn one_sided_metrics_are_listed_as_such() {
        let (old, new) = runs();
        let c = compare(&old, &new);
        let metrics: Vec<(&str, Presence)> = c
            .rows
            .iter()
            .map(|r| (r.metric.as_str(), r.presence()))
            .collect();
        assert_eq!(
            metrics,
            [
                ("randread read bandwidth", Presence::Both),
                ("stat ops/s", Presence::BaselineOnly),
                ("create ops/s", Presence::CandidateOnly),
            ]
        );
        assert_eq!(c.phrase(&c.rows[2]), "create ops/s: only in v7.4");
        assert_eq!(c.rows[1].noise, Noise::Unknown);
    }

    #[test]
    fn an_fsync_beside_writes_is_no_headline() {
        let with_fsync = |mib: f64, fsyncs: u64| {
            let mut p = counted(data_phase("seq-write", "4", 0, OpKind::Write, mib));
            p.ops.push(op_result(OpKind::Fsync, fsyncs, 0));
            p.ops[1].ops = 10_000;
            p
        };
        let c = compare(
            &run_with("a", vec![with_fsync(100.0, 50)]),
            &run_with("b", vec![with_fsync(90.0, 40)]),
        );
        let metrics: Vec<&str> = c.rows.iter().map(|r| r.metric.as_str()).collect();
        assert_eq!(metrics, ["seq-write write bandwidth"]);
        // Nor in the report's tables (its latency stays in the latency table).
        let runs = [
            run_with("b", vec![with_fsync(90.0, 40)]),
            run_with("a", vec![with_fsync(100.0, 50)]),
        ];
        let md = crate::render_markdown(&runs, None);
        let header = md.lines().find(|l| l.starts_with("| Phase")).unwrap();
        assert!(header.contains("write · b bandwidth"), "{header}");
        assert!(!header.contains("fsync"), "{header}");
        let html = crate::render_html(&runs, &crate::HtmlOptions::default());
        assert!(!html.contains("fsync · b ops/s"));
        // An fsync phase of its own is its own headline.
        let alone = |n| {
            let mut p = phase("fsync", &[]);
            p.ops.push(op_result(OpKind::Fsync, n, 0));
            p
        };
        let c = compare(
            &run_with("a", vec![alone(10)]),
            &run_with("b", vec![alone(9)]),
        );
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.rows[0].op, OpKind::Fsync);
    }

    #[test]
    fn phases_too_short_are_not_compared() {
        // 10 writes in one second against 5: -50 %, but 10 operations say nothing.
        let a = run_with("a", vec![data_phase("w", "1", 0, OpKind::Write, 10.0)]);
        let b = run_with("b", vec![data_phase("w", "1", 0, OpKind::Write, 5.0)]);
        let c = compare(&a, &b);
        assert_eq!(c.rows[0].noise, Noise::TooShort);
        assert_eq!(
            c.phrase(&c.rows[0]),
            "w write bandwidth peak: 50% lower (too short to compare: under 1 s or 1,000 operations)"
        );
        // Enough operations but a few milliseconds.
        let mut quick = counted(data_phase("w", "1", 0, OpKind::Write, 10.0));
        quick.elapsed = iolab_core::units::Nanos::from_millis(3);
        let long = counted(data_phase("w", "1", 0, OpKind::Write, 5.0));
        let c = compare(
            &run_with("a", vec![long.clone()]),
            &run_with("b", vec![quick]),
        );
        assert_eq!(c.rows[0].noise, Noise::TooShort);
        let c = compare(
            &run_with("a", vec![long.clone()]),
            &run_with("b", vec![long]),
        );
        assert_eq!(c.rows[0].noise, Noise::Unknown);
    }

    #[test]
    fn noise_from_confidence_intervals_and_cv() {
        let s = |v: &[f64]| Spread::of(v).unwrap();
        // No repetitions anywhere: unknown.
        assert_eq!(noise(&s(&[100.0]), &s(&[50.0]), -50.0), Noise::Unknown);
        // Overlapping intervals: within.
        let a = s(&[100.0, 110.0]);
        let b = s(&[104.0, 114.0]);
        assert_eq!(noise(&a, &b, 3.8), Noise::Within);
        // Tight, far apart: beyond.
        let a = s(&[100.0, 100.5]);
        let b = s(&[120.0, 120.5]);
        assert_eq!(noise(&a, &b, 19.9), Noise::Beyond);
        // One side repeated; the single point falls inside its interval.
        assert_eq!(noise(&s(&[90.0, 110.0]), &s(&[101.0]), 1.0), Noise::Within);
        // Change below the larger CV, intervals apart: within.
        let a = s(&[100.0, 100.0, 100.0, 130.0]);
        let b = s(&[150.0, 151.0, 150.0, 151.0]);
        assert!(a.cv > 0.12);
        assert_eq!(noise(&a, &b, 10.0), Noise::Within);
    }

    /// The hci preset's shape: randrw at 90 and 70 % reads, 4KiB and 2MiB blocks; reads
    /// and writes at `iops` 4KiB IOPS and `ops_2m` 2MiB operations per second.
    fn hci(label: &str, iops: u64, ops_2m: u64) -> RunRecord {
        let mut phases = Vec::new();
        for mix in ["90", "70"] {
            for (bs, ops, size) in [("4KiB", iops, 4096), ("2MiB", ops_2m, 2 << 20)] {
                let mut p = phase("randrw", &[("rwmix_read", mix), ("block_size", bs)]);
                p.ops.push(op_result(OpKind::Read, ops, ops * size));
                p.ops
                    .push(op_result(OpKind::Write, ops / 2, ops / 2 * size));
                phases.push(p);
            }
        }
        run_with(label, phases)
    }

    #[test]
    fn a_block_size_sweep_is_judged_by_iops_at_small_blocks_and_bandwidth_at_large() {
        let c = compare(&hci("a", 10_000, 500), &hci("b", 15_000, 450));
        let t = comparison_table(&c).to_text();
        let rows: Vec<(String, String, String, String)> = c
            .rows
            .iter()
            .map(|r| {
                let (a, b) = (r.baseline.as_ref().unwrap(), r.candidate.as_ref().unwrap());
                (
                    r.metric.clone(),
                    r.peak_text(a),
                    r.peak_text(b),
                    format!("{:+.0}", r.change_percent.unwrap()),
                )
            })
            .collect();
        let row = |m: &str, a: &str, b: &str, ch: &str| {
            (m.to_string(), a.to_string(), b.to_string(), ch.to_string())
        };
        assert_eq!(
            rows[..4],
            [
                row(
                    "randrw [rwmix_read=70] read IOPS",
                    "10.0k IOPS at block size 4KiB",
                    "15.0k IOPS at block size 4KiB",
                    "+50"
                ),
                row(
                    "randrw [rwmix_read=70] read bandwidth",
                    "1000 MiB/s at block size 2MiB",
                    "900 MiB/s at block size 2MiB",
                    "-10"
                ),
                row(
                    "randrw [rwmix_read=70] write IOPS",
                    "5.00k IOPS at block size 4KiB",
                    "7.50k IOPS at block size 4KiB",
                    "+50"
                ),
                row(
                    "randrw [rwmix_read=70] write bandwidth",
                    "500 MiB/s at block size 2MiB",
                    "450 MiB/s at block size 2MiB",
                    "-10"
                ),
            ],
            "{t}"
        );
        assert_eq!(c.rows.len(), 8, "the same for 90 % reads:\n{t}");
    }

    #[test]
    fn a_sweep_of_large_blocks_only_keeps_one_measure() {
        let big = |label: &str, mib: f64| {
            run_with(
                label,
                ["1MiB", "2MiB"]
                    .into_iter()
                    .map(|bs| {
                        let mut p = data_phase("seq", "1", 0, OpKind::Read, mib);
                        p.params.insert("block_size".into(), bs.into());
                        p
                    })
                    .collect(),
            )
        };
        let c = compare(&big("a", 100.0), &big("b", 110.0));
        let metrics: Vec<&str> = c.rows.iter().map(|r| r.metric.as_str()).collect();
        assert_eq!(metrics, ["seq read bandwidth"]);
    }

    #[test]
    fn a_block_size_sweep_is_charted_and_tabled_in_iops_and_bandwidth() {
        let runs = [hci("b", 15_000, 450), hci("a", 10_000, 500)];
        let html = crate::render_html(&runs, &crate::HtmlOptions::default());
        for title in [
            "randrw [rwmix_read=90]: IOPS vs block size",
            "randrw [rwmix_read=90]: throughput vs block size",
        ] {
            assert!(html.contains(title), "no chart {title}");
        }
        assert!(html.contains("read · b: 15.0k IOPS at block size 4KiB"));
        let md = crate::render_markdown(&runs, crate::default_comparison(&runs).as_ref());
        let header = md
            .lines()
            .find(|l| l.starts_with("| Block size"))
            .expect("a table per block size");
        for column in ["read · b IOPS", "read · a IOPS", "read · b bandwidth"] {
            assert!(header.contains(column), "{header}");
        }
        let row = md.lines().find(|l| l.starts_with("| 4KiB")).unwrap();
        assert!(row.contains("15.0k") && row.contains("10.0k"), "{row}");
        assert!(md.contains("| randrw [rwmix_read=70] read IOPS "), "{md}");
    }
}
