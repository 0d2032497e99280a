//! fio's jobs on iolab's engine: [`run_fio`] runs the planned jobs (compat's `FioPlan`s),
//! one phase per stonewall, the jobs of a phase together (`run_data_jobs`) on the targets
//! they name, prepared once each, and makes fio's report entries ([`Entry`], by
//! [`Reporter`]) as each phase ends; fio's log files are written then ([`logs`]), the
//! missing files a job names made before it ([`images`]). What it prints, stores and
//! watches is the caller's ([`FioHooks`]).

mod images;
pub mod logs;
mod phase;
mod report;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use iolab_comm::Comm;
use iolab_compat::fio::{FioError, FioPlan};
use iolab_core::result::PhaseResult;
use iolab_engine::{EngineError, Env, JobsRun, PreparedTarget};

pub use logs::check_log_dirs;
pub use report::{Entry, Reporter, RowsContext};

/// An error of the caller's, from a hook.
pub type HookError = Box<dyn std::error::Error + Send + Sync>;

/// Why a fio run stopped.
#[derive(Debug, thiserror::Error)]
pub enum FioRunError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Fio(#[from] FioError),
    /// A verify_only job found nothing of iolab's to check.
    #[error("verify_only")]
    VerifyOnly(#[source] EngineError),
    /// A log file could not be written.
    #[error("[{job}] writing the log {name}")]
    Log {
        job: String,
        name: String,
        #[source]
        source: std::io::Error,
    },
    /// The caller's cleanup failed.
    #[error(transparent)]
    Cleanup(HookError),
    /// A phase failed: the names of its jobs ("job a" or "jobs a, b").
    #[error("{jobs}")]
    InJobs {
        jobs: String,
        #[source]
        source: Box<FioRunError>,
    },
}

/// The planned jobs and what they run with.
pub struct FioJobs<'a> {
    pub comm: &'a dyn Comm,
    /// Set by the Ctrl-C handler.
    pub interrupt: &'a AtomicBool,
    pub plans: &'a [FioPlan],
    /// Makes the report entries (its units are the plans').
    pub reporter: &'a Reporter<'a>,
    /// fio's `--status-interval` in seconds.
    pub status_interval: Option<u64>,
    /// Keep the files the jobs wrote and the images iolab made.
    pub keep: bool,
}

/// A phase's engine run: given the world it runs in.
pub type PhaseRun<'r> = &'r dyn Fn(&Env<'_>) -> Result<JobsRun, EngineError>;

/// Runs a phase (its argument) in the world made for the paths its jobs use.
pub type RunIn<'a> = &'a dyn Fn(&[&Path], PhaseRun<'_>) -> Result<JobsRun, EngineError>;

/// Removes a target's files (unless kept) and releases it.
pub type Cleanup<'a> = &'a dyn Fn(PreparedTarget, &[PathBuf]) -> Result<(), HookError>;

/// What the caller does for the run.
pub struct FioHooks<'a> {
    /// Runs a phase (its argument) in the world the caller makes for the paths its jobs
    /// use (progress, telemetry, disk statistics).
    pub run_in: RunIn<'a>,
    /// fio's status dump while a phase runs: the entries so far, those of earlier
    /// phases first (rank 0).
    pub status: &'a (dyn Fn(&[&Entry]) + Sync),
    /// Removes a target's files once its phase ended (unless kept) and releases it.
    pub cleanup: Cleanup<'a>,
    /// A line to say (a job's note, an image made or left).
    pub say: &'a dyn Fn(&str),
}

/// A fio run that ended: its report entries and the verify phases of its verify writes.
pub struct FioRun {
    pub entries: Vec<Entry>,
    pub verified: Vec<PhaseResult>,
}

impl FioRun {
    /// An I/O error or a verify mismatch in any phase.
    pub fn failed(&self) -> bool {
        self.entries
            .iter()
            .map(|e| &e.phase)
            .chain(&self.verified)
            .any(|r| r.error_count > 0 || r.verify_failures > 0)
    }

    /// A phase was interrupted.
    pub fn interrupted(&self) -> bool {
        self.entries.iter().any(|e| e.phase.interrupted)
    }
}

/// A run's shared state.
struct Run<'a> {
    comm: &'a dyn Comm,
    interrupt: &'a AtomicBool,
    plans: &'a [FioPlan],
    reporter: &'a Reporter<'a>,
    status_interval: Option<u64>,
    keep: bool,
    hooks: &'a FioHooks<'a>,
    /// fio's thread number of each plan's first clone, less one.
    first_numbers: Vec<u32>,
    /// Log files written so far (later clones append to them).
    logs_written: Mutex<Vec<String>>,
}

impl<'a> Run<'a> {
    fn new(jobs: &FioJobs<'a>, hooks: &'a FioHooks<'a>) -> Self {
        Run {
            comm: jobs.comm,
            interrupt: jobs.interrupt,
            plans: jobs.plans,
            reporter: jobs.reporter,
            status_interval: jobs.status_interval,
            keep: jobs.keep,
            hooks,
            first_numbers: logs::first_numbers(jobs.plans, jobs.comm.size()),
            logs_written: Mutex::new(Vec::new()),
        }
    }

    fn is_root(&self) -> bool {
        self.comm.rank() == 0
    }

    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::SeqCst)
    }
}

/// Runs the planned jobs, phase by phase; `phase_ended` gets each phase's entries and
/// verify phases as it ends. Collective. On an error the images iolab made are removed
/// (unless kept) and the error names the failed phase's jobs.
pub fn run_fio(
    jobs: &FioJobs<'_>,
    hooks: &FioHooks<'_>,
    phase_ended: &mut dyn FnMut(&[Entry], &[PhaseResult]),
) -> Result<FioRun, FioRunError> {
    let run = Run::new(jobs, hooks);
    let made = Mutex::new(Vec::new());
    let mut done = FioRun {
        entries: Vec::new(),
        verified: Vec::new(),
    };
    let last = run.plans.iter().map(|p| p.phase).max().unwrap_or(0);
    // fio's exit_what=all fired: the later phases' jobs never start (fio reports them
    // with nothing done).
    let mut stopped = false;
    for phase in 0..=last {
        let jobs: Vec<usize> = (0..run.plans.len())
            .filter(|&i| run.plans[i].phase == phase)
            .collect();
        match phase::run_phase(&run, &jobs, &done.entries, stopped, &made) {
            Ok((entries, verify, all)) => {
                stopped |= all;
                phase_ended(&entries, &verify);
                done.verified.extend(verify);
                done.entries.extend(entries);
            }
            Err(e) => {
                images::remove_made(&run, &made);
                return Err(in_jobs(e, run.plans, &jobs));
            }
        }
        if run.interrupted() || done.interrupted() {
            break;
        }
    }
    images::remove_made(&run, &made);
    Ok(done)
}

/// A phase's error, naming its jobs.
fn in_jobs(e: FioRunError, plans: &[FioPlan], jobs: &[usize]) -> FioRunError {
    let names: Vec<&str> = jobs.iter().map(|&i| plans[i].job.name.as_str()).collect();
    let what = if names.len() == 1 { "job" } else { "jobs" };
    FioRunError::InJobs {
        jobs: format!("{what} {}", names.join(", ")),
        source: Box::new(e),
    }
}

#[cfg(test)]
mod tests;
