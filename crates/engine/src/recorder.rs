//! [`Recorder`]: what one worker measured. Per operation type a latency histogram, the
//! counts, and a per-interval timeline; the counts at the moment the first worker
//! finished; the first few errors in full. Flat memory however long the run.
//! [`WorkerMeasure`] is the finished, mergeable form.

use std::collections::BTreeMap;

use std::sync::atomic::Ordering;

use iolab_core::latency_counts::LatencyCounts;
use iolab_core::live_latency::BUCKETS;

use iolab_core::result::{ErrorRecord, OpCount, OpKind, OpSeries, Silences, Timeline};
use iolab_core::units::Nanos;

mod measure;
mod progress;
mod sample;
use measure::first_done_rates;
pub use measure::{FirstDoneRate, OpMeasure, WorkerMeasure};
pub use progress::WorkerProgress;
pub use sample::{DataSample, DataSampler};

/// Errors kept in full per worker; the rest are only counted.
const KEPT_ERRORS: usize = 8;

/// One operation type's figures. The current interval is added up in `now` and moves into
/// the series when the interval ends (one store per figure per operation, none with a
/// bounds check or a resize).
#[derive(Clone)]
struct OpRec {
    /// Operations and bytes of the intervals before the current one.
    count: OpCount,
    errors: u64,
    latencies: LatencyCounts,
    now: Interval,
    ops: Vec<u64>,
    bytes: Vec<u64>,
    latency_sum: Vec<u64>,
    latency_max: Vec<u64>,
}

/// What one operation type did in the current interval.
#[derive(Clone, Copy, Default)]
struct Interval {
    ops: u64,
    bytes: u64,
    latency_sum: u64,
    latency_max: u64,
}

impl OpRec {
    fn new() -> Self {
        OpRec {
            count: OpCount::default(),
            errors: 0,
            latencies: LatencyCounts::new(),
            now: Interval::default(),
            ops: Vec::new(),
            bytes: Vec::new(),
            latency_sum: Vec::new(),
            latency_max: Vec::new(),
        }
    }

    /// Everything so far: the past intervals and the current one.
    fn total(&self) -> OpCount {
        OpCount {
            ops: self.count.ops + self.now.ops,
            bytes: self.count.bytes + self.now.bytes,
        }
    }

    /// Moves the current interval, slot `slot` of the timeline, into the series.
    fn close_interval(&mut self, slot: usize) {
        let n = self.now;
        if n.ops == 0 {
            return;
        }
        if self.ops.len() <= slot {
            self.ops.resize(slot + 1, 0);
            self.bytes.resize(slot + 1, 0);
            self.latency_sum.resize(slot + 1, 0);
            self.latency_max.resize(slot + 1, 0);
        }
        self.ops[slot] += n.ops;
        self.bytes[slot] += n.bytes;
        self.latency_sum[slot] += n.latency_sum;
        self.latency_max[slot] = self.latency_max[slot].max(n.latency_max);
        self.count.ops += n.ops;
        self.count.bytes += n.bytes;
        self.now = Interval::default();
    }
}

#[derive(Clone)]
pub struct Recorder {
    start: Nanos,
    interval: Nanos,
    slot: usize,
    next_boundary: Nanos,
    ops: [Option<Box<OpRec>>; OpKind::ALL.len()],
    first_done: Option<(BTreeMap<OpKind, OpCount>, Nanos)>,
    /// Completion time of the latest operation recorded.
    last_at: Nanos,
    /// The longest stretches between two completions (the first completion's time is
    /// its span's start), and the shortest of them once they are all kept: a longer
    /// stretch goes in (one compare per completion).
    silences: Silences,
    quiet_floor: u64,
    errors: Vec<ErrorRecord>,
    error_count: u64,
    verify_failures: u64,
    /// Every latency in coarse buckets, for the live views (see [`Recorder::publish`]).
    live: [u64; BUCKETS],
    /// Operations recorded, and as many when the live buckets were last published.
    recorded: u64,
    published: u64,
    /// It records a ramp, which the stored result will not count: its counts are not
    /// published (the live counters would fall back when the ramp ends).
    ramping: bool,
    /// fio's histogram log (write_hist_log), when asked for.
    hist: Option<Box<crate::hist_log::HistLog>>,
}

