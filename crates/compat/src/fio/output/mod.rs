//! Results in fio's shapes. [`FioReport::new`] computes every figure once from the
//! stored phase (house rule 12); [`json`], [`text`] and [`terse`] only format it.
//! Latency: iolab times each I/O from issue to completion, which is fio's `lat`; it has
//! no separate submission time, so `slat` is reported empty (N = 0, as fio does for
//! synchronous engines) and `clat` equals `lat`. Where iolab measures nothing fio
//! reports (page faults, the depth distribution), the figure is 0 or the configured
//! depth, and `notes` says so. Each entry is a [`FioEntry`]: a clone, a job or the jobs
//! `group_reporting` merges; [`DiskUtil`] is fio's disk statistics over the run.

pub mod json;
pub mod terse;
pub mod text;

use iolab_core::LatencyHistogram;
use iolab_core::result::{OpKind, PhaseResult};

use super::plan::FioPlan;

/// fio's default completion-latency percentiles.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// The bucket limits of fio's latency distribution (`lat (usec): 50=14.38%, ...`).
pub const LAT_NS_LIMITS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
pub const LAT_US_LIMITS: [u64; 10] = LAT_NS_LIMITS;
pub const LAT_MS_LIMITS: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

/// fio's queue depth buckets (`IO depths : 1=100.0%, 2=0.0%, ...`).
pub const DEPTH_BUCKETS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// min / max / mean / standard deviation / count of a set of latencies (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub stddev: f64,
    pub n: u64,
}

impl Spread {
    fn of_histogram(h: &LatencyHistogram) -> Spread {
        if h.is_empty() {
            return Spread::default();
        }
        Spread {
            min: h.min().0 as f64,
            max: h.max().0 as f64,
            mean: h.mean(),
            stddev: h.stdev(),
            n: h.count(),
        }
    }

    /// Of per-interval samples (bandwidth in KiB/s, IOPS), as fio's bw_/iops_ lines.
    fn of_samples(samples: &[f64]) -> Spread {
        if samples.is_empty() {
            return Spread::default();
        }
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        // fio's sample standard deviation (n - 1).
        let var = if samples.len() > 1 {
            samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Spread {
            min: samples.iter().cloned().fold(f64::INFINITY, f64::min),
            max: samples.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            mean,
            stddev: var.sqrt(),
            n: samples.len() as u64,
        }
    }
}

/// One direction of one job (fio's "read", "write" or "trim" object).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Direction {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub runtime_ms: u64,
    pub bw_bytes: f64,
    pub iops: f64,
    pub lat: Spread,
    /// (percentile, ns) at fio's percentiles; empty when nothing completed.
    pub percentiles: Vec<(f64, u64)>,
    /// Bandwidth (KiB/s) and IOPS over the phase's whole seconds.
    pub bw_samples: Spread,
    pub iops_samples: Spread,
    /// Non-empty histogram buckets (upper bound ns, count), for json+.
    pub bins: Vec<(u64, u64)>,
}

impl Direction {
    fn of(phase: &PhaseResult, op: OpKind) -> Direction {
        let Some(r) = phase.ops.iter().find(|o| o.op == op) else {
            return Direction::default();
        };
        let (bw, iops) = samples(phase, op);
        Direction {
            io_bytes: r.bytes.get(),
            total_ios: r.ops,
            runtime_ms: phase.elapsed.0 / 1_000_000,
            bw_bytes: r.bandwidth.0,
            iops: r.iops.0,
            lat: Spread::of_histogram(&r.histogram),
            percentiles: if r.histogram.is_empty() {
                Vec::new()
            } else {
                PERCENTILES
                    .iter()
                    .map(|p| (*p, r.histogram.percentile(*p).0))
                    .collect()
            },
            bw_samples: Spread::of_samples(&bw),
            iops_samples: Spread::of_samples(&iops),
            bins: r
                .histogram
                .buckets()
                .iter()
                .map(|(v, c)| (v.0, *c))
                .collect(),
        }
    }

