//! From every rank's outcome to one [`PhaseResult`]: merge histograms, counts and
//! timelines, take the phase time as the slowest rank's and first-done as the earliest
//! finish anywhere, keep per-rank rows, and warn where a load generator was saturated.

use std::collections::BTreeMap;

use iolab_core::result::{CpuUsage, OpCount, OpResult, PhaseKind, PhaseResult, RankSummary};
use iolab_core::units::Nanos;

use crate::phase::PhaseRun;
use crate::recorder::{FirstDoneRate, WorkerMeasure};

/// A rank whose CPU use reaches this share of what it could use is flagged.
const SATURATED: f64 = 0.90;

/// The identity of a phase, decided by the caller.
#[derive(Clone, Debug, Default)]
pub struct PhaseMeta {
    pub name: String,
    pub kind: Option<PhaseKind>,
    pub params: BTreeMap<String, String>,
    pub repetition: u32,
    pub spec: serde_json::Value,
    pub warnings: Vec<String>,
}

/// What the summed first-done rates amount to over the first-done time.
fn first_done_count(rate: Option<&FirstDoneRate>, first_done: Nanos) -> OpCount {
    let Some(r) = rate else {
        return OpCount::default();
    };
    let secs = first_done.as_secs_f64();
    OpCount {
        ops: (r.ops_per_sec * secs).round() as u64,
        bytes: (r.bytes_per_sec * secs).round() as u64,
    }
}

pub fn assemble(meta: PhaseMeta, run: &PhaseRun) -> PhaseResult {
    let mut total = WorkerMeasure::default();
    let mut elapsed = Nanos::ZERO;
    let mut first_done = Nanos(u64::MAX);
    let mut cpu = CpuUsage::default();
    let mut per_rank = Vec::new();
    let mut warnings = meta.warnings;
    for o in &run.outcomes {
        total.merge(&o.measure);
        elapsed = elapsed.max(o.elapsed);
        first_done = first_done.min(o.first_done);
        cpu.user = cpu.user + o.cpu.user;
        cpu.system = cpu.system + o.cpu.system;
        cpu.cpus += o.cpu.cpus;
        let busy = o.cpu.percent_of_one_cpu() / 100.0;
        let usable = o.threads.min(o.cpu.cpus.max(1)) as f64;
        // Phases under a second are too short to judge.
        if o.cpu.wall >= Nanos::SECOND && busy >= SATURATED * usable && o.threads > 0 {
            warnings.push(format!(
                "rank {} on {} kept {:.0}% of {} CPU{} busy: the load generator may be the bottleneck",
                o.rank,
                o.host,
                o.cpu.percent_of_one_cpu(),
                usable as u32,
                if usable as u32 == 1 { "" } else { "s" }
            ));
        }
        per_rank.push(RankSummary {
            rank: o.rank,
            host: o.host.clone(),
            threads: o.threads,
            elapsed: o.elapsed,
            first_done: o.first_done,
            ops: o.measure.ops.iter().map(|(k, m)| (*k, m.count)).collect(),
            cpu: o.cpu,
            errors: o.measure.error_count,
        });
    }
    if first_done == Nanos(u64::MAX) {
        first_done = Nanos::ZERO;
    }
    cpu.wall = elapsed;
    let ops = total
        .ops
        .iter()
        .map(|(op, m)| {
            OpResult::new(
                *op,
                m.count,
                first_done_count(total.first_done.get(op), first_done),
                elapsed,
                first_done,
                m.errors,
                m.histogram.clone(),
            )
        })
        .collect();
    let workers = run.outcomes.iter().map(|o| o.threads).sum();
    PhaseResult {
        name: meta.name,
        kind: meta.kind.unwrap_or(PhaseKind::Data),
        params: meta.params,
        repetition: meta.repetition,
        spec: meta.spec,
        started_at_ms: run.started_at_ms,
        ranks: run.outcomes.len() as u32,
        workers,
        elapsed,
        first_done,
        ops,
        timeline: total.timeline,
        cpu,
        per_rank,
        errors: total.errors,
        error_count: total.error_count,
        verify_failures: total.verify_failures,
        extra: BTreeMap::new(),
        warnings,
        interrupted: run.interrupted,
        telemetry: run.telemetry.clone(),
    }
}
