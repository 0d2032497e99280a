//! The KV cache workload's vocabulary (`iolab kvcache`, MLPerf Storage v3.0): the model
//! table ([`KvModel`], [`ModelShape`]: bytes of KV cache per token as kv-cache.py's
//! models.py computes them), the measured figures ([`KvCacheFigures`], each defined in
//! docs/figures.md) and the reference's pass/fail criteria ([`Criterion`]). No I/O.

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use crate::histogram::LatencyHistogram;
use crate::units::{ByteCount, BytesPerSec, Nanos, bandwidth};

/// A model of MLPerf Storage v3.0's KV cache workload (mlpstorage's KVCACHE_MODELS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
pub enum KvModel {
    #[value(name = "tiny-1b")]
    #[serde(rename = "tiny-1b")]
    Tiny1b,
    #[value(name = "mistral-7b")]
    #[serde(rename = "mistral-7b")]
    Mistral7b,
    #[value(name = "llama2-7b")]
    #[serde(rename = "llama2-7b")]
    Llama2_7b,
    #[value(name = "llama3.1-8b")]
    #[serde(rename = "llama3.1-8b")]
    Llama31_8b,
    #[value(name = "llama3.1-70b-instruct")]
    #[serde(rename = "llama3.1-70b-instruct")]
    Llama31_70bInstruct,
}

/// A model's attention shape (config.yaml's model_configs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelShape {
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    /// Bytes per element (float16: 2).
    pub dtype_bytes: u64,
}

impl KvModel {
    pub const ALL: [KvModel; 5] = [
        KvModel::Tiny1b,
        KvModel::Mistral7b,
        KvModel::Llama2_7b,
        KvModel::Llama31_8b,
        KvModel::Llama31_70bInstruct,
    ];

    /// The reference's name for it.
    pub fn name(self) -> &'static str {
        match self {
            KvModel::Tiny1b => "tiny-1b",
            KvModel::Mistral7b => "mistral-7b",
            KvModel::Llama2_7b => "llama2-7b",
            KvModel::Llama31_8b => "llama3.1-8b",
            KvModel::Llama31_70bInstruct => "llama3.1-70b-instruct",
        }
    }

    pub fn shape(self) -> ModelShape {
        let (layers, hidden, heads, kv_heads) = match self {
            KvModel::Tiny1b => (12, 1024, 8, 4),
            KvModel::Mistral7b => (32, 4096, 32, 8),
            KvModel::Llama2_7b => (32, 4096, 32, 32),
            KvModel::Llama31_8b => (32, 4096, 32, 8),
            KvModel::Llama31_70bInstruct => (80, 8192, 64, 8),
        };
        ModelShape {
            layers,
            hidden,
            heads,
            kv_heads,
            dtype_bytes: 2,
        }
    }
}

impl ModelShape {
    /// Head dimension: hidden / heads (models.py's `kv_dim_per_head`).
    pub fn head_dim(&self) -> u64 {
        self.hidden / self.heads
    }

    /// Bytes of K and V per token: layers x KV heads x head dim x 2 x dtype bytes.
    pub fn bytes_per_token(&self) -> u64 {
        self.layers * self.kv_heads * self.head_dim() * 2 * self.dtype_bytes
    }
}

/// Latency percentiles of one kind of operation (the reference's p50/p95/p99).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KvLatency {
    pub count: u64,
    pub mean_ns: f64,
    pub p50: Nanos,
    pub p95: Nanos,
    pub p99: Nanos,
    pub max: Nanos,
}

impl KvLatency {
    pub fn of(h: &LatencyHistogram) -> KvLatency {
        KvLatency {
            count: h.count(),
            mean_ns: h.mean(),
            p50: h.percentile(50.0),
            p95: h.percentile(95.0),
            p99: h.percentile(99.0),
            max: h.max(),
        }
    }
}

/// A tier of the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TierKind {
    /// The CPU-memory tier (buffers held by iolab).
    Cpu,
    /// The storage tier (a directory).
    Storage,
}

impl TierKind {
    pub fn name(self) -> &'static str {
        match self {
            TierKind::Cpu => "cpu",
            TierKind::Storage => "storage",
        }
    }
}

