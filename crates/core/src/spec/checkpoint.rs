//! `iolab checkpoint`'s spec: MLPerf Storage v2.0's LLM checkpointing (Llama 3 8B to 1T,
//! tensor x pipeline x data parallelism, ZeRO), as DLIO's llama3_* configs define it.

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::units::{ByteCount, TimeSpan};

/// A Llama 3 model of MLPerf Storage v2.0's checkpointing workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LlmModel {
    #[value(name = "llama3-8b")]
    Llama3_8b,
    #[value(name = "llama3-70b")]
    Llama3_70b,
    #[value(name = "llama3-405b")]
    Llama3_405b,
    #[value(name = "llama3-1t")]
    Llama3_1t,
}

/// `iolab checkpoint`: MLPerf Storage v2.0's LLM checkpointing as DLIO runs it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointSpec {
    /// The model (DLIO's llama3_* configs of MLPerf Storage v2.0).
    #[arg(long, value_enum, default_value_t = LlmModel::Llama3_8b)]
    pub model: LlmModel,

    /// Simulated ranks (GPUs) writing [default: the closed submission's: 8, 64, 512,
    /// 1024]; spread as threads over this process (and over MPI ranks when launched so).
    #[arg(long)]
    pub ranks: Option<u32>,

    /// Tensor parallelism [default: the model's].
    #[arg(long)]
    pub tp: Option<u32>,

    /// Pipeline parallelism [default: the model's].
    #[arg(long)]
    pub pp: Option<u32>,

    /// Data parallelism of the whole job; with fewer ranks than tp x pp x dp, the run is
    /// a subset (one host's share of the full job, MLPerf's subset mode) [default:
    /// ranks / (tp x pp)].
    #[arg(long)]
    pub dp: Option<u32>,

    /// ZeRO stage (0-3) [default: the model's].
    #[arg(long)]
    pub zero: Option<u32>,

    /// Transformer layers [default: the model's].
    #[arg(long)]
    pub num_layers: Option<u64>,

    /// Hidden size [default: the model's].
    #[arg(long)]
    pub hidden_size: Option<u64>,

    /// Feed-forward hidden size [default: the model's].
    #[arg(long)]
    pub ffn_hidden_size: Option<u64>,

    /// Vocabulary size [default: 128256].
    #[arg(long)]
    pub vocab_size: Option<u64>,

    /// Attention heads [default: the model's].
    #[arg(long)]
    pub attention_heads: Option<u64>,

    /// Key-value heads [default: the model's].
    #[arg(long)]
    pub kv_heads: Option<u64>,

    /// Scales every file's bytes (the layout stays), so a preset fits a laptop: 0.001 is
    /// a thousandth.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,

    /// Checkpoints written.
    #[arg(long, default_value_t = 10)]
    pub writes: u32,

    /// Checkpoints read back afterwards (at most --writes; more is refused).
    #[arg(long, default_value_t = 10)]
    pub reads: u32,

    /// Simulated compute before each checkpoint (DLIO's time_between_checkpoints).
    #[arg(long, default_value = "5s")]
    pub time_between: TimeSpan,

    /// Skip the fsync of each file after it is written (MLPerf requires it).
    #[arg(long)]
    pub no_fsync: bool,

    /// Do not empty the page cache before the reads (MLPerf clears it).
    #[arg(long)]
    pub keep_cache: bool,

    /// Bytes per write and read system call.
    #[arg(long, default_value = "16MiB")]
    pub transfer_size: ByteCount,

    /// Hold the run to MLPerf Storage v3.0's closed checkpointing rules before it
    /// starts: a subset run only of llama3-8b on 8 ranks; checkpoints not over 3 x a
    /// node's memory need the flush step (no --keep-cache) and the read within 30 s
    /// (--time-between at most 30s). The verdict is printed either way.
    #[arg(long)]
    pub closed: bool,
}

impl Default for CheckpointSpec {
    fn default() -> Self {
        crate::spec::command_line_defaults()
    }
}
