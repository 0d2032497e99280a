//! [`WorkerMeasure`]: what one or more workers measured, the finished and mergeable form
//! of a [`Recorder`](super::Recorder), and the first-done rates it carries.

use std::collections::BTreeMap;

use iolab_core::histogram::LatencyHistogram;
use iolab_core::result::{ErrorRecord, OpCount, OpKind, Timeline};
use iolab_core::units::Nanos;
use serde::{Deserialize, Serialize};

use super::DataSample;
use super::KEPT_ERRORS;

/// Rates up to the moment a worker learned that the first worker had finished. Rates,
/// not counts, because ranks learn it at slightly different moments (within one
/// coordination tick): summing each worker's own rate is the honest combination.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FirstDoneRate {
    pub ops_per_sec: f64,
    pub bytes_per_sec: f64,
}

pub(super) fn first_done_rates(
    marked: Option<(BTreeMap<OpKind, OpCount>, Nanos)>,
    start: Nanos,
) -> BTreeMap<OpKind, FirstDoneRate> {
    let Some((counts, at)) = marked else {
        return BTreeMap::new();
    };
    let ns = at.saturating_sub(start).0;
    counts
        .into_iter()
        .map(|(op, c)| {
            let rate = |v: u64| {
                if ns > 0 {
                    v as f64 * 1e9 / ns as f64
                } else {
                    0.0
                }
            };
            (
                op,
                FirstDoneRate {
                    ops_per_sec: rate(c.ops),
                    bytes_per_sec: rate(c.bytes),
                },
            )
        })
        .collect()
}

/// One operation type as measured by one or more workers.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OpMeasure {
    pub count: OpCount,
    pub errors: u64,
    pub histogram: LatencyHistogram,
}

/// What one or more workers measured, ready to merge.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkerMeasure {
    pub ops: BTreeMap<OpKind, OpMeasure>,
    /// Per operation, the rate each worker sustained until first done, summed.
    pub first_done: BTreeMap<OpKind, FirstDoneRate>,
    /// The earliest moment (from the phase start) a worker froze its first-done figures:
    /// the last completion of a worker that finished its share (or hit the stonewall),
    /// or when a worker learned that another one had. A worker that then waits at the
    /// wear-out rendezvous does not move it.
    #[serde(default)]
    pub first_done_at: Option<Nanos>,
    pub timeline: Timeline,
    pub errors: Vec<ErrorRecord>,
    pub error_count: u64,
    pub verify_failures: u64,
    /// Per operation, the longest latency (ns) completed in each interval of the
    /// timeline (fio's log_max_value); one worker's, not merged.
    #[serde(default)]
    pub latency_max: Vec<(OpKind, Vec<u64>)>,
    /// The written data as sampled, when a compress or dedupe ratio was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<DataSample>,
    /// Named counts a workload adds (S3: answers by HTTP status, retries, keys listed),
    /// summed when merged; they become the phase's `extra` figures.
    #[serde(default)]
    pub counters: BTreeMap<String, u64>,
    /// Named latency distributions beside the operations' (S3: time to first byte of a
    /// GET), merged like theirs; the phase keeps their summaries as `extra` figures.
    #[serde(default)]
    pub histograms: BTreeMap<String, LatencyHistogram>,
    /// The queue depth a latency target's search ended at (the deepest of the merged
    /// workers').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_depth: Option<u32>,
    /// fio's histogram log lines (write_hist_log); one worker's, not merged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hist_log: Vec<crate::hist_log::HistSample>,
}

impl WorkerMeasure {
    /// Keeps the counts (operations, bytes, errors) and drops the detail already merged
    /// elsewhere: histograms and timeline, most of a measure's memory.
    pub fn shed_detail(&mut self) {
        for m in self.ops.values_mut() {
            m.histogram = LatencyHistogram::placeholder();
        }
        for h in self.histograms.values_mut() {
            *h = LatencyHistogram::placeholder();
        }
        self.timeline = Timeline::default();
        self.latency_max.clear();
        self.hist_log.clear();
    }

    pub fn merge(&mut self, other: &WorkerMeasure) {
        for (op, m) in &other.ops {
            let mine = self.ops.entry(*op).or_default();
            mine.count += m.count;
            mine.errors += m.errors;
            mine.histogram.merge(&m.histogram);
        }
        for (op, r) in &other.first_done {
            let mine = self.first_done.entry(*op).or_default();
            mine.ops_per_sec += r.ops_per_sec;
            mine.bytes_per_sec += r.bytes_per_sec;
        }
        self.first_done_at = match (self.first_done_at, other.first_done_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.timeline.merge(&other.timeline);
        for e in &other.errors {
            if self.errors.len() < 4 * KEPT_ERRORS {
                self.errors.push(e.clone());
            }
        }
        self.error_count += other.error_count;
        self.verify_failures += other.verify_failures;
        self.latency_depth = self.latency_depth.max(other.latency_depth);
        if let Some(d) = &other.data {
            self.data.get_or_insert_with(DataSample::default).merge(d);
        }
        for (k, v) in &other.counters {
            *self.counters.entry(k.clone()).or_default() += v;
        }
        for (k, h) in &other.histograms {
            self.histograms.entry(k.clone()).or_default().merge(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::Recorder;
    use iolab_core::result::{ErrorRecord, OpKind};
    use iolab_core::units::Nanos;

    #[test]
    fn merging_keeps_the_earliest_first_done() {
        let mut a = Recorder::new(Nanos(100), Nanos::SECOND);
        a.record(OpKind::Write, Nanos(1), 1, Nanos(150));
        let mut b = Recorder::new(Nanos(100), Nanos::SECOND);
        b.record(OpKind::Write, Nanos(1), 1, Nanos(130));
        let mut m = WorkerMeasure::default();
        m.merge(&a.finish());
        m.merge(&b.finish());
        assert_eq!(m.first_done_at, Some(Nanos(30)));
    }

    #[test]
    fn merging_adds_everything() {
        let mut a = Recorder::new(Nanos(0), Nanos::SECOND);
        a.record(OpKind::Read, Nanos(5), 1, Nanos(1));
        let mut b = Recorder::new(Nanos(0), Nanos::SECOND);
        b.record(OpKind::Read, Nanos(7), 2, Nanos(1));
        b.error(ErrorRecord {
            rank: 0,
            host: "h".into(),
            op: OpKind::Read,
            path: "p".into(),
            offset: Some(0),
            errno: Some(5),
            message: "EIO".into(),
        });
        let mut m = a.finish();
        m.merge(&b.finish());
        assert_eq!(m.ops[&OpKind::Read].count, OpCount { ops: 2, bytes: 3 });
        assert_eq!(m.ops[&OpKind::Read].errors, 1);
        assert_eq!(m.error_count, 1);
        // Each worker did one read by 1 ns: the rates add.
        assert_eq!(m.first_done[&OpKind::Read].ops_per_sec, 2e9);
    }
}
