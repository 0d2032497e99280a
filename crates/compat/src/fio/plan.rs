//! A fio job as an iolab workload: [`plan_jobs`] turns resolved [`FioJob`]s into
//! [`FioPlan`]s (a [`DataSpec`], where it runs, and in which phase: the jobs between two
//! stonewalls run at the same time, as in fio), refusing what iolab would run
//! differently from fio, and saying in [`FioPlan::notes`] where it runs the same work
//! by another means (libaio on io_uring, fdatasync as fsync).

use iolab_core::pattern::VERIFY_MIN_BLOCK;
use iolab_core::spec::{
    BackendKind, CacheMode, DataSpec, DedupeWorkingSet, FioSettings, Layout, RandomKind, RwKind,
    TargetSpec,
};
use iolab_core::units::{ByteCount, Nanos};

use super::error::FioError;
use super::job::{DEFAULT_FILENAME_FORMAT, ExitWhat, FioJob, FioOffset, FioRw};
use super::plan_amount::verify_only_of;
use super::plan_target::{engine_of, file_name_template, same_files, size_of, target_of, zones_of};

/// One job, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct FioPlan {
    pub job: FioJob,
    pub spec: DataSpec,
    /// The workload settings its options become, as the engine runs them: seeds for
    /// fio's first thread, the offsets and passes of a target of no known size
    /// ([`FioPlan::resolved`] gives them for the target and the clones' numbers).
    pub settings: FioSettings,
    pub target: TargetSpec,
    /// fio's reporting group (a new one at every stonewall or new_group).
    pub group: u32,
    /// The phase it runs in: the jobs of one phase start together (a new one at every
    /// stonewall).
    pub phase: u32,
    /// The job of the same phase (its index among all jobs) whose end it waits for
    /// (fio's wait_for; a job of an earlier phase has ended anyway).
    pub after: Option<usize>,
    /// Where each clone's region starts in its files (fio's offset), resolved into
    /// [`FioSettings::start_offset`] once the target's size is known.
    pub offset: FioOffset,
    /// How much further on each next clone's region starts (fio's offset_increment).
    pub offset_increment: FioOffset,
    /// Bytes each clone moves over its region, in passes (fio's io_size).
    pub io_size: Option<u64>,
    /// What its end stops (fio's exitall, or exitall_on_error when the bool says an
    /// error is needed) and which jobs (exit_what).
    pub exit: Option<(bool, ExitWhat)>,
    /// A write job's read-back of `verify` is left out (fio's do_verify=0).
    pub no_verify_pass: bool,
    /// Its files' names in the work directory: fio's filename_format with the job's
    /// name, `{worker}` for `$jobnum` and `{file}` for `$filenum`.
    pub file_names: String,
    /// Where iolab runs the same work by other means, printed before the job runs.
    pub notes: Vec<String>,
}

/// Plans every job, in order. `seed` is used for jobs with `randrepeat=0` and no
/// `randseed` (fio seeds those from the clock).
pub fn plan_jobs(jobs: &[FioJob], seed: u64) -> Result<Vec<FioPlan>, FioError> {
    if jobs.is_empty() {
        return Err(FioError::at(
            "command line",
            "no job to run: give a job file or --name=NAME with its options",
        ));
    }
    let mut plans: Vec<FioPlan> = Vec::with_capacity(jobs.len());
    let (mut group, mut phase) = (0, 0);
    // fio's exitall is global: one job's turns it on for all of them.
    let exitall = jobs.iter().any(|j| j.exitall);
    for (i, job) in jobs.iter().enumerate() {
        if i > 0 && job.stonewall {
            phase += 1;
        }
        if i > 0 && (job.stonewall || job.new_group) {
            group += 1;
        }
        let mut plan = plan_job(job, group, seed)?;
        super::plan_amount::create_only(&mut plan);
        plan.phase = phase;
        plan.exit = if exitall {
            Some((false, job.exit_what))
        } else {
            job.exitall_on_error.then_some((true, job.exit_what))
        };
        if let Some(waited) = &job.wait_for {
            let Some(k) = jobs[..i].iter().rposition(|j| &j.name == waited) else {
                return Err(job.refusal(
                    "wait_for",
                    format!("no job named [{waited}] comes before [{}]", job.name),
                ));
            };
            // A job of an earlier phase has ended before this one starts.
            plan.after = (plans[k].phase == phase).then_some(k);
        }
        if let Some(other) = plans
            .iter()
            .find(|p| p.phase == phase && same_files(p, &plan))
        {
            return Err(FioError::option(
                &job.at,
                &job.name,
                "name",
                format!(
                    "[{}] and [{}] run at the same time on the same files ({}): fio would share them, iolab does not; give one another name or filename_format",
                    other.job.name, job.name, plan.file_names
                ),
            ));
        }
        plans.push(plan);
    }
    // One timeline resolution for all jobs, so that the timelines of jobs reported
    // together add up (fio's log_avg_msec).
    let interval = plans
        .iter()
        .filter_map(|p| p.job.logs.interval_ms())
        .reduce(super::logs::gcd);
    for p in &mut plans {
        p.settings.timeline_interval = interval.map(|ms| Nanos(ms * 1_000_000));
    }
    Ok(plans)
}

