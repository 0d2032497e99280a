//! AI training I/O, as DLIO (MLPerf Storage's load generator) emulates it: [`datagen`]
//! writes a dataset in DLIO's layout and formats, [`run`] trains on one (simulated
//! accelerators, reader threads, prefetch, a compute sleep per step, a job-wide barrier
//! after each), [`search`] finds the most accelerators that keep AU at the threshold.
//! [`dataset`] lists a dataset whoever wrote it; [`format`] is the one place a format
//! meets its compat writer and its read plan; [`memory`] what a loader holds and the
//! pre-flight against the host's memory. Figures are defined in
//! iolab_core::train; file formats in iolab_compat::dlio.

pub mod datagen;
pub mod dataset;
pub mod format;
pub mod loader;
pub mod memory;
mod order;
mod phase;
mod rowgroups;
pub mod run;
pub mod search;

pub use datagen::{GenOutcome, generate};
pub use dataset::Dataset;
pub use run::{LiveStep, TrainHooks, TrainOutcome, train_epochs};

use std::collections::BTreeMap;

use iolab_core::result::{OpResult, PhaseKind, PhaseResult, Timeline};
use iolab_core::rng::Rng;
use iolab_core::units::Nanos;

/// A phase of `ops` timed as a whole (no per-second timeline, every count within the
/// stonewall): what a KV cache trial stores. Params, figures, CPU and the rest are the
/// caller's to fill in.
pub fn whole_phase(
    name: String,
    ops: Vec<OpResult>,
    elapsed: Nanos,
    spec: serde_json::Value,
    started_at_ms: i64,
    (ranks, workers): (u32, u32),
) -> PhaseResult {
    PhaseResult {
        figures: None,
        name,
        kind: PhaseKind::Data,
        params: BTreeMap::new(),
        repetition: 0,
        spec,
        started_at_ms,
        ranks,
        workers,
        elapsed,
        first_done: elapsed,
        ops,
        timeline: Timeline::default(),
        cpu: Default::default(),
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

/// A normal draw (Box-Muller), as numpy's random.normal gives DLIO its sizes and
/// compute times.
pub(crate) fn normal(rng: &mut Rng, mean: f64, stdev: f64) -> f64 {
    if stdev == 0.0 {
        return mean;
    }
    let u1 = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let u2 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    mean + stdev * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}
