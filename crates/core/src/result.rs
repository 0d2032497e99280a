//! Measured facts. A [`PhaseResult`] is one phase (a workload run once) measured on all
//! ranks: per operation an [`OpResult`] with counts, figures and the full latency
//! histogram, first-done and last-done, a per-second [`Timeline`], CPU use, per-rank rows
//! and warnings. A [`RunRecord`] is a whole run as stored and exported.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::histogram::{LatencyHistogram, LatencySummary};
use crate::inventory::Inventory;
use crate::telemetry::Telemetry;
use crate::units::{ByteCount, BytesPerSec, Nanos, OpsPerSec, bandwidth, rate};

mod figures;
mod ranks;
mod silence;
mod timeline;

pub use figures::{CheckpointFigures, PhaseFigures, TrainEpochFigures};
pub use ranks::{HostSummary, RankSummary, host_cpus, per_host};
pub use silence::{KEPT_SILENCES, PAUSE_MIN, Pause, Silences};
pub use timeline::{OpSeries, Timeline};

/// The version of the JSON document `--json` writes and `results export` produces.
/// Bump it on any incompatible change; docs/json-schema.md describes each version.
pub const RUN_SCHEMA: &str = "iolab.run/1";

/// What one operation did.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    #[default]
    Read,
    Write,
    Fsync,
    Create,
    Stat,
    Remove,
    Mkdir,
    Rmdir,
    /// A directory entry examined by a tree walk (find).
    Scan,
    /// Bytes streamed over the network (iolab net).
    Transfer,
    /// A range discarded (BLKDISCARD on a device, a punched hole in a file).
    Trim,
    /// An S3 PUT of a whole object (one request, or a multipart upload).
    Put,
    /// An S3 GET of an object or a range of it.
    Get,
    /// An S3 DELETE (one object, or a multi-object delete request).
    Delete,
    /// An S3 LIST request (one page of keys).
    List,
}

impl OpKind {
    /// An operation that accompanies others (an fsync after writes): its rate grows
    /// with theirs by construction, so it explains (by its latency) but is no headline.
    pub fn is_auxiliary(self) -> bool {
        self == OpKind::Fsync
    }

    pub const ALL: [OpKind; 15] = [
        OpKind::Read,
        OpKind::Write,
        OpKind::Fsync,
        OpKind::Create,
        OpKind::Stat,
        OpKind::Remove,
        OpKind::Mkdir,
        OpKind::Rmdir,
        OpKind::Scan,
        OpKind::Transfer,
        OpKind::Trim,
        OpKind::Put,
        OpKind::Get,
        OpKind::Delete,
        OpKind::List,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Fsync => "fsync",
            OpKind::Create => "create",
            OpKind::Stat => "stat",
            OpKind::Remove => "remove",
            OpKind::Mkdir => "mkdir",
            OpKind::Rmdir => "rmdir",
            OpKind::Scan => "scan",
            OpKind::Transfer => "transfer",
            OpKind::Trim => "trim",
            OpKind::Put => "put",
            OpKind::Get => "get",
            OpKind::Delete => "delete",
            OpKind::List => "list",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// True for operations whose figure of merit is bandwidth rather than a rate.
    pub fn moves_data(self) -> bool {
        matches!(
            self,
            OpKind::Read
                | OpKind::Write
                | OpKind::Transfer
                | OpKind::Trim
                | OpKind::Put
                | OpKind::Get
        )
    }
}

/// The kind of a phase, which decides its figure of merit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseKind {
    Data,
    Meta,
    Find,
    Net,
    /// Object storage (S3): per-operation rates, and bandwidth for PUT and GET.
    Object,
}

/// Counts at one moment: how many operations and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpCount {
    pub ops: u64,
    pub bytes: u64,
}

impl std::ops::AddAssign for OpCount {
    fn add_assign(&mut self, rhs: OpCount) {
        self.ops += rhs.ops;
        self.bytes += rhs.bytes;
    }
}

