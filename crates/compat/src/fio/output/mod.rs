//! Results in fio's shapes. [`FioReport::new`] computes every figure once from the
//! stored phase (house rule 12); [`json`], [`text`] and [`terse`] only format it.
//! Latency: iolab times each I/O from issue to completion, which is fio's `lat`; it has
//! no separate submission time, so `slat` is reported empty (N = 0, as fio does for
//! synchronous engines) and `clat` equals `lat`. Where iolab measures nothing fio
//! reports (page faults, the depth distribution), the figure is 0 or the configured
//! depth, and `notes` says so. Each entry is a [`FioEntry`]: a clone, a job or the jobs
//! `group_reporting` merges; [`DiskUtil`] is fio's disk statistics over the run.

mod direction;
pub mod json;
pub mod terse;
pub mod text;

pub use direction::{Direction, LatDistribution, Spread};

use iolab_core::result::{OpKind, PhaseResult, Timeline};
use iolab_core::units::Nanos;

use super::plan::FioPlan;

/// fio's default completion-latency percentiles.
pub use super::reporting::DEFAULT_PERCENTILES as PERCENTILES;
use super::reporting::{ReportOptions, Unified};

/// Linux's EILSEQ: fio's verify functions return it for a block that does not match,
/// and it becomes the job's error.
const EILSEQ: i32 = 84;

/// The bucket limits of fio's latency distribution (`lat (usec): 50=14.38%, ...`).
pub const LAT_NS_LIMITS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
pub const LAT_US_LIMITS: [u64; 10] = LAT_NS_LIMITS;
pub const LAT_MS_LIMITS: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

/// fio's queue depth buckets (`IO depths : 1=100.0%, 2=0.0%, ...`).
pub const DEPTH_BUCKETS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// What one entry of the report is made of.
pub struct FioEntry<'a> {
    /// The plan of its first job (name, options, engine, group).
    pub plan: &'a FioPlan,
    /// Its figures: the workers it covers, assembled.
    pub phase: &'a PhaseResult,
    /// Clones it covers (fio's `jobs=`).
    pub jobs: u32,
    /// Context switches of their threads.
    pub context_switches: u64,
    /// Their runtimes added up (fio's `job_runtime`; `phase.elapsed` is the longest).
    pub job_runtime_ms: u64,
    /// Each clone's timeline and runtime, for fio's per-clone bandwidth and IOPS
    /// samples (empty: the phase's own timeline).
    pub clones: Vec<(&'a Timeline, Nanos)>,
    /// The read-back of a write job with `verify=` when the entry covers all of the
    /// job: fio reports those reads as the job's own.
    pub verify: Option<&'a PhaseResult>,
    /// The clones' per-priority latencies (`prio.DIR.INDEX.IOPRIO`, fio's cmdprio_*).
    pub prios: &'a std::collections::BTreeMap<String, iolab_core::histogram::LatencyHistogram>,
}

/// One direction of a group's `Run status group N` line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupDirection {
    pub bytes: u64,
    /// All bytes over the longest runtime (fio's aggregate), bytes/s.
    pub agg_bw: f64,
    /// The slowest and fastest entry's bandwidth, bytes/s.
    pub min_bw: f64,
    pub max_bw: f64,
    pub min_run_ms: u64,
    pub max_run_ms: u64,
}

/// A reporting group's totals, each direction that moved data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupStatus {
    pub group: u32,
    pub read: Option<GroupDirection>,
    pub write: Option<GroupDirection>,
}

impl GroupDirection {
    /// Of the entries that moved data in this direction (fio leaves the others out).
    fn of(dirs: &[&Direction]) -> Option<GroupDirection> {
        let dirs: Vec<&&Direction> = dirs
            .iter()
            .filter(|d| d.total_ios > 0 && d.runtime_ms > 0)
            .collect();
        if dirs.is_empty() {
            return None;
        }
        let bytes: u64 = dirs.iter().map(|d| d.io_bytes).sum();
        let max_run_ms = dirs.iter().map(|d| d.runtime_ms).max().unwrap_or(1).max(1);
        Some(GroupDirection {
            bytes,
            agg_bw: bytes as f64 * 1000.0 / max_run_ms as f64,
            min_bw: dirs
                .iter()
                .map(|d| d.bw_bytes)
                .fold(f64::INFINITY, f64::min),
            max_bw: dirs.iter().map(|d| d.bw_bytes).fold(0.0, f64::max),
            min_run_ms: dirs.iter().map(|d| d.runtime_ms).min().unwrap_or(0),
            max_run_ms,
        })
    }