/// What one tier did during a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TierFigures {
    pub bytes_read: ByteCount,
    pub bytes_written: ByteCount,
    /// Whole-entry reads and writes.
    pub reads: u64,
    pub writes: u64,
    /// Entries that left this tier: demoted to the next one, or deleted from the last.
    pub evictions: u64,
    /// Whole-operation latency: open to close for the storage tier, the copy for CPU.
    pub read_latency: KvLatency,
    pub write_latency: KvLatency,
    /// The storage tier's device spans (the reference's "device" latency): the
    /// reads themselves, and the fsync of a write.
    pub read_device: KvLatency,
    pub write_device: KvLatency,
}

/// The figures of one run (one trial), all ranks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KvCacheFigures {
    /// The measured window: from the first request to the last completion.
    pub duration: Nanos,
    pub requests: u64,
    /// Tokens the completed requests generated (the reference's tokens).
    pub tokens_generated: u64,
    /// Sum over requests of the time each spent in cache operations.
    pub storage_time: Nanos,
    pub hits: u64,
    pub misses: u64,
    /// The hits and misses by kind of lookup (absent, all zero, in a run stored before
    /// 2026-12-08).
    #[serde(default)]
    pub lookups: KvLookups,
    /// Bytes of every cache read the requests made, whole entries on every tier: earlier
    /// turns read back, the decode steps, a system prompt found (kv-cache.py's
    /// `decode_bytes_read`: each of its `access_cache` reads is a decode-phase read).
    /// A demotion's read of a CPU entry is not a request's and is not in it. Read it
    /// with [`Self::decode_bytes`]: in a run stored before 2026-12-08 this field holds
    /// the decode steps' bytes.
    pub decode_bytes_read: ByteCount,
    /// Bytes the decode steps alone (the entry's first read and one per 32 generated
    /// tokens) read from the storage tier. None in a run stored before 2026-12-08
    /// (read it with [`Self::decode_step_bytes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_step_bytes_read: Option<ByteCount>,
    pub cpu: TierFigures,
    pub storage: TierFigures,
    pub end_to_end: KvLatency,
    pub queue_wait: KvLatency,
    /// Per write, the time it waited before its I/O: for a writer's turn
    /// (`--max-concurrent-allocs`) and for room held by entries in use.
    #[serde(default)]
    pub allocation_wait: KvLatency,
    /// Per request, the sum of its cache operations' latencies.
    pub request_storage: KvLatency,
    /// Writes that found no room in any tier (nothing written: the storage tier never
    /// grows past its capacity).
    pub refused_writes: u64,
    /// With more than one rank: the worst rank's storage device p95s, which the
    /// criteria and the scored figures judge (each rank is a client that must pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_rank: Option<WorstRank>,
}

/// Cache lookups of one kind: those that found their entry and those that did not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lookups {
    pub hits: u64,
    pub misses: u64,
}

impl Lookups {
    pub fn add(&mut self, hit: bool) {
        if hit {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
    }

    fn merge(&mut self, o: &Lookups) {
        self.hits += o.hits;
        self.misses += o.misses;
    }
}

/// The requests' cache lookups by kind, as kv-cache.py's `process_requests` makes
/// them: a system prompt's prefix, the conversation's other turns read back (its
/// `get_all_previous_turn_keys` gives every turn the conversation holds when the request
/// is served: the earlier ones, and the later ones already issued, not yet written
/// unless served first), and the decode's reads of the request's own entry (its first
/// read, then one per 32 generated tokens when it hit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvLookups {
    pub system_prompt: Lookups,
    pub earlier_turns: Lookups,
    pub later_turns: Lookups,
    pub decode: Lookups,
}

impl KvLookups {
    pub fn merge(&mut self, o: &KvLookups) {
        self.system_prompt.merge(&o.system_prompt);
        self.earlier_turns.merge(&o.earlier_turns);
        self.later_turns.merge(&o.later_turns);
        self.decode.merge(&o.decode);
    }

    /// All kinds' (hits, misses).
    pub fn total(&self) -> (u64, u64) {
        let all = [
            self.system_prompt,
            self.earlier_turns,
            self.later_turns,
            self.decode,
        ];
        (
            all.iter().map(|l| l.hits).sum(),
            all.iter().map(|l| l.misses).sum(),
        )
    }
}

