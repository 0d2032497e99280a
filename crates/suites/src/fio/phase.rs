//! One phase of a fio run: the jobs between two stonewalls, on their targets prepared
//! once each ([`PhaseTargets`]), run together by the engine (`run_data_jobs`); then the
//! targets cleaned up, the jobs' logs written and the phase's report entries made.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use iolab_compat::fio::{ExitWhat, FioPlan};
use iolab_core::result::PhaseResult;
use iolab_core::spec::{BackendKind, DataSpec, FioSettings, TargetSpec};
use iolab_engine::{DataJob, DataOptions, EngineError, FileNames, JobsExit, JobsRun, PhaseMeta};
use iolab_engine::{MonotonicClock, PreparedTarget, StatusEvery, WorkerRow};
use iolab_engine::{check_kept_for, prepare_target, run_data_jobs};

use super::report::Entry;
use super::{FioRunError, Run, images, logs};

/// A prepared target with the spec it came from and whether it is the null backend's.
type Prepared = (TargetSpec, bool, PreparedTarget);

/// A phase's targets, each prepared once, and job k's index among them (`of_job[k]`).
pub(super) struct PhaseTargets {
    pub(super) list: Vec<Prepared>,
    pub(super) of_job: Vec<usize>,
}

impl PhaseTargets {
    /// The prepared target of job k of the phase.
    fn of(&self, k: usize) -> &PreparedTarget {
        &self.list[self.of_job[k]].2
    }
}

/// A phase's report entries, its verify phases and whether it stopped every later job.
type PhaseOutcome = (Vec<Entry>, Vec<PhaseResult>, bool);

/// Runs the jobs (plan indices) of one phase together: their report entries, the
/// verify phases of verify writes, and whether a job's end stopped every later job
/// (fio's exit_what=all). `done` holds the entries of the phases before, for status
/// dumps; with `stopped` the jobs never start (an earlier exit_what=all).
pub(super) fn run_phase(
    run: &Run<'_>,
    jobs: &[usize],
    done: &[Entry],
    stopped: bool,
    made: &Mutex<Vec<PathBuf>>,
) -> Result<PhaseOutcome, FioRunError> {
    images::make_missing(run, jobs, made)?;
    let targets = prepare_targets(run, jobs)?;
    let outcome = run_prepared(run, jobs, done, &targets, stopped);
    let mut files: Vec<Vec<PathBuf>> = vec![Vec::new(); targets.list.len()];
    if let Ok(ran) = &outcome {
        // What a verify_only job checked stays, to be checked again (fio's use of it).
        for (k, j) in ran.jobs.iter().enumerate() {
            if !run.plans[jobs[k]].settings.verify_existing {
                files[targets.of_job[k]].extend(j.files.iter().cloned());
            }
        }
    }
    let mut cleaned = Ok(());
    for ((_, _, t), f) in targets.list.into_iter().zip(&files) {
        cleaned = cleaned.and((run.hooks.cleanup)(t, f));
    }
    let ran = outcome?;
    cleaned.map_err(FioRunError::Cleanup)?;
    if run.is_root() {
        for (k, &i) in jobs.iter().enumerate() {
            logs::write_logs(
                &run.plans[i],
                run.first_numbers[i],
                &ran.jobs[k].rows,
                &run.logs_written,
                ran.started_at_ms,
            )?;
        }
    }
    let (entries, verify) = phase_entries(run, jobs, &ran);
    Ok((entries, verify, stops_all(run.plans, jobs, &ran)))
}