/// One operation type of a phase, over all workers of all ranks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpResult {
    pub op: OpKind,
    /// Completed operations and bytes at the end of the phase (last done).
    pub ops: u64,
    pub bytes: ByteCount,
    /// Over the whole phase: ops (or bytes) / phase elapsed (last done).
    pub iops: OpsPerSec,
    pub bandwidth: BytesPerSec,
    /// Completed when the first worker finished (stonewall figure).
    pub first_done_ops: u64,
    pub first_done_bytes: ByteCount,
    pub first_done_iops: OpsPerSec,
    pub first_done_bandwidth: BytesPerSec,
    /// I/Os or operations that failed (not counted above).
    pub errors: u64,
    pub latency: LatencySummary,
    /// The full latency distribution (HdrHistogram V2, base64 in JSON).
    pub histogram: LatencyHistogram,
}

/// What was complete at a moment of a phase, and that moment (from the phase's start).
#[derive(Clone, Copy, Debug)]
pub struct CountAt {
    pub count: OpCount,
    pub at: Nanos,
}

impl OpResult {
    /// Builds the figures from totals: `last_done` is the whole phase (its counts at
    /// its end), `first_done` what was complete when the first worker finished.
    pub fn new(
        op: OpKind,
        last_done: CountAt,
        first_done: CountAt,
        errors: u64,
        histogram: LatencyHistogram,
    ) -> Self {
        let CountAt {
            count: total,
            at: elapsed,
        } = last_done;
        let CountAt {
            count: first_done,
            at: first_done_at,
        } = first_done;
        OpResult {
            op,
            ops: total.ops,
            bytes: ByteCount(total.bytes),
            iops: rate(total.ops, elapsed),
            bandwidth: bandwidth(ByteCount(total.bytes), elapsed),
            first_done_ops: first_done.ops,
            first_done_bytes: ByteCount(first_done.bytes),
            first_done_iops: rate(first_done.ops, first_done_at),
            first_done_bandwidth: bandwidth(ByteCount(first_done.bytes), first_done_at),
            errors,
            latency: histogram.summary(),
            histogram,
        }
    }

    /// The figures of a phase whose first done is its last done: `total` in `elapsed`.
    pub fn whole(
        op: OpKind,
        total: OpCount,
        elapsed: Nanos,
        errors: u64,
        histogram: LatencyHistogram,
    ) -> Self {
        let done = CountAt {
            count: total,
            at: elapsed,
        };
        OpResult::new(op, done, done, errors, histogram)
    }
}

/// CPU time a rank's process used during a phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    pub user: Nanos,
    pub system: Nanos,
    pub wall: Nanos,
    /// CPUs this process may run on.
    pub cpus: u32,
}

impl CpuUsage {
    /// Adds another run's user and system time (wall time stays); the CPUs are the most
    /// either had.
    pub fn add_time_of(&mut self, run: &CpuUsage) {
        self.user.0 += run.user.0;
        self.system.0 += run.system.0;
        self.cpus = self.cpus.max(run.cpus);
    }

    /// CPU time as a percentage of one CPU (as top shows it): 150 means 1.5 CPUs busy.
    pub fn percent_of_one_cpu(&self) -> f64 {
        if self.wall.0 == 0 {
            return 0.0;
        }
        (self.user.0 + self.system.0) as f64 * 100.0 / self.wall.0 as f64
    }

    /// CPU time as a percentage of all the CPUs this process may use.
    pub fn percent_of_all(&self) -> f64 {
        self.percent_of_one_cpu() / self.cpus.max(1) as f64
    }

    pub fn user_percent(&self) -> f64 {
        if self.wall.0 == 0 {
            0.0
        } else {
            self.user.0 as f64 * 100.0 / self.wall.0 as f64
        }
    }

    pub fn system_percent(&self) -> f64 {
        if self.wall.0 == 0 {
            0.0
        } else {
            self.system.0 as f64 * 100.0 / self.wall.0 as f64
        }
    }
}

