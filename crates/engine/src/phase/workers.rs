//! A phase's worker threads on this rank: spawned with their failure caught, joined, and
//! their reports made into this rank's [`RankOutcome`].

use std::sync::atomic::Ordering;
use std::thread::{Scope, ScopedJoinHandle};

use iolab_core::result::CpuUsage;

use super::{Env, RankOutcome, WorkerReport};
use crate::control::PhaseControl;

type Handle<'scope> = ScopedJoinHandle<'scope, Result<WorkerReport, String>>;

/// Starts worker `i` running `work(i, control)` in scope `s`.
pub(super) fn spawn_worker<'scope, 'env, W>(
    s: &'scope Scope<'scope, 'env>,
    i: usize,
    control: &'scope PhaseControl,
    work: &'scope W,
) -> std::io::Result<Handle<'scope>>
where
    W: Fn(usize, &PhaseControl) -> Result<WorkerReport, String> + Sync,
{
    std::thread::Builder::new()
        .name(format!("iolab-w{i}"))
        .spawn_scoped(s, move || {
            // A bug in a worker is an error of the phase, said with its message, not a
            // thread that never reports (the others would wait for it until the stall
            // watchdog).
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(i, control)))
                .unwrap_or_else(|p| {
                    let what = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    Err(format!(
                        "worker {i} failed on an internal error (a bug in iolab; please report it): {what}"
                    ))
                });
            // The worker's own descriptors are closed by now; the copies a private table
            // inherited (the work directory's lock among them) must not outlive it, or
            // the next run in this process would find the directory locked by itself.
            iolab_backend::process::close_private_fd_table();
            if r.is_err() {
                // A failed worker must not leave the others (or other ranks) running
                // without it.
                control.stop_all();
                if !control.workers[i].done.load(Ordering::Acquire) {
                    control.finished(i);
                }
            }
            r
        })
}

/// Every worker's report, in worker order; a thread that could not start or panicked
/// is an error.
pub(super) fn join_workers(
    handles: Vec<std::io::Result<Handle<'_>>>,
) -> Vec<Result<WorkerReport, String>> {
    handles
        .into_iter()
        .map(|h| match h {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Err("worker thread panicked".to_string())),
            Err(e) => Err(e.to_string()),
        })
        .collect()
}

/// This rank's outcome from its workers' reports, with the workers' CPU time.
pub(super) fn rank_outcome(
    env: &Env<'_>,
    control: &PhaseControl,
    setup_error: Option<String>,
    reports: Vec<Result<WorkerReport, String>>,
) -> RankOutcome {
    let mut outcome = RankOutcome {
        threads: reports.len() as u32,
        setup_error,
        ..RankOutcome::empty(env.comm.rank(), env.comm.host())
    };
    for (i, r) in reports.into_iter().enumerate() {
        match r {
            Ok(rep) => {
                // A worker that finished its share early and then waited at the wear-out
                // rendezvous finishes late; its first-done moment is when it froze its
                // figures, not when the rendezvous let it go.
                let done = match rep.measure.first_done_at {
                    Some(at) if control.waited_at_rendezvous(i) => at.min(rep.finished_at),
                    _ => rep.finished_at,
                };
                outcome.add_worker(&rep.measure, rep.completed, rep.finished_at, done);
            }
            Err(e) => {
                outcome.completed.push(0);
                outcome.setup_error.get_or_insert(e);
            }
        }
    }
    outcome.finish();
    // The workers' own CPU time, over the same window as the rank's elapsed time: not
    // the process's, which would add the time this rank spent waiting for the others
    // (and, with MPI, polling in collectives) over a wall time that excludes it.
    let (user, system) = control.worker_cpu();
    outcome.cpu_set = iolab_backend::process::allowed_cpus()
        .into_iter()
        .map(|c| c as u32)
        .collect();
    outcome.cpu = CpuUsage {
        user,
        system,
        wall: outcome.elapsed,
        cpus: outcome.cpu_set.len() as u32,
    };
    outcome
}
