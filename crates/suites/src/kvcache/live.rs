//! Watching a trial while it runs (`--serve`): [`KvLive`] is what this rank's workers
//! have done so far in the running trial (tokens generated, the storage tier's
//! whole-entry reads and writes with their bytes, their device spans in the coarse
//! buckets of iolab_core::live_latency), counted with atomics as each cache operation
//! or request ends; [`KvLiveCounts::per_second`] turns two snapshots into the figures of
//! the second between them ([`KvSecond`]). The figures to quote stay the stored ones.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use iolab_core::kvcache::TierKind;
use iolab_core::live_latency::{BUCKETS, bucket, quantile};

use super::cache::Op;

/// The running trial's counts on this rank.
pub struct KvLive {
    /// Trials begun in this run (the running one's number, from 1; 0 before the first).
    trial: AtomicU32,
    /// The running trial's users.
    users: AtomicU32,
    tokens: AtomicU64,
    /// The storage tier's whole-entry reads and writes, and their bytes.
    reads: AtomicU64,
    writes: AtomicU64,
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
    read_device: [AtomicU64; BUCKETS],
    write_device: [AtomicU64; BUCKETS],
}

impl Default for KvLive {
    fn default() -> Self {
        KvLive {
            trial: AtomicU32::new(0),
            users: AtomicU32::new(0),
            tokens: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
            read_device: std::array::from_fn(|_| AtomicU64::new(0)),
            write_device: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// A snapshot of [`KvLive`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KvLiveCounts {
    pub trial: u32,
    pub users: u32,
    pub tokens: u64,
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub read_device: Vec<u64>,
    pub write_device: Vec<u64>,
}

/// The figures of one second of a trial (this rank's), defined in docs/figures.md.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct KvSecond {
    pub tokens_per_sec: f64,
    /// The storage tier's whole entries read and written, bytes per second.
    pub read_bytes_per_sec: f64,
    pub write_bytes_per_sec: f64,
    /// p95 of the storage tier's device spans that ended in the second (seconds, to a
    /// quarter octave); None when there was none.
    pub read_device_p95: Option<f64>,
    pub write_device_p95: Option<f64>,
}

impl KvLive {
    /// A new trial of `users` begins: its counts start from zero.
    pub fn begin(&self, users: u32) {
        for c in [
            &self.tokens,
            &self.reads,
            &self.writes,
            &self.bytes_read,
            &self.bytes_written,
        ] {
            c.store(0, Relaxed);
        }
        for c in self.read_device.iter().chain(&self.write_device) {
            c.store(0, Relaxed);
        }
        self.users.store(users, Relaxed);
        self.trial.fetch_add(1, Relaxed);
    }

    /// A whole-entry cache operation ended (the storage tier's are counted).
    pub fn op(&self, op: &Op, write: bool) {
        if op.tier != TierKind::Storage {
            return;
        }
        if write {
            self.writes.fetch_add(1, Relaxed);
            self.bytes_written.fetch_add(op.bytes, Relaxed);
            self.write_device[bucket(op.spans.device.0)].fetch_add(1, Relaxed);
        } else {
            self.read_begins(op.tier, op.bytes);
            self.read_ended(op);
        }
    }

    /// A whole-entry read begins: its bytes are counted now, as the tally counts them.
    pub fn read_begins(&self, tier: TierKind, bytes: u64) {
        if tier == TierKind::Storage {
            self.reads.fetch_add(1, Relaxed);
            self.bytes_read.fetch_add(bytes, Relaxed);
        }
    }

    /// A whole-entry read (counted as it began) ended: its device span.
    pub fn read_ended(&self, op: &Op) {
        if op.tier == TierKind::Storage {
            self.read_device[bucket(op.spans.device.0)].fetch_add(1, Relaxed);
        }
    }

    /// A request completed, generating `tokens`.
    pub fn request(&self, tokens: u64) {
        self.tokens.fetch_add(tokens, Relaxed);
    }

