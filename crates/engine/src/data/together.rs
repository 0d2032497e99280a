//! Several data workloads in one phase, as fio runs the jobs between two stonewalls:
//! [`run_data_jobs`] readies each [`DataJob`] as `run_data` does, starts all their
//! workers together (each job at its own start rule: a delay, a ramp, or after an
//! earlier job of the phase), keeps every worker's figures apart as a [`WorkerRow`] and
//! brings them to rank 0, where [`JobsRun::phase`] makes any set of rows into a
//! `PhaseResult` (a job, one worker, several jobs: fio's reporting units). An error ends
//! only the worker it happens in, as a failed fio job leaves the others running.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use iolab_comm::CommExt;
use iolab_core::result::{CpuUsage, PhaseResult};
use iolab_core::spec::DataSpec;
use iolab_core::telemetry::Telemetry;
use iolab_core::units::Nanos;
use serde::{Deserialize, Serialize};

use super::{DataOptions, ReadyJob};
use crate::assemble::{PhaseMeta, assemble};
use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::error::EngineError;
use crate::phase::{Env, PhaseRun, RankOutcome, SteadyWatch, WorkerReport, run_phase};
use crate::recorder::WorkerMeasure;
use crate::target::PreparedTarget;
use crate::worker::flow::Flows;
use crate::worker::{WorkerSetup, run_data_worker};

/// One of the workloads that run together.
pub struct DataJob<'a> {
    pub spec: &'a DataSpec,
    pub target: &'a PreparedTarget,
    pub opts: DataOptions,
    /// Start once every worker of this earlier job (by index) has finished (fio's
    /// wait_for, for a job of the same phase).
    pub after: Option<usize>,
    /// What the end of one of its workers stops (fio's exitall, exitall_on_error and
    /// exit_what).
    pub exit: Option<JobsExit>,
    /// Its workers never start: an earlier phase's end stopped every later job (fio's
    /// exit_what=all). It reports nothing done, as fio's terminated jobs.
    pub never: bool,
}

/// fio's exitall for the jobs of one phase: when a worker of the job ends (with an
/// error only, for `on_error_only`), every worker of `jobs` (indices among those that
/// run together, the job's own included) stops as at the end of its runtime; one
/// waiting to start never starts, unless `running_only` (fio's exit_what=stonewall:
/// only the running jobs stop). Per rank under mpirun.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobsExit {
    pub on_error_only: bool,
    pub jobs: Vec<usize>,
    pub running_only: bool,
}

/// What one worker of one job measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkerRow {
    /// The job's index among those that ran together.
    pub job: u32,
    pub rank: u32,
    pub host: String,
    /// The worker's index among all workers of its job (fio's clone number, `$jobnum`).
    pub worker: u32,
    pub measure: WorkerMeasure,
    /// From its measured start (after any delay or ramp) until it finished, or until
    /// the snapshot of a status report.
    pub elapsed: Nanos,
    pub completed: u64,
    /// CPU time and context switches of its thread over `elapsed` (0 in status reports).
    pub cpu_user: Nanos,
    pub cpu_system: Nanos,
    pub context_switches: u64,
    /// CPUs this process may run on.
    pub cpus: u32,
}

/// One job once the phase is over.
pub struct JobRun {
    /// Its main phase's name, parameters, spec and warnings.
    pub meta: PhaseMeta,
    /// Rank 0: its workers on every rank, by rank then worker; other ranks: their own.
    pub rows: Vec<WorkerRow>,
    /// The read-back phase of a `--verify` write.
    pub verify: Option<PhaseResult>,
    /// I/Os each worker completed, by global index, on every rank.
    pub completed: Vec<u64>,
    /// Files this rank wrote or laid out, to remove at cleanup.
    pub files: Vec<PathBuf>,
    /// Its steady-state figures when it asked for a stop (rank 0), for its phases'
    /// `extra`.
    pub steady: Vec<(String, f64)>,
}

/// The jobs that ran together.
pub struct JobsRun {
    pub jobs: Vec<JobRun>,
    pub interrupted: bool,
    pub started_at_ms: i64,
    /// What the probe saw on rank 0 while the phase ran.
    pub telemetry: Option<Telemetry>,
}