    /// Share of I/Os (percent) in fio's latency buckets: nanoseconds below 1 µs,
    /// microseconds below 1 ms, milliseconds above (the last bucket open, `>=2000`).
    /// A latency goes to the first limit it is below, as fio's `io_u_mark_lat_*` do.
    pub fn distribution(&self) -> LatDistribution {
        let mut d = LatDistribution::default();
        let total: u64 = self.bins.iter().map(|(_, c)| c).sum();
        if total == 0 {
            return d;
        }
        let share = |c: u64| c as f64 * 100.0 / total as f64;
        let first_below = |v: u64, limits: &[u64]| limits.iter().position(|l| v < *l);
        for &(v, c) in &self.bins {
            if v < 1_000 {
                let i = first_below(v, &LAT_NS_LIMITS).unwrap_or(LAT_NS_LIMITS.len() - 1);
                d.ns[i] += share(c);
            } else if v < 1_000_000 {
                let i = first_below(v / 1_000, &LAT_US_LIMITS).unwrap_or(LAT_US_LIMITS.len() - 1);
                d.us[i] += share(c);
            } else {
                let i = first_below(v / 1_000_000, &LAT_MS_LIMITS).unwrap_or(LAT_MS_LIMITS.len());
                d.ms[i] += share(c);
            }
        }
        d
    }
}

/// fio's `latency_ns`, `latency_us` and `latency_ms` shares, in percent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LatDistribution {
    pub ns: [f64; 10],
    pub us: [f64; 10],
    /// The last entry is `>=2000`.
    pub ms: [f64; 12],
}

/// Per-second bandwidth (KiB/s) and IOPS of `op`, whole intervals only (the last,
/// partial one would be divided by a fraction of a second).
fn samples(phase: &PhaseResult, op: OpKind) -> (Vec<f64>, Vec<f64>) {
    let Some(s) = phase.timeline.series(op) else {
        return (Vec::new(), Vec::new());
    };
    let interval = phase.timeline.interval.as_secs_f64();
    if interval <= 0.0 {
        return (Vec::new(), Vec::new());
    }
    let whole = (phase.elapsed.as_secs_f64() / interval).floor() as usize;
    let n = whole.min(s.ops.len());
    let bw = s.bytes[..n]
        .iter()
        .map(|b| *b as f64 / 1024.0 / interval)
        .collect();
    let iops = s.ops[..n].iter().map(|o| *o as f64 / interval).collect();
    (bw, iops)
}

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

/// One job's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct JobReport {
    pub name: String,
    pub group: u32,
    pub rw: String,
    pub block_size: u64,
    pub engine: String,
    pub iodepth: u32,
    pub jobs: u32,
    pub options: Vec<(String, String)>,
    pub read: Direction,
    pub write: Direction,
    pub trim: Direction,
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
}

/// What every renderer formats.
#[derive(Clone, Debug, PartialEq)]
pub struct FioReport {
    /// "fio-3.33 (iolab 0.1.0)".
    pub version: String,
    pub timestamp_ms: i64,
    pub jobs: Vec<JobReport>,
    pub disks: Vec<DiskUtil>,
    pub notes: Vec<String>,
}

impl FioReport {
    /// The report of `entries` (in fio's order) with the disk statistics of the run.
    pub fn new(tool: &str, entries: &[FioEntry<'_>], disks: Vec<DiskUtil>) -> FioReport {
        let jobs = entries.iter().map(job_report).collect();
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
            disks,
            notes,
        }
    }
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
    let read = Direction::of(phase, OpKind::Read);
    let write = Direction::of(phase, OpKind::Write);
    let both = Direction {
        bins: read.bins.iter().chain(&write.bins).cloned().collect(),
        ..Direction::default()
    };
    JobReport {
        name: plan.job.name.clone(),
        group: plan.group,
        rw: plan.job.rw.fio_name().to_string(),
        block_size: plan.spec.block_size.get(),
        engine: plan.job.engine.fio_name().to_string(),
        iodepth: plan.spec.queue_depth,
        jobs: entry.jobs,
        options: plan.job.given.clone(),
        latency: both.distribution(),
        read,
        write,
        trim: Direction::default(),
        sync,
        job_runtime_ms: entry.job_runtime_ms,
        elapsed_s: phase.elapsed.0.div_ceil(1_000_000_000),
        usr_cpu: cpu(phase.cpu.user.0),
        sys_cpu: cpu(phase.cpu.system.0),
        ctx: entry.context_switches,
        errors: phase.error_count,
        error: if phase.error_count > 0 {
            phase.errors.iter().find_map(|e| e.errno).unwrap_or(5) // EIO
        } else {
            0
        },
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
