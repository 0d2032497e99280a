//! Steady-state stops while a phase runs (`--steady-state`, fio's `ss`): one
//! [`SteadyTracker`] per unit (the whole phase, or one job of several run together), fed
//! at every coordination tick on rank 0; a unit that is steady stops its workers.

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use iolab_core::steady::{SteadySpec, SteadyTracker};
use iolab_core::units::Nanos;

use crate::control::PhaseControl;

struct Unit {
    /// The workers it covers on this rank (by index in the phase); None: every worker
    /// of every rank, judged on the phase's global counts.
    workers: Option<Vec<usize>>,
    tracker: Mutex<SteadyTracker>,
}

/// The steady-state trackers of one phase.
pub struct SteadyWatch {
    units: Vec<Unit>,
}

impl SteadyWatch {
    /// The whole phase, every rank together: when steady, every worker stops.
    pub fn whole(spec: SteadySpec) -> SteadyWatch {
        SteadyWatch {
            units: vec![Unit {
                workers: None,
                tracker: Mutex::new(SteadyTracker::new(spec)),
            }],
        }
    }

    /// One tracker per group of this rank's workers (a job of several run together):
    /// when one is steady, only its workers stop (fio's terminate of that job).
    pub fn per_group(groups: Vec<(Vec<usize>, SteadySpec)>) -> SteadyWatch {
        SteadyWatch {
            units: groups
                .into_iter()
                .map(|(w, spec)| Unit {
                    workers: Some(w),
                    tracker: Mutex::new(SteadyTracker::new(spec)),
                })
                .collect(),
        }
    }

    /// One tick (rank 0): `elapsed` since the phase start, the phase's operations and
    /// bytes on all ranks so far.
    pub(crate) fn tick(&self, control: &PhaseControl, elapsed: Nanos, global: (u64, u64)) {
        for u in &self.units {
            let (ops, bytes) = match &u.workers {
                None => global,
                Some(ws) => ws.iter().fold((0, 0), |(o, b), &i| {
                    let p = &control.workers[i];
                    (
                        o + p.ops.load(Ordering::Relaxed),
                        b + p.bytes.load(Ordering::Relaxed),
                    )
                }),
            };
            let mut t = u.tracker.lock().unwrap_or_else(|p| p.into_inner());
            if t.observe(elapsed, ops, bytes) {
                match &u.workers {
                    None => control.stop_all(),
                    Some(ws) => ws
                        .iter()
                        .for_each(|&i| control.workers[i].halt.store(true, Ordering::Relaxed)),
                }
            }
        }
    }

    /// Unit `u`'s outcome as named figures (see `SteadyTracker::figures`).
    pub fn figures(&self, u: usize) -> Vec<(String, f64)> {
        self.units.get(u).map_or_else(Vec::new, |u| {
            u.tracker
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .figures()
        })
    }
}
