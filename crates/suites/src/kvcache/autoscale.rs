//! `--autoscale qos|capacity`, kv-cache.py's WorkloadAutoscaler as steps: each step is
//! one trial at a number of users, and [`Autoscaler`] decides the next step's users from
//! its figures with the reference's factors and stop conditions (monitoring.py:
//! qos x1.2 while under the target saturation, two failing samples to stop; capacity
//! +40 % then +20 % of the users (5 to 100), stop after two steps not 1 % over the peak).
//! [`run_autoscale`] runs the steps on every rank, rank 0 deciding.

use std::sync::atomic::AtomicBool;

use iolab_comm::{Comm, CommExt};
use iolab_core::kvcache::{AutoscaleResult, AutoscaleStep, AutoscaleWhy, KvCacheFigures};
use iolab_core::spec::{AutoscaleMode, KvCacheSettings, MAX_AUTOSCALE_USERS};
use iolab_engine::Clock;

use super::{TrialFigures, run_kvcache};
use crate::AiError;

/// Read device p95 at which the latency factor reaches 1 (config.yaml's
/// saturation_detection.read_latency_p95_threshold_ms).
const SATURATED_READ_P95_MS: f64 = 100.0;

/// The step logic: figures in, the next step's users out.
pub struct Autoscaler {
    mode: AutoscaleMode,
    target: f64,
    max_steps: u32,
    steps: Vec<AutoscaleStep>,
    /// capacity: (users, tokens/s) of the best step.
    peak: Option<(u32, f64)>,
    /// Failing (qos) or not-rising (capacity) steps in a row.
    misses: u32,
}

impl Autoscaler {
    pub fn new(settings: &KvCacheSettings) -> Autoscaler {
        Autoscaler {
            mode: settings.autoscale.unwrap_or(AutoscaleMode::Qos),
            target: settings.target_saturation,
            max_steps: settings.autoscale_steps,
            steps: Vec::new(),
            peak: None,
            misses: 0,
        }
    }

    /// The steps still allowed after those taken.
    pub fn steps_left(&self) -> u32 {
        self.max_steps.saturating_sub(self.steps.len() as u32)
    }

    /// Records the step just run at `users`; returns it, its `next_users` the next
    /// step's (None: stop).
    pub fn step(&mut self, users: u32, f: &KvCacheFigures) -> AutoscaleStep {
        let tokens = f.wall_tokens_per_sec();
        let saturation = self.saturation(f);
        let (passed, why, grow) = match self.mode {
            AutoscaleMode::Qos => self.qos(f, saturation),
            AutoscaleMode::Capacity => self.capacity(users, tokens),
        };
        let mut why = why;
        let mut next = grow.map(|g| g(users));
        if let Some(n) = next
            && n > MAX_AUTOSCALE_USERS
        {
            next = (users < MAX_AUTOSCALE_USERS).then_some(MAX_AUTOSCALE_USERS);
            if next.is_none() {
                why = AutoscaleWhy::MostUsers;
            }
        }
        if next.is_some() && self.steps.len() as u32 + 1 >= self.max_steps {
            (next, why) = (None, AutoscaleWhy::MostSteps);
        }
        let step = AutoscaleStep {
            step: self.steps.len() as u32 + 1,
            users,
            wall_tokens_per_sec: tokens,
            read_device_p95: f.read_device_p95(),
            saturation,
            passed,
            why,
            next_users: next,
        };
        self.steps.push(step.clone());
        step
    }

    /// The reference's saturation level: a latency factor (the judged read device p95,
    /// the worst rank's under MPI, over 100 ms, at most 1) times a plateau factor (1
    /// when tokens/s rose under 10 % over the last step's while the read p95 rose, else
    /// 0.5).
    fn saturation(&self, f: &KvCacheFigures) -> f64 {
        let p95 = f.read_device_p95();
        let latency = (p95.0 as f64 / 1e6 / SATURATED_READ_P95_MS).min(1.0);
        let plateau = match self.steps.last() {
            Some(last)
                if f.wall_tokens_per_sec() < 1.1 * last.wall_tokens_per_sec
                    && p95 > last.read_device_p95 =>
            {
                1.0
            }
            _ => 0.5,
        };
        latency * plateau
    }