impl Recorder {
    /// A recorder for a phase that started at `start`, with timeline intervals of
    /// `interval`.
    pub fn new(start: Nanos, interval: Nanos) -> Self {
        Recorder {
            start,
            interval,
            slot: 0,
            next_boundary: start + interval,
            ops: Default::default(),
            first_done: None,
            last_at: start,
            silences: Silences::default(),
            quiet_floor: 0,
            errors: Vec::new(),
            error_count: 0,
            verify_failures: 0,
            live: [0; BUCKETS],
            recorded: 0,
            published: 0,
            ramping: false,
            hist: None,
        }
    }

    /// Also keeps fio's histogram log, a sample every `msec` ms (fio's log_hist_msec;
    /// None or 0: none).
    pub fn with_hist_log(mut self, msec: Option<u64>) -> Self {
        self.hist = msec
            .filter(|m| *m > 0)
            .map(|m| Box::new(crate::hist_log::HistLog::new(m, self.start)));
        self
    }

    #[cold]
    #[inline(never)]
    fn record_hist(&mut self, op: OpKind, latency: Nanos, bytes: u64, at: Nanos) {
        if let Some(h) = &mut self.hist {
            h.record(op, latency.0, bytes, at);
        }
    }

    /// What it records is a ramp (replaced by a new recorder when the ramp ends).
    pub fn set_ramping(&mut self) {
        self.ramping = true;
    }

    /// Copies the live latency buckets and the counts by operation into `to` (the
    /// worker's progress slot) when 256 operations were recorded since the last copy, or
    /// with `now`: the copy costs under one store per operation. The check is in the
    /// caller's loop, the copy out of it.
    #[inline(always)]
    pub fn publish(&mut self, to: &WorkerProgress, now: bool) {
        if now || self.recorded - self.published >= 256 {
            self.publish_now(to);
        }
    }

    #[inline(never)]
    fn publish_now(&mut self, to: &WorkerProgress) {
        for (slot, v) in to.latency.iter().zip(self.live.iter()) {
            slot.store(*v, Ordering::Relaxed);
        }
        if !self.ramping {
            for (slot, r) in to.counted.iter().zip(self.ops.iter()) {
                if let Some(r) = r {
                    let c = r.total();
                    slot[0].store(c.ops, Ordering::Relaxed);
                    slot[1].store(c.bytes, Ordering::Relaxed);
                }
            }
        }
        self.published = self.recorded;
    }

    #[inline]
    fn rec(&mut self, op: OpKind) -> &mut OpRec {
        self.ops[op.index()].get_or_insert_with(|| Box::new(OpRec::new()))
    }

    /// Records one completed operation of `bytes`, which took `latency` and completed at
    /// `at`.
    #[inline(always)]
    pub fn record(&mut self, op: OpKind, latency: Nanos, bytes: u64, at: Nanos) {
        if at >= self.next_boundary {
            self.next_interval(at);
        }
        if at.0.wrapping_sub(self.last_at.0) > self.quiet_floor {
            self.quiet(at);
        }
        self.last_at = at;
        self.recorded += 1;
        let r = self.rec(op);
        let live = r.latencies.record_live(latency.0);
        let n = &mut r.now;
        n.ops += 1;
        n.bytes += bytes;
        n.latency_sum += latency.0;
        n.latency_max = n.latency_max.max(latency.0);
        self.live[live] += 1;
        if self.hist.is_some() {
            self.record_hist(op, latency, bytes, at);
        }
    }

