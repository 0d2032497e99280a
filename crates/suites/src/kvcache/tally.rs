//! What a trial measures: [`Tally`] (whole-entry histograms per tier and operation,
//! counters, and the engine's measure of the storage tier's I/Os: per-I/O latencies,
//! the per-second timeline, errors), one per trial on each rank ([`TrialTally`], which
//! its workers record into through a [`WorkerTally`]), merged across ranks, then turned
//! into the figures of iolab_core::kvcache.

use std::sync::{Mutex, MutexGuard};

use iolab_core::LatencyHistogram;
use iolab_core::kvcache::{KvCacheFigures, KvLatency, KvLookups, TierFigures, TierKind};
use iolab_core::result::{Silences, Timeline};
use iolab_core::units::{ByteCount, Nanos};
use iolab_engine::WorkerMeasure;
use serde::{Deserialize, Serialize};

use super::cache::Op;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TierTally {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub reads: u64,
    pub writes: u64,
    pub read: LatencyHistogram,
    pub write: LatencyHistogram,
    pub read_device: LatencyHistogram,
    pub write_device: LatencyHistogram,
}

impl TierTally {
    fn merge(&mut self, o: &TierTally) {
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.reads += o.reads;
        self.writes += o.writes;
        self.read.merge(&o.read);
        self.write.merge(&o.write);
        self.read_device.merge(&o.read_device);
        self.write_device.merge(&o.write_device);
    }