    /// fio's convert_agg_kbytes_percent: a mean sample (KiB/s) as a share of the
    /// aggregate, at most 100 %.
    fn percent_of(&self, mean_kib: f64) -> f64 {
        if self.agg_bw > 1024.0 {
            (mean_kib * 100.0 / (self.agg_bw / 1024.0)).min(100.0)
        } else {
            100.0
        }
    }
}

/// fio's disk statistics of one device over the measured phases (`disk_util`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    /// Milliseconds spent on reads and writes.
    pub read_ticks: u64,
    pub write_ticks: u64,
    /// Weighted milliseconds with requests in flight.
    pub in_queue: u64,
    /// Share of the time the device was busy, in percent.
    pub util: f64,
}

impl DiskUtil {
    /// fio's util: a device's busy milliseconds over the measured milliseconds, in
    /// percent, at most 100 as fio caps it; 0 when no time was measured.
    pub fn util_percent(busy_ms: u64, elapsed_ms: f64) -> f64 {
        if elapsed_ms > 0.0 {
            (busy_ms as f64 * 100.0 / elapsed_ms).min(100.0)
        } else {
            0.0
        }
    }
}

/// One job's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct JobReport {
    pub name: String,
    pub group: u32,
    pub rw: String,
    /// Read, write and trim sizes (smallest, largest), as fio's header line shows them.
    pub block_sizes: [(u64, u64); 3],
    pub engine: String,
    pub iodepth: u32,
    pub jobs: u32,
    pub options: Vec<(String, String)>,
    pub read: Direction,
    pub write: Direction,
    pub trim: Direction,
    /// Every direction together (unified_rw_reporting mixed or both).
    pub mixed: Option<Direction>,
    /// Which directions are reported, and which percentiles.
    pub reporting: ReportOptions,
    pub sync: Spread,
    /// Every direction's latencies in fio's buckets.
    pub latency: LatDistribution,
    /// The clones' runtimes added up, and the longest, in seconds rounded up (fio's
    /// `elapsed`).
    pub job_runtime_ms: u64,
    pub elapsed_s: u64,
    pub usr_cpu: f64,
    pub sys_cpu: f64,
    pub ctx: u64,
    pub errors: u64,
    /// fio's `err=`: the errno of the job's first failed I/O (EIO when none was known),
    /// 0 when none failed.
    pub error: i32,
    /// fio's steadystate section, for a job with ss_dur.
    pub steady: Option<SteadyState>,
    /// fio's latency target: (the depth settled at, the target in ns, the percentile,
    /// the window in µs); None: (iodepth, 0, 100, 0), as fio prints without one.
    pub latency_target: Option<(u32, u64, f64, u64)>,
}

/// fio's `steadystate` (stat.c): the rule, whether it was attained, the last full
/// window's criterion, and the window's samples oldest first (zeros where it was never
/// filled), from the phase's `steady_*` figures.
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyState {
    pub rule: iolab_core::steady::SteadyRule,
    /// The window in samples (fio's `duration`: seconds, one sample a second).
    pub duration: u64,
    pub attained: bool,
    /// Signed for a slope, as fio prints it.
    pub criterion: f64,
    /// fio's `max_deviation` (0 for slope rules) and `slope` (0 for deviation rules).
    pub max_deviation: f64,
    pub slope: f64,
    pub iops: Vec<u64>,
    pub bw: Vec<u64>,
}

