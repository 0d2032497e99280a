//! [`ThreadsSizing`]: how a `read_threads` or `write_threads` of 1 became the threads a
//! run used, as MLPerf Storage v3.0's DLIO sizes them ("PR-5" and "PR-14" in its
//! utils/config.py); [`ThreadsKind`] says which. Stored with the workload so the figure
//! can be recomputed; iolab_suites::train::threads applies it.

use serde::{Deserialize, Serialize};

/// v3.0 DLIO's cap on a sized `read_threads` when `DLIO_MAX_AUTO_THREADS` is unset
/// (config.py:798).
pub const DLIO_AUTO_READ_THREADS_CAP: u32 = 8;

/// v3.0 DLIO's cap on a sized `write_threads` when `DLIO_MAX_AUTO_THREADS` is unset
/// (config.py:835).
pub const DLIO_AUTO_WRITE_THREADS_CAP: u32 = 32;

/// The most writer threads an accelerator runs (as many as its reader threads).
pub const MAX_WRITE_THREADS: u32 = super::MAX_READ_THREADS;

/// Which of v3.0 DLIO's sized thread counts: the loader's `read_threads` or the data
/// generator's `write_threads`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadsKind {
    Read,
    Write,
}

impl ThreadsKind {
    /// DLIO's cap when `DLIO_MAX_AUTO_THREADS` is unset.
    pub fn default_cap(self) -> u32 {
        match self {
            ThreadsKind::Read => DLIO_AUTO_READ_THREADS_CAP,
            ThreadsKind::Write => DLIO_AUTO_WRITE_THREADS_CAP,
        }
    }

    /// The most threads of this kind an accelerator runs.
    pub fn most(self) -> u32 {
        match self {
            ThreadsKind::Read => super::MAX_READ_THREADS,
            ThreadsKind::Write => MAX_WRITE_THREADS,
        }
    }

    /// DLIO's name of the setting.
    pub fn setting(self) -> &'static str {
        match self {
            ThreadsKind::Read => "read_threads",
            ThreadsKind::Write => "write_threads",
        }
    }

    /// "reader" or "writer".
    pub fn role(self) -> &'static str {
        match self {
            ThreadsKind::Read => "reader",
            ThreadsKind::Write => "writer",
        }
    }

    /// The option that keeps a 1 as one thread.
    pub fn exact_option(self) -> &'static str {
        match self {
            ThreadsKind::Read => "--exact-read-threads",
            ThreadsKind::Write => "--exact-write-threads",
        }
    }
}

/// The figures v3.0 DLIO sizes a `read_threads` or (on a local file system)
/// `write_threads` of 1 from: `min(max(1, cpus / accelerators_on_host), cap)` threads
/// per accelerator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadsSizing {
    /// The count asked for (given, the preset's or the default): always 1, the one
    /// value DLIO sizes.
    pub asked: u32,
    /// The host's online CPUs (Python's `os.cpu_count()`: not the affinity mask, not a
    /// cgroup's quota).
    pub cpus: u32,
    /// The accelerators on the host (DLIO's `ranks_per_node()`: iolab's --accelerators
    /// x its ranks on the host).
    pub accelerators_on_host: u32,
    /// `DLIO_MAX_AUTO_THREADS` (at least 1; [`ThreadsKind::default_cap`] when unset).
    pub cap: u32,
}

impl ThreadsSizing {
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
