//! LLM checkpoint layout, as DLIO's checkpointing (the `mlperf_storage_v2.0` branch,
//! checkpointing/base_checkpointing.py) lays it out for MLPerf Storage v2.0:
//! [`LlmShape`] is a model and its parallelism, [`CheckpointFile`] one file a rank
//! writes, [`LlmShape::files_of_rank`] every file of one rank. Pure arithmetic, no I/O.
//! What a run measured is a [`CheckpointOutcome`] of [`Round`]s.

use serde::{Deserialize, Serialize};

use crate::error::SpecError;
use crate::result::PhaseResult;
use crate::spec::{CheckpointSpec, LlmModel};

/// A transformer and how a job splits it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LlmShape {
    pub model: LlmModel,
    pub num_layers: u64,
    pub hidden_size: u64,
    pub ffn_hidden_size: u64,
    pub vocab_size: u64,
    pub attention_heads: u64,
    pub kv_heads: u64,
    pub tp: u64,
    pub pp: u64,
    /// The whole job's data parallelism (subset runs write a share of it).
    pub dp: u64,
    pub zero: u64,
    /// Ranks this run simulates (tp x pp x dp, or fewer in a subset run).
    pub ranks: u64,
    /// The closed submission's rank count for this model.
    pub closed_ranks: u64,
    /// Bytes of a model and of an optimizer element (fp16 and fp32).
    pub model_bytes: u64,
    pub optimizer_bytes: u64,
    /// Every file's bytes are multiplied by this (1 for MLPerf's sizes).
    pub scale: f64,
}

/// One file of a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointFile {
    /// Its name in the checkpoint's folder (DLIO's, without the `.pt` torch adds).
    pub name: String,
    /// Payload bytes: the tensors' elements times their sizes.
    pub bytes: u64,
}

struct ModelValues {
    layers: u64,
    hidden: u64,
    ffn: u64,
    heads: u64,
    kv: u64,
    tp: u64,
    pp: u64,
    zero: u64,
    closed: u64,
}

fn values(m: LlmModel) -> ModelValues {
    match m {
        LlmModel::Llama3_8b => ModelValues {
            layers: 32,
            hidden: 4096,
            ffn: 14336,
            heads: 32,
            kv: 8,
            tp: 1,
            pp: 1,
            zero: 3,
            closed: 8,
        },
        LlmModel::Llama3_70b => ModelValues {
            layers: 80,
            hidden: 8192,
            ffn: 28672,
            heads: 128,
            kv: 8,
            tp: 8,
            pp: 1,
            zero: 3,
            closed: 64,
        },
        LlmModel::Llama3_405b => ModelValues {
            layers: 126,
            hidden: 16384,
            ffn: 53248,
            heads: 128,
            kv: 8,
            tp: 8,
            pp: 32,
            zero: 1,
            closed: 512,
        },
        LlmModel::Llama3_1t => ModelValues {
            layers: 128,
            hidden: 25872,
            ffn: 98304,
            heads: 192,
            kv: 32,
            tp: 8,
            pp: 64,
            zero: 1,
            closed: 1024,
        },
    }
}

impl LlmModel {
    /// DLIO's workload name (MLPerf Storage's configs).
    pub fn dlio_workload(self) -> &'static str {
        match self {
            LlmModel::Llama3_8b => "llama3_8b",
            LlmModel::Llama3_70b => "llama3_70b",
            LlmModel::Llama3_405b => "llama3_405b",
            LlmModel::Llama3_1t => "llama3_1t",
        }
    }
}