impl SteadyState {
    fn of(plan: &FioPlan, phase: &PhaseResult) -> Option<SteadyState> {
        use iolab_core::steady::SteadyTest;
        let rule = plan.spec.steady_state?;
        let x = |k: &str| phase.extra.get(k).copied();
        let duration = x("steady_window_points")? as u64;
        let series = |name: &str| -> Vec<u64> {
            (0..duration)
                .map(|i| x(&format!("steady_{name}.{i}")).unwrap_or(0.0) as u64)
                .collect()
        };
        let (criterion, deviation, slope) = (
            x("steady_criterion").unwrap_or(0.0),
            x("steady_max_deviation").unwrap_or(0.0),
            x("steady_slope").unwrap_or(0.0),
        );
        Some(SteadyState {
            rule,
            duration,
            attained: x("steady_attained").unwrap_or(0.0) > 0.0,
            criterion: match rule.test {
                SteadyTest::Slope if slope < 0.0 => -criterion,
                _ => criterion,
            },
            max_deviation: if rule.test == SteadyTest::Deviation {
                deviation
            } else {
                0.0
            },
            slope: if rule.test == SteadyTest::Slope {
                slope
            } else {
                0.0
            },
            iops: series("iops"),
            bw: series("bw"),
        })
    }

    /// fio's integer means over the whole window (its unfilled zeros too).
    pub fn iops_mean(&self) -> u64 {
        self.iops.iter().sum::<u64>() / self.duration.max(1)
    }
    pub fn bw_mean(&self) -> u64 {
        self.bw.iter().sum::<u64>() / self.duration.max(1)
    }
}

/// What every renderer formats.
#[derive(Clone, Debug, PartialEq)]
pub struct FioReport {
    /// "fio-3.33 (iolab 0.1.0)".
    pub version: String,
    pub timestamp_ms: i64,
    pub jobs: Vec<JobReport>,
    pub groups: Vec<GroupStatus>,
    pub disks: Vec<DiskUtil>,
    pub notes: Vec<String>,
    /// The first job's globals written with a value (fio's "global options").
    pub global_options: Vec<(String, String)>,
}