    fn figures(&self, evictions: u64) -> TierFigures {
        TierFigures {
            bytes_read: ByteCount(self.bytes_read),
            bytes_written: ByteCount(self.bytes_written),
            reads: self.reads,
            writes: self.writes,
            evictions,
            read_latency: KvLatency::of(&self.read),
            write_latency: KvLatency::of(&self.write),
            read_device: KvLatency::of(&self.read_device),
            write_device: KvLatency::of(&self.write_device),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Tally {
    pub cpu: TierTally,
    pub storage: TierTally,
    pub end_to_end: LatencyHistogram,
    pub queue_wait: LatencyHistogram,
    /// Per write (a prefill's entry), its wait for a writer's turn and for room.
    #[serde(default)]
    pub allocation_wait: LatencyHistogram,
    pub request_storage: LatencyHistogram,
    pub requests: u64,
    pub tokens: u64,
    pub storage_time: u64,
    /// Every whole-entry read of a request, any tier (kv-cache.py's decode bytes).
    pub decode_bytes_read: u64,
    /// The decode steps' reads of the storage tier.
    pub decode_step_bytes_read: u64,
    /// The requests' lookups by kind, hits and misses.
    #[serde(default)]
    pub lookups: KvLookups,
    pub refused_writes: u64,
    /// Requests being served when the run ended (not counted as completed).
    pub cut: u64,
    /// The storage tier's I/Os as the engine's recorder measured them (no first-done
    /// rates: a trial is timed whole).
    pub io: WorkerMeasure,
}

impl Tally {
    /// Records a whole-entry cache operation (its bytes and count, its latencies).
    pub fn record(&mut self, op: &Op, write: bool) {
        if !write {
            self.read_begins(op.tier, op.bytes);
        }
        self.record_ended(op, write);
    }

    /// Counts a whole-entry read of `bytes` from `tier` as it begins, as kv-cache.py's
    /// `access_cache` counts it (before its read): a read under way when the run ends
    /// counts whole, one not yet begun does not.
    pub fn read_begins(&mut self, tier: TierKind, bytes: u64) {
        let t = match tier {
            TierKind::Cpu => &mut self.cpu,
            TierKind::Storage => &mut self.storage,
        };
        t.reads += 1;
        t.bytes_read += bytes;
    }

    /// Records an operation that has ended: its latencies; a write's bytes and count
    /// too (kv-cache.py counts a write once done). A read's were counted as it began.
    pub fn record_ended(&mut self, op: &Op, write: bool) {
        let t = match op.tier {
            TierKind::Cpu => &mut self.cpu,
            TierKind::Storage => &mut self.storage,
        };
        if write {
            t.writes += 1;
            t.bytes_written += op.bytes;
            t.write.record(op.spans.total.0);
            t.write_device.record(op.spans.device.0);
        } else {
            t.read.record(op.spans.total.0);
            t.read_device.record(op.spans.device.0);
        }
    }

    pub fn merge(&mut self, o: &Tally) {
        self.cpu.merge(&o.cpu);
        self.storage.merge(&o.storage);
        self.end_to_end.merge(&o.end_to_end);
        self.queue_wait.merge(&o.queue_wait);
        self.allocation_wait.merge(&o.allocation_wait);
        self.request_storage.merge(&o.request_storage);
        self.requests += o.requests;
        self.tokens += o.tokens;
        self.storage_time += o.storage_time;
        self.decode_bytes_read += o.decode_bytes_read;
        self.decode_step_bytes_read += o.decode_step_bytes_read;
        self.lookups.merge(&o.lookups);
        self.refused_writes += o.refused_writes;
        self.cut += o.cut;
        self.io.merge(&o.io);
    }

    /// The figures, with the cache's hit, miss and eviction counts
    /// `(hits, misses, cpu evictions, storage evictions)`.
    pub fn figures(&self, duration: Nanos, counts: [u64; 4]) -> KvCacheFigures {
        KvCacheFigures {
            duration,
            requests: self.requests,
            tokens_generated: self.tokens,
            storage_time: Nanos(self.storage_time),
            hits: counts[0],
            misses: counts[1],
            lookups: self.lookups,
            decode_bytes_read: ByteCount(self.decode_bytes_read),
            decode_step_bytes_read: Some(ByteCount(self.decode_step_bytes_read)),
            cpu: self.cpu.figures(counts[2]),
            storage: self.storage.figures(counts[3]),
            end_to_end: KvLatency::of(&self.end_to_end),
            queue_wait: KvLatency::of(&self.queue_wait),
            allocation_wait: KvLatency::of(&self.allocation_wait),
            request_storage: KvLatency::of(&self.request_storage),
            refused_writes: self.refused_writes,
            worst_rank: None,
        }
    }

    /// The storage tier's per-second timeline: its reads, writes and fsyncs as the
    /// backend made them.
    pub fn timeline(&self) -> Timeline {
        self.io.timeline.clone()
    }

    /// The counters its histograms hold (8 bytes each): what grows with the longest
    /// latency each has seen.
    pub fn histogram_counters(&self) -> usize {
        let tiers = [&self.cpu, &self.storage]
            .into_iter()
            .flat_map(|t| [&t.read, &t.write, &t.read_device, &t.write_device]);
        let own = [
            &self.end_to_end,
            &self.queue_wait,
            &self.allocation_wait,
            &self.request_storage,
        ];
        let io = self.io.ops.values().map(|m| &m.histogram);
        tiers
            .chain(own)
            .chain(io)
            .map(LatencyHistogram::counters)
            .sum()
    }
}

/// One trial's tally on one rank, shared by its workers: each records its whole-entry
/// operations and requests into it under its lock (a few hundred a second), and hands
/// it the storage tier's I/Os after each cache operation. So a trial holds one set of
/// histograms, however many workers it has: each worker's own, each grown to the
/// longest latency it had seen (HdrHistogram, 3 significant digits: 240 KiB for
/// minutes), took option 1's 200 workers from 0.31 to 0.81 GiB over its 300 s.
#[derive(Default)]
pub struct TrialTally {
    tally: Mutex<Tally>,
}

impl TrialTally {
    pub fn lock(&self) -> MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A worker's means to record into it.
    pub fn worker(&self) -> WorkerTally<'_> {
        WorkerTally {
            trial: self,
            quiet: Silences::default(),
        }
    }

    /// The trial's tally, its storage I/O's quiet stretches those of its workers
    /// ([`WorkerTally::finish`]) merged in worker order: the same figures, to the bit,
    /// as a tally of each worker's own merged in that order.
    pub fn finish(self, quiet: &[Silences]) -> Tally {
        let mut tally = self.tally.into_inner().unwrap_or_else(|p| p.into_inner());
        let mut all = Silences::default();
        for q in quiet {
            all.merge(q);
        }
        tally.io.timeline.silences = all;
        tally
    }
}

/// A worker's handle on its trial's tally, with the quiet stretches of its own storage
/// I/O: where no I/O completed on any worker is known from each worker's stretches,
/// kept whole, not from pieces of different workers' merged as they come
/// ([`Silences::merge`] keeps the longest few of each).
pub struct WorkerTally<'t> {
    trial: &'t TrialTally,
    quiet: Silences,
}

impl WorkerTally<'_> {
    pub fn lock(&self) -> MutexGuard<'_, Tally> {
        self.trial.lock()
    }

    /// Adds what the worker's entry I/O measured since it last handed it on (its
    /// pieces come in order: their quiet stretches add up to those of the whole).
    pub fn add_io(&mut self, mut io: WorkerMeasure) {
        self.quiet.merge(&std::mem::take(&mut io.timeline.silences));
        io.first_done.clear();
        io.first_done_at = None;
        self.lock().io.merge(&io);
    }

    /// The worker's quiet stretches, for [`TrialTally::finish`].
    pub fn finish(self) -> Silences {
        self.quiet
    }
}

#[cfg(test)]
#[path = "tally_tests.rs"]
mod tests;
