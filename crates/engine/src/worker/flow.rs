//! fio's token-based flow control (`flow`, `flow_id`, `flow_sleep`; fio 3.33's
//! flow.c): the jobs of one flow group share a counter of the I/Os they issued, and a
//! job whose own count is a larger part of it than its weight is of the group's weight
//! is held back (it sleeps `flow_sleep`, or tries again at once), so the jobs' I/Os keep
//! the ratio of their weights (`flow=8` and `flow=1`: 8 to 1).
//!
//! One difference from fio, to be sure no worker waits forever: a worker's weight joins
//! its group when the worker starts and leaves when it ends. fio adds every job's
//! weight when it reads the job file, so a job that has not started yet (a later
//! stonewall group, a `wait_for`) holds the running ones back; in fio that can hang a
//! job file, here the running workers share the flow among themselves.

use std::sync::atomic::{AtomicU64, Ordering};

use iolab_core::units::Nanos;

pub use iolab_core::spec::Flow;

/// The groups of one phase's workers on this rank.
#[derive(Debug, Default)]
pub struct Flows {
    groups: Vec<(i32, Group)>,
}

#[derive(Debug)]
struct Group {
    /// I/Os issued by the group's running workers, plus one (fio starts it at 1).
    counter: AtomicU64,
    /// The weights of the group's running workers.
    weight: AtomicU64,
}

impl Flows {
    /// One group per flow id among `flows`.
    pub fn new(flows: impl IntoIterator<Item = Option<Flow>>) -> Flows {
        let mut groups: Vec<(i32, Group)> = Vec::new();
        for f in flows.into_iter().flatten() {
            if !groups.iter().any(|(id, _)| *id == f.id) {
                groups.push((
                    f.id,
                    Group {
                        counter: AtomicU64::new(1),
                        weight: AtomicU64::new(0),
                    },
                ));
            }
        }
        Flows { groups }
    }

    /// A starting worker's turn-taker in its group (None: the job has no flow).
    pub fn join(&self, flow: Option<Flow>) -> Option<FlowTurn<'_>> {
        let f = flow.filter(|f| f.weight > 0)?;
        let (_, group) = self.groups.iter().find(|(id, _)| *id == f.id)?;
        group
            .weight
            .fetch_add(u64::from(f.weight), Ordering::AcqRel);
        Some(FlowTurn {
            group,
            weight: f.weight,
            sleep: f.sleep,
            mine: 0,
        })
    }
}

/// One worker's side of its flow group.
#[derive(Debug)]
pub struct FlowTurn<'a> {
    group: &'a Group,
    weight: u32,
    pub sleep: Nanos,
    mine: u64,
}

impl FlowTurn<'_> {
    /// fio's flow_threshold_exceeded: false (and this I/O counted) when the worker may
    /// issue an I/O now; true when it is held back.
    pub fn held(&mut self) -> bool {
        let shared = self.group.counter.load(Ordering::Acquire).max(1);
        let total = self.group.weight.load(Ordering::Acquire).max(1);
        if self.mine as f64 / shared as f64 > f64::from(self.weight) / total as f64 {
            return true;
        }
        self.group.counter.fetch_add(1, Ordering::AcqRel);
        self.mine += 1;
        false
    }
}

impl Drop for FlowTurn<'_> {
    /// The worker ends: its I/Os and weight leave the group (fio's flow_put).
    fn drop(&mut self) {
        self.group.counter.fetch_sub(self.mine, Ordering::AcqRel);
        self.group
            .weight
            .fetch_sub(u64::from(self.weight), Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(id: i32, weight: u32) -> Option<Flow> {
        Some(Flow {
            id,
            weight,
            sleep: Nanos::ZERO,
        })
    }

    /// Two workers taking turns as fast as they may keep the ratio of their weights;
    /// one alone is never held; another group is apart.
    #[test]
    fn turns_keep_the_weights_ratio() {
        let flows = Flows::new([flow(0, 8), flow(0, 1), flow(3, 5)]);
        let mut a = flows.join(flow(0, 8)).unwrap();
        let mut b = flows.join(flow(0, 1)).unwrap();
        let (mut na, mut nb) = (0u64, 0u64);
        for _ in 0..9000 {
            na += u64::from(!a.held());
            nb += u64::from(!b.held());
        }
        assert!(na + nb > 8000, "{na} {nb}");
        let ratio = na as f64 / nb as f64;
        assert!((ratio - 8.0).abs() < 0.05, "{na}/{nb} = {ratio}");
        // b ends: a is alone and never held again.
        drop(b);
        assert!((0..100).all(|_| !a.held()));
        let mut c = flows.join(flow(3, 5)).unwrap();
        assert!((0..100).all(|_| !c.held()));
        assert!(flows.join(flow(7, 1)).is_none());
        assert!(flows.join(flow(0, 0)).is_none());
    }
}
