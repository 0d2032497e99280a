//! [`PhaseCounters`]: the operations and bytes `/metrics` exports as counters by phase
//! and operation. They grow while a phase runs (from what the workers' recorders
//! counted, ramps excluded) and, once its results are stored, equal them; they never go
//! back, which is what a Prometheus counter promises.

use std::collections::BTreeMap;

use iolab_core::result::{OpKind, PhaseResult};

/// One (phase, operation) counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counter {
    /// Operations and bytes of the stored phases counted under it.
    stored: (u64, u64),
    /// Its value when the running phase counted under it began, and what that phase's
    /// workers counted since.
    base: (u64, u64),
    live: (u64, u64),
}

impl Counter {
    /// What the running phase counted on top of what was there when it began, until the
    /// stored results (which count at least as much: the same recorders, read later)
    /// catch up.
    fn value(&self) -> (u64, u64) {
        (
            (self.base.0 + self.live.0).max(self.stored.0),
            (self.base.1 + self.live.1).max(self.stored.1),
        )
    }
}

/// The counters by (phase label, operation). A phase's label is the name it runs under;
/// the parts of one planned phase (its repetitions, its targets one at a time) count
/// under the planned name, and the jobs of one fio phase (`a+b`: the stored `a`, `a.0`,
/// `b`) under the running name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhaseCounters {
    counters: BTreeMap<(String, OpKind), Counter>,
    /// The label of the phase now running.
    running: Option<String>,
}

impl PhaseCounters {
    /// A new phase, counted under `label`, began running.
    pub fn begin(&mut self, label: &str) {
        for ((l, _), c) in self.counters.iter_mut() {
            if l == label {
                c.base = c.value();
                c.live = (0, 0);
            }
        }
        self.running = Some(label.to_string());
    }

    /// What the running phase's workers counted so far: operations by operation, then
    /// bytes by operation (`OpKind::index` order, as `Progress::counted`).
    pub fn tick(&mut self, counted: &[u64]) {
        let Some(label) = &self.running else {
            return;
        };
        let n = OpKind::ALL.len();
        if counted.len() != 2 * n {
            return;
        }
        for (i, op) in OpKind::ALL.iter().enumerate() {
            let (ops, bytes) = (counted[i], counted[n + i]);
            if ops == 0 && bytes == 0 {
                continue;
            }
            let c = self.counters.entry((label.clone(), *op)).or_default();
            c.live = (c.live.0.max(ops), c.live.1.max(bytes));
        }
    }

    /// A stored phase's figures, counted under `label`.
    pub fn stored(&mut self, label: &str, phase: &PhaseResult) {
        for o in &phase.ops {
            self.add_stored(label, o.op, o.ops, o.bytes.get());
        }
    }

    fn add_stored(&mut self, label: &str, op: OpKind, ops: u64, bytes: u64) {
        let c = self.counters.entry((label.to_string(), op)).or_default();
        c.stored.0 += ops;
        c.stored.1 += bytes;
    }

    /// The label of the running phase, if one runs.
    pub fn running(&self) -> Option<&str> {
        self.running.as_deref()
    }

    /// (phase label, operation, operations, bytes) of every counter.
    pub fn values(&self) -> impl Iterator<Item = (&str, OpKind, u64, u64)> {
        self.counters.iter().map(|((l, op), c)| {
            let (ops, bytes) = c.value();
            (l.as_str(), *op, ops, bytes)
        })
    }
}

/// Whether the stored phase `stored` is one of the jobs of the running fio phase
/// `running` (`a+b`): a job's name, or a clone of it (`a.0`).
pub fn job_of(stored: &str, running: &str) -> bool {
    running.split('+').any(|job| {
        stored == job
            || stored.strip_prefix(job).is_some_and(|rest| {
                rest.len() > 1
                    && rest.starts_with('.')
                    && rest[1..].chars().all(|c| c.is_ascii_digit())
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(reads: u64) -> Vec<u64> {
        let n = OpKind::ALL.len();
        let mut v = vec![0; 2 * n];
        v[OpKind::Read.index()] = reads;
        v[n + OpKind::Read.index()] = reads * 4096;
        v
    }

    fn read(c: &PhaseCounters, label: &str) -> u64 {
        c.values()
            .find(|(l, op, ..)| *l == label && *op == OpKind::Read)
            .map_or(0, |v| v.2)
    }

    #[test]
    fn repetitions_and_targets_one_at_a_time_never_fall_back() {
        let mut c = PhaseCounters::default();
        let mut seen = Vec::new();
        // Two parts of one planned phase run one after the other; both are stored at
        // the end (as `iolab targets --one-at-a-time` stores its targets).
        c.begin("read");
        for n in [100, 250] {
            c.tick(&counted(n));
            seen.push(read(&c, "read"));
        }
        c.begin("read");
        for n in [50, 120] {
            c.tick(&counted(n));
            seen.push(read(&c, "read"));
        }
        c.add_stored("read", OpKind::Read, 260, 260 * 4096);
        seen.push(read(&c, "read"));
        c.add_stored("read", OpKind::Read, 130, 130 * 4096);
        seen.push(read(&c, "read"));
        assert_eq!(seen, [100, 250, 300, 370, 370, 390]);
    }

    #[test]
    fn a_fio_phases_jobs_are_its_own() {
        assert!(job_of("a.0", "a+b") && job_of("b", "a+b") && job_of("a", "a"));
        assert!(!job_of("a.x", "a+b") && !job_of("ab", "a+b") && !job_of("a.", "a"));
    }
}