/// One job's plan: its direction and sizes, what iolab runs by other means (notes) or
/// refuses, where it runs, its spec and the settings fio's options become.
fn plan_job(job: &FioJob, group: u32, seed: u64) -> Result<FioPlan, FioError> {
    let mut notes = Vec::new();
    let at = |(k, m): Refusal| job.refusal(k, m);
    let (rw, block, verify_only) = rw_of(job, &mut notes).map_err(at)?;
    let (backend, queue_depth) = engine_of(job, &mut notes);
    let io_priorities = super::cmdprio::io_priorities(job, backend).map_err(at)?;
    notes_and_checks(job, block, &mut notes).map_err(at)?;
    let zones = zones_of(job, block, &mut notes).map_err(at)?;
    let dedupe_working_set = dedupe_working_set_of(job, &mut notes).map_err(at)?;
    let (target, shared) = target_of(job, &mut notes).map_err(at)?;
    let context = super::job_files::FileContext {
        queued: (backend == BackendKind::Uring).then_some(job.iodepth),
        nrfiles: job.nrfiles,
        loops: job.loops,
        new_files: job.filename.is_none(),
        reads: rw.reads(),
        direct: job.direct,
    };
    job.files.check(&context, &mut notes).map_err(at)?;
    let size = size_of(job, shared, block).map_err(at)?;
    let format = job
        .filename_format
        .as_deref()
        .unwrap_or(DEFAULT_FILENAME_FORMAT);
    let file_names =
        file_name_template(format, &job.name).map_err(|m| job.refusal("filename_format", m))?;
    let shape = Shape {
        rw,
        block,
        backend,
        queue_depth,
        size,
        shared,
    };
    let mut spec = spec_of(job, &shape, seed, &mut notes).map_err(at)?;
    super::plan_access::apply_access(job, &mut spec, &mut notes).map_err(at)?;
    spec.validate().map_err(|e| {
        let key = super::plan_access::fio_key_of(job, &e.option).unwrap_or(fio_key(&e.option));
        job.refusal(key, e.reason)
    })?;
    let io_size = super::plan_amount::io_size_of(job, &spec, &mut notes).map_err(at)?;
    let chosen = super::plan_settings::Chosen {
        block,
        verify_only,
        zones,
        dedupe_working_set,
        io_priorities,
    };
    let settings =
        super::plan_settings::settings_of(job, &spec, seed, chosen, &mut notes).map_err(at)?;
    Ok(FioPlan {
        job: job.clone(),
        spec,
        settings,
        target,
        group,
        phase: 0,
        after: None,
        offset: job.offset,
        offset_increment: job.offset_increment,
        io_size,
        exit: None,
        no_verify_pass: !job.do_verify,
        file_names,
        notes,
    })
}

/// The job's direction and block size (verify_only's read of a write job).
fn rw_of(job: &FioJob, notes: &mut Vec<String>) -> Result<(RwKind, u64, bool), Refusal> {
    let rw = match job.rw {
        FioRw::Read => RwKind::Read,
        FioRw::Write => RwKind::Write,
        FioRw::RandRead => RwKind::Randread,
        FioRw::RandWrite => RwKind::Randwrite,
        FioRw::ReadWrite => RwKind::Rw,
        FioRw::RandRw => RwKind::Randrw,
        FioRw::Trim => RwKind::Trim,
        FioRw::RandTrim => RwKind::Randtrim,
        FioRw::TrimWrite => RwKind::Trimwrite,
        FioRw::RandTrimWrite => RwKind::Randtrimwrite,
    };
    let block = if rw.trims() {
        job.bs_trim
    } else if rw.writes() && !rw.reads() {
        job.bs_write
    } else {
        job.bs_read
    };
    let (rw, verify_only) = verify_only_of(job, rw, notes)?;
    if matches!(rw, RwKind::Trimwrite | RwKind::Randtrimwrite) && job.bs_trim != job.bs_write {
        return Err((
            "bs",
            format!(
                "trimwrite writes the blocks it trims: a trim size ({}) other than the write size ({}) is not supported",
                job.bs_trim, job.bs_write
            ),
        ));
    }
    Ok((rw, block, verify_only))
}

