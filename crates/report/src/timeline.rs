//! Per-second views of a phase: [`PhaseTimeline`] turns a [`Timeline`]'s interval counts
//! into rates ([`TimelineSeries`]: bytes/s or ops/s and mean latency per interval), and
//! [`telemetry_times`] places device and CPU samples on the same time axis.

use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::telemetry::Telemetry;
use serde::Serialize;

use crate::measure::Measure;

/// The rates of a phase over time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhaseTimeline {
    /// Length of an interval in seconds.
    pub interval_s: f64,
    pub series: Vec<TimelineSeries>,
}

/// One operation over time; `times_s[i]` is the end of interval i after the phase start.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimelineSeries {
    pub op: OpKind,
    pub measure: Measure,
    pub times_s: Vec<f64>,
    /// Bytes/s for bandwidth, ops/s otherwise.
    pub values: Vec<f64>,
    /// Mean latency of the operations completed in each interval (ns); None when none
    /// completed.
    pub mean_latency_ns: Vec<Option<f64>>,
}

impl PhaseTimeline {
    pub fn is_empty(&self) -> bool {
        self.series.iter().all(|s| s.values.is_empty())
    }
}

/// The timeline of `phase` as rates. The last interval is usually shorter than the others
/// (the phase ended inside it): its rate is over the part that ran, and when that part is
/// under half an interval it is merged into the interval before (its few operations began
/// there: 128 KiB completed in the last 39 µs is not a 3 GiB/s moment). A phase shorter
/// than one interval, or one whose intervals merge into a single one (1.2 s), has no
/// timeline: one point is not a line, and its rate is the phase's own figure.
pub fn phase_timeline(phase: &PhaseResult) -> PhaseTimeline {
    let t = &phase.timeline;
    let interval_s = t.interval.as_secs_f64();
    let elapsed_s = phase.elapsed.as_secs_f64();
    let block = crate::measure::block_size_of(&phase.params);
    let series = t
        .series
        .iter()
        .filter(|s| interval_s > 0.0 && !s.ops.is_empty() && elapsed_s >= interval_s)
        .filter_map(|s| {
            let measure = Measure::choose(s.op, phase.kind, block);
            let mut times = Vec::new();
            let mut values = Vec::new();
            let mut latency = Vec::new();
            // (start, end, count, ops, latency sum) per interval, the short tail merged.
            let mut spans: Vec<(f64, f64, u64, u64, u64)> = Vec::new();
            for (i, &ops) in s.ops.iter().enumerate() {
                let start = i as f64 * interval_s;
                let mut end = start + interval_s;
                if elapsed_s > start && elapsed_s < end {
                    end = elapsed_s;
                }
                let count = if measure == Measure::Bandwidth {
                    s.bytes.get(i).copied().unwrap_or(0)
                } else {
                    ops
                };
                let sum = s.latency_sum.get(i).copied().unwrap_or(0);
                match spans.last_mut() {
                    Some(last) if end - start < interval_s / 2.0 => {
                        last.1 = end;
                        last.2 += count;
                        last.3 += ops;
                        last.4 += sum;
                    }
                    _ => spans.push((start, end, count, ops, sum)),
                }
            }
            // One point is not a line (a phase of just over one interval): no series.
            if spans.len() < 2 {
                return None;
            }
            for (start, end, count, ops, sum) in spans {
                times.push(end);
                values.push(count as f64 / (end - start));
                latency.push((ops > 0).then(|| sum as f64 / ops as f64));
            }
            Some(TimelineSeries {
                op: s.op,
                measure,
                times_s: times,
                values,
                mean_latency_ns: latency,
            })
        })
        .collect();
    PhaseTimeline { interval_s, series }
}

/// The end of each telemetry sample in seconds after the phase start.
pub fn telemetry_times(phase: &PhaseResult, telemetry: &Telemetry) -> Vec<f64> {
    let offset_s = (telemetry.started_at_ms - phase.started_at_ms) as f64 / 1000.0;
    telemetry
        .sample_ends_ms
        .iter()
        .map(|ms| offset_s + *ms as f64 / 1000.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::phase;
    use iolab_core::result::{OpSeries, Timeline};
    use iolab_core::units::Nanos;

    #[test]
    fn rates_per_interval_with_a_short_last_one() {
        let mut p = phase("seq-write", &[("block_size", "1MiB")]);
        p.elapsed = Nanos::from_millis(2500);
        p.timeline = Timeline {
            interval: Nanos::SECOND,
            series: vec![OpSeries {
                op: OpKind::Write,
                ops: vec![10, 20, 5],
                bytes: vec![10 << 20, 20 << 20, 5 << 20],
                latency_sum: vec![10_000, 40_000, 0],
            }],
            ..Default::default()
        };
        let t = phase_timeline(&p);
        let s = &t.series[0];
        assert_eq!(s.measure, Measure::Bandwidth);
        assert_eq!(s.times_s, [1.0, 2.0, 2.5]);
        let mib: Vec<f64> = s.values.iter().map(|v| v / (1 << 20) as f64).collect();
        assert_eq!(mib, [10.0, 20.0, 10.0]);
        assert_eq!(s.mean_latency_ns, [Some(1000.0), Some(2000.0), Some(0.0)]);
    }

    #[test]
    fn a_short_tail_is_merged_and_a_sub_interval_phase_has_no_timeline() {
        let mut p = phase("seq-write", &[("block_size", "128KiB")]);
        // 2 s and 38.7 µs: the last interval holds one 128 KiB write.
        p.elapsed = Nanos(2_000_038_700);
        p.timeline = Timeline {
            interval: Nanos::SECOND,
            series: vec![OpSeries {
                op: OpKind::Write,
                ops: vec![8, 8, 1],
                bytes: vec![8 << 17, 8 << 17, 1 << 17],
                latency_sum: vec![800, 800, 100],
            }],
            ..Default::default()
        };
        let s = &phase_timeline(&p).series[0];
        assert_eq!(s.times_s, [1.0, 2.0000387]);
        // 9 writes of 128 KiB over 1.0000387 s, not 128 KiB over 38.7 µs.
        assert!((s.values[1] - (9 << 17) as f64 / 1.0000387).abs() < 1e-6);
        assert_eq!(s.mean_latency_ns[1], Some(100.0));
        // A half interval or more stays its own point, at its own rate.
        p.elapsed = Nanos::from_millis(2600);
        let s = &phase_timeline(&p).series[0];
        assert_eq!(s.times_s, [1.0, 2.0, 2.6]);
        // 1.2 s: its 0.2 s tail merges into the first second, one point: no chart.
        p.elapsed = Nanos::from_millis(1200);
        p.timeline.series[0].ops = vec![8, 1];
        assert!(phase_timeline(&p).is_empty());
        // 0.86 ms of reads: no chart of one dot.
        p.elapsed = Nanos(860_000);
        p.timeline.series[0].ops = vec![115];
        assert!(phase_timeline(&p).is_empty());
    }

    #[test]
    fn telemetry_aligns_on_the_phase_start() {
        let mut p = phase("x", &[]);
        p.started_at_ms = 10_000;
        let t = Telemetry {
            started_at_ms: 9_500,
            sample_ends_ms: vec![1000, 2000],
            ..Telemetry::default()
        };
        assert_eq!(telemetry_times(&p, &t), [0.5, 1.5]);
    }
}
