//! warp's measurement window. warp reports a benchmark over the time every worker was
//! busy: from the moment the last worker completed its first request to the moment the
//! first worker started its last one (`ActiveTimeRange(allThreads)`); requests inside
//! count whole, those crossing an edge count for the share of their bytes that falls
//! inside, and a request counts as done in the window when it ended there.
//!
//! warp keeps every request to compute it; iolab keeps, per worker, the first and the
//! last [`KEPT`] requests ([`OpLog`]) and the totals. A worker's requests run one after
//! another, so every request before its last [`KEPT`] ended before they started: the
//! counts at a window edge are exact whenever the edge falls among the kept requests,
//! which is the case unless a worker ran more than [`KEPT`] requests before the last
//! worker completed its first (the figure is then marked approximate).

use iolab_core::result::OpKind;

/// Requests kept at each end of a worker's log.
pub const KEPT: usize = 4096;
/// The operation kinds a log counts, by index.
pub const KINDS: [OpKind; 5] = [
    OpKind::Put,
    OpKind::Get,
    OpKind::Stat,
    OpKind::Delete,
    OpKind::List,
];

pub fn kind_index(op: OpKind) -> usize {
    KINDS.iter().position(|k| *k == op).unwrap_or(0)
}

/// One request: start and end (ns from the phase start), bytes, kind; failed requests
/// are not logged.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    start: u64,
    end: u64,
    bytes: u64,
    kind: u8,
}

/// One worker's requests at both ends of a phase, and its totals.
#[derive(Clone, Debug, Default)]
pub struct OpLog {
    head: Vec<Entry>,
    tail: Vec<Entry>,
    /// Next slot of the tail ring once it is full.
    tail_at: usize,
    ops: [u64; 5],
    bytes: [u64; 5],
    pub first_end: Option<u64>,
    pub last_start: Option<u64>,
    /// Requests started (failed ones too), for the window's edges.
    started: u64,
}

/// Operations ended and bytes moved up to a moment, per kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cumulative {
    pub ops: [f64; 5],
    pub bytes: [f64; 5],
    pub exact: bool,
}

impl OpLog {
    pub fn new() -> OpLog {
        OpLog {
            head: Vec::with_capacity(KEPT),
            ..OpLog::default()
        }
    }

    /// Bytes a log holds at most (for the memory pre-flight).
    pub const BYTES: u64 = (2 * KEPT * std::mem::size_of::<Entry>()) as u64;

    /// Records a request that started at `start` and ended at `end` (ns from the phase
    /// start); `ok` false for one that failed (only its edges count).
    pub fn record(&mut self, kind: OpKind, start: u64, end: u64, bytes: u64, ok: bool) {
        self.started += 1;
        if self.first_end.is_none() {
            self.first_end = Some(end);
        }
        self.last_start = Some(start);
        if !ok {
            return;
        }
        let k = kind_index(kind);
        self.ops[k] += 1;
        self.bytes[k] += bytes;
        let e = Entry {
            start,
            end,
            bytes,
            kind: k as u8,
        };
        if self.head.len() < KEPT {
            self.head.push(e);
        } else if self.tail.len() < KEPT {
            self.tail.push(e);
        } else {
            self.tail[self.tail_at] = e;
            self.tail_at = (self.tail_at + 1) % KEPT;
        }
    }

    /// The tail in order.
    fn tail_ordered(&self) -> impl Iterator<Item = &Entry> {
        self.tail[self.tail_at..]
            .iter()
            .chain(&self.tail[..self.tail_at])
    }

