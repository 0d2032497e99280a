//! Unit tests of the checkpoint layout: DLIO's sizes and the shapes refused by name.

use super::*;

fn shape(model: LlmModel, ranks: Option<u32>) -> LlmShape {
    LlmShape::of(&CheckpointSpec {
        model,
        ranks,
        ..CheckpointSpec::default()
    })
    .unwrap()
}

#[test]
fn llama3_8b_matches_mlperf_sizes() {
    // MLPerf Storage's table: 15 GB of model and 90 GB of optimizer (GiB, rounded).
    let s = shape(LlmModel::Llama3_8b, None);
    assert_eq!(s.ranks, 8);
    assert_eq!(s.parameters(), 8_030_261_248);
    let model: u64 = (0..8).map(|r| s.files_of_rank(r)[0].bytes).sum();
    let optim: u64 = (0..8).map(|r| s.files_of_rank(r)[1].bytes).sum();
    assert_eq!((model as f64 / 1073741824.0).round(), 15.0);
    assert_eq!((optim as f64 / 1073741824.0).round(), 90.0);
    assert_eq!(
        s.files_of_rank(3)[0].name,
        "zero_pp_rank_3_mp_rank_0_model_states"
    );
}

#[test]
fn zero1_writes_the_model_on_the_first_data_parallel_rank_only() {
    let s = shape(LlmModel::Llama3_405b, None);
    assert_eq!((s.tp, s.pp, s.dp, s.ranks), (8, 32, 2, 512));
    // Rank 0: stage 0 holds the embedding and layers 1-4, one file each, then optimizer.
    let f0 = s.files_of_rank(0);
    assert_eq!(f0.len(), 6);
    assert_eq!(f0[0].name, "layer_0-model_0_model_states");
    // Rank 256 is data-parallel rank 1: optimizer only.
    let f = s.files_of_rank(256);
    assert_eq!(f.len(), 1);
    assert!(f[0].name.ends_with("optim_states"));
    // MLPerf's table says 755 GB of model (its comment: "need to be updated with actual
    // values"); DLIO's formula, which the run writes, gives 756 GiB.
    let model: u64 = (0..512)
        .flat_map(|r| s.files_of_rank(r))
        .filter(|f| f.name.ends_with("model_states"))
        .map(|f| f.bytes)
        .sum();
    assert_eq!((model as f64 / 1073741824.0).round(), 756.0);
}

#[test]
fn subset_keeps_the_full_jobs_shards() {
    let full = shape(LlmModel::Llama3_70b, None);
    let sub = LlmShape::of(&CheckpointSpec {
        model: LlmModel::Llama3_70b,
        ranks: Some(8),
        dp: Some(8),
        ..CheckpointSpec::default()
    })
    .unwrap();
    assert!(sub.is_subset() && !full.is_subset());
    assert_eq!(sub.files_of_rank(5), full.files_of_rank(5));
}

#[test]
fn bad_parallelism_is_refused_by_name() {
    let e = LlmShape::of(&CheckpointSpec {
        ranks: Some(12),
        tp: Some(8),
        ..CheckpointSpec::default()
    })
    .unwrap_err();
    assert_eq!(e.option, "--ranks");
}

/// `--kv-heads 0` was planned (a model whose key/value projections hold nothing), and
/// `--hidden-size 0` was named as --num-layers.
#[test]
fn a_model_dimension_of_zero_or_uneven_heads_is_refused_by_name() {
    let refused = |f: fn(&mut CheckpointSpec)| {
        let mut spec = CheckpointSpec::default();
        f(&mut spec);
        let e = LlmShape::of(&spec).unwrap_err();
        format!("{}: {}", e.option, e.reason)
    };
    assert_eq!(
        refused(|s| s.kv_heads = Some(0)),
        "--kv-heads: must be at least 1"
    );
    assert_eq!(
        refused(|s| s.hidden_size = Some(0)),
        "--hidden-size: must be at least 1"
    );
    assert_eq!(
        refused(|s| s.ffn_hidden_size = Some(0)),
        "--ffn-hidden-size: must be at least 1"
    );
    assert_eq!(
        refused(|s| s.vocab_size = Some(0)),
        "--vocab-size: must be at least 1"
    );
    assert_eq!(
        refused(|s| s.kv_heads = Some(5)),
        "--kv-heads: the 32 attention heads do not split evenly among 5 key/value heads (each key/value head serves the same number of heads)"
    );
    // Every preset's heads split evenly (1T: 192 heads, 32 key/value heads).
    for model in [
        LlmModel::Llama3_8b,
        LlmModel::Llama3_70b,
        LlmModel::Llama3_405b,
        LlmModel::Llama3_1t,
    ] {
        shape(model, None);
    }
}
