//! [`RankOutcome`]: one rank's part of a phase, built worker by worker and sent to every
//! rank.

use iolab_core::result::CpuUsage;
use iolab_core::units::Nanos;
use serde::{Deserialize, Serialize};

use crate::recorder::WorkerMeasure;

/// One rank's part of a phase, as all ranks receive it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RankOutcome {
    pub rank: u32,
    pub host: String,
    pub threads: u32,
    /// Why this rank could not run the phase, if it could not.
    pub setup_error: Option<String>,
    /// From the common start until this rank's last / first worker finished.
    pub elapsed: Nanos,
    pub first_done: Nanos,
    pub measure: WorkerMeasure,
    /// Operations completed by each of this rank's workers.
    pub completed: Vec<u64>,
    /// CPU time of this rank's worker threads, each from the start until it finished,
    /// over `elapsed`.
    pub cpu: CpuUsage,
    /// The CPUs this rank may run on, so that ranks sharing a host count them once.
    #[serde(default)]
    pub cpu_set: Vec<u32>,
}

impl RankOutcome {
    /// An outcome with no worker yet: [`add_worker`](Self::add_worker) adds them, and
    /// [`finish`](Self::finish) ends it.
    pub fn empty(rank: u32, host: &str) -> RankOutcome {
        RankOutcome {
            rank,
            host: host.to_string(),
            first_done: Nanos(u64::MAX),
            ..RankOutcome::default()
        }
    }

    /// Adds one worker: what it measured and completed, when it finished and when it
    /// first stopped (its first-done moment).
    pub fn add_worker(
        &mut self,
        measure: &WorkerMeasure,
        completed: u64,
        finished: Nanos,
        first_done: Nanos,
    ) {
        self.measure.merge(measure);
        self.completed.push(completed);
        self.elapsed = self.elapsed.max(finished);
        self.first_done = self.first_done.min(first_done);
    }

    /// No worker finished: no first-done moment either.
    pub fn finish(&mut self) {
        if self.first_done == Nanos(u64::MAX) {
            self.first_done = Nanos::ZERO;
        }
    }
}