/// Each of the phase's targets prepared once (a target and backend several jobs share
/// is one), and job k's index among them; on a failure those prepared are cleaned up.
pub(super) fn prepare_targets(run: &Run<'_>, jobs: &[usize]) -> Result<PhaseTargets, FioRunError> {
    let mut targets: Vec<Prepared> = Vec::new();
    let mut target_of: Vec<usize> = Vec::with_capacity(jobs.len());
    for &i in jobs {
        let p = &run.plans[i];
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
            let q = &run.plans[j];
            q.target == p.target && q.spec.writes_target() && !q.settings.verify_existing
        });
        match prepare_target(run.comm, &p.target, p.spec.backend, writes) {
            Ok(t) => {
                targets.push((p.target.clone(), null, t));
                target_of.push(targets.len() - 1);
            }
            Err(e) => {
                for (_, _, t) in targets {
                    let _ = (run.hooks.cleanup)(t, &[]);
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
fn phase_entries(run: &Run<'_>, jobs: &[usize], ran: &JobsRun) -> (Vec<Entry>, Vec<PhaseResult>) {
    let meta = |plan: usize| -> PhaseMeta {
        let k = jobs.iter().position(|&j| j == plan).unwrap_or(0);
        ran.jobs[k].meta.clone()
    };
    let rows: Vec<&WorkerRow> = ran.jobs.iter().flat_map(|j| &j.rows).collect();
    let context = (ran.interrupted, ran.started_at_ms, ran.telemetry.clone());
    let mut entries = run.reporter.entries(jobs, &rows, &meta, context);
    for e in &mut entries {
        let plan = run.reporter.units[e.unit].plan;
        if let Some(k) = jobs.iter().position(|&j| j == plan) {
            e.phase.extra.extend(ran.jobs[k].steady.iter().cloned());
        }
    }
    let verify: Vec<PhaseResult> = ran
        .jobs
        .iter()
        .filter_map(|j| {
            j.verify.clone().map(|mut v| {
                v.name = format!("{} verify", j.meta.name);
                v
            })
        })
        .collect();
    run.reporter.attach_verify(&mut entries, &verify);
    (entries, verify)
}

/// Whether a job's end stopped every later job: every job ends, so an exit_what=all
/// fires once its job has ended (with an error, for exitall_on_error alone).
fn stops_all(plans: &[FioPlan], jobs: &[usize], ran: &JobsRun) -> bool {
    jobs.iter().enumerate().any(|(k, &i)| match plans[i].exit {
        Some((on_error, ExitWhat::All)) => {
            !on_error || ran.jobs[k].rows.iter().any(|r| r.measure.error_count > 0)
        }
        _ => false,
    })
}

/// fio's exitall for job k of the phase's `jobs` (plan indices): which of them its end
/// stops (exit_what: its reporting group, the running ones, or all).
pub(super) fn exit_of(plans: &[FioPlan], jobs: &[usize], k: usize) -> Option<JobsExit> {
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
    run: &Run<'_>,
    jobs: &[usize],
    done: &[Entry],
    targets: &PhaseTargets,
    stopped: bool,
) -> Result<JobsRun, FioRunError> {
    let mut resolved: Vec<(DataSpec, FioSettings)> = Vec::with_capacity(jobs.len());
    for (k, &i) in jobs.iter().enumerate() {
        let size = match targets.of(k) {
            PreparedTarget::Device { check, .. } => Some(check.size),
            _ => None,
        };
        resolved.push(run.plans[i].resolved(size, run.first_numbers[i])?);
    }
    let data_jobs = data_jobs(run.plans, jobs, &resolved, targets, stopped);
    before_start(run, jobs, &data_jobs)?;
    let paths: Vec<&Path> = targets
        .list
        .iter()
        .filter(|(_, null, _)| !null)
        .filter_map(|(t, _, _)| t.device.as_deref().or(t.dir.as_deref()))
        .collect();
    let (plans, reporter, status) = (run.plans, run.reporter, run.hooks.status);
    let report = |rows: &[WorkerRow]| {
        let refs: Vec<&WorkerRow> = rows.iter().collect();
        let meta = |plan: usize| PhaseMeta {
            name: plans[plan].job.name.clone(),
            ..PhaseMeta::default()
        };
        let now = iolab_core::civil::now_ms();
        let current = reporter.entries(jobs, &refs, &meta, (false, now, None));
        let all: Vec<&Entry> = done.iter().chain(&current).collect();
        status(&all);
    };
    let every = run.status_interval;
    let ran = (run.hooks.run_in)(&paths, &|env| {
        let status = every.map(|secs| StatusEvery {
            every: std::time::Duration::from_secs(secs),
            report: &report,
        });
        run_data_jobs(env, &MonotonicClock, &data_jobs, status)
    });
    match ran {
        Err(e @ EngineError::NothingToVerify { .. }) => Err(FioRunError::VerifyOnly(e)),
        other => Ok(other?),
    }
}

/// The engine's jobs of the phase: each plan's spec and settings resolved at its target
/// (`resolved[k]` for job k, on `targets.of(k)`), its name and files, and whom it waits
/// for or stops.
fn data_jobs<'a>(
    plans: &[FioPlan],
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
                name: Some(plans[i].job.name.clone()),
                names: FileNames::Template(plans[i].file_names.clone()),
                no_verify_pass: plans[i].no_verify_pass,
                fio: fio.clone(),
                ..DataOptions::default()
            },
            after: plans[i]
                .after
                .and_then(|a| jobs.iter().position(|&j| j == a)),
            exit: exit_of(plans, jobs, k),
            never: stopped,
        })
        .collect()
}

/// Before the phase's jobs start: a verify_only job is refused when a file holds
/// nothing of iolab's to check, then the jobs' notes are said (once their targets and
/// files are accepted, so that a refusal stays one line).
fn before_start(
    run: &Run<'_>,
    jobs: &[usize],
    data_jobs: &[DataJob<'_>],
) -> Result<(), FioRunError> {
    for job in data_jobs.iter().filter(|j| j.opts.fio.verify_existing) {
        check_kept_for(run.comm, job.spec, job.target, &job.opts)
            .map_err(FioRunError::VerifyOnly)?;
    }
    if run.is_root() {
        for &i in jobs {
            for n in &run.plans[i].notes {
                (run.hooks.say)(&format!("[{}] {n}", run.plans[i].job.name));
            }
        }
    }
    Ok(())
}