    pub fn snapshot(&self) -> KvLiveCounts {
        let load = |a: &[AtomicU64]| a.iter().map(|c| c.load(Relaxed)).collect();
        KvLiveCounts {
            trial: self.trial.load(Relaxed),
            users: self.users.load(Relaxed),
            tokens: self.tokens.load(Relaxed),
            reads: self.reads.load(Relaxed),
            writes: self.writes.load(Relaxed),
            bytes_read: self.bytes_read.load(Relaxed),
            bytes_written: self.bytes_written.load(Relaxed),
            read_device: load(&self.read_device),
            write_device: load(&self.write_device),
        }
    }
}

/// Counts per bucket since `then` (which may be empty: the trial's start).
fn since(now: &[u64], then: &[u64]) -> Vec<u64> {
    now.iter()
        .enumerate()
        .map(|(i, n)| n.saturating_sub(then.get(i).copied().unwrap_or(0)))
        .collect()
}

impl KvLiveCounts {
    /// The storage tier's device spans, reads and writes together, that ended since
    /// `before`, per live-latency bucket.
    pub fn device_spans_since(&self, before: &KvLiveCounts) -> Vec<u64> {
        let reads = since(&self.read_device, &before.read_device);
        let writes = since(&self.write_device, &before.write_device);
        reads.iter().zip(writes).map(|(r, w)| r + w).collect()
    }

    /// The figures from `before` (of the same trial; empty counts at its start) to
    /// these, `secs` later.
    pub fn per_second(&self, before: &KvLiveCounts, secs: f64) -> KvSecond {
        let secs = secs.max(1e-9);
        let rate = |now: u64, then: u64| now.saturating_sub(then) as f64 / secs;
        let p95 =
            |now: &[u64], then: &[u64]| quantile(&since(now, then), 0.95).map(|ns| ns as f64 / 1e9);
        KvSecond {
            tokens_per_sec: rate(self.tokens, before.tokens),
            read_bytes_per_sec: rate(self.bytes_read, before.bytes_read),
            write_bytes_per_sec: rate(self.bytes_written, before.bytes_written),
            read_device_p95: p95(&self.read_device, &before.read_device),
            write_device_p95: p95(&self.write_device, &before.write_device),
        }
    }
}

#[cfg(test)]
mod tests {
    use iolab_core::units::Nanos;

    use super::*;
    use crate::kvcache::entry::Spans;

    fn op(tier: TierKind, bytes: u64, device_ms: u64) -> Op {
        Op {
            tier,
            bytes,
            spans: Spans {
                total: Nanos::from_millis(device_ms + 1),
                device: Nanos::from_millis(device_ms),
            },
        }
    }

    #[test]
    fn a_second_has_the_rates_and_p95_of_what_ended_in_it() {
        let live = KvLive::default();
        live.begin(4);
        let start = live.snapshot();
        assert_eq!((start.trial, start.users), (1, 4));
        for ms in 1..=20 {
            live.op(&op(TierKind::Storage, 1000, ms), false);
        }
        live.op(&op(TierKind::Storage, 5000, 300), true);
        // The CPU tier's copies are not the storage tier's.
        live.op(&op(TierKind::Cpu, 1 << 30, 900), false);
        live.request(64);
        let one = live.snapshot();
        let s = one.per_second(&start, 2.0);
        assert_eq!(s.tokens_per_sec, 32.0);
        assert_eq!(s.read_bytes_per_sec, 10_000.0);
        assert_eq!(s.write_bytes_per_sec, 2500.0);
        // The 19th of 20 reads (19 ms), to the upper edge of its quarter octave.
        let p95 = s.read_device_p95.unwrap();
        assert!((0.019..0.019 * 1.2).contains(&p95), "{p95}");
        let w = s.write_device_p95.unwrap();
        assert!((0.3..0.36).contains(&w), "{w}");
        // The next second has only what ended after it began.
        live.op(&op(TierKind::Storage, 1000, 2), false);
        let two = live.snapshot();
        assert_eq!(two.device_spans_since(&one).iter().sum::<u64>(), 1);
        assert_eq!(two.device_spans_since(&start).iter().sum::<u64>(), 22);
        let next = two.per_second(&one, 1.0);
        assert_eq!(next.read_bytes_per_sec, 1000.0);
        assert!(next.read_device_p95.unwrap() < 0.003);
        assert_eq!(next.write_device_p95, None);
        assert_eq!(next.tokens_per_sec, 0.0);
        // A new trial starts from zero.
        live.begin(5);
        let t2 = live.snapshot();
        assert_eq!((t2.trial, t2.users, t2.reads, t2.tokens), (2, 5, 0, 0));
    }
}
