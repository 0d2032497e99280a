//! The latency of the last finished phase, per operation: quantiles from its full
//! histograms (the targets' merged into one).

use iolab_core::result::{OpResult, PhaseResult};
use serde::Serialize;

/// One operation's latency in the last finished phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OpLatency {
    pub op: String,
    /// Operations measured.
    pub count: u64,
    pub mean: f64,
    /// ("0.5", seconds), ("0.99", seconds), ...
    pub quantiles: Vec<(String, f64)>,
}

/// Each operation's latency, from its full histogram.
pub(super) fn latency_of(ops: &[OpResult]) -> Vec<OpLatency> {
    ops.iter()
        .filter(|o| o.latency.count > 0)
        .map(|o| OpLatency {
            op: o.op.name().to_string(),
            count: o.latency.count,
            mean: o.latency.mean / 1e9,
            quantiles: [
                ("0.5", o.latency.p50),
                ("0.9", o.latency.p90),
                ("0.99", o.latency.p99),
                ("0.999", o.latency.p99_9),
            ]
            .iter()
            .map(|(q, n)| (q.to_string(), n.as_secs_f64()))
            .collect(),
        })
        .collect()
}

/// The targets' operations with their histograms merged, by operation: the latency of
/// all targets together.
pub(super) fn merged_ops(targets: &[PhaseResult]) -> Vec<OpResult> {
    let mut ops: Vec<OpResult> = Vec::new();
    for o in targets.iter().flat_map(|t| t.ops.iter()) {
        match ops.iter_mut().find(|m| m.op == o.op) {
            Some(m) => {
                m.histogram.merge(&o.histogram);
                m.latency = m.histogram.summary();
            }
            None => ops.push(o.clone()),
        }
    }
    ops
}
