//! Small result builders for the unit tests: a phase with given params ([`phase`]), a
//! one-op data or metadata phase with an exact figure ([`data_phase`], [`meta_phase`]),
//! and a labelled run ([`run_with`]). The integration tests have richer fixtures.

use std::collections::BTreeMap;

use iolab_core::histogram::LatencyHistogram;
use iolab_core::result::{
    CpuUsage, OpCount, OpKind, OpResult, PhaseKind, PhaseResult, Provenance, RunRecord, RunStatus,
    Timeline,
};
use iolab_core::units::Nanos;

/// A data phase with no operations and the given params.
pub fn phase(name: &str, params: &[(&str, &str)]) -> PhaseResult {
    PhaseResult {
        figures: None,
        name: name.into(),
        kind: PhaseKind::Data,
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        repetition: 0,
        spec: serde_json::Value::Null,
        started_at_ms: 0,
        ranks: 1,
        workers: 1,
        elapsed: Nanos::SECOND,
        first_done: Nanos::SECOND,
        ops: Vec::new(),
        timeline: Timeline::default(),
        cpu: CpuUsage::default(),
        per_rank: Vec::new(),
        errors: Vec::new(),
        error_count: 0,
        verify_failures: 0,
        extra: BTreeMap::new(),
        warnings: Vec::new(),
        interrupted: false,
        telemetry: None,
    }
}

/// One second of `op` at `mib_per_s` MiB/s in 1 MiB blocks, 1000 latencies of 100 µs.
pub fn data_phase(name: &str, threads: &str, rep: u32, op: OpKind, mib_per_s: f64) -> PhaseResult {
    let mut p = phase(name, &[("threads", threads), ("block_size", "1MiB")]);
    p.repetition = rep;
    let bytes = (mib_per_s * 1024.0 * 1024.0) as u64;
    p.ops.push(op_result(op, bytes / (1 << 20), bytes));
    p
}

/// One second of a metadata op at `rate` ops/s.
pub fn meta_phase(name: &str, threads: &str, rep: u32, op: OpKind, rate: u64) -> PhaseResult {
    let mut p = phase(name, &[("threads", threads)]);
    p.kind = PhaseKind::Meta;
    p.repetition = rep;
    p.ops.push(op_result(op, rate, 0));
    p
}

/// `p` with every op counted 10,000 times (its rates unchanged): enough operations to
/// compare with another run.
pub fn counted(mut p: PhaseResult) -> PhaseResult {
    for o in &mut p.ops {
        o.ops = 10_000;
    }
    p
}

pub fn op_result(op: OpKind, ops: u64, bytes: u64) -> OpResult {
    let mut h = LatencyHistogram::new();
    h.record_n(100_000, 1000);
    let total = OpCount { ops, bytes };
    OpResult::whole(op, total, Nanos::SECOND, 0, h)
}

/// A complete run with a label and an id derived from it.
pub fn run_with(label: &str, phases: Vec<PhaseResult>) -> RunRecord {
    let mut run = RunRecord::new(
        "study",
        serde_json::Value::Null,
        Provenance::default(),
        1_700_000_000_000,
    );
    run.id = format!("r-{label}");
    run.label = Some(label.into());
    run.status = RunStatus::Complete;
    run.phases = phases;
    run
}
