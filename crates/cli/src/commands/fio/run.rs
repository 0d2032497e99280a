//! Running the planned jobs: one phase per stonewall, its jobs together
//! (`run_data_jobs`) on the targets they name, prepared once each; fio's report entries
//! stored as the run's phases; fio's `io_u error` lines; the files removed when the
//! phase ends. fio's status dumps come from the same entries while a phase runs.

use std::sync::Mutex;

use anyhow::Result;
use iolab_compat::fio::{ExitWhat, FioPlan, Invocation};
use iolab_core::result::{PhaseResult, RunStatus};
use iolab_core::spec::{BackendKind, DataSpec, FioSettings, TargetSpec};
use iolab_engine::DataOptions;
use iolab_engine::FileNames;
use iolab_engine::PhaseMeta;
use iolab_engine::{DataJob, JobsExit, JobsRun, StatusEvery, WorkerRow, run_data_jobs};
use iolab_engine::{MonotonicClock, PreparedTarget, prepare_target};

use super::FioArgs;
use super::disk::{DiskProbe, DiskTotals};
use super::report::{Entry, Reporter};
use crate::commands::finish::{cleanup, finish_status};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

/// What every phase of the run shares.
struct Shared<'a> {
    rt: &'a Runtime,
    plans: &'a [FioPlan],
    reporter: &'a Reporter<'a>,
    totals: &'a Mutex<DiskTotals>,
    status_interval: Option<u64>,
    keep: bool,
    live: &'a crate::args::ServeArgs,
    /// Files a job named that iolab made (fio's missing `filename`).
    made: &'a Mutex<Vec<std::path::PathBuf>>,
    /// fio's thread number of each plan's first clone, less one.
    first_numbers: Vec<u32>,
    /// Log files written so far (later clones append to them).
    logs_written: Mutex<Vec<String>>,
}

pub fn run_jobs(rt: &Runtime, args: &FioArgs, inv: &Invocation, plans: &[FioPlan]) -> Result<u8> {
    args.common.live.start(rt)?;
    plan_live(plans);
    let specs: Vec<_> = plans.iter().map(|p| &p.spec).collect();
    let dir = plans[0].target.dir.clone();
    let mut sink = RunSink::start(
        rt,
        args.common.recording(),
        "fio",
        serde_json::json!({ "fio": args.args, "jobs": specs }),
        crate::commands::run::describe(&plans[0].target),
        dir.as_deref(),
    );
    let reporter = Reporter::new(inv, plans, rt.comm.size(), rt.is_root())?;
    let totals = Mutex::new(DiskTotals::default());
    let made = Mutex::new(Vec::new());
    let shared = Shared {
        rt,
        plans,
        reporter: &reporter,
        totals: &totals,
        status_interval: inv.status_interval,
        keep: args.keep,
        live: &args.common.live,
        made: &made,
        first_numbers: super::logs::first_numbers(plans, rt.comm.size()),
        logs_written: Mutex::new(Vec::new()),
    };
    let mut done: Vec<Entry> = Vec::new();
    let mut verified: Vec<PhaseResult> = Vec::new();
    let last = plans.iter().map(|p| p.phase).max().unwrap_or(0);
    // fio's exit_what=all fired: the later phases' jobs never start (fio reports them
    // with nothing done).
    let mut stopped = false;
    for phase in 0..=last {
        let jobs: Vec<usize> = (0..plans.len())
            .filter(|&i| plans[i].phase == phase)
            .collect();
        match run_phase(&shared, &sink, &jobs, &done, stopped) {
            Ok((entries, verify, all)) => {
                stopped |= all;
                if rt.is_root() {
                    for e in &entries {
                        let plan = &plans[reporter.units[e.unit].plan];
                        io_u_errors(&e.phase, plan.spec.block_size.get());
                    }
                }
                sink.phases(entries.iter().map(|e| e.phase.clone()).collect());
                sink.phases(verify.clone());
                verified.extend(verify);
                done.extend(entries);
            }
            Err(e) => {
                super::images::remove_made(&made, args.keep);
                return Err(abandon(&mut sink, e, plans, &jobs));
            }
        }
        if rt.interrupted() || done.iter().any(|e| e.phase.interrupted) {
            break;
        }
    }
    super::images::remove_made(&made, args.keep);
    conclude(&shared, &mut sink, &done, &verified)
}

/// The live display's plan: jobs between two stonewalls run together, the first of
/// them carrying the longest time-based runtime of the group, the others none
/// (size-based jobs: unknown).
fn plan_live(plans: &[FioPlan]) {
    crate::live::plan(plans.iter().enumerate().map(|(i, p)| {
        let group = plans.iter().filter(|q| q.phase == p.phase);
        let first = plans.iter().position(|q| q.phase == p.phase) == Some(i);
        let secs = if first {
            group
                .map(|q| q.spec.runtime.map(|r| r.as_secs_f64()))
                .try_fold(0.0f64, |m, r| r.map(|r| m.max(r)))
        } else {
            Some(0.0)
        };
        (p.job.name.clone(), secs)
    }));
}

