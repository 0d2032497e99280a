//! The KV cache command's procedure beside the trial itself: the checks before anything
//! is written ([`check_settings`]), the trials or `--autoscale`'s steps ([`run_all`],
//! giving a [`KvOutcome`]) and the outcome as the run's stored phases
//! ([`KvOutcome::phases`], each a [`whole_phase`] named by [`trial_name`]).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use iolab_comm::Comm;
use iolab_core::SpecError;
use iolab_core::kvcache::{AutoscaleResult, AutoscaleStep};
use iolab_core::result::{
    OpCount, OpKind, OpResult, PhaseFigures, PhaseKind, PhaseResult, Timeline,
};
use iolab_core::spec::{KvCacheSettings, MAX_AUTOSCALE_USERS};
use iolab_core::units::Nanos;
use iolab_engine::Clock;

use super::autoscale::run_autoscale;
use super::{Storage, TrialFigures, check_backend, check_memory, run_kvcache};
use crate::AiError;

/// What a KV cache run found: every trial (or every autoscale step's trial) and, with
/// --autoscale, what the steps found.
pub struct KvOutcome {
    pub autoscaled: Option<AutoscaleResult>,
    pub trials: Vec<TrialFigures>,
}

/// The checks on every rank before anything is written: a backend this kernel gives,
/// and the memory the CPU tier and the buffers take (--autoscale may grow to its most
/// users: their buffers must fit too).
pub fn check_settings(settings: &KvCacheSettings, comm: &dyn Comm) -> Result<(), SpecError> {
    check_backend(settings)?;
    let most = KvCacheSettings {
        users: settings.users.max(if settings.autoscale.is_some() {
            MAX_AUTOSCALE_USERS
        } else {
            0
        }),
        ..settings.clone()
    };
    check_memory(&most, comm)
}

/// The trials, or --autoscale's steps (`on_step` called on rank 0 after each with the
/// steps still allowed), on every rank; the figures on rank 0.
pub fn run_all(
    comm: &dyn Comm,
    settings: &KvCacheSettings,
    storage: &Storage<'_>,
    (clock, stop): (&dyn Clock, &AtomicBool),
    on_step: &mut dyn FnMut(&AutoscaleStep, u32),
) -> Result<KvOutcome, AiError> {
    if settings.autoscale.is_none() {
        let trials = run_kvcache(comm, settings, storage, clock, stop)?;
        return Ok(KvOutcome {
            autoscaled: None,
            trials,
        });
    }
    let (r, trials) = run_autoscale(comm, settings, storage, clock, stop, on_step)?;
    Ok(KvOutcome {
        autoscaled: Some(r),
        trials,
    })
}

/// A trial's phase name, as stored and as the live page says it: `kvcache trial N`, or
/// with --autoscale `kvcache step N (U users)` (N from 1).
pub fn trial_name(autoscale: bool, n: usize, users: u32) -> String {
    if autoscale {
        format!("kvcache step {n} ({users} users)")
    } else {
        format!("kvcache trial {n}")
    }
}

impl KvOutcome {
    /// Every trial as a stored phase, in order, on `ranks` ranks.
    pub fn phases(&self, settings: &KvCacheSettings, ranks: u32) -> Vec<PhaseResult> {
        let auto = self.autoscaled.as_ref();
        self.trials
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let step = auto.and_then(|r| r.steps.get(i));
                let users = step.map_or(settings.users, |s| s.users);
                let name = trial_name(step.is_some(), i + 1, users);
                trial_phase(settings, ranks, (i, t), name)
            })
            .collect()
    }
}

/// A trial as a stored phase: the storage tier's whole-entry reads and writes, its
/// per-second timeline, the scored figures in `extra` and the trial's figures typed.
fn trial_phase(
    settings: &KvCacheSettings,
    ranks: u32,
    (i, t): (usize, &TrialFigures),
    name: String,
) -> PhaseResult {
    let f = &t.figures;
    let op = |kind, n: u64, bytes: u64, h: &iolab_core::LatencyHistogram| {
        let c = OpCount { ops: n, bytes };
        OpResult::whole(kind, c, f.duration, 0, h.clone())
    };
    let ops = vec![
        op(
            OpKind::Read,
            f.storage.reads,
            f.storage.bytes_read.0,
            &t.storage.read,
        ),
        op(
            OpKind::Write,
            f.storage.writes,
            f.storage.bytes_written.0,
            &t.storage.write,
        ),
    ];
    let mut p = whole_phase(
        name,
        ops,
        f.duration,
        serde_json::to_value(settings).unwrap_or_default(),
        t.started_at_ms,
        (ranks, settings.workers()),
    );
    p.repetition = i as u32;
    p.timeline = t.timeline.clone();
    for (name, v) in f.scored() {
        p.extra.insert(name.to_string(), v);
    }
    p.figures = Some(PhaseFigures::KvCache(Box::new(f.clone())));
    p
}

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
