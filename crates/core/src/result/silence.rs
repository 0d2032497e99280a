//! Where a phase went quiet: [`Silences`] keeps, per worker and then merged over workers
//! and ranks, the longest stretches in which no operation completed, and [`Pause`] is the
//! figure read from them and the timeline: the longest stretch in which nothing completed
//! on any worker of any rank (a server that failed over, an MDS that restarted, a stall),
//! with the rates before and after it.

use serde::{Deserialize, Serialize};

use super::Timeline;
use crate::units::Nanos;

/// Stretches kept per worker and after every merge: enough that the one every worker
/// shares survives the merge of workers that also paused elsewhere.
pub const KEPT_SILENCES: usize = 8;

/// A pause shorter than this is not reported: the phase's rate stands for it.
pub const PAUSE_MIN: Nanos = Nanos::SECOND;

/// The seconds of timeline before and after a pause its rates are taken over.
const RATE_WINDOW_S: f64 = 5.0;

/// Stretches of a phase with no completion, times counted from the phase start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Silences {
    /// The first and the last completion (None: nothing completed).
    pub span: Option<(Nanos, Nanos)>,
    /// The longest stretches inside the span with no completion, as (start, end): the
    /// completion before and the completion after. Longest first, at most
    /// [`KEPT_SILENCES`].
    pub gaps: Vec<(Nanos, Nanos)>,
}

impl Silences {
    /// The shortest gap kept, once [`KEPT_SILENCES`] are: a shorter one cannot enter
    /// (the recorder's test per completion).
    pub fn floor(&self) -> Nanos {
        if self.gaps.len() < KEPT_SILENCES {
            Nanos::ZERO
        } else {
            self.gaps.last().map_or(Nanos::ZERO, |g| g.1 - g.0)
        }
    }

    /// Keeps the stretch from a completion at `from` to the next one at `to` (both from
    /// the phase start) if it is among the longest.
    pub fn gap(&mut self, from: Nanos, to: Nanos) {
        if to.saturating_sub(from) > self.floor() {
            self.keep(vec![(from, to)]);
        }
    }

    /// These silences of a worker that completed something, with their span ending at
    /// its last completion, `last` (and starting at the phase start when its first
    /// completion came at once, which no stretch before it announced).
    pub fn ended_at(mut self, last: Nanos) -> Silences {
        let first = self.span.map_or(Nanos::ZERO, |s| s.0);
        self.span = Some((first, last.max(first)));
        self
    }

    fn keep(&mut self, more: Vec<(Nanos, Nanos)>) {
        self.gaps.extend(more);
        self.gaps.retain(|g| g.1 > g.0);
        self.gaps
            .sort_by(|a, b| (b.1 - b.0).cmp(&(a.1 - a.0)).then(a.0.cmp(&b.0)));
        self.gaps.dedup();
        self.gaps.truncate(KEPT_SILENCES);
    }

    /// The stretches in which neither side completed anything: inside the joint span,
    /// each side is quiet before its first completion, in its gaps and after its last.
    /// Exact while each side's quiet stretches are among those it kept.
    pub fn merge(&mut self, other: &Silences) {
        let (Some(a), Some(b)) = (self.span, other.span) else {
            if self.span.is_none() {
                *self = other.clone();
            }
            return;
        };
        let span = (a.0.min(b.0), a.1.max(b.1));
        let quiet_a = self.quiet_within(span);
        let quiet_b = other.quiet_within(span);
        let mut both = Vec::new();
        for x in &quiet_a {
            for y in &quiet_b {
                let (s, e) = (x.0.max(y.0), x.1.min(y.1));
                if e > s {
                    both.push((s, e));
                }
            }
        }
        self.span = Some(span);
        self.gaps.clear();
        self.keep(both);
    }