/// Ends the run once its phases ran: its status stored, fio's report written (rank 0)
/// and the exit code.
fn conclude(
    s: &Shared<'_>,
    sink: &mut RunSink,
    done: &[Entry],
    verified: &[PhaseResult],
) -> Result<u8> {
    let results = done.iter().map(|e| &e.phase).chain(verified);
    let failed = results
        .clone()
        .any(|r| r.error_count > 0 || r.verify_failures > 0);
    let interrupted = s.rt.interrupted() || done.iter().any(|e| e.phase.interrupted);
    let code = finish_status(sink, interrupted, failed);
    if s.rt.is_root() {
        let disks = s.totals.lock().unwrap_or_else(|p| p.into_inner()).fio();
        s.reporter
            .write(&s.reporter.render(&done.iter().collect::<Vec<_>>(), &disks))?;
        if !sink.record.id.is_empty() {
            eprintln!("iolab fio: stored as {}", sink.record.id);
        }
    }
    Ok(code)
}

/// Ends the run after a phase failed: stored as failed (or interrupted), the error
/// naming the phase's jobs.
fn abandon(
    sink: &mut RunSink,
    e: anyhow::Error,
    plans: &[FioPlan],
    jobs: &[usize],
) -> anyhow::Error {
    let status = match e.downcast_ref::<iolab_engine::EngineError>() {
        Some(iolab_engine::EngineError::Interrupted) => RunStatus::Interrupted,
        _ => RunStatus::Failed,
    };
    sink.finish(status);
    let names: Vec<&str> = jobs.iter().map(|&i| plans[i].job.name.as_str()).collect();
    let what = if names.len() == 1 { "job" } else { "jobs" };
    e.context(format!("{what} {}", names.join(", ")))
}

/// A prepared target with the spec it came from and whether it is the null backend's.
type Prepared = (TargetSpec, bool, PreparedTarget);

/// A phase's targets, each prepared once, and job k's index among them (`of_job[k]`).
struct PhaseTargets {
    list: Vec<Prepared>,
    of_job: Vec<usize>,
}

impl PhaseTargets {
    /// The prepared target of job k of the phase.
    fn of(&self, k: usize) -> &PreparedTarget {
        &self.list[self.of_job[k]].2
    }
}

/// Runs the jobs (plan indices) of one phase together: their report entries, the
/// verify phases of verify writes, and whether a job's end stopped every later job
/// (fio's exit_what=all). `done` holds the entries of the phases before, for status
/// dumps; with `stopped` the jobs never start (an earlier exit_what=all).
fn run_phase(
    s: &Shared<'_>,
    sink: &RunSink,
    jobs: &[usize],
    done: &[Entry],
    stopped: bool,
) -> Result<(Vec<Entry>, Vec<PhaseResult>, bool)> {
    let comm = s.rt.comm.as_ref();
    super::images::make_missing(s.rt, s.plans, jobs, s.made)?;
    let targets = prepare_targets(s, jobs)?;
    let outcome = run_prepared(s, sink, jobs, done, &targets, stopped);
    let mut files: Vec<Vec<std::path::PathBuf>> = vec![Vec::new(); targets.list.len()];
    if let Ok(run) = &outcome {
        // What a verify_only job checked stays, to be checked again (fio's use of it).
        for (k, j) in run.jobs.iter().enumerate() {
            if !s.plans[jobs[k]].settings.verify_existing {
                files[targets.of_job[k]].extend(j.files.iter().cloned());
            }
        }
    }
    let mut cleaned = Ok(());
    for ((_, _, t), f) in targets.list.into_iter().zip(&files) {
        cleaned = cleaned.and(cleanup(comm, t, f, s.keep));
    }
    let run = outcome?;
    cleaned?;
    if s.rt.is_root() {
        for (k, &i) in jobs.iter().enumerate() {
            super::logs::write_logs(
                &s.plans[i],
                s.first_numbers[i],
                &run.jobs[k].rows,
                &s.logs_written,
                run.started_at_ms,
            )?;
        }
    }
    let (entries, verify) = phase_entries(s, jobs, &run);
    Ok((entries, verify, stops_all(s, jobs, &run)))
}

