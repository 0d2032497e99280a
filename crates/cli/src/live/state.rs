//! [`LiveState`]: what rank 0 knows of the run while it lasts — the phases planned and
//! done, the current phase's per-second samples, and the operations and bytes counted
//! per operation and host. The progress display, `/api/status` and `/metrics` all read
//! it; nothing in it is recomputed by them (house rule 12).

use std::collections::{BTreeMap, VecDeque};

use iolab_core::live_latency::quantile;
use iolab_core::result::{OpKind, OpResult, PhaseResult};
use iolab_core::units::{BytesPerSec, OpsPerSec};
use iolab_engine::Progress;
use serde::Serialize;

use super::counters::{PhaseCounters, job_of};
pub use super::hosts::HostRow;
use super::hosts::{host_rows, hosts_now};
pub use super::latency::OpLatency;
use super::latency::{latency_of, merged_ops};
use super::targets::{self, TargetInfo, TargetRow};
pub use super::train::TrainLive;

/// Per-second samples kept for the live chart (ten minutes).
const MAX_SAMPLES: usize = 600;

/// One second of the current phase, as the ranks' progress summed it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds since the phase started, at the end of the sample.
    pub t: f64,
    pub iops: f64,
    pub bytes_per_sec: f64,
    /// p50 and p99 latency of the operations completed in the sample, seconds (coarse:
    /// within 19 %, iolab_core::live_latency); None when none completed.
    pub p50: Option<f64>,
    pub p99: Option<f64>,
}

/// A phase of the plan, with what it took once done.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PlannedPhase {
    pub name: String,
    /// Estimated seconds, when the command can tell.
    pub estimate_secs: Option<f64>,
    /// Seconds it took, once done.
    pub took_secs: Option<f64>,
    /// Its headline figures once done ("read 812.3 MiB/s").
    pub headline: Vec<String>,
}

/// The phase now running.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CurrentPhase {
    pub name: String,
    pub elapsed_secs: f64,
    pub ops: u64,
    pub bytes: u64,
    pub workers_done: u32,
    pub workers: u32,
    /// Rate over the last second, and on average since the phase started.
    pub iops_now: f64,
    pub bytes_per_sec_now: f64,
    pub iops_mean: f64,
    pub bytes_per_sec_mean: f64,
    /// Latency over the last second: p50 and p99, seconds.
    pub p50_now: Option<f64>,
    pub p99_now: Option<f64>,
    pub samples: VecDeque<Sample>,
    /// Latencies counted since the last sample, by coarse bucket.
    #[serde(skip)]
    pub latency_counts: Vec<u64>,
    /// Per host (with --serve): its counts at the last per-second sample and its rates
    /// over that second.
    pub hosts_now: Vec<HostRow>,
    /// Per storage target of `iolab targets` (with --serve): its counts so far and its
    /// rates over the last second. No flags: they come when the phase ends.
    pub targets_now: Vec<TargetRow>,
}

/// Everything the live views show.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LiveState {
    pub command: String,
    pub run_id: String,
    pub label: Option<String>,
    /// "running", then the run's final status.
    pub status: String,
    pub started_at_ms: i64,
    pub phases: Vec<PlannedPhase>,
    pub current: Option<CurrentPhase>,
    pub hosts: Vec<HostRow>,
    /// Operations and bytes of finished phases by (operation, host): the per-host
    /// counters `/metrics` exposes, equal to the stored results'.
    #[serde(skip)]
    pub counted: BTreeMap<(OpKind, String), (u64, u64)>,
    /// Operations and bytes by (phase, operation), growing while a phase runs: the
    /// counters `/metrics` exposes, equal to the stored results' once they are stored.
    #[serde(skip)]
    pub counters: PhaseCounters,
    /// Seconds the remaining phases should take, when the plan has estimates.
    pub eta_secs: Option<f64>,
    /// Latency quantiles (seconds) of the last finished phase, per operation.
    pub latency: Vec<OpLatency>,
    /// The storage targets of `iolab targets`, by their index in the list every rank
    /// shares.
    #[serde(skip)]
    pub target_list: Vec<TargetInfo>,
    /// The last finished targets phase (`targets_phase`): one row per target, with the
    /// report's flags.
    pub targets: Vec<TargetRow>,
    pub targets_phase: Option<String>,
    /// Operations and bytes of finished phases by (target, host, operation): the
    /// counters `/metrics` exposes, equal to the stored target phases'.
    #[serde(skip)]
    pub target_counted: BTreeMap<(String, String, OpKind), (u64, u64)>,
    /// A training run's AU and throughput as it goes.
    pub train: Option<TrainLive>,
    /// A KV cache trial's last second (`iolab kvcache`).
    pub kvcache: Option<super::kvcache::KvCacheLive>,
}

