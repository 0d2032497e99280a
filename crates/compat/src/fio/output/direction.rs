//! One direction of one report entry ([`Direction`]: fio's "read" or "write" object)
//! and the spreads it is made of ([`Spread`]), from an assembled phase and, for fio's
//! bandwidth and IOPS samples, the timelines of the clones it covers.

use iolab_core::LatencyHistogram;
use iolab_core::result::{OpKind, PhaseResult, Timeline};
use iolab_core::units::Nanos;

use super::{LAT_MS_LIMITS, LAT_NS_LIMITS, LAT_US_LIMITS, PERCENTILES};

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
}

impl Direction {
    /// `op` of `phase`, with samples from each clone's timeline and runtime (or the
    /// phase's own when `clones` is empty).
    pub(super) fn of(phase: &PhaseResult, op: OpKind, clones: &[(&Timeline, Nanos)]) -> Direction {
        let Some(r) = phase.ops.iter().find(|o| o.op == op) else {
            return Direction::default();
        };
        let (mut bw, mut iops) = (Vec::new(), Vec::new());
        if clones.is_empty() {
            samples(&phase.timeline, phase.elapsed, op, &mut bw, &mut iops);
        }
        for (timeline, elapsed) in clones {
            samples(timeline, *elapsed, op, &mut bw, &mut iops);
        }
        Direction {
            io_bytes: r.bytes.get(),
            total_ios: r.ops,
            runtime_ms: phase.elapsed.0 / 1_000_000,
            bw_bytes: r.bandwidth.0,
            iops: r.iops.0,
            lat: Spread::of_histogram(&r.histogram),
            percentiles: if r.histogram.is_empty() {
                Vec::new()
            } else {
                PERCENTILES
                    .iter()
                    .map(|p| (*p, r.histogram.percentile(*p).0))
                    .collect()
            },
            bw_samples: Spread::of_samples(&bw),
            iops_samples: Spread::of_samples(&iops),
            agg_percent: 0.0,
            bins: r
                .histogram
                .buckets()
                .iter()
                .map(|(v, c)| (v.0, *c))
                .collect(),
        }
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

/// Adds the per-interval bandwidth (KiB/s) and IOPS of `op` over a timeline that ran
/// `elapsed`, whole intervals only (the last, partial one would be divided by a
/// fraction of a second).
fn samples(
    timeline: &Timeline,
    elapsed: Nanos,
    op: OpKind,
    bw: &mut Vec<f64>,
    iops: &mut Vec<f64>,
) {
    let Some(s) = timeline.series(op) else {
        return;
    };
    let interval = timeline.interval.as_secs_f64();
    if interval <= 0.0 {
        return;
    }
    let whole = (elapsed.as_secs_f64() / interval).floor() as usize;
    let n = whole.min(s.ops.len());
    bw.extend(s.bytes[..n].iter().map(|b| *b as f64 / 1024.0 / interval));
    iops.extend(s.ops[..n].iter().map(|o| *o as f64 / interval));
}