/// The rank whose storage device p95 was the highest, for reads and for writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorstRank {
    pub ranks: u32,
    pub read_device_p95: Nanos,
    pub read_rank: u32,
    pub write_device_p95: Nanos,
    pub write_rank: u32,
}

impl WorstRank {
    /// The worst of every rank's `(read, write)` device p95s (None for one rank).
    pub fn of(p95s: &[(Nanos, Nanos)]) -> Option<WorstRank> {
        if p95s.len() < 2 {
            return None;
        }
        let worst = |pick: fn(&(Nanos, Nanos)) -> Nanos| {
            p95s.iter()
                .enumerate()
                .map(|(r, p)| (pick(p), r as u32))
                .fold((Nanos::ZERO, 0), |a, b| if b.0 > a.0 { b } else { a })
        };
        let (read_device_p95, read_rank) = worst(|p| p.0);
        let (write_device_p95, write_rank) = worst(|p| p.1);
        Some(WorstRank {
            ranks: p95s.len() as u32,
            read_device_p95,
            read_rank,
            write_device_p95,
            write_rank,
        })
    }
}

impl KvCacheFigures {
    fn per_sec(n: u64, took: Nanos) -> f64 {
        if took.0 == 0 {
            0.0
        } else {
            n as f64 * 1e9 / took.0 as f64
        }
    }

    /// Generated tokens over the wall-clock duration.
    pub fn wall_tokens_per_sec(&self) -> f64 {
        Self::per_sec(self.tokens_generated, self.duration)
    }

    /// Generated tokens over the summed storage time of the requests (the reference's
    /// `storage_throughput_tokens_per_sec`).
    pub fn storage_tokens_per_sec(&self) -> f64 {
        Self::per_sec(self.tokens_generated, self.storage_time)
    }

    pub fn requests_per_sec(&self) -> f64 {
        Self::per_sec(self.requests, self.duration)
    }

    pub fn hit_rate(&self) -> f64 {
        let n = self.hits + self.misses;
        if n == 0 {
            0.0
        } else {
            self.hits as f64 / n as f64
        }
    }

    /// The decode bytes read (kv-cache.py's, see the field). A run stored before
    /// 2026-12-08 kept only the decode steps' bytes: its figure is recomputed from the
    /// tiers' bytes read when that is exact (no CPU entry was demoted, so every read
    /// was a request's), else None.
    pub fn decode_bytes(&self) -> Option<ByteCount> {
        match self.decode_step_bytes_read {
            Some(_) => Some(self.decode_bytes_read),
            None if self.cpu.evictions == 0 => {
                Some(ByteCount(self.cpu.bytes_read.0 + self.storage.bytes_read.0))
            }
            None => None,
        }
    }

    /// The bytes the decode steps alone read from the storage tier (in a run stored
    /// before 2026-12-08, its `decode_bytes_read`).
    pub fn decode_step_bytes(&self) -> ByteCount {
        self.decode_step_bytes_read
            .unwrap_or(self.decode_bytes_read)
    }

    pub fn read_bandwidth(&self) -> BytesPerSec {
        bandwidth(self.storage.bytes_read, self.duration)
    }

    pub fn write_bandwidth(&self) -> BytesPerSec {
        bandwidth(self.storage.bytes_written, self.duration)
    }

    /// The storage tier's read device p95 that is judged: the worst rank's under
    /// MPI, else the run's.
    pub fn read_device_p95(&self) -> Nanos {
        self.worst_rank
            .map_or(self.storage.read_device.p95, |w| w.read_device_p95)
    }

    /// The write device p95 that is judged (as [`Self::read_device_p95`]).
    pub fn write_device_p95(&self) -> Nanos {
        self.worst_rank
            .map_or(self.storage.write_device.p95, |w| w.write_device_p95)
    }