impl LiveState {
    /// A new progress tick of phase `name`.
    pub fn tick(&mut self, p: &Progress<'_>) {
        let (name, ops, bytes, latency) = (p.phase, p.ops, p.bytes, p.latency);
        let (done, workers) = (p.workers_done, p.workers);
        let t = p.elapsed.as_secs_f64();
        let new_phase = self.current.as_ref().is_none_or(|c| c.name != name);
        if new_phase {
            self.current = Some(CurrentPhase {
                name: name.to_string(),
                ..CurrentPhase::default()
            });
            let planned = self.phases.iter().any(|p| part_of(name, &p.name));
            if !planned {
                self.phases.push(PlannedPhase {
                    name: name.to_string(),
                    ..PlannedPhase::default()
                });
            }
        }
        if new_phase {
            let label = self.counter_label(name);
            self.counters.begin(&label);
        }
        self.counters.tick(p.counted);
        let c = self.current.as_mut().expect("set above");
        if c.latency_counts.len() < latency.len() {
            c.latency_counts.resize(latency.len(), 0);
        }
        for (acc, n) in c.latency_counts.iter_mut().zip(latency) {
            *acc += n;
        }
        let last_t = c.samples.back().map_or(0.0, |s| s.t);
        let sample_due = t - last_t >= 1.0 || new_phase;
        hosts_now(&mut c.hosts_now, p.per_rank, sample_due, t - last_t);
        targets::targets_now(
            &mut c.targets_now,
            &self.target_list,
            p.per_unit,
            sample_due,
        );
        if sample_due {
            let (prev_ops, prev_bytes) = (c.ops, c.bytes);
            let dt = (t - last_t).max(1e-9);
            if t > 0.0 {
                let q = |q: f64| quantile(&c.latency_counts, q).map(|ns| ns as f64 / 1e9);
                let (p50, p99) = (q(0.5), q(0.99));
                c.latency_counts.iter_mut().for_each(|n| *n = 0);
                c.samples.push_back(Sample {
                    t,
                    iops: ops.saturating_sub(prev_ops) as f64 / dt,
                    bytes_per_sec: bytes.saturating_sub(prev_bytes) as f64 / dt,
                    p50,
                    p99,
                });
                if c.samples.len() > MAX_SAMPLES {
                    c.samples.pop_front();
                }
            }
            (c.ops, c.bytes) = (ops, bytes);
        }
        if let Some(s) = c.samples.back() {
            (c.iops_now, c.bytes_per_sec_now) = (s.iops, s.bytes_per_sec);
            (c.p50_now, c.p99_now) = (s.p50, s.p99);
        }
        c.elapsed_secs = t;
        c.workers_done = done;
        c.workers = workers;
        if t > 0.0 {
            c.iops_mean = ops as f64 / t;
            c.bytes_per_sec_mean = bytes as f64 / t;
        }
        self.update_eta();
    }

    /// A phase ended: its figures count, its hosts show.
    pub fn phase_done(&mut self, phase: &PhaseResult) {
        let headline: Vec<String> = phase
            .headline()
            .iter()
            .map(|(op, v)| {
                let data = op.moves_data() && phase.kind != iolab_core::result::PhaseKind::Meta;
                if data {
                    format!("{} {}", op.name(), BytesPerSec(*v).human())
                } else {
                    format!("{} {}", op.name(), OpsPerSec(*v).human())
                }
            })
            .collect();
        let label = self.counter_label(&phase.name);
        self.counters.stored(&label, phase);
        self.mark_done(phase, headline);
        self.count_by_host(phase);
        self.hosts = host_rows(phase);
        self.latency = latency_of(&phase.ops);
        if self.current.as_ref().is_some_and(|c| c.name == phase.name) {
            self.current = None;
        }
        self.update_eta();
    }