    fn qos(&mut self, f: &KvCacheFigures, saturation: f64) -> (bool, AutoscaleWhy, Grow) {
        let passed = f.passed() && saturation <= self.target * 1.1;
        if !passed {
            self.misses += 1;
            return if self.misses >= 2 {
                (false, AutoscaleWhy::Failed, None)
            } else {
                (false, AutoscaleWhy::FailedOnce, Some(same))
            };
        }
        self.misses = 0;
        if saturation < self.target * 0.9 {
            (true, AutoscaleWhy::BelowTarget, Some(times_1_2))
        } else {
            (true, AutoscaleWhy::AtTarget, None)
        }
    }

    fn capacity(&mut self, users: u32, tokens: f64) -> (bool, AutoscaleWhy, Grow) {
        match self.peak {
            None => {
                self.peak = Some((users, tokens));
                (true, AutoscaleWhy::Rising, Some(plus_40))
            }
            Some((_, best)) if tokens > best * 1.01 => {
                self.peak = Some((users, tokens));
                self.misses = 0;
                (true, AutoscaleWhy::Rising, Some(plus_20))
            }
            Some(_) => {
                self.misses += 1;
                if self.misses >= 2 {
                    (false, AutoscaleWhy::Peaked, None)
                } else {
                    (false, AutoscaleWhy::FlatOnce, Some(same))
                }
            }
        }
    }

    /// What the steps found.
    pub fn result(self) -> AutoscaleResult {
        let best = match self.mode {
            AutoscaleMode::Qos => self
                .steps
                .iter()
                .filter(|s| s.passed)
                .max_by_key(|s| s.users)
                .map(|s| (s.users, s.wall_tokens_per_sec)),
            AutoscaleMode::Capacity => self.peak,
        };
        AutoscaleResult {
            users: best.map(|b| b.0),
            wall_tokens_per_sec: best.map_or(0.0, |b| b.1),
            steps: self.steps,
        }
    }
}

/// How the next step's users follow from this step's.
type Grow = Option<fn(u32) -> u32>;

fn same(u: u32) -> u32 {
    u
}

/// kv-cache.py's scale_up_factor (at least one more user).
fn times_1_2(u: u32) -> u32 {
    ((f64::from(u) * 1.2) as u32).max(u + 1)
}

/// kv-cache.py's capacity steps: a fraction of the users, at least 5, at most 100.
fn plus(u: u32, fraction: f64) -> u32 {
    u + ((f64::from(u) * fraction) as u32).clamp(5, 100)
}

fn plus_40(u: u32) -> u32 {
    plus(u, 0.4)
}

fn plus_20(u: u32) -> u32 {
    plus(u, 0.2)
}

/// Runs the steps from `settings.users` on every rank; rank 0 decides each next step
/// and calls `on_step` with it and the steps still allowed. Returns (on rank 0) what
/// the steps found and each step's trial.
pub fn run_autoscale(
    comm: &dyn Comm,
    settings: &KvCacheSettings,
    storage: &super::Storage<'_>,
    clock: &dyn Clock,
    stop: &AtomicBool,
    on_step: &mut dyn FnMut(&AutoscaleStep, u32),
) -> Result<(AutoscaleResult, Vec<TrialFigures>), AiError> {
    let mut scaler = Autoscaler::new(settings);
    let mut trials = Vec::new();
    let mut users = Some(settings.users);
    while let Some(n) = users {
        let at = KvCacheSettings {
            users: n,
            trials: 1,
            ..settings.clone()
        };
        let mut got = run_kvcache(comm, &at, storage, clock, stop)?;
        let mut next = None;
        if let Some(t) = got.pop() {
            let step = scaler.step(n, &t.figures);
            next = step.next_users;
            on_step(&step, scaler.steps_left());
            trials.push(t);
        }
        users = comm
            .broadcast(0, &next)
            .map_err(|e| AiError::Setup(format!("sharing the next step's users: {e}")))?;
    }
    Ok((scaler.result(), trials))
}

#[cfg(test)]
#[path = "autoscale_tests.rs"]
mod tests;