    /// The operation completed at `at` came longer after the previous one than the
    /// stretches kept so far (or is the first): keep the stretch.
    #[cold]
    #[inline(never)]
    fn quiet(&mut self, at: Nanos) {
        let at = at.saturating_sub(self.start);
        if self.recorded == 0 {
            self.silences.span = Some((at, at));
        } else {
            self.silences
                .gap(self.last_at.saturating_sub(self.start), at);
        }
        self.quiet_floor = self.silences.floor().0;
    }

    /// The operation completed at `at` belongs to a later interval than the current one:
    /// the current one goes into the series.
    #[cold]
    fn next_interval(&mut self, at: Nanos) {
        self.close_interval();
        let idx = (at.0.saturating_sub(self.start.0) / self.interval.0.max(1)) as usize;
        self.slot = idx;
        self.next_boundary = Nanos(self.start.0 + (idx as u64 + 1) * self.interval.0);
    }

    fn close_interval(&mut self) {
        let slot = self.slot;
        for r in self.ops.iter_mut().flatten() {
            r.close_interval(slot);
        }
    }

    /// Keeps the counts (operations, bytes, errors) and forgets the latencies and the
    /// timeline: a job that ended within its ramp, which fio reports without them.
    pub fn drop_latencies(&mut self) {
        self.close_interval();
        for r in self.ops.iter_mut().flatten() {
            r.latencies.clear();
            r.ops.clear();
            r.bytes.clear();
            r.latency_sum.clear();
            r.latency_max.clear();
        }
        self.live = [0; BUCKETS];
        if let Some(h) = &mut self.hist {
            h.samples.clear();
        }
    }

    /// Counts a failed operation; the first few are kept with their details.
    pub fn error(&mut self, record: ErrorRecord) {
        self.rec(record.op).errors += 1;
        self.error_count += 1;
        if self.errors.len() < KEPT_ERRORS {
            self.errors.push(record);
        }
    }

    /// Counts a block that failed verification (also kept as an error record).
    pub fn verify_failure(&mut self, record: ErrorRecord) {
        self.verify_failures += 1;
        if self.errors.len() < KEPT_ERRORS {
            self.errors.push(record);
        }
    }

    pub fn error_count(&self) -> u64 {
        self.error_count
    }

    /// Completed operations and bytes of `op` so far.
    pub fn count(&self, op: OpKind) -> OpCount {
        self.ops[op.index()]
            .as_ref()
            .map(|r| r.total())
            .unwrap_or_default()
    }

    /// Freezes the counts as they are now, with the time of the latest completion, as
    /// this worker's first-done figures (once).
    pub fn mark_first_done(&mut self) {
        if self.first_done.is_none() {
            let counts = self
                .ops
                .iter()
                .enumerate()
                .filter_map(|(i, r)| r.as_ref().map(|r| (OpKind::ALL[i], r.total())))
                .collect();
            self.first_done = Some((counts, self.last_at));
        }
    }

    pub fn first_done_marked(&self) -> bool {
        self.first_done.is_some()
    }

    /// What was measured so far, the recorder left as it is (a status report while the
    /// worker runs).
    pub fn snapshot(&self) -> WorkerMeasure {
        self.clone().finish()
    }

