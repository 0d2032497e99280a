//! One direction of one report entry ([`Direction`]: fio's "read" or "write" object)
//! and the spreads it is made of ([`Spread`]), from an assembled phase and, for fio's
//! bandwidth and IOPS samples, the timelines of the clones it covers.

use iolab_core::LatencyHistogram;
use iolab_core::result::{OpKind, PhaseResult, Timeline};
use iolab_core::units::Nanos;

use super::{LAT_MS_LIMITS, LAT_NS_LIMITS, LAT_US_LIMITS};

/// min / max / mean / standard deviation / count of a set of latencies (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub stddev: f64,
    pub n: u64,
}

impl Spread {
    pub(super) fn of_histogram(h: &LatencyHistogram) -> Spread {
        if h.is_empty() {
            return Spread::default();
        }
        Spread {
            min: h.min().0 as f64,
            max: h.max().0 as f64,
            mean: h.mean(),
            stddev: h.stdev(),
            n: h.count(),
        }
    }

    /// Of per-interval samples (bandwidth in KiB/s, IOPS), as fio's bw_/iops_ lines.
    fn of_samples(samples: &[f64]) -> Spread {
        if samples.is_empty() {
            return Spread::default();
        }
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        // fio's sample standard deviation (n - 1).
        let var = if samples.len() > 1 {
            samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Spread {
            min: samples.iter().cloned().fold(f64::INFINITY, f64::min),
            max: samples.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            mean,
            stddev: var.sqrt(),
            n: samples.len() as u64,
        }
    }
}

/// One priority's latencies: (ioprio, spread, percentiles).
pub type PrioLatency = (u16, Spread, Vec<(f64, u64)>);

/// One direction of one job (fio's "read", "write" or "trim" object).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Direction {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub runtime_ms: u64,
    pub bw_bytes: f64,
    pub iops: f64,
    pub lat: Spread,
    /// (percentile, ns) at fio's percentiles; empty when nothing completed.
    pub percentiles: Vec<(f64, u64)>,
    /// Bandwidth (KiB/s) and IOPS of each clone over each of its whole seconds, all
    /// clones' samples together (fio's bw_/iops_ figures).
    pub bw_samples: Spread,
    pub iops_samples: Spread,
    /// The mean sample's share of its group's bandwidth, in percent (fio's `bw_agg`
    /// and `per=`; 0 without samples).
    pub agg_percent: f64,
    /// Non-empty histogram buckets (upper bound ns, count), for json+.
    pub bins: Vec<(u64, u64)>,
    /// fio's per-priority completion latencies (cmdprio_*): (ioprio, spread,
    /// percentiles) of each priority with samples, when two or more have them.
    pub prios: Vec<PrioLatency>,
}

impl Direction {
    /// `op` of `phase`, with samples from each clone's timeline and runtime (or the
    /// phase's own when `clones` is empty), and latencies at `percentiles`.
    pub(super) fn of(
        phase: &PhaseResult,
        op: OpKind,
        clones: &[(&Timeline, Nanos)],
        percentiles: &[f64],
    ) -> Direction {
        Direction::of_ops(phase, &[op], clones, percentiles)
    }

    /// Every direction of `phase` as one (fio's `mixed` entry of unified_rw_reporting):
    /// their I/Os, bytes and latencies together, over the phase's time.
    pub(super) fn mixed(
        phase: &PhaseResult,
        clones: &[(&Timeline, Nanos)],
        percentiles: &[f64],
    ) -> Direction {
        Direction::of_ops(
            phase,
            &[OpKind::Read, OpKind::Write, OpKind::Trim],
            clones,
            percentiles,
        )
    }

    fn of_ops(
        phase: &PhaseResult,
        ops: &[OpKind],
        clones: &[(&Timeline, Nanos)],
        percentiles: &[f64],
    ) -> Direction {
        let results: Vec<_> = phase.ops.iter().filter(|o| ops.contains(&o.op)).collect();
        let Some(first) = results.first() else {
            return Direction::default();
        };
        let mut histogram = first.histogram.clone();
        for r in &results[1..] {
            histogram.merge(&r.histogram);
        }
        let (mut bw, mut iops) = (Vec::new(), Vec::new());
        if clones.is_empty() {
            samples(&phase.timeline, phase.elapsed, ops, &mut bw, &mut iops);
        }
        for (timeline, elapsed) in clones {
            samples(timeline, *elapsed, ops, &mut bw, &mut iops);
        }
        Direction {
            io_bytes: results.iter().map(|r| r.bytes.get()).sum(),
            total_ios: results.iter().map(|r| r.ops).sum(),
            runtime_ms: phase.elapsed.0 / 1_000_000,
            bw_bytes: results.iter().map(|r| r.bandwidth.0).sum(),
            iops: results.iter().map(|r| r.iops.0).sum(),
            lat: Spread::of_histogram(&histogram),
            percentiles: if histogram.is_empty() {
                Vec::new()
            } else {
                percentiles
                    .iter()
                    .map(|p| (*p, histogram.percentile(*p).0))
                    .collect()
            },
            bw_samples: Spread::of_samples(&bw),
            iops_samples: Spread::of_samples(&iops),
            agg_percent: 0.0,
            bins: histogram.buckets().iter().map(|(v, c)| (v.0, *c)).collect(),
            prios: Vec::new(),
        }
    }