/// Bounds far above any model MLPerf runs (Llama 3 1T: 128 layers, hidden 25600, 1024
/// ranks) that keep the plan finite (a line per rank, a loop per layer) and its
/// parameter and byte counts inside u64: 4294967295 ranks or layers ran for hours,
/// a hidden or vocabulary size of 2^64-1 overflowed.
fn check_limits(spec: &CheckpointSpec) -> Result<(), SpecError> {
    let ranks = [
        ("--ranks", spec.ranks.map(u64::from)),
        ("--tp", spec.tp.map(u64::from)),
        ("--pp", spec.pp.map(u64::from)),
        ("--dp", spec.dp.map(u64::from)),
    ];
    let dims = [
        ("--num-layers", spec.num_layers, 1 << 12),
        ("--hidden-size", spec.hidden_size, 1 << 20),
        ("--ffn-hidden-size", spec.ffn_hidden_size, 1 << 22),
        ("--vocab-size", spec.vocab_size, 1 << 24),
        ("--attention-heads", spec.attention_heads, 1 << 20),
        ("--kv-heads", spec.kv_heads, 1 << 20),
    ];
    let all = ranks.iter().map(|(o, v)| (*o, *v, 1u64 << 16)).chain(dims);
    for (option, value, max) in all {
        if let Some(v) = value.filter(|v| *v > max) {
            return Err(SpecError::new(option, format!("{v} is more than {max}")));
        }
    }
    let product = ranks[1..]
        .iter()
        .map(|(_, v)| v.unwrap_or(1))
        .product::<u64>();
    if product > 1 << 16 {
        return Err(SpecError::new(
            "--tp",
            format!("tp x pp x dp = {product} is more than 65536 ranks"),
        ));
    }
    Ok(())
}

impl LlmShape {
    /// The shape a spec asks for, checked as DLIO checks it.
    pub fn of(spec: &CheckpointSpec) -> Result<LlmShape, SpecError> {
        check_limits(spec)?;
        let v = values(spec.model);
        let tp = spec.tp.map_or(v.tp, u64::from);
        let pp = spec.pp.map_or(v.pp, u64::from);
        if tp == 0 {
            return Err(SpecError::new("--tp", "must be at least 1"));
        }
        if pp == 0 {
            return Err(SpecError::new("--pp", "must be at least 1"));
        }
        let closed_dp = (v.closed / (v.tp * v.pp)).max(1);
        let ranks = spec.ranks.map_or(
            if spec.tp.is_none() && spec.pp.is_none() && spec.dp.is_none() {
                v.closed
            } else {
                tp * pp * spec.dp.map_or(closed_dp, u64::from)
            },
            u64::from,
        );
        if ranks == 0 {
            return Err(SpecError::new("--ranks", "must be at least 1"));
        }
        let dp = match spec.dp {
            Some(0) => return Err(SpecError::new("--dp", "must be at least 1")),
            Some(d) => u64::from(d),
            None => ranks / (tp * pp),
        };
        if dp == 0 {
            return Err(SpecError::new(
                "--ranks",
                format!(
                    "{ranks} ranks are fewer than tp x pp = {}: give --dp for a subset run",
                    tp * pp
                ),
            ));
        }
        if ranks > tp * pp * dp {
            return Err(SpecError::new(
                "--ranks",
                format!(
                    "{ranks} ranks are more than tp x pp x dp = {}",
                    tp * pp * dp
                ),
            ));
        }
        let zero = spec.zero.map_or(v.zero, u64::from);
        if zero > 3 {
            return Err(SpecError::new("--zero", "must be 0, 1, 2 or 3"));
        }
        let shape = LlmShape {
            model: spec.model,
            num_layers: spec.num_layers.unwrap_or(v.layers),
            hidden_size: spec.hidden_size.unwrap_or(v.hidden),
            ffn_hidden_size: spec.ffn_hidden_size.unwrap_or(v.ffn),
            vocab_size: spec.vocab_size.unwrap_or(128_256),
            attention_heads: spec.attention_heads.unwrap_or(v.heads),
            kv_heads: spec.kv_heads.unwrap_or(v.kv),
            tp,
            pp,
            dp,
            zero,
            ranks,
            closed_ranks: v.closed,
            model_bytes: 2,
            optimizer_bytes: 4,
            scale: spec.scale,
        };
        if !(spec.scale > 0.0 && spec.scale <= 1.0) {
            return Err(SpecError::new("--scale", "must be above 0 and at most 1"));
        }
        // Every dimension of a transformer is at least 1: a model without key/value heads
        // (or a vocabulary, or feed-forward units) is no model, though its sizes compute.
        for (option, value) in [
            ("--num-layers", shape.num_layers),
            ("--hidden-size", shape.hidden_size),
            ("--ffn-hidden-size", shape.ffn_hidden_size),
            ("--vocab-size", shape.vocab_size),
            ("--attention-heads", shape.attention_heads),
            ("--kv-heads", shape.kv_heads),
        ] {
            if value == 0 {
                return Err(SpecError::new(option, "must be at least 1"));
            }
        }
        // Grouped-query attention shares each key/value head among the same number of
        // query heads; more key/value heads than heads (or heads than hidden units) is
        // no model, and its layer sizes overflow.
        if shape.kv_heads > shape.attention_heads {
            return Err(SpecError::new(
                "--kv-heads",
                format!(
                    "{} is more than the {} attention heads",
                    shape.kv_heads, shape.attention_heads
                ),
            ));
        }
        if !shape.attention_heads.is_multiple_of(shape.kv_heads) {
            return Err(SpecError::new(
                "--kv-heads",
                format!(
                    "the {} attention heads do not split evenly among {} key/value heads (each key/value head serves the same number of heads)",
                    shape.attention_heads, shape.kv_heads
                ),
            ));
        }
        if shape.attention_heads > shape.hidden_size {
            return Err(SpecError::new(
                "--attention-heads",
                format!(
                    "{} is more than the hidden size {}",
                    shape.attention_heads, shape.hidden_size
                ),
            ));
        }
        if shape.num_layers < pp {
            return Err(SpecError::new(
                "--pp",
                format!(
                    "{} layers are fewer than pp {pp} stages (DLIO refuses it too)",
                    shape.num_layers
                ),
            ));
        }
        if spec.dp.is_none() && !ranks.is_multiple_of(tp * pp) {
            return Err(SpecError::new(
                "--ranks",
                format!(
                    "{ranks} ranks are not a multiple of tp x pp = {} (DLIO refuses it too); give --dp for a subset run",
                    tp * pp
                ),
            ));
        }
        if zero == 3 && pp > 1 {
            return Err(SpecError::new(
                "--zero",
                "ZeRO stage 3 with pipeline parallelism is not a layout DLIO reads back (it asserts pp = 1)",
            ));
        }
        Ok(shape)
    }