/// What iolab runs by other means (said in `notes`) and what it refuses, of the options
/// that shape no setting.
fn notes_and_checks(job: &FioJob, block: u64, notes: &mut Vec<String>) -> Result<(), Refusal> {
    if job.fdatasync.is_some() && job.fsync.is_none() {
        notes.push("fdatasync is issued as fsync".into());
    }
    if let Some(method) = &job.verify {
        notes.push(format!(
            "verify={method} is checked with iolab's self-checking blocks (each carries its offset and a checksum of its data), not fio's {method} headers: data fio wrote does not verify"
        ));
    }
    if job.create_on_open {
        notes.push(
            "create_on_open: the job's files are created before it starts (fio's default), so their creation is not in its figures"
                .into(),
        );
    }
    if job.verify.is_some() && block < VERIFY_MIN_BLOCK {
        return Err((
            "verify",
            format!("needs a block size of at least {VERIFY_MIN_BLOCK} bytes, not {block}"),
        ));
    }
    notes.extend(job.words.iter().cloned());
    if job.logs.any() {
        notes.push(if job.logs.avg_msec == 0 {
            format!(
                "fio logs every I/O without log_avg_msec; iolab keeps no per-I/O record, so its logs have one line per {} ms window (the window's bandwidth, IOPS and mean latency)",
                super::logs::DEFAULT_WINDOW_MS
            )
        } else {
            format!(
                "the logs have one line per {} ms window of iolab's timeline, as fio's with log_avg_msec",
                job.logs.avg_msec
            )
        });
    }
    if job.number_ios.is_some() && job.time_based {
        notes.push(
            "number_ios has no effect on a time-based job: it runs its runtime, as fio's does"
                .into(),
        );
    }
    if job.dedupe_percentage == 100 {
        return Err((
            "dedupe_percentage",
            "100 (every write the same block) is not supported: use at most 99".into(),
        ));
    }
    if job.seq_add % block as i64 != 0 {
        return Err((
            "rw",
            format!(
                "a step of {} bytes is not a multiple of the block size {block}: iolab moves whole blocks",
                job.seq_add
            ),
        ));
    }
    Ok(())
}

/// fio's working set: only its duplicates differ from repeat's (dedupe.c), with one
/// file per job (fio's HOWTO).
fn dedupe_working_set_of(
    job: &FioJob,
    notes: &mut Vec<String>,
) -> Result<Option<DedupeWorkingSet>, Refusal> {
    if job.access.dedupe_working_set && job.dedupe_percentage > 0 {
        if job.nrfiles > 1 {
            return Err((
                "dedupe_mode",
                "working_set with several files (nrfiles) is not supported, as in fio".into(),
            ));
        }
        return Ok(Some(DedupeWorkingSet {
            percent: job.access.dedupe_working_set_percentage.unwrap_or(5),
            global: job.access.dedupe_global,
        }));
    }
    if job.access.dedupe_global {
        notes.push("dedupe_global has no effect without dedupe_mode=working_set and dedupe_percentage, as in fio".into());
    }
    Ok(None)
}

/// What [`spec_of`] builds a spec from, besides the job.
struct Shape {
    rw: RwKind,
    block: u64,
    backend: BackendKind,
    queue_depth: u32,
    /// Each clone's size (the whole file's share when `shared`).
    size: Option<u64>,
    shared: bool,
}