    /// This side's quiet stretches inside `span` (which holds its own).
    fn quiet_within(&self, span: (Nanos, Nanos)) -> Vec<(Nanos, Nanos)> {
        let Some((first, last)) = self.span else {
            return vec![span];
        };
        let mut quiet = vec![(span.0, first), (last, span.1)];
        quiet.extend(self.gaps.iter().copied());
        quiet.retain(|q| q.1 > q.0);
        quiet
    }

    /// Nothing completed (nothing to store).
    pub fn is_empty(&self) -> bool {
        self.span.is_none()
    }

    /// The longest stretch with no completion, if any.
    pub fn longest(&self) -> Option<(Nanos, Nanos)> {
        self.gaps.first().copied()
    }
}

/// The longest stretch of a phase in which no operation completed on any worker, when it
/// lasted at least [`PAUSE_MIN`] (docs/figures.md, "Pause").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pause {
    /// The last completion before it, from the phase start.
    pub start: Nanos,
    /// From that completion to the first one after it.
    pub length: Nanos,
    /// Operations per second over the whole timeline intervals of up to 5 s before the
    /// pause began and after it ended (None: no whole interval there).
    pub ops_per_sec_before: Option<f64>,
    pub ops_per_sec_after: Option<f64>,
    /// I/Os retried: operations that lasted (99 % of) the whole pause, so were in flight
    /// from its start to its end (nothing completed in it), the ones a client sends again
    /// once it has reconnected to a server that failed over (libnfs resends every request
    /// in flight on a reconnect). 0 for a pause nothing was in flight through (a think
    /// time). Filled in by [`super::PhaseResult::pause`], from the latency histograms.
    #[serde(default)]
    pub ios_retried: u64,
}

impl Timeline {
    /// The phase's pause, read from its silences and its intervals: the longest
    /// stretch between two completions, or from the start to the first, or from the last
    /// to the phase's end (`elapsed`: a phase ended while stalled).
    pub fn pause(&self, elapsed: Nanos) -> Option<Pause> {
        let (first, last) = self.silences.span?;
        let (start, end) = [(Nanos::ZERO, first), (last, elapsed.max(last))]
            .into_iter()
            .chain(self.silences.longest())
            .max_by_key(|g| (g.1 - g.0, std::cmp::Reverse(g.0)))?;
        let length = end - start;
        if length < PAUSE_MIN {
            return None;
        }
        let step = self.interval.as_secs_f64();
        let (s, e) = (start.as_secs_f64(), end.as_secs_f64());
        Some(Pause {
            start,
            length,
            ops_per_sec_before: self.rate_over(s - RATE_WINDOW_S, s, step),
            ops_per_sec_after: self.rate_over(e, e + RATE_WINDOW_S, step),
            ios_retried: 0,
        })
    }