    /// A subset run: fewer ranks than the whole job (one host's share).
    pub fn is_subset(&self) -> bool {
        self.ranks < self.tp * self.pp * self.dp
    }

    /// The model's parameters (DLIO's get_num_parameters).
    pub fn parameters(&self) -> u64 {
        let h = self.hidden_size;
        let head = h / self.attention_heads;
        let dim_kv = head * self.kv_heads;
        let embedding = self.vocab_size * h;
        let per_layer = h
            + h * (h + 2 * dim_kv)
            + h * h
            + h
            + self.ffn_hidden_size * 2 * h
            + self.ffn_hidden_size * h;
        embedding + per_layer * self.num_layers + h + embedding
    }

    /// Elements of each tensor of layer `index` (0 embedding, 1..=L transformer layers,
    /// L+1 lm_head, L+2 the final norm).
    fn layer_parameters(&self, index: u64) -> Vec<u64> {
        let h = self.hidden_size;
        let tp = self.tp;
        let s = if self.zero < 3 { 1 } else { self.dp };
        let dim_kv = h / self.attention_heads * self.kv_heads;
        if index == 0 || index == self.num_layers + 1 {
            vec![h * self.vocab_size / tp / s]
        } else if index == self.num_layers + 2 {
            vec![h / s]
        } else {
            vec![
                h / s,
                h * (h + 2 * dim_kv) / tp / s,
                h * h / tp / s,
                h / s,
                h * 2 * self.ffn_hidden_size / tp / s,
                h * self.ffn_hidden_size / tp / s,
            ]
        }
    }

    /// The layers a pipeline stage holds (DLIO's get_layer_index).
    fn layer_range(&self, pipeline_rank: u64) -> (u64, u64) {
        let per = self.num_layers / self.pp;
        let rem = self.num_layers % self.pp;
        let (mut start, mut end) = if pipeline_rank < rem {
            let s = pipeline_rank * (per + 1) + 1;
            (s, s + per)
        } else {
            let s = rem * (per + 1) + (pipeline_rank - rem) * per + 1;
            (s, s + per - 1)
        };
        if pipeline_rank == self.pp - 1 {
            end = self.num_layers + 2;
        }
        if pipeline_rank == 0 {
            start = 0;
        }
        (start, end)
    }