impl JobsRun {
    /// The phase made of `rows` (any workers of any of the jobs) under `meta`: its time
    /// is that of its slowest worker, its figures all of theirs.
    pub fn phase(&self, meta: PhaseMeta, rows: &[&WorkerRow]) -> PhaseResult {
        phase_of_rows(
            meta,
            rows,
            self.interrupted,
            self.started_at_ms,
            self.telemetry.clone(),
        )
    }
}

/// A phase from worker rows: one outcome per rank, as the phase runner would have made.
pub fn phase_of_rows(
    meta: PhaseMeta,
    rows: &[&WorkerRow],
    interrupted: bool,
    started_at_ms: i64,
    telemetry: Option<Telemetry>,
) -> PhaseResult {
    let mut outcomes: Vec<RankOutcome> = Vec::new();
    for r in rows {
        let i = match outcomes.iter().position(|o| o.rank == r.rank) {
            Some(i) => i,
            None => {
                outcomes.push(RankOutcome::empty(r.rank, &r.host));
                outcomes.len() - 1
            }
        };
        let o = &mut outcomes[i];
        o.threads += 1;
        o.add_worker(&r.measure, r.completed, r.elapsed, r.elapsed);
        o.cpu = CpuUsage {
            user: o.cpu.user + r.cpu_user,
            system: o.cpu.system + r.cpu_system,
            wall: o.elapsed,
            cpus: r.cpus,
        };
    }
    outcomes.iter_mut().for_each(RankOutcome::finish);
    assemble(
        meta,
        &PhaseRun::from_outcomes(outcomes, interrupted, started_at_ms, telemetry),
    )
}

/// Status reports while the jobs run: every `every`, this rank's rows so far (a
/// snapshot of each running worker, the final figures of each finished one; none for a
/// worker that has not started).
pub struct StatusEvery<'a> {
    pub every: Duration,
    pub report: &'a (dyn Fn(&[WorkerRow]) + Sync),
}

/// Runs `jobs` together in one phase on every rank. Collective.
pub fn run_data_jobs<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    jobs: &[DataJob<'_>],
    status: Option<StatusEvery<'_>>,
) -> Result<JobsRun, EngineError> {
    let backwards = jobs
        .iter()
        .enumerate()
        .find_map(|(j, job)| job.after.filter(|a| *a >= j).map(|a| (j, a)));
    if let Some((j, a)) = backwards {
        return Err(EngineError::Setup(format!(
            "job {j} can only wait for a job before it, not job {a}"
        )));
    }
    let mut ready = Vec::with_capacity(jobs.len());
    for j in jobs {
        ready.push(ReadyJob::new(env, j.spec, j.target, &j.opts)?);
    }
    let map = worker_map(&mut ready, jobs);
    let templates = row_templates(env.comm, &ready, &map);
    let board: Vec<Mutex<Option<WorkerRow>>> = map.iter().map(|_| Mutex::new(None)).collect();
    let flows = Flows::new(ready.iter().map(|r| r.plan.fio.flow));
    let phase = PhaseWork {
        ready: &ready,
        map: &map,
        templates: &templates,
        board: &board,
        flows: &flows,
    };
    let work = |i: usize, control: &PhaseControl| phase.run_worker(i, control, clock);
    let watcher = status.map(|s| StatusWatch::new(s, &board, &templates));
    let hook = |control: &PhaseControl, elapsed: Nanos| {
        if let Some(w) = &watcher {
            w.tick(control, elapsed);
        }
    };
    let outer = env;
    let env = match &watcher {
        Some(_) => env.with_status(&hook),
        None => *env,
    };
    let (steady_jobs, steady) = steady_stops(&ready, &map, env.comm.size())?;
    let env = if steady_jobs.is_empty() {
        env
    } else {
        Env {
            steady: Some(&steady),
            ..env
        }
    };
    let names: Vec<&str> = ready.iter().map(|r| r.meta.name.as_str()).collect();
    let run = run_phase(&env, clock, &names.join("+"), map.len(), false, work)?;
    drop(watcher);
    let rows: Vec<WorkerRow> = board.into_iter().filter_map(take).collect();
    let mut jobs = finish(outer, clock, &ready, &map, rows, run)?;
    for (u, &j) in steady_jobs.iter().enumerate() {
        jobs.jobs[j].steady = steady.figures(u);
    }
    Ok(jobs)
}

