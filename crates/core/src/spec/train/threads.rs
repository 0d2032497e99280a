//! [`ReadThreadsSizing`]: how a `read_threads` of 1 became the threads a run used, as
//! MLPerf Storage v3.0's DLIO sizes it ("PR-5" in its utils/config.py). Stored with the
//! workload so the figure can be recomputed; iolab_suites::train::threads applies it.

use serde::{Deserialize, Serialize};

/// v3.0 DLIO's cap on a sized `read_threads` when `DLIO_MAX_AUTO_THREADS` is unset.
pub const DLIO_AUTO_THREADS_CAP: u32 = 8;

/// The figures v3.0 DLIO sizes a `read_threads` of 1 from:
/// `min(max(1, cpus / accelerators_on_host), cap)` threads per accelerator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadThreadsSizing {
    /// The read_threads asked for (given, the preset's or the default): always 1, the
    /// one value DLIO sizes.
    pub asked: u32,
    /// The host's online CPUs (Python's `os.cpu_count()`: not the affinity mask, not a
    /// cgroup's quota).
    pub cpus: u32,
    /// The accelerators on the host (DLIO's `ranks_per_node()`: iolab's --accelerators
    /// x its ranks on the host).
    pub accelerators_on_host: u32,
    /// `DLIO_MAX_AUTO_THREADS` (at least 1; [`DLIO_AUTO_THREADS_CAP`] when unset).
    pub cap: u32,
}

impl ReadThreadsSizing {
    /// The threads each accelerator uses: its share of the host's CPUs, at least 1, at
    /// most the cap.
    pub fn threads(&self) -> u32 {
        let per_accelerator = (self.cpus / self.accelerators_on_host.max(1)).max(1);
        per_accelerator.min(self.cap.max(1))
    }

    /// Whether sizing changed what was asked.
    pub fn changed(&self) -> bool {
        self.threads() != self.asked
    }
}