    fn scaled(&self, bytes: u64) -> u64 {
        if self.scale >= 1.0 {
            bytes
        } else {
            ((bytes as f64 * self.scale).round() as u64).max(1)
        }
    }

    fn layer_bytes(&self, index: u64) -> u64 {
        self.layer_parameters(index).iter().sum::<u64>() * self.model_bytes
    }

    /// Every file `rank` writes for one checkpoint, in DLIO's order (model, then
    /// optimizer), with DLIO's names. Ranks that write nothing get an empty list.
    pub fn files_of_rank(&self, rank: u64) -> Vec<CheckpointFile> {
        let mp = self.tp * self.pp;
        let pp_rank = (rank / self.tp) % self.pp;
        let dp_rank = rank / mp;
        let mp_rank = rank % mp;
        // ZeRO 0: only the first model-parallel group writes.
        if self.zero == 0 && rank >= mp {
            return Vec::new();
        }
        let mut files = Vec::new();
        let (start, end) = self.layer_range(pp_rank);
        let holds_model = !(self.zero == 1 && dp_rank != 0);
        if holds_model {
            let zero_sharded = !(self.zero > 0 && self.zero < 3);
            if zero_sharded {
                let bytes = (start..=end).map(|l| self.layer_bytes(l)).sum();
                files.push(CheckpointFile {
                    name: format!("zero_pp_rank_{dp_rank}_mp_rank_{mp_rank}_model_states"),
                    bytes: self.scaled(bytes),
                });
            } else if dp_rank == 0 {
                if self.pp > 1 {
                    for l in start..=end {
                        files.push(CheckpointFile {
                            name: format!("layer_{l}-model_{mp_rank}_model_states"),
                            bytes: self.scaled(self.layer_bytes(l)),
                        });
                    }
                } else {
                    let bytes = (start..=end).map(|l| self.layer_bytes(l)).sum();
                    files.push(CheckpointFile {
                        name: format!("model_{mp_rank}_model_states"),
                        bytes: self.scaled(bytes),
                    });
                }
            }
        }
        let n = if self.zero > 0 {
            self.parameters() / (self.dp * mp)
        } else {
            self.parameters() / mp
        };
        if n > 0 {
            let elements = 3 * (n + self.hidden_size * 5);
            files.push(CheckpointFile {
                name: format!("zero_pp_rank_{dp_rank}_mp_rank_{mp_rank}_optim_states"),
                bytes: self.scaled(elements * self.optimizer_bytes),
            });
        }
        files
    }

    /// Bytes of one checkpoint over all simulated ranks.
    pub fn total_bytes(&self) -> u64 {
        (0..self.ranks)
            .map(|r| self.files_of_rank(r).iter().map(|f| f.bytes).sum::<u64>())
            .sum()
    }
}

/// One checkpoint written or read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// From the barrier before it to the barrier after it: the slowest rank's time.
    pub duration: f64,
    /// The slowest simulated rank and its own time.
    pub slowest_rank: u64,
    pub slowest: f64,
    pub bytes: u64,
}

/// A checkpointing run, all ranks (on rank 0).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointOutcome {
    pub writes: Vec<Round>,
    pub reads: Vec<Round>,
    /// Bytes each simulated rank writes per checkpoint.
    pub rank_bytes: Vec<u64>,
    pub phases: Vec<PhaseResult>,
    /// The flush step before the reads (every written file's pages dropped with
    /// fadvise DONTNEED, after fdatasync) succeeded on every rank.
    pub cache_dropped: Option<bool>,
    /// Seconds from the end of the last write to the start of the first read (v3.0's
    /// memory rule wants at most 30 when the checkpoints fit 3 x a node's memory).
    pub read_gap_s: Option<f64>,
    pub interrupted: bool,
}

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
mod tests;