/// Each worker's row without its figures.
fn row_templates(
    comm: &dyn iolab_comm::Comm,
    ready: &[ReadyJob<'_>],
    map: &[(usize, usize)],
) -> Vec<WorkerRow> {
    let cpus = iolab_backend::process::allowed_cpus().len() as u32;
    map.iter()
        .map(|&(j, w)| WorkerRow {
            job: j as u32,
            rank: comm.rank(),
            host: comm.host().to_string(),
            worker: ready[j].plan.workers[w].global,
            cpus,
            ..WorkerRow::default()
        })
        .collect()
}

/// Steady-state stops (fio's ss), one per job that asks, judged on its workers: the jobs
/// that ask, and the watch. Only on one rank (`ranks` 1).
fn steady_stops(
    ready: &[ReadyJob<'_>],
    map: &[(usize, usize)],
    ranks: u32,
) -> Result<(Vec<usize>, SteadyWatch), EngineError> {
    let steady_jobs: Vec<usize> = (0..ready.len())
        .filter(|&j| ready[j].spec.steady().is_some())
        .collect();
    if !steady_jobs.is_empty() && ranks > 1 {
        return Err(EngineError::Setup(
            "a steady-state stop (ss=) of one job among several runs on one rank only".into(),
        ));
    }
    let steady = SteadyWatch::per_group(
        steady_jobs
            .iter()
            .filter_map(|&j| {
                let workers = (0..map.len()).filter(|&i| map[i].0 == j).collect();
                Some((workers, ready[j].spec.steady()?))
            })
            .collect(),
    );
    Ok((steady_jobs, steady))
}

/// What the phase's workers share: the jobs, which worker is which, and where each
/// leaves its row.
struct PhaseWork<'a, 'j> {
    ready: &'a [ReadyJob<'j>],
    map: &'a [(usize, usize)],
    templates: &'a [WorkerRow],
    board: &'a [Mutex<Option<WorkerRow>>],
    flows: &'a Flows,
}

impl PhaseWork<'_, '_> {
    /// Runs phase worker `i` and leaves its row on the board.
    fn run_worker<C: Clock>(
        &self,
        i: usize,
        control: &PhaseControl,
        clock: &C,
    ) -> Result<WorkerReport, String> {
        let (j, w) = self.map[i];
        let job = &self.ready[j];
        let template = &self.templates[i];
        let setup = WorkerSetup {
            plan: &job.plan,
            worker: &job.plan.workers[w],
            index: i,
            control,
            clock,
            rank: template.rank,
            host: &template.host,
            alignment: job.alignment,
            count: job.counts[w],
            isolated: true,
            flows: self.flows,
        };
        let mut report =
            run_data_worker(&setup).map_err(|e| format!("job {}: {e}", job.meta.name))?;
        let p = &control.workers[i];
        let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        let row = WorkerRow {
            measure: std::mem::take(&mut report.measure),
            elapsed: report.finished_at,
            completed: report.completed,
            cpu_user: Nanos(load(&p.cpu_user)),
            cpu_system: Nanos(load(&p.cpu_system)),
            context_switches: load(&p.context_switches),
            ..template.clone()
        };
        *lock(&self.board[i]) = Some(row);
        Ok(report)
    }
}

/// Phase worker i is worker `map[i].1` of job `map[i].0`; a job that waits for another
/// starts after that job's workers of the phase.
fn worker_map(ready: &mut [ReadyJob<'_>], jobs: &[DataJob<'_>]) -> Vec<(usize, usize)> {
    let map: Vec<(usize, usize)> = ready
        .iter()
        .enumerate()
        .flat_map(|(j, r)| (0..r.plan.workers.len()).map(move |w| (j, w)))
        .collect();
    let first = |j: usize| map.iter().position(|m| m.0 == j).unwrap_or(map.len());
    for (j, job) in jobs.iter().enumerate() {
        if let Some(a) = job.after {
            let start = first(a);
            ready[j].plan.start.after = (start..start + ready[a].plan.workers.len()).collect();
        }
        ready[j].plan.start.never = job.never;
        ready[j].plan.exit = job.exit.as_ref().map(|e| crate::plan::ExitRule {
            on_error_only: e.on_error_only,
            workers: (0..map.len())
                .filter(|&i| e.jobs.contains(&map[i].0))
                .collect(),
            running_only: e.running_only,
        });
    }
    map
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn take(m: Mutex<Option<WorkerRow>>) -> Option<WorkerRow> {
    m.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// After the phase: every rank's rows to rank 0, then each job's records and verify
/// phase. Each job's completed counts come from the phase's own gather
/// (`PhaseRun::completed`, every worker of every rank, on every rank): every rank runs
/// the same jobs, so rank r's phase worker i is entry `r * map.len() + i`.
fn finish<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    ready: &[ReadyJob<'_>],
    map: &[(usize, usize)],
    rows: Vec<WorkerRow>,
    run: PhaseRun,
) -> Result<JobsRun, EngineError> {
    let comm = env.comm;
    let rank_error = |e: iolab_comm::CommError| EngineError::Rank {
        rank: comm.rank(),
        host: comm.host().to_string(),
        message: e.to_string(),
    };
    let per_rank = map.len();
    if run.completed.len() != per_rank * comm.size() as usize {
        return Err(EngineError::Setup(format!(
            "the ranks ran different numbers of workers ({} in all, {per_rank} on rank {})",
            run.completed.len(),
            comm.rank()
        )));
    }
    let errors: Vec<u64> = (0..ready.len())
        .map(|j| {
            rows.iter()
                .filter(|r| r.job as usize == j)
                .map(|r| r.measure.error_count)
                .sum()
        })
        .collect();
    let (errors, _) = comm.reduce(&errors, &[], None, &|_| {});
    let rows = if comm.size() > 1 {
        let all: Vec<Vec<WorkerRow>> = comm.gather(0, &rows).map_err(rank_error)?;
        if comm.rank() == 0 {
            all.into_iter().flatten().collect()
        } else {
            rows
        }
    } else {
        rows
    };
    let mut jobs = Vec::with_capacity(ready.len());
    for (j, job) in ready.iter().enumerate() {
        let completed: Vec<u64> = run
            .completed
            .chunks(per_rank.max(1))
            .flat_map(|rank| {
                rank.iter()
                    .zip(map)
                    .filter(|(_, m)| m.0 == j)
                    .map(|(c, _)| *c)
            })
            .collect();
        let failed = errors.get(j).copied().unwrap_or(0);
        let verify = job.conclude(env, clock, &completed, failed, run.interrupted)?;
        jobs.push(JobRun {
            meta: job.meta.clone(),
            rows: rows
                .iter()
                .filter(|r| r.job as usize == j)
                .cloned()
                .collect(),
            verify,
            completed,
            files: job.files(),
            steady: Vec::new(),
        });
    }
    Ok(JobsRun {
        jobs,
        interrupted: run.interrupted,
        started_at_ms: run.started_at_ms,
        telemetry: run.telemetry,
    })
}

/// Takes a snapshot of every worker each `every` and reports it: at one tick it asks
/// the workers, at the next it collects what they left.
struct StatusWatch<'a> {
    status: StatusEvery<'a>,
    board: &'a [Mutex<Option<WorkerRow>>],
    templates: &'a [WorkerRow],
    state: Mutex<WatchState>,
}

struct WatchState {
    next: Nanos,
    asked: bool,
    /// Each worker's latest snapshot.
    last: Vec<Option<WorkerRow>>,
}

impl<'a> StatusWatch<'a> {
    fn new(
        status: StatusEvery<'a>,
        board: &'a [Mutex<Option<WorkerRow>>],
        templates: &'a [WorkerRow],
    ) -> Self {
        StatusWatch {
            state: Mutex::new(WatchState {
                next: Nanos(status.every.as_nanos() as u64),
                asked: false,
                last: vec![None; templates.len()],
            }),
            status,
            board,
            templates,
        }
    }

    fn tick(&self, control: &PhaseControl, elapsed: Nanos) {
        let mut st = lock(&self.state);
        if !st.asked {
            if elapsed >= st.next {
                control.request_snapshots();
                st.asked = true;
            }
            return;
        }
        st.asked = false;
        let every = Nanos(self.status.every.as_nanos().max(1) as u64);
        while st.next <= elapsed {
            st.next = st.next + every;
        }
        let mut rows = Vec::new();
        for (i, slot) in self.board.iter().enumerate() {
            if let Some(done) = lock(slot).as_ref() {
                rows.push(done.clone());
                continue;
            }
            if let Some((measure, covered)) = lock(&control.workers[i].snapshot).take() {
                st.last[i] = Some(WorkerRow {
                    measure,
                    elapsed: covered,
                    ..self.templates[i].clone()
                });
            }
            rows.extend(st.last[i].clone());
        }
        drop(st);
        (self.status.report)(&rows);
    }
}