/// A failure seen during a phase, with where it happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorRecord {
    pub rank: u32,
    pub host: String,
    pub op: OpKind,
    pub path: String,
    pub offset: Option<u64>,
    /// The errno behind the failure, when there was one.
    #[serde(default)]
    pub errno: Option<i32>,
    pub message: String,
}

/// One phase measured on all ranks. In JSON it also carries `per_host`, the per-rank
/// rows added up by host ([`PhaseResult::per_host`]).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PhaseResult {
    /// What the phase did: "randread-4KiB", "create", "ior-easy-write".
    pub name: String,
    pub kind: PhaseKind,
    /// Coordinates of the phase in a study (threads=4, block_size=4KiB, ...), and the
    /// headline settings of a single run.
    pub params: BTreeMap<String, String>,
    /// Repetition number within a study (0 for a single run).
    pub repetition: u32,
    /// The fully resolved spec the phase ran (a DataSpec, MetaSpec, ... as JSON).
    pub spec: serde_json::Value,
    /// Wall-clock start, milliseconds since the Unix epoch (rank 0's clock).
    pub started_at_ms: i64,
    pub ranks: u32,
    /// Workers on all ranks together.
    pub workers: u32,
    /// Whole-phase time: from the common start until the last worker finished.
    pub elapsed: Nanos,
    /// From the common start until the first worker finished its share.
    pub first_done: Nanos,
    pub ops: Vec<OpResult>,
    pub timeline: Timeline,
    /// Summed over ranks (wall is the phase's elapsed time).
    pub cpu: CpuUsage,
    pub per_rank: Vec<RankSummary>,
    pub errors: Vec<ErrorRecord>,
    pub error_count: u64,
    /// Blocks that failed --verify.
    pub verify_failures: u64,
    /// Phase-specific figures (find: matched; targets: ...).
    pub extra: BTreeMap<String, f64>,
    pub warnings: Vec<String>,
    /// True when the phase was cut short (Ctrl-C, a failing rank).
    pub interrupted: bool,
    /// Device and CPU samples taken on rank 0's host while the phase ran.
    #[serde(default)]
    pub telemetry: Option<Telemetry>,
    /// The workload's own typed figures (a training epoch's AU, a checkpoint's
    /// duration), where it has some.
    #[serde(default)]
    pub figures: Option<PhaseFigures>,
}

/// How a [`PhaseResult`] is written: its fields, with `per_host` after `per_rank`.
#[derive(Serialize)]
struct PhaseResultOut<'a> {
    name: &'a str,
    kind: PhaseKind,
    params: &'a BTreeMap<String, String>,
    repetition: u32,
    spec: &'a serde_json::Value,
    started_at_ms: i64,
    ranks: u32,
    workers: u32,
    elapsed: Nanos,
    first_done: Nanos,
    ops: &'a [OpResult],
    timeline: &'a Timeline,
    cpu: CpuUsage,
    per_rank: &'a [RankSummary],
    per_host: Vec<HostSummary>,
    errors: &'a [ErrorRecord],
    error_count: u64,
    verify_failures: u64,
    extra: &'a BTreeMap<String, f64>,
    warnings: &'a [String],
    interrupted: bool,
    telemetry: &'a Option<Telemetry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    figures: &'a Option<PhaseFigures>,
}

impl Serialize for PhaseResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PhaseResultOut {
            name: &self.name,
            kind: self.kind,
            params: &self.params,
            repetition: self.repetition,
            spec: &self.spec,
            started_at_ms: self.started_at_ms,
            ranks: self.ranks,
            workers: self.workers,
            elapsed: self.elapsed,
            first_done: self.first_done,
            ops: &self.ops,
            timeline: &self.timeline,
            cpu: self.cpu,
            per_rank: &self.per_rank,
            per_host: self.per_host(),
            errors: &self.errors,
            error_count: self.error_count,
            verify_failures: self.verify_failures,
            extra: &self.extra,
            warnings: &self.warnings,
            interrupted: self.interrupted,
            telemetry: &self.telemetry,
            figures: &self.figures,
        }
        .serialize(s)
    }
}

