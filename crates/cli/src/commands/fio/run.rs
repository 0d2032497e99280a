//! Running the planned jobs through `iolab_suites::fio::run_fio`: the run stored as it
//! goes (each phase's report entries, fio's `io_u error` lines said), the phases run
//! with the progress display, telemetry and fio's disk statistics, fio's status dumps
//! and its report written to the output.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Result;
use iolab_compat::fio::output::DiskUtil;
use iolab_compat::fio::{FioPlan, Invocation, io_u_error_lines};
use iolab_core::result::{PhaseResult, RunStatus};
use iolab_engine::{EngineError, Env, JobsRun, PreparedTarget};
use iolab_host::telemetry::DiskTotals;
use iolab_suites::fio::{
    Entry, FioHooks, FioJobs, FioRun, FioRunError, HookError, PhaseRun, Reporter, run_fio,
};

use super::FioArgs;
use super::output::FioOutput;
use crate::commands::finish::{cleanup, finish_status};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::telemetry::DiskProbe;
use crate::watch::Watch;

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
    let out = FioOutput::open(inv.output.as_deref(), rt.is_root())?;
    let reporter = Reporter::new(plans, &inv.formats, rt.comm.size());
    let totals = Mutex::new(DiskTotals::default());
    let inventory = sink.record.provenance.inventory.clone();
    let inventory = inventory.as_ref();
    let run_in = |paths: &[&Path], run: PhaseRun<'_>| {
        run_watched(rt, &args.common.live, inventory, &totals, paths, run)
    };
    let status = |entries: &[&Entry]| {
        if let Err(e) = out.write(&reporter.render(entries, &disk_util(&totals))) {
            eprintln!("iolab fio: status: {}", crate::exit::one_line(&e));
        }
    };
    let comm = rt.comm.as_ref();
    let clean = |t: PreparedTarget, files: &[PathBuf]| -> Result<(), HookError> {
        Ok(cleanup(comm, t, files, args.keep)?)
    };
    let hooks = FioHooks {
        run_in: &run_in,
        status: &status,
        cleanup: &clean,
        say: &|line| eprintln!("iolab fio: {line}"),
    };
    let jobs = FioJobs {
        comm,
        interrupt: rt.interrupt,
        plans,
        reporter: &reporter,
        status_interval: inv.status_interval,
        keep: args.keep,
    };
    let mut phase_ended = |entries: &[Entry], verify: &[PhaseResult]| {
        store_phase(rt, &reporter, &mut sink, entries, verify);
    };
    match run_fio(&jobs, &hooks, &mut phase_ended) {
        Ok(done) => conclude(rt, &mut sink, &done, &reporter, &out, &totals),
        Err(e) => Err(abandon(&mut sink, e)),
    }
}

/// A phase run in its world: the progress display and telemetry of the paths its jobs
/// use, and fio's disk statistics of the devices under them.
fn run_watched(
    rt: &Runtime,
    live: &crate::args::ServeArgs,
    inventory: Option<&iolab_core::inventory::Inventory>,
    totals: &Mutex<DiskTotals>,
    paths: &[&Path],
    run: PhaseRun<'_>,
) -> Result<JobsRun, EngineError> {
    let output = crate::args::OutputArgs {
        quiet: true,
        live: live.clone(),
        ..Default::default()
    };
    let watch = Watch::for_paths(&output, inventory, paths);
    let env = watch.env(rt);
    let devices = crate::telemetry::devices_under(paths);
    let probe = DiskProbe::new(env.probe, devices, totals);
    let env: Env<'_> = env.with_probe(&probe);
    let ran = run(&env);
    watch.progress.finish();
    ran
}

/// fio's `disk_util` entries of what the devices did over the phases so far.
fn disk_util(totals: &Mutex<DiskTotals>) -> Vec<DiskUtil> {
    let totals = totals.lock().unwrap_or_else(|p| p.into_inner());
    totals
        .devices
        .iter()
        .map(|d| DiskUtil {
            name: d.name.clone(),
            read_ios: d.reads,
            write_ios: d.writes,
            read_merges: d.reads_merged,
            write_merges: d.writes_merged,
            read_ticks: d.read_ms,
            write_ticks: d.write_ms,
            in_queue: d.weighted_io_ms,
            util: DiskUtil::util_percent(d.io_ms, totals.elapsed_ms),
        })
        .collect()
}

/// A phase that ended: fio's `io_u error` lines of its entries said (rank 0), its
/// entries and verify phases stored.
fn store_phase(
    rt: &Runtime,
    reporter: &Reporter<'_>,
    sink: &mut RunSink,
    entries: &[Entry],
    verify: &[PhaseResult],
) {
    if rt.is_root() {
        for e in entries {
            let block_size = reporter.plan_of(e).spec.block_size.get();
            for line in io_u_error_lines(&e.phase, block_size) {
                eprintln!("{line}");
            }
        }
    }
    sink.phases(entries.iter().map(|e| e.phase.clone()).collect());
    sink.phases(verify.to_vec());
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
    rt: &Runtime,
    sink: &mut RunSink,
    done: &FioRun,
    reporter: &Reporter<'_>,
    out: &FioOutput,
    totals: &Mutex<DiskTotals>,
) -> Result<u8> {
    let interrupted = rt.interrupted() || done.interrupted();
    let code = finish_status(sink, interrupted, done.failed());
    if rt.is_root() {
        let entries: Vec<&Entry> = done.entries.iter().collect();
        out.write(&reporter.render(&entries, &disk_util(totals)))?;
        if !sink.record.id.is_empty() {
            eprintln!("iolab fio: stored as {}", sink.record.id);
        }
    }
    Ok(code)
}

/// Ends the run after a phase failed: stored as failed (or interrupted), the error
/// naming the phase's jobs.
fn abandon(sink: &mut RunSink, e: FioRunError) -> anyhow::Error {
    let e = chained(e);
    let status = match e.downcast_ref::<EngineError>() {
        Some(EngineError::Interrupted) => RunStatus::Interrupted,
        _ => RunStatus::Failed,
    };
    sink.finish(status);
    e
}

/// The run's error as the command reports it: the engine's and fio's errors themselves
/// (their exit codes are read off them), each context on top.
fn chained(e: FioRunError) -> anyhow::Error {
    match e {
        FioRunError::Engine(e) => e.into(),
        FioRunError::Fio(e) => e.into(),
        FioRunError::VerifyOnly(e) => anyhow::Error::from(e).context("verify_only"),
        FioRunError::Log { job, name, source } => {
            anyhow::Error::from(source).context(format!("[{job}] writing the log {name}"))
        }
        FioRunError::Cleanup(e) => anyhow::Error::from_boxed(e),
        FioRunError::InJobs { jobs, source } => chained(*source).context(jobs),
    }
}