/// Each of the phase's targets prepared once (a target and backend several jobs share
/// is one), and job k's index among them; on a failure those prepared are cleaned up.
fn prepare_targets(s: &Shared<'_>, jobs: &[usize]) -> Result<PhaseTargets> {
    let comm = s.rt.comm.as_ref();
    let mut targets: Vec<Prepared> = Vec::new();
    let mut target_of: Vec<usize> = Vec::with_capacity(jobs.len());
    for &i in jobs {
        let p = &s.plans[i];
        let null = p.spec.backend == BackendKind::Null;
        if let Some(k) = targets
            .iter()
            .position(|(t, n, _)| *t == p.target && *n == null)
        {
            target_of.push(k);
            continue;
        }
        let writes = jobs.iter().any(|&j| {
            // A verify_only read never writes (reads with verify otherwise lay out).
            let q = &s.plans[j];
            q.target == p.target && q.spec.writes_target() && !q.settings.verify_existing
        });
        match prepare_target(comm, &p.target, p.spec.backend, writes) {
            Ok(t) => {
                targets.push((p.target.clone(), null, t));
                target_of.push(targets.len() - 1);
            }
            Err(e) => {
                for (_, _, t) in targets {
                    let _ = cleanup(comm, t, &[], false);
                }
                return Err(e.into());
            }
        }
    }
    Ok(PhaseTargets {
        list: targets,
        of_job: target_of,
    })
}

/// The phase's report entries, each with its job's steady-state verdict (fio's ss),
/// and the verify phases of its verify writes, attached to their entries.
fn phase_entries(s: &Shared<'_>, jobs: &[usize], run: &JobsRun) -> (Vec<Entry>, Vec<PhaseResult>) {
    let meta = |plan: usize| -> PhaseMeta {
        let k = jobs.iter().position(|&j| j == plan).unwrap_or(0);
        run.jobs[k].meta.clone()
    };
    let rows: Vec<&WorkerRow> = run.jobs.iter().flat_map(|j| &j.rows).collect();
    let context = (run.interrupted, run.started_at_ms, run.telemetry.clone());
    let mut entries = s.reporter.entries(jobs, &rows, &meta, context);
    for e in &mut entries {
        let plan = s.reporter.units[e.unit].plan;
        if let Some(k) = jobs.iter().position(|&j| j == plan) {
            e.phase.extra.extend(run.jobs[k].steady.iter().cloned());
        }
    }
    let verify: Vec<PhaseResult> = run
        .jobs
        .iter()
        .filter_map(|j| {
            j.verify.clone().map(|mut v| {
                v.name = format!("{} verify", j.meta.name);
                v
            })
        })
        .collect();
    s.reporter.attach_verify(&mut entries, &verify);
    (entries, verify)
}

/// Whether a job's end stopped every later job: every job ends, so an exit_what=all
/// fires once its job has ended (with an error, for exitall_on_error alone).
fn stops_all(s: &Shared<'_>, jobs: &[usize], run: &JobsRun) -> bool {
    jobs.iter()
        .enumerate()
        .any(|(k, &i)| match s.plans[i].exit {
            Some((on_error, ExitWhat::All)) => {
                !on_error || run.jobs[k].rows.iter().any(|r| r.measure.error_count > 0)
            }
            _ => false,
        })
}

/// fio's exitall for job k of the phase's `jobs` (plan indices): which of them its end
/// stops (exit_what: its reporting group, the running ones, or all).
fn exit_of(plans: &[FioPlan], jobs: &[usize], k: usize) -> Option<JobsExit> {
    let (on_error_only, what) = plans[jobs[k]].exit?;
    let group = plans[jobs[k]].group;
    Some(JobsExit {
        on_error_only,
        jobs: (0..jobs.len())
            .filter(|&o| what != ExitWhat::Group || plans[jobs[o]].group == group)
            .collect(),
        running_only: what == ExitWhat::Stonewall,
    })
}