    /// The reference's `storage_health` under its latency profile (the closed one).
    pub fn criteria(&self) -> Vec<Criterion> {
        let ms = |n: Nanos| n.0 as f64 / 1e6;
        let mut c = vec![
            Criterion {
                name: "storage write device p95 (ms)",
                value: ms(self.write_device_p95()),
                limit: 500.0,
                below: true,
            },
            Criterion {
                name: "storage read device p95 (ms)",
                value: ms(self.read_device_p95()),
                limit: 200.0,
                below: true,
            },
        ];
        if self.cpu.reads + self.cpu.writes > 0 {
            let p95 = self.cpu.read_latency.p95.max(self.cpu.write_latency.p95);
            c.push(Criterion {
                name: "cpu tier p95 (ms)",
                value: ms(p95),
                limit: 150.0,
                below: true,
            });
        }
        c.push(Criterion {
            name: "cache hit rate",
            value: self.hit_rate(),
            limit: 0.30,
            below: false,
        });
        c
    }

    /// The figures MLPerf scores and the reference prints, named, for trials'
    /// medians and spreads.
    pub fn scored(&self) -> [(&'static str, f64); 8] {
        let ms = |n: Nanos| n.0 as f64 / 1e6;
        [
            ("wall-clock tokens/s", self.wall_tokens_per_sec()),
            ("storage tokens/s", self.storage_tokens_per_sec()),
            ("storage read GiB/s", self.read_bandwidth().gib_per_sec()),
            ("storage write GiB/s", self.write_bandwidth().gib_per_sec()),
            ("read device p95 ms", ms(self.read_device_p95())),
            ("write device p95 ms", ms(self.write_device_p95())),
            (
                "decode GiB read",
                self.decode_bytes().map_or(f64::NAN, |b| b.0 as f64 / GIB),
            ),
            ("cache hit rate", self.hit_rate()),
        ]
    }

    pub fn passed(&self) -> bool {
        self.criteria().iter().all(Criterion::passed)
    }
}

const GIB: f64 = 1073741824.0;

/// Why `--autoscale` grew, repeated or stopped after a step (kv-cache.py's
/// WorkloadAutoscaler actions, one step a trial).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AutoscaleWhy {
    /// qos: passed, saturation under 90 % of the target: users x1.2.
    BelowTarget,
    /// qos: passed within 10 % of the target saturation: stop, the answer.
    AtTarget,
    /// qos: failed (a criterion, or saturation over 110 % of the target) for the first
    /// time in a row: the same users again (the reference needs two samples).
    FailedOnce,
    /// qos: failed twice in a row: stop.
    Failed,
    /// capacity: the first step, or tokens/s over 101 % of the peak: more users.
    Rising,
    /// capacity: not over the peak once: the same users again.
    FlatOnce,
    /// capacity: not over the peak twice in a row: stop, the peak is the answer.
    Peaked,
    /// It would grow past the most users (500, kv-cache.py's clamp): stop.
    MostUsers,
    /// The last step --autoscale-steps allows: stop.
    MostSteps,
}

/// One step of `--autoscale`: a trial at `users`, and what it decided.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AutoscaleStep {
    /// From 1.
    pub step: u32,
    pub users: u32,
    pub wall_tokens_per_sec: f64,
    pub read_device_p95: Nanos,
    /// min(read device p95 / 100 ms, 1) x (1 on a plateau, else 0.5): see docs/figures.md.
    pub saturation: f64,
    /// The QoS criteria passed (qos: and saturation at most 110 % of the target).
    pub passed: bool,
    pub why: AutoscaleWhy,
    /// The next step's users; None after the last step.
    pub next_users: Option<u32>,
}

/// What `--autoscale` found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AutoscaleResult {
    pub steps: Vec<AutoscaleStep>,
    /// qos: the most users of a passing step; capacity: the users of the peak. None:
    /// no step passed (qos).
    pub users: Option<u32>,
    /// That step's wall-clock tokens/s.
    pub wall_tokens_per_sec: f64,
}

/// One of the reference's pass/fail checks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Criterion {
    pub name: &'static str,
    pub value: f64,
    pub limit: f64,
    /// Passes below the limit (a latency), else above it (the hit rate).
    pub below: bool,
}

impl Criterion {
    pub fn passed(&self) -> bool {
        if self.below {
            self.value < self.limit
        } else {
            self.value > self.limit
        }
    }
}

#[cfg(test)]
#[path = "kvcache_tests.rs"]
mod tests;