impl PhaseResult {
    /// The phase's pause (docs/figures.md, "Pause"), with the I/Os retried through it: the
    /// operations, of every kind, whose latency was at least 99 % of the pause's length
    /// (an I/O is issued a few µs after the completion the pause starts at).
    pub fn pause(&self) -> Option<Pause> {
        let mut pause = self.timeline.pause(self.elapsed)?;
        let through = Nanos(pause.length.0 - pause.length.0 / 100);
        pause.ios_retried = self
            .ops
            .iter()
            .map(|o| o.histogram.count_at_least(through))
            .sum();
        Some(pause)
    }

    /// The per-rank rows added up by host, rates over the phase time.
    pub fn per_host(&self) -> Vec<HostSummary> {
        per_host(&self.per_rank, self.elapsed)
    }

    pub fn op(&self, op: OpKind) -> Option<&OpResult> {
        self.ops.iter().find(|o| o.op == op)
    }

    /// The phase's figure of merit per operation: bandwidth for data, a rate otherwise.
    pub fn headline(&self) -> Vec<(OpKind, f64)> {
        self.ops
            .iter()
            .map(|o| {
                let v = if o.op.moves_data() && self.kind != PhaseKind::Meta {
                    o.bandwidth.get()
                } else {
                    o.iops.get()
                };
                (o.op, v)
            })
            .collect()
    }
}

/// Whether a run finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Still running, or the process died: the phases stored are all there is.
    Incomplete,
    Complete,
    /// Stopped by Ctrl-C or a signal; phases so far are kept.
    Interrupted,
    /// Ran, but failed validation (I/O errors, verify mismatches).
    Failed,
    /// Never stored: what a reader on the host of an incomplete run's process sees when
    /// that process is still alive.
    Running,
    /// Never stored: an incomplete run whose process is gone (killed, crashed, the host
    /// rebooted), as seen from its host. Its stored phases are all it will have.
    Abandoned,
}

/// The process that stores a run (rank 0's), so that a reader on the same host can tell
/// a run still going from one whose process died.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunProcess {
    pub host: String,
    pub pid: u32,
    /// When the process started, in clock ticks after boot (/proc/PID/stat field 22):
    /// a later process given the same pid differs.
    pub start_ticks: u64,
    /// /proc/sys/kernel/random/boot_id: a run from before a reboot is not running.
    pub boot_id: String,
}

/// Where a run came from: enough to reproduce it and to know what was measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub iolab_version: String,
    pub git_revision: Option<String>,
    /// The command line as typed.
    pub command: Vec<String>,
    pub hosts: Vec<String>,
    pub ranks: u32,
    /// The target as given (--dir or --device).
    pub target: String,
    pub inventory: Option<Inventory>,
    /// The storing process (absent in runs stored before iolab 0.1 recorded it, and in
    /// imported runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<RunProcess>,
}

/// A whole run: what `--json` writes, the store keeps and reports read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema: String,
    /// Assigned by the store ("r42"); empty before the run is stored.
    pub id: String,
    pub label: Option<String>,
    /// The command that made it: run, meta, find, study, io500, targets, ladder, net.
    pub kind: String,
    pub started_at_ms: i64,
    pub finished_at_ms: Option<i64>,
    pub status: RunStatus,
    /// The fully resolved spec (study, workload) as JSON.
    pub spec: serde_json::Value,
    pub provenance: Provenance,
    pub phases: Vec<PhaseResult>,
    pub warnings: Vec<String>,
}

impl RunRecord {
    pub fn new(
        kind: &str,
        spec: serde_json::Value,
        provenance: Provenance,
        started_at_ms: i64,
    ) -> Self {
        RunRecord {
            schema: RUN_SCHEMA.to_string(),
            id: String::new(),
            label: None,
            kind: kind.to_string(),
            started_at_ms,
            finished_at_ms: None,
            status: RunStatus::Incomplete,
            spec,
            provenance,
            phases: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

#[cfg(test)]
#[path = "result_tests.rs"]
mod tests;