    /// fio's `prios` of this direction (`read` or `write`) from the merged
    /// `prio.DIR.INDEX.IOPRIO` histograms, in fio's order (the default first); none
    /// unless two or more priorities have samples, as fio prints them.
    pub(super) fn with_prios(
        mut self,
        dir: &str,
        prios: &std::collections::BTreeMap<String, iolab_core::histogram::LatencyHistogram>,
        percentiles: &[f64],
    ) -> Direction {
        let prefix = format!("prio.{dir}.");
        let mine: Vec<(u16, &iolab_core::histogram::LatencyHistogram)> = prios
            .iter()
            .filter_map(|(k, h)| {
                let rest = k.strip_prefix(&prefix)?;
                let ioprio = rest.split('.').nth(1)?.parse().ok()?;
                (!h.is_empty()).then_some((ioprio, h))
            })
            .collect();
        if mine.len() >= 2 {
            self.prios = mine
                .into_iter()
                .map(|(p, h)| {
                    let list = percentiles
                        .iter()
                        .map(|q| (*q, h.percentile(*q).0))
                        .collect();
                    (p, Spread::of_histogram(h), list)
                })
                .collect();
        }
        self
    }

    /// Share of I/Os (percent) in fio's latency buckets: nanoseconds below 1 µs,
    /// microseconds below 1 ms, milliseconds above (the last bucket open, `>=2000`).
    /// A latency goes to the first limit it is below, as fio's `io_u_mark_lat_*` do.
    pub fn distribution(&self) -> LatDistribution {
        let mut d = LatDistribution::default();
        let total: u64 = self.bins.iter().map(|(_, c)| c).sum();
        if total == 0 {
            return d;
        }
        let share = |c: u64| c as f64 * 100.0 / total as f64;
        let first_below = |v: u64, limits: &[u64]| limits.iter().position(|l| v < *l);
        for &(v, c) in &self.bins {
            if v < 1_000 {
                let i = first_below(v, &LAT_NS_LIMITS).unwrap_or(LAT_NS_LIMITS.len() - 1);
                d.ns[i] += share(c);
            } else if v < 1_000_000 {
                let i = first_below(v / 1_000, &LAT_US_LIMITS).unwrap_or(LAT_US_LIMITS.len() - 1);
                d.us[i] += share(c);
            } else {
                let i = first_below(v / 1_000_000, &LAT_MS_LIMITS).unwrap_or(LAT_MS_LIMITS.len());
                d.ms[i] += share(c);
            }
        }
        d
    }
}

/// fio's `latency_ns`, `latency_us` and `latency_ms` shares, in percent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LatDistribution {
    pub ns: [f64; 10],
    pub us: [f64; 10],
    /// The last entry is `>=2000`.
    pub ms: [f64; 12],
}

/// Adds the bandwidth (KiB/s) and IOPS of `ops` together over each whole second of a
/// timeline that ran `elapsed` (the last, partial second would be divided by a
/// fraction of one; a timeline finer than a second is summed into seconds).
fn samples(
    timeline: &Timeline,
    elapsed: Nanos,
    ops: &[OpKind],
    bw: &mut Vec<f64>,
    iops: &mut Vec<f64>,
) {
    let interval = timeline.interval.0;
    if interval == 0 {
        return;
    }
    // Intervals per sample: a second's worth when the timeline is finer.
    let per = if interval < Nanos::SECOND.0 && Nanos::SECOND.0.is_multiple_of(interval) {
        (Nanos::SECOND.0 / interval) as usize
    } else {
        1
    };
    let span = (interval * per as u64) as f64 / 1e9;
    let whole = (elapsed.0 / (interval * per as u64)) as usize;
    let series: Vec<_> = ops.iter().filter_map(|op| timeline.series(*op)).collect();
    if series.is_empty() {
        return;
    }
    let len = series.iter().map(|s| s.ops.len()).max().unwrap_or(0);
    let n = whole.min(len.div_ceil(per));
    for k in 0..n {
        let range = k * per..((k + 1) * per).min(len);
        let sum = |pick: fn(&iolab_core::result::OpSeries) -> &Vec<u64>| -> u64 {
            series
                .iter()
                .map(|s| {
                    let v = pick(s);
                    v[range.start.min(v.len())..range.end.min(v.len())]
                        .iter()
                        .sum::<u64>()
                })
                .sum()
        };
        bw.push(sum(|s| &s.bytes) as f64 / 1024.0 / span);
        iops.push(sum(|s| &s.ops) as f64 / span);
    }
}