/// The jobs of one phase on their prepared targets (`targets.of(k)` for job k).
fn run_prepared(
    s: &Shared<'_>,
    sink: &RunSink,
    jobs: &[usize],
    done: &[Entry],
    targets: &PhaseTargets,
    stopped: bool,
) -> Result<JobsRun> {
    let mut resolved: Vec<(DataSpec, FioSettings)> = Vec::with_capacity(jobs.len());
    for (k, &i) in jobs.iter().enumerate() {
        let size = match targets.of(k) {
            PreparedTarget::Device { check, .. } => Some(check.size),
            _ => None,
        };
        resolved.push(s.plans[i].resolved(size, s.first_numbers[i])?);
    }
    let data_jobs = data_jobs(s, jobs, &resolved, targets, stopped);
    before_start(s, jobs, &data_jobs)?;
    let paths: Vec<&std::path::Path> = targets
        .list
        .iter()
        .filter(|(_, null, _)| !null)
        .filter_map(|(t, _, _)| t.device.as_deref().or(t.dir.as_deref()))
        .collect();
    let output = crate::args::OutputArgs {
        quiet: true,
        live: s.live.clone(),
        ..Default::default()
    };
    let inventory = sink.record.provenance.inventory.as_ref();
    let watch = Watch::for_paths(&output, inventory, &paths);
    let env = watch.env(s.rt);
    let devices = crate::telemetry::devices_under(&paths);
    let probe = DiskProbe::new(env.probe, devices, s.totals);
    let env = env.with_probe(&probe);
    let report = |rows: &[WorkerRow]| {
        let refs: Vec<&WorkerRow> = rows.iter().collect();
        let meta = |plan: usize| PhaseMeta {
            name: s.plans[plan].job.name.clone(),
            ..PhaseMeta::default()
        };
        let now = iolab_core::civil::now_ms();
        let current = s.reporter.entries(jobs, &refs, &meta, (false, now, None));
        let all: Vec<&Entry> = done.iter().chain(&current).collect();
        let disks = s.totals.lock().unwrap_or_else(|p| p.into_inner()).fio();
        if let Err(e) = s.reporter.write(&s.reporter.render(&all, &disks)) {
            eprintln!("iolab fio: status: {}", crate::exit::one_line(&e));
        }
    };
    let status = s.status_interval.map(|secs| StatusEvery {
        every: std::time::Duration::from_secs(secs),
        report: &report,
    });
    let run = run_data_jobs(&env, &MonotonicClock, &data_jobs, status);
    watch.progress.finish();
    match run {
        Err(e @ iolab_engine::EngineError::NothingToVerify { .. }) => {
            Err(anyhow::Error::from(e).context("verify_only"))
        }
        other => Ok(other?),
    }
}

/// The engine's jobs of the phase: each plan's spec and settings resolved at its target
/// (`resolved[k]` for job k, on `targets.of(k)`), its name and files, and whom it waits
/// for or stops.
fn data_jobs<'a>(
    s: &Shared<'_>,
    jobs: &[usize],
    resolved: &'a [(DataSpec, FioSettings)],
    targets: &'a PhaseTargets,
    stopped: bool,
) -> Vec<DataJob<'a>> {
    jobs.iter()
        .zip(resolved)
        .enumerate()
        .map(|(k, (&i, (spec, fio)))| DataJob {
            spec,
            target: targets.of(k),
            opts: DataOptions {
                name: Some(s.plans[i].job.name.clone()),
                names: FileNames::Template(s.plans[i].file_names.clone()),
                no_verify_pass: s.plans[i].no_verify_pass,
                fio: fio.clone(),
                ..DataOptions::default()
            },
            after: s.plans[i]
                .after
                .and_then(|a| jobs.iter().position(|&j| j == a)),
            exit: exit_of(s.plans, jobs, k),
            never: stopped,
        })
        .collect()
}

/// Before the phase's jobs start: a verify_only job is refused when a file holds
/// nothing of iolab's to check, then the jobs' notes are said (once their targets and
/// files are accepted, so that a refusal stays one line).
fn before_start(s: &Shared<'_>, jobs: &[usize], data_jobs: &[DataJob<'_>]) -> Result<()> {
    for job in data_jobs.iter().filter(|j| j.opts.fio.verify_existing) {
        let comm = s.rt.comm.as_ref();
        iolab_engine::check_kept_for(comm, job.spec, job.target, &job.opts)
            .map_err(|e| anyhow::Error::from(e).context("verify_only"))?;
    }
    if s.rt.is_root() {
        for &i in jobs {
            for n in &s.plans[i].notes {
                eprintln!("iolab fio: [{}] {n}", s.plans[i].job.name);
            }
        }
    }
    Ok(())
}

/// fio's line for a failed I/O (`fio: io_u error on file F: strerror: write offset=O,
/// buflen=B`), for each error the phase kept, then iolab's own count of the rest.
fn io_u_errors(phase: &PhaseResult, block_size: u64) {
    for e in &phase.errors {
        if e.offset.is_none() && (e.errno.is_none() || e.errno == Some(110)) {
            // Not an I/O's error: a minimum rate not kept, say (fio's check_min_rate),
            // or a latency target missed at a depth of one (ETIMEDOUT, as fio's).
            eprintln!("iolab fio: {}", e.message);
            continue;
        }
        let what = e
            .errno
            .map(|n| iolab_core::error::describe(&std::io::Error::from_raw_os_error(n)))
            .unwrap_or_else(|| e.message.clone());
        let dir = match e.op {
            iolab_core::result::OpKind::Read => "read",
            iolab_core::result::OpKind::Write => "write",
            iolab_core::result::OpKind::Trim => "trim",
            _ => "sync",
        };
        eprintln!(
            "fio: io_u error on file {}: {what}: {dir} offset={}, buflen={block_size}",
            e.path,
            e.offset.unwrap_or(0)
        );
    }
    let kept = phase.errors.len() as u64;
    if phase.error_count > kept {
        eprintln!(
            "iolab fio: and {} more I/O errors",
            phase.error_count - kept
        );
    }
}