    /// Operations per second of every series over the whole intervals inside [from, to].
    fn rate_over(&self, from: f64, to: f64, step: f64) -> Option<f64> {
        if step <= 0.0 {
            return None;
        }
        let first = (from.max(0.0) / step).ceil() as usize;
        let end = (to / step).floor() as usize;
        let len = self.series.iter().map(|s| s.ops.len()).max().unwrap_or(0);
        // The last interval of a series may be a partial one (the phase ended in it).
        let end = end.min(len.saturating_sub(1));
        if end <= first {
            return None;
        }
        let ops: u64 = self
            .series
            .iter()
            .flat_map(|s| s.ops.get(first..end).unwrap_or(&[]))
            .sum();
        Some(ops as f64 / ((end - first) as f64 * step))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{OpKind, OpSeries};

    fn ms(v: u64) -> Nanos {
        Nanos::from_millis(v)
    }

    /// A worker completing every `every` ms over [from, to), quiet in `holes`.
    fn worker(from: u64, to: u64, every: u64, holes: &[(u64, u64)]) -> Silences {
        let mut s = Silences::default();
        let mut prev = None;
        let mut t = from;
        while t < to {
            if !holes.iter().any(|h| t > h.0 && t < h.1) {
                match prev {
                    None => s.span = Some((ms(t), ms(t))),
                    Some(p) => s.gap(p, ms(t)),
                }
                prev = Some(ms(t));
            }
            t += every;
        }
        s.ended_at(prev.unwrap())
    }

    #[test]
    fn a_worker_keeps_its_longest_gaps_longest_first() {
        let s = worker(0, 10_000, 10, &[(2_000, 2_500), (6_000, 9_000)]);
        assert_eq!(s.span, Some((ms(0), ms(9_990))));
        assert_eq!(s.gaps[0], (ms(6_000), ms(9_000)));
        assert_eq!(s.gaps[1], (ms(2_000), ms(2_500)));
        assert_eq!(s.gaps.len(), KEPT_SILENCES);
        assert!(s.gaps[2..].iter().all(|g| g.1 - g.0 == ms(10)));
    }

    #[test]
    fn merged_workers_are_quiet_only_where_both_were() {
        // Both stall from 3 s to 5 s (a failover); one also paused alone at 1 s.
        let a = worker(0, 8_000, 7, &[(3_000, 5_000), (1_000, 1_800)]);
        let b = worker(0, 8_000, 11, &[(2_990, 5_010)]);
        let mut m = a.clone();
        m.merge(&b);
        let (s, e) = m.longest().unwrap();
        // The joint quiet stretch: the later last completion before, the earlier first
        // after.
        assert_eq!(s, ms(2_996));
        assert_eq!(e, ms(5_005));
        // The lone pause is no joint silence: b completed meanwhile.
        assert!(m.gaps.iter().all(|g| g.1 - g.0 < ms(100) || g.0 == s));
        // Merging is symmetric.
        let mut n = b.clone();
        n.merge(&a);
        assert_eq!(n.longest(), m.longest());
    }

    #[test]
    fn a_worker_that_finished_early_does_not_hide_a_later_pause() {
        let a = worker(0, 8_000, 10, &[(4_000, 6_000)]);
        let b = worker(0, 2_000, 10, &[]);
        let mut m = b.clone();
        m.merge(&a);
        assert_eq!(m.longest(), Some((ms(4_000), ms(6_000))));
        let mut none = Silences::default();
        none.merge(&a);
        assert_eq!(none, a);
    }

    #[test]
    fn the_pause_has_the_rates_around_it() {
        let mut t = Timeline {
            interval: Nanos::SECOND,
            series: vec![OpSeries {
                op: OpKind::Write,
                ops: vec![100, 100, 100, 40, 0, 0, 60, 200, 200, 200, 5],
                bytes: vec![0; 11],
                latency_sum: vec![0; 11],
            }],
            silences: Silences::default(),
        };
        t.silences.span = Some((ms(1), ms(10_200)));
        t.silences.gaps = vec![(ms(3_400), ms(6_500))];
        let p = t.pause(ms(10_200)).unwrap();
        assert_eq!(p.start, ms(3_400));
        assert_eq!(p.length, ms(3_100));
        // Before: whole intervals 0..3 (3.4 s back to 0); after: 7..10, the partial 10th
        // left out.
        assert_eq!(p.ops_per_sec_before, Some(100.0));
        assert_eq!(p.ops_per_sec_after, Some(200.0));
        t.silences.gaps = vec![(ms(3_400), ms(4_300))];
        assert_eq!(t.pause(ms(10_200)), None, "under a second is no pause");
        // A phase that ended stalled: the pause runs to its end, with no rate after.
        let p = t.pause(ms(13_000)).unwrap();
        assert_eq!((p.start, p.length), (ms(10_200), ms(2_800)));
        assert_eq!(p.ops_per_sec_after, None);
        // One that waited 2 s for its first completion.
        t.silences.span = Some((ms(2_000), ms(10_200)));
        let p = t.pause(ms(10_200)).unwrap();
        assert_eq!((p.start, p.length), (Nanos::ZERO, ms(2_000)));
        assert_eq!(p.ops_per_sec_before, None);
    }
}