    pub fn finish(mut self) -> WorkerMeasure {
        self.mark_first_done();
        self.close_interval();
        let mut ops = BTreeMap::new();
        let mut series = Vec::new();
        let mut latency_max = Vec::new();
        for (i, r) in self.ops.into_iter().enumerate() {
            let Some(r) = r else { continue };
            let op = OpKind::ALL[i];
            latency_max.push((op, r.latency_max));
            series.push(OpSeries {
                op,
                ops: r.ops,
                bytes: r.bytes,
                latency_sum: r.latency_sum,
            });
            ops.insert(
                op,
                OpMeasure {
                    count: r.count,
                    errors: r.errors,
                    histogram: r.latencies.histogram(),
                },
            );
        }
        let first_done_at = self
            .first_done
            .as_ref()
            .map(|(_, at)| at.saturating_sub(self.start));
        WorkerMeasure {
            ops,
            first_done: first_done_rates(self.first_done, self.start),
            first_done_at,
            timeline: Timeline {
                interval: self.interval,
                series,
                silences: if self.recorded == 0 {
                    Silences::default()
                } else {
                    self.silences
                        .ended_at(self.last_at.saturating_sub(self.start))
                },
            },
            errors: self.errors,
            error_count: self.error_count,
            verify_failures: self.verify_failures,
            latency_max,
            data: None,
            counters: BTreeMap::new(),
            histograms: BTreeMap::new(),
            latency_depth: None,
            hist_log: self.hist.map(|h| h.samples).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stretches_between_completions_are_kept_from_the_phase_start() {
        let start = Nanos(5_000);
        let mut r = Recorder::new(start, Nanos::SECOND);
        // The first completion at the very start, then every 1 ms, but for 2.5 s once.
        let mut at = start;
        for i in 0..100u64 {
            at = at
                + if i == 40 {
                    Nanos::from_millis(2_500)
                } else {
                    Nanos::from_millis(1)
                };
            r.record(
                OpKind::Write,
                Nanos(10),
                4096,
                if i == 0 { start } else { at },
            );
        }
        let s = r.finish().timeline.silences;
        assert_eq!(s.span, Some((Nanos::ZERO, at - start)));
        assert_eq!(
            s.longest(),
            Some((Nanos::from_millis(40), Nanos::from_millis(2_540)))
        );
        assert_eq!(s.gaps.len(), iolab_core::result::KEPT_SILENCES);
        // Nothing recorded: no silences to store.
        let r = Recorder::new(start, Nanos::SECOND);
        assert!(r.finish().timeline.silences.is_empty());
    }

    #[test]
    fn timeline_buckets_by_interval() {
        let mut r = Recorder::new(Nanos(1000), Nanos::SECOND);
        r.record(OpKind::Read, Nanos(10), 4096, Nanos(1000));
        r.record(OpKind::Read, Nanos(20), 4096, Nanos(1000 + 999_999_999));
        r.record(OpKind::Read, Nanos(30), 4096, Nanos(1000 + 2_500_000_000));
        r.record(OpKind::Write, Nanos(5), 512, Nanos(1000 + 2_600_000_000));
        let m = r.finish();
        let reads = m.timeline.series(OpKind::Read).unwrap();
        assert_eq!(reads.ops, vec![2, 0, 1]);
        assert_eq!(reads.bytes, vec![8192, 0, 4096]);
        assert_eq!(reads.latency_sum, vec![30, 0, 30]);
        assert_eq!(m.timeline.series(OpKind::Write).unwrap().ops, vec![0, 0, 1]);
        assert_eq!(
            m.ops[&OpKind::Read].count,
            OpCount {
                ops: 3,
                bytes: 12288
            }
        );
        assert_eq!(m.ops[&OpKind::Read].histogram.count(), 3);
    }

    #[test]
    fn first_done_freezes_once() {
        let mut r = Recorder::new(Nanos(0), Nanos::SECOND);
        r.record(OpKind::Write, Nanos(1), 100, Nanos(1));
        r.mark_first_done();
        r.record(OpKind::Write, Nanos(1), 100, Nanos(2));
        r.mark_first_done();
        let m = r.finish();
        // One write of 100 bytes completed at 1 ns: frozen there.
        assert_eq!(
            m.first_done[&OpKind::Write],
            FirstDoneRate {
                ops_per_sec: 1e9,
                bytes_per_sec: 1e11
            }
        );
        assert_eq!(m.ops[&OpKind::Write].count.ops, 2);
        assert_eq!(m.first_done_at, Some(Nanos(1)));
    }
}