/// The job's data spec: what it moves, how, and for how long (fio's steadystate too).
fn spec_of(
    job: &FioJob,
    shape: &Shape,
    seed: u64,
    notes: &mut Vec<String>,
) -> Result<DataSpec, Refusal> {
    let Shape {
        rw,
        block,
        backend,
        queue_depth,
        size,
        shared,
    } = *shape;
    let (runtime, stonewall) = match (job.runtime, job.time_based) {
        (Some(r), true) => (Some(r), None),
        (Some(r), false) => (None, Some(r)),
        (None, true) => return Err(("time_based", "needs a runtime".into())),
        (None, false) => (None, None),
    };
    let mut spec = DataSpec {
        rw,
        rwmix_read: job.rwmix_read,
        block_size: ByteCount(block),
        // bs=READ,WRITE: a mixed job's writes have a size of their own.
        write_block_size: (rw.is_mixed() && job.bs_write != block)
            .then_some(ByteCount(job.bs_write)),
        threads: job.numjobs,
        queue_depth,
        backend,
        submit_batch: job.iodepth_batch_submit.clamp(1, queue_depth.max(1)),
        // A shared file's size is the whole file: every job's share of it.
        size: size.filter(|_| !shared).map(ByteCount),
        total_size: size
            .filter(|_| shared)
            .map(|s| ByteCount(s * job.numjobs as u64)),
        runtime,
        stonewall,
        layout: if shared {
            Layout::Shared
        } else {
            Layout::FilePerThread
        },
        random: if job.norandommap {
            RandomKind::Uniform
        } else {
            RandomKind::FullCoverage
        },
        // allrandrepeat: fio seeds everything from the clone's number alone.
        seed: match (
            job.randseed.filter(|_| !job.access.allrandrepeat),
            job.randrepeat || job.access.allrandrepeat,
        ) {
            (Some(s), _) => s,
            (None, true) => iolab_core::spec::DEFAULT_SEED,
            (None, false) => seed,
        },
        direct: job.direct,
        sync: job.sync,
        fsync_at_end: job.end_fsync || job.fsync_on_close,
        fsync_every: job.fsync.or(job.fdatasync),
        // fio's pre_read reads the files in and clears invalidate.
        cache: if job.files.pre_read && rw.reads() {
            CacheMode::Hot
        } else if job.invalidate {
            CacheMode::Cold
        } else {
            CacheMode::Keep
        },
        preallocate: job.fallocate,
        ..DataSpec::default()
    };
    content_of(job, &mut spec, notes);
    steady_of(job, &mut spec);
    Ok(spec)
}

/// What the job's writes carry (fio's buffer options) and whether it checks them.
fn content_of(job: &FioJob, spec: &mut DataSpec, notes: &mut Vec<String>) {
    let writes = spec.rw.writes();
    let compressed = writes && (1..100).contains(&job.compress_percentage);
    // do_verify=0: a read job does not check; a write job writes checkable blocks but
    // does not read them back (no_verify_pass).
    spec.verify = job.verify.is_some() && (job.do_verify || writes);
    spec.pattern = super::plan_data::pattern_of(job, spec.rw, notes);
    // fio's buffers: (100 - P)% of every chunk random, the rest zeros.
    spec.compress_ratio = compressed.then(|| 100.0 / f64::from(100 - job.compress_percentage));
    spec.compress_chunk = compressed.then(|| ByteCount(job.compress_chunk.unwrap_or(512)));
    spec.dedupe_ratio = (writes && job.dedupe_percentage > 0)
        .then(|| 100.0 / f64::from(100 - job.dedupe_percentage));
    // fio fills its buffers with the pattern; only writes carry it.
    spec.buffer_pattern = job.buffer_pattern.clone().filter(|_| writes);
}

/// fio's steadystate: on when ss_dur is more than 0, with ss's default rule.
fn steady_of(job: &FioJob, spec: &mut DataSpec) {
    if let Some(dur) = job.ss_dur.filter(|d| d.nanos().0 > 0) {
        spec.steady_state = Some(job.ss.unwrap_or(iolab_core::steady::SteadyRule {
            metric: iolab_core::steady::SteadyMetric::Iops,
            test: iolab_core::steady::SteadyTest::Slope,
            limit: 0.01,
            percent: true,
        }));
        spec.steady_window = Some(dur);
        spec.steady_interval = job.ss_interval;
        spec.steady_ramp = job.ss_ramp.filter(|r| r.nanos().0 > 0);
    }
}

pub(super) type Refusal = (&'static str, String);

/// fio's name for the iolab option a spec check names.
fn fio_key(option: &str) -> &str {
    match option {
        "--block-size" | "--write-block-size" => "bs",
        "--threads" => "numjobs",
        "--queue-depth" => "iodepth",
        "--submit-batch" => "iodepth_batch_submit",
        "--size" | "--total-size" => "size",
        "--fsync-every" => "fsync",
        "--compress-ratio" => "buffer_compress_percentage",
        "--dedupe-ratio" => "dedupe_percentage",
        "--buffer-pattern" => "buffer_pattern",
        "files_per_worker" => "nrfiles",
        "start_offset" => "offset",
        "--steady-interval" => "ss_interval",
        "--steady-window" => "ss_dur",
        other => other.trim_start_matches("--"),
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "plan_options_tests.rs"]
mod options_tests;