    /// A phase of `iolab targets` ended: `summary` is the phase as a whole (its time and
    /// hosts, the report's statistics), `targets` one stored phase per target (their
    /// operations, and the report's flags). The targets' phases count once each, by
    /// host and by target, and show as target rows rather than phases.
    pub fn targets_done(&mut self, summary: &PhaseResult, targets: &[PhaseResult]) {
        let x = |k: &str| summary.extra.get(k).copied();
        let mut headline = Vec::new();
        if let Some(v) = x("aggregate_bytes_per_sec") {
            headline.push(format!(
                "aggregate of {} targets {}",
                targets.len(),
                BytesPerSec(v).human()
            ));
        }
        for (k, what) in [
            ("slow_targets", "slow targets"),
            ("slow_nodes", "slow nodes"),
        ] {
            if let Some(n) = x(k).filter(|n| *n > 0.0) {
                headline.push(format!("{n:.0} {what}"));
            }
        }
        let label = self.counter_label(&summary.name);
        self.mark_done(summary, headline);
        for t in targets {
            self.count_by_host(t);
            self.counters.stored(&label, t);
        }
        targets::count(&mut self.target_counted, targets);
        if !summary.per_rank.is_empty() {
            self.hosts = host_rows(summary);
        }
        let ops: Vec<OpResult> = merged_ops(targets);
        self.latency = latency_of(&ops);
        self.targets = targets::finished_rows(targets);
        self.targets_phase = Some(summary.name.clone());
        if self
            .current
            .as_ref()
            .is_some_and(|c| part_of(&c.name, &summary.name))
        {
            self.current = None;
        }
        self.update_eta();
    }

    /// The phase label a running or stored phase `name` counts under in `/metrics`: the
    /// running phase's when it is that phase, part of it or one of its fio jobs; else the
    /// planned phase it is part of (a repetition, one target at a time); else its own.
    fn counter_label(&self, name: &str) -> String {
        if let Some(r) = self.counters.running()
            && (part_of(name, r) || job_of(name, r))
        {
            return r.to_string();
        }
        self.phases
            .iter()
            .find(|p| part_of(name, &p.name))
            .map_or_else(|| name.to_string(), |p| p.name.clone())
    }

    /// Marks `phase` done in the phase list (adding it if it was not planned).
    fn mark_done(&mut self, phase: &PhaseResult, headline: Vec<String>) {
        let took = phase.elapsed.as_secs_f64();
        match self
            .phases
            .iter_mut()
            .find(|p| p.name == phase.name && p.took_secs.is_none())
        {
            Some(p) => {
                p.took_secs = Some(took);
                p.headline = headline;
            }
            None => self.phases.push(PlannedPhase {
                name: phase.name.clone(),
                estimate_secs: None,
                took_secs: Some(took),
                headline,
            }),
        }
    }

    /// Adds a finished phase's operations and bytes to the counters by (operation, host).
    fn count_by_host(&mut self, phase: &PhaseResult) {
        for r in &phase.per_rank {
            for (op, c) in &r.ops {
                let e = self.counted.entry((*op, r.host.clone())).or_default();
                e.0 += c.ops;
                e.1 += c.bytes;
            }
        }
        if phase.per_rank.is_empty() {
            for o in &phase.ops {
                let e = self.counted.entry((o.op, "all".to_string())).or_default();
                e.0 += o.ops;
                e.1 += o.bytes.get();
            }
        }
    }

    /// Remaining seconds: the estimates of phases not yet done, scaled by how the done
    /// phases compared with theirs, minus what the current phase has run.
    pub(crate) fn update_eta(&mut self) {
        // Nothing planned with an estimate: no ETA rather than "0 s left".
        if !self.phases.iter().any(|p| p.estimate_secs.is_some()) {
            self.eta_secs = None;
            return;
        }
        let (mut took, mut estimated) = (0.0, 0.0);
        for p in &self.phases {
            if let (Some(t), Some(e)) = (p.took_secs, p.estimate_secs) {
                took += t;
                estimated += e;
            }
        }
        let correction = if estimated > 0.0 {
            took / estimated
        } else {
            1.0
        };
        let mut remaining = 0.0;
        for p in self.phases.iter().filter(|p| p.took_secs.is_none()) {
            let Some(e) = p.estimate_secs else {
                self.eta_secs = None;
                return;
            };
            let mut left = e * correction;
            if let Some(c) = self.current.as_ref().filter(|c| c.name == p.name) {
                left = (left - c.elapsed_secs).max(0.0);
            }
            remaining += left;
        }
        self.eta_secs = Some(remaining);
    }

    /// Index (1-based) of the current or next phase and the number planned.
    pub fn position(&self) -> (usize, usize) {
        let done = self.phases.iter().filter(|p| p.took_secs.is_some()).count();
        ((done + 1).min(self.phases.len().max(1)), self.phases.len())
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;

/// Whether the running phase `name` is (part of) the planned phase `planned`: itself,
/// one of its repetitions ("-r2"), or one target of `iolab targets --one-at-a-time`
/// ("seq-write target 19").
fn part_of(name: &str, planned: &str) -> bool {
    name == planned
        || name
            .strip_prefix(planned)
            .is_some_and(|r| r.starts_with('-') || r.starts_with(" target "))
}