impl FioReport {
    /// The report of `entries` (in fio's order) with the disk statistics of the run.
    pub fn new(tool: &str, entries: &[FioEntry<'_>], disks: Vec<DiskUtil>) -> FioReport {
        let mut jobs: Vec<JobReport> = entries.iter().map(job_report).collect();
        let groups = group_status(&mut jobs);
        let mut notes = vec![
            "lat is measured from issue to completion; slat is not measured (N = 0) and clat equals lat".to_string(),
            "majf and minf are not measured (0); the IO depth distribution is the configured depth".to_string(),
        ];
        let mut named: Vec<&str> = Vec::new();
        for e in entries {
            let p = e.plan;
            if !named.contains(&p.job.name.as_str()) {
                named.push(&p.job.name);
                notes.extend(p.notes.iter().map(|n| format!("[{}] {n}", p.job.name)));
            }
        }
        FioReport {
            version: format!("{} ({tool})", super::FIO_SHAPE_VERSION),
            timestamp_ms: entries.first().map(|e| e.phase.started_at_ms).unwrap_or(0),
            jobs,
            groups,
            disks,
            notes,
            global_options: entries
                .first()
                .map(|e| e.plan.job.global_given.clone())
                .unwrap_or_default(),
        }
    }
}

/// Each group's totals, and each entry's share of its group's bandwidth.
fn group_status(jobs: &mut [JobReport]) -> Vec<GroupStatus> {
    let mut ids: Vec<u32> = jobs.iter().map(|j| j.group).collect();
    ids.dedup();
    let groups: Vec<GroupStatus> = ids
        .into_iter()
        .map(|g| {
            let members: Vec<&JobReport> = jobs.iter().filter(|j| j.group == g).collect();
            let reads: Vec<&Direction> = members.iter().map(|j| &j.read).collect();
            let writes: Vec<&Direction> = members.iter().map(|j| &j.write).collect();
            GroupStatus {
                group: g,
                read: GroupDirection::of(&reads),
                write: GroupDirection::of(&writes),
            }
        })
        .collect();
    for j in jobs.iter_mut() {
        let Some(g) = groups.iter().find(|g| g.group == j.group) else {
            continue;
        };
        for (d, total) in [(&mut j.read, &g.read), (&mut j.write, &g.write)] {
            if let Some(t) = total
                && d.bw_samples.n > 0
            {
                d.agg_percent = t.percent_of(d.bw_samples.mean);
            }
        }
    }
    groups
}

fn job_report(entry: &FioEntry<'_>) -> JobReport {
    let (plan, phase) = (entry.plan, entry.phase);
    // fio: CPU time over the clones' runtimes added up.
    let wall = entry.job_runtime_ms as f64 * 1e6;
    let cpu = |t: u64| {
        if wall > 0.0 {
            t as f64 * 100.0 / wall
        } else {
            0.0
        }
    };
    let sync = phase
        .ops
        .iter()
        .find(|o| o.op == OpKind::Fsync)
        .map(|o| Spread::of_histogram(&o.histogram))
        .unwrap_or_default();
    let (read, write, trim, mixed) = directions(entry);
    let both = Direction {
        bins: read
            .bins
            .iter()
            .chain(&write.bins)
            .chain(&trim.bins)
            .cloned()
            .collect(),
        ..Direction::default()
    };
    JobReport {
        name: plan.job.name.clone(),
        group: plan.group,
        rw: plan.job.rw.fio_name().to_string(),
        block_sizes: block_sizes(plan),
        engine: plan.job.engine.fio_name().to_string(),
        iodepth: plan.spec.queue_depth,
        jobs: entry.jobs,
        options: plan.job.given.clone(),
        latency: both.distribution(),
        read,
        write,
        trim,
        mixed,
        reporting: plan.job.report.clone(),
        sync,
        job_runtime_ms: entry.job_runtime_ms,
        elapsed_s: phase.elapsed.0.div_ceil(1_000_000_000),
        usr_cpu: cpu(phase.cpu.user.0),
        sys_cpu: cpu(phase.cpu.system.0),
        ctx: entry.context_switches,
        errors: phase.error_count,
        error: error_code(phase),
        steady: SteadyState::of(plan, phase),
        latency_target: plan.settings.latency_target.map(|t| {
            let depth = phase.extra.get("latency_depth").copied().unwrap_or(1.0);
            (depth as u32, t.target.0, t.percentile, t.window.0 / 1000)
        }),
    }
}

/// A job's read, write and trim, and with unified reporting the mixed direction.
fn directions(entry: &FioEntry<'_>) -> (Direction, Direction, Direction, Option<Direction>) {
    let (plan, phase) = (entry.plan, entry.phase);
    let list = &plan.job.report.percentiles;
    // A verifying write job's reads are its read-back, as fio counts them.
    let read = match entry.verify {
        Some(v) if phase.op(OpKind::Read).is_none() => Direction::of(v, OpKind::Read, &[], list),
        _ => Direction::of(phase, OpKind::Read, &entry.clones, list),
    }
    .with_prios("read", entry.prios, list);
    let write = Direction::of(phase, OpKind::Write, &entry.clones, list).with_prios(
        "write",
        entry.prios,
        list,
    );
    let trim = Direction::of(phase, OpKind::Trim, &entry.clones, list);
    let mixed = (plan.job.report.unified != Unified::None)
        .then(|| Direction::mixed(phase, &entry.clones, list));
    (read, write, trim, mixed)
}

/// The smallest and largest block of reads, writes and trims (fio's trims take the
/// writes' split or range).
fn block_sizes(plan: &FioPlan) -> [(u64, u64); 3] {
    let a = &plan.job.access;
    let write = a.size_range(1, plan.job.bs_write);
    let trim = if write.0 == write.1 {
        (plan.job.bs_trim, plan.job.bs_trim)
    } else {
        write
    };
    [a.size_range(0, plan.job.bs_read), write, trim]
}

/// The error fio reports for a job: the first I/O error's errno (EIO when it had none),
/// else EILSEQ for a verify failure, else 0.
fn error_code(phase: &PhaseResult) -> i32 {
    if phase.error_count > 0 {
        phase.errors.iter().find_map(|e| e.errno).unwrap_or(5) // EIO
    } else if phase.verify_failures > 0 {
        EILSEQ
    } else {
        0
    }
}

/// fio's depth bucket a configured depth falls in.
pub fn depth_bucket(depth: u32) -> usize {
    DEPTH_BUCKETS
        .iter()
        .position(|b| depth <= *b)
        .unwrap_or(DEPTH_BUCKETS.len() - 1)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
