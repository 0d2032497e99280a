//! [`WorkerProgress`]: a worker's live counters, which its recorder publishes to while
//! it runs (one cache line each, written only by their worker) and the phase's
//! coordinator reads: ops, bytes, latency buckets, its state and a snapshot of its
//! figures when one was asked for.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64};

use iolab_core::live_latency::BUCKETS;
use iolab_core::result::OpKind;
use iolab_core::units::Nanos;

use super::WorkerMeasure;

/// A worker's live counters, on a cache line of its own.
#[repr(align(64))]
pub struct WorkerProgress {
    /// Its latencies so far in coarse buckets (iolab_core::live_latency), copied from
    /// its recorder every 256 operations: what the live views take p50 and p99 from.
    pub latency: Box<[AtomicU64; BUCKETS]>,
    /// Operations and bytes its recorder counted so far, by operation
    /// (`OpKind::index`), copied with the latency buckets: what the stored result will
    /// count (a ramp's operations are not), the source of `/metrics`' live counters.
    pub counted: Box<[[AtomicU64; 2]; OpKind::ALL.len()]>,
    /// Operations completed (a ramp's too) and their bytes: what the stall watchdog and
    /// the progress line follow.
    pub ops: AtomicU64,
    pub bytes: AtomicU64,
    /// Set when the worker has finished (its share done, stopped, or failed).
    pub done: AtomicBool,
    /// Asks this worker alone to stop as at the end of its runtime (its job reached
    /// steady state, or another's end stopped it: fio's exitall); one still waiting to
    /// start never starts.
    pub halt: AtomicBool,
    /// Set when the worker starts its I/O (after any start delay or wait).
    pub started: AtomicBool,
    /// Waiting at the wear-out rendezvous with this many I/Os done.
    pub waiting_with: AtomicU64,
    /// CPU time (user, system) the worker's own thread used from the start of the
    /// phase until it finished, set when it finishes.
    pub cpu_user: AtomicU64,
    pub cpu_system: AtomicU64,
    /// Context switches of the worker's thread over the same time (getrusage's
    /// ru_nvcsw + ru_nivcsw, fio's ctx).
    pub context_switches: AtomicU64,
    /// Alive but waiting by design, so not stalled: to start (a start delay, or for other
    /// workers to finish), or for work from its peers (pfind's walk).
    pub holding: AtomicBool,
    /// Its figures so far and the time they cover, left here when a snapshot was asked
    /// for (see `PhaseControl::request_snapshots`).
    pub snapshot: Mutex<Option<(WorkerMeasure, Nanos)>>,
}

impl Default for WorkerProgress {
    fn default() -> Self {
        WorkerProgress {
            latency: Box::new(std::array::from_fn(|_| AtomicU64::new(0))),
            counted: Box::new(std::array::from_fn(|_| {
                [AtomicU64::new(0), AtomicU64::new(0)]
            })),
            ops: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            done: AtomicBool::new(false),
            halt: AtomicBool::new(false),
            started: AtomicBool::new(false),
            waiting_with: AtomicU64::new(0),
            cpu_user: AtomicU64::new(0),
            cpu_system: AtomicU64::new(0),
            context_switches: AtomicU64::new(0),
            holding: AtomicBool::new(false),
            snapshot: Mutex::new(None),
        }
    }
}
