//! v3.0's checkpointing rules: the node they are worst on ([`worst_node`]), what
//! `--closed` refuses before anything is written ([`closed_rules`]), and the verdict on a
//! run ([`judge`]).

use std::collections::BTreeMap;

use iolab_comm::{Comm, CommExt};
use iolab_core::SpecError;
use iolab_core::checkpoint::{CheckpointOutcome, LlmShape};
use iolab_core::spec::CheckpointSpec;
use iolab_core::train::{
    Check, CheckpointMemory, V3_READ_WITHIN_S, Verdict, v3_checkpoint_memory_rule, v3_subset_rule,
};

use super::my_ranks;

/// The node v3.0's memory rule is worst on (the least checkpoint bytes for its
/// memory): the bytes its ranks write before the reads, and its memory (`memory`: this
/// host's). Collective.
pub fn worst_node(
    comm: &dyn Comm,
    shape: &LlmShape,
    spec: &CheckpointSpec,
    memory: u64,
) -> (u64, u64) {
    let mine: u64 = my_ranks(shape, comm)
        .map(|r| shape.files_of_rank(r).iter().map(|f| f.bytes).sum::<u64>())
        .sum();
    let bytes = mine.saturating_mul(u64::from(spec.writes));
    let all: Vec<(String, u64, u64)> = comm
        .all_gather(&(comm.host().to_string(), bytes, memory))
        .unwrap_or_default();
    let mut hosts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (h, b, m) in all {
        let e = hosts.entry(h).or_default();
        e.0 = e.0.saturating_add(b);
        e.1 = m;
    }
    let ratio = |(b, m): &(u64, u64)| *b as f64 / (*m).max(1) as f64;
    hosts
        .into_values()
        .min_by(|a, b| ratio(a).total_cmp(&ratio(b)))
        .unwrap_or((bytes, memory))
}

/// `--closed`: what v3.0's checkpointing rules forbid, refused before anything is
/// written (one line naming the option).
pub fn closed_rules(
    shape: &LlmShape,
    spec: &CheckpointSpec,
    (bytes, memory): (u64, u64),
) -> Result<(), SpecError> {
    let subset = v3_subset_rule(shape.model.dlio_workload(), shape.is_subset(), shape.ranks);
    if !subset.ok {
        return Err(SpecError::new(
            "--ranks",
            format!("{} (--closed)", subset.detail),
        ));
    }
    if bytes > 3 * memory {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / 1073741824.0;
    let why = format!(
        "the checkpoints ({:.2} GiB per node) are not over 3 x the node's {:.2} GiB of memory, so v3.0 (--closed) wants",
        gib(bytes),
        gib(memory)
    );
    if spec.keep_cache {
        return Err(SpecError::new(
            "--keep-cache",
            format!("{why} the cache-flush step before the read: drop --keep-cache"),
        ));
    }
    if spec.time_between.nanos().0 as f64 / 1e9 > V3_READ_WITHIN_S {
        return Err(SpecError::new(
            "--time-between",
            format!(
                "{why} the read to start within {V3_READ_WITHIN_S:.0} s of the write: at most 30s"
            ),
        ));
    }
    Ok(())
}

/// v3.0's checkpointing rules on a run: the memory rule on its worst node (bytes,
/// memory), the subset rule, and their verdict.
pub fn judge(shape: &LlmShape, node: (u64, u64), out: &CheckpointOutcome) -> ([Check; 2], Verdict) {
    let checks = [
        v3_checkpoint_memory_rule(&CheckpointMemory {
            node_bytes: node.0,
            node_memory: node.1,
            flushed: out.cache_dropped == Some(true),
            read_gap_s: out.read_gap_s,
        }),
        v3_subset_rule(shape.model.dlio_workload(), shape.is_subset(), shape.ranks),
    ];
    let verdict = Verdict::of(&checks);
    (checks, verdict)
}