    /// Operations ended before `t` and bytes moved by `t` (a request's bytes spread
    /// evenly over its time, as warp apportions a request crossing a segment's edge).
    pub fn at(&self, t: u64) -> Cumulative {
        let mut c = Cumulative {
            exact: true,
            ..Cumulative::default()
        };
        let add = |c: &mut Cumulative, e: &Entry| {
            let k = e.kind as usize;
            if e.end < t {
                c.ops[k] += 1.0;
                c.bytes[k] += e.bytes as f64;
            } else if e.start < t && e.end > e.start {
                c.bytes[k] += e.bytes as f64 * (t - e.start) as f64 / (e.end - e.start) as f64;
            }
        };
        let head_end = self.head.last().map_or(0, |e| e.end);
        if self.tail.is_empty() || t <= head_end {
            for e in &self.head {
                add(&mut c, e);
            }
            return c;
        }
        let first_tail = self.tail_ordered().next().map_or(u64::MAX, |e| e.start);
        // Everything before the kept tail ended before it started.
        let mut before_ops = self.ops;
        let mut before_bytes = self.bytes;
        for e in &self.tail {
            before_ops[e.kind as usize] -= 1;
            before_bytes[e.kind as usize] -= e.bytes;
        }
        for k in 0..5 {
            c.ops[k] = before_ops[k] as f64;
            c.bytes[k] = before_bytes[k] as f64;
        }
        if t < first_tail {
            // Between the kept ends: the untracked middle is spread evenly over its time.
            c.exact = false;
            let from = head_end;
            let share = (t - from) as f64 / (first_tail - from).max(1) as f64;
            let mut head_ops = [0f64; 5];
            let mut head_bytes = [0f64; 5];
            for e in &self.head {
                head_ops[e.kind as usize] += 1.0;
                head_bytes[e.kind as usize] += e.bytes as f64;
            }
            for k in 0..5 {
                c.ops[k] = head_ops[k] + (c.ops[k] - head_ops[k]) * share;
                c.bytes[k] = head_bytes[k] + (c.bytes[k] - head_bytes[k]) * share;
            }
            return c;
        }
        for e in self.tail_ordered() {
            add(&mut c, e);
        }
        c
    }
}

/// The window's figures over all workers: per kind, requests ended and bytes moved
/// inside [start, end).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Window {
    pub start: u64,
    pub end: u64,
    pub ops: [f64; 5],
    pub bytes: [f64; 5],
    pub exact: bool,
}

/// This rank's part of the window [start, end) from its workers' logs.
pub fn within(logs: &[OpLog], start: u64, end: u64) -> Window {
    let mut w = Window {
        start,
        end,
        exact: true,
        ..Window::default()
    };
    for l in logs {
        let (a, b) = (l.at(start), l.at(end));
        w.exact &= a.exact && b.exact;
        for k in 0..5 {
            w.ops[k] += b.ops[k] - a.ops[k];
            w.bytes[k] += b.bytes[k] - a.bytes[k];
        }
    }
    w
}

/// This rank's window edges: the latest first completion and the earliest last start of
/// its workers; None when a worker did nothing.
pub fn edges(logs: &[OpLog]) -> Option<(u64, u64)> {
    let mut start = 0;
    let mut end = u64::MAX;
    for l in logs {
        start = start.max(l.first_end?);
        end = end.min(l.last_start?);
    }
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_of_two_workers_as_warp_counts_it() {
        // Worker A: requests of 100 bytes every 10 ns from 0; worker B starts late.
        let mut a = OpLog::new();
        for i in 0..10 {
            a.record(OpKind::Put, i * 10, i * 10 + 10, 100, true);
        }
        let mut b = OpLog::new();
        b.record(OpKind::Put, 20, 35, 100, true);
        b.record(OpKind::Put, 35, 65, 100, true);
        b.record(OpKind::Put, 65, 80, 100, true);
        let logs = [a, b];
        // Last first completion 35 (B), first last start 65 (B).
        assert_eq!(edges(&logs), Some((35, 65)));
        let w = within(&logs, 35, 65);
        let put = kind_index(OpKind::Put);
        // A: requests ending at 40, 50, 60 end inside (70 does not); bytes: half of
        // [30,40), the whole of [40,60), half of [60,70) = 50+100+100+50.
        // B: its first request ends at 35, on the window's start: ended inside, as
        // warp's segment counts it (End not before Start), with none of its bytes;
        // [35,65) lies inside whole; the one ending at 65 does not end before the end.
        assert_eq!(w.ops[put], 4.0);
        assert_eq!(w.bytes[put], 300.0 + 100.0);
        assert!(w.exact);
    }

    #[test]
    fn edges_inside_the_kept_tail_are_exact() {
        let mut a = OpLog::new();
        let n = 3 * KEPT as u64;
        for i in 0..n {
            a.record(OpKind::Get, i * 10, i * 10 + 10, 1, true);
        }
        let t = (n - 100) * 10;
        let c = a.at(t);
        assert!(c.exact);
        // Requests ending at 10, 20, ...: those of i < n - 101 end before t.
        assert_eq!(c.ops[kind_index(OpKind::Get)], (n - 101) as f64);
        // In the untracked middle: approximate, and said so.
        let c = a.at(n * 10 / 2);
        assert!(!c.exact);
    }
}
