//! MLPerf Storage v2.0's LLM checkpointing as DLIO's `_checkpoint_write` and
//! `_checkpoint_read` run it: `writes` checkpoints, each after a compute sleep and a
//! barrier, every simulated rank writing its shards (iolab_core::checkpoint) into
//! `global_epoch1_step<N>/`, each file fsynced, then a barrier (DLIO's
//! checkpoint_rank_sync): a checkpoint's duration is the slowest rank's. Then the page
//! cache is emptied and `reads` checkpoints are read back the same way. Simulated ranks
//! are the workers of an engine step phase (one per direction), spread over the job's
//! processes in contiguous blocks (as mpirun places ranks by slot); each file goes
//! through the worker's backend, timed into its recorder.
//! [`rules`] judges a run by v3.0's checkpointing rules.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use iolab_backend::files::{DataFile, OpenSpec};
use iolab_comm::{Comm, CommExt};
use iolab_core::SpecError;
use iolab_core::checkpoint::LlmShape;
use iolab_core::result::{CheckpointFigures, PhaseFigures, PhaseResult};
use iolab_core::rng::Rng;
use iolab_core::spec::{BackendKind, CheckpointSpec};
use iolab_core::units::{ByteCount, BytesPerSec, Nanos};
use iolab_engine::train::{FileIo, StepHook, StepMeeting, StepPhaseSpec, StepWork, run_steps};
use iolab_engine::{Available, Clock, EngineError, Env, MonotonicClock, ranks_on_this_host};

use crate::AiError;

pub mod rules;

pub use iolab_core::checkpoint::{CheckpointOutcome, Round};

/// The simulated ranks this process runs.
pub fn my_ranks(shape: &LlmShape, comm: &dyn Comm) -> std::ops::Range<u64> {
    let p = u64::from(comm.size());
    let r = u64::from(comm.rank());
    (shape.ranks * r / p)..(shape.ranks * (r + 1) / p)
}

/// What `iolab checkpoint` checks on every rank before anything is written, in this
/// order: the model's shape, --reads against --writes (only the checkpoints this run
/// wrote are read back, as DLIO), --dir, --transfer-size, the free space of --dir (on
/// rank 0) and the transfer buffers of this host's simulated ranks against the memory
/// available (DLIO holds a rank's whole tensors). Returns the job's shape.
pub fn check_checkpoint(
    comm: &dyn Comm,
    spec: &CheckpointSpec,
    dir: Option<&Path>,
) -> Result<LlmShape, SpecError> {
    let shape = LlmShape::of(spec)?;
    if spec.reads > spec.writes {
        return Err(SpecError::new(
            "--reads",
            format!(
                "{} checkpoints cannot be read back when --writes writes {}",
                spec.reads, spec.writes
            ),
        ));
    }
    let dir = dir
        .ok_or_else(|| SpecError::new("--dir", "is required: where the checkpoints are written"))?;
    if spec.transfer_size.get() == 0 || spec.transfer_size.get() > iolab_core::spec::MAX_IO_SIZE {
        return Err(SpecError::new(
            "--transfer-size",
            "must be between 1 byte and 2GiB - 4KiB",
        ));
    }
    // The free space first: a checkpoint that cannot fit is the first thing to say.
    if comm.rank() == 0 {
        check_space(&shape, spec, dir)?;
    }
    let mine = my_ranks(&shape, comm);
    let need =
        (mine.end - mine.start) * spec.transfer_size.get() * u64::from(ranks_on_this_host(comm));
    if let Some(have) = Available::read(Path::new("/")).bytes()
        && need as f64 > 0.8 * have as f64
    {
        return Err(SpecError::new(
            "--transfer-size",
            format!(
                "{} ranks' buffers need {}, more than 80% of the {} available",
                mine.end - mine.start,
                ByteCount(need).human(),
                ByteCount(have).human()
            ),
        ));
    }
    Ok(shape)
}

/// Refuses a run whose checkpoints do not fit in the free space of `dir`, before
/// anything is written.
pub fn check_space(shape: &LlmShape, spec: &CheckpointSpec, dir: &Path) -> Result<(), SpecError> {
    let need = shape.total_bytes().saturating_mul(u64::from(spec.writes));
    // The file system the directory is (or will be) on: its nearest existing ancestor's.
    let on = dir.ancestors().find(|a| a.exists()).unwrap_or(dir);
    let short = iolab_backend::files::space_short(on, need)
        .map_err(|e| SpecError::new("--dir", format!("{}: {e}", dir.display())))?;
    if let Some(free) = short {
        return Err(SpecError::new(
            "--writes",
            format!(
                "{} checkpoint(s) of {} need {:.2} GiB, more than the {:.2} GiB free in {}: lower --writes or --scale",
                spec.writes,
                shape.model.dlio_workload(),
                need as f64 / 1073741824.0,
                free as f64 / 1073741824.0,
                dir.display()
            ),
        ));
    }
    Ok(())
}

fn step_dir(dir: &Path, step: u32) -> PathBuf {
    dir.join(format!("global_epoch1_step{step}"))
}

/// What every simulated rank's worker of one direction shares.
struct RankIo<'a> {
    shape: &'a LlmShape,
    spec: &'a CheckpointSpec,
    dir: &'a Path,
    stop: &'a AtomicBool,
    write: bool,
}

impl RankIo<'_> {
    /// Writes or reads one rank's files of checkpoint `step` through `io`; returns its
    /// bytes.
    fn run(
        &self,
        io: &mut FileIo<'_, MonotonicClock>,
        rank: u64,
        step: u32,
    ) -> Result<u64, AiError> {
        let write = self.write;
        let chunk = self.spec.transfer_size.get();
        let open = OpenSpec {
            write,
            create: write,
            truncate: write,
            ..OpenSpec::default()
        };
        let mut bytes = 0;
        for f in self.shape.files_of_rank(rank) {
            if self.stop.load(Ordering::Relaxed) {
                return Err(AiError::Interrupted);
            }
            let path = step_dir(self.dir, step).join(format!("{}.pt", f.name));
            io.with_file(&path, open, |ops| {
                let mut off = 0u64;
                while off < f.bytes {
                    let n = chunk.min(f.bytes - off);
                    if write {
                        ops.write(n, off)?;
                    } else if ops.read(n, off)? == 0 {
                        return Err(EngineError::Setup(format!(
                            "{} is shorter than the {} bytes written",
                            path.display(),
                            f.bytes
                        )));
                    }
                    off += n;
                }
                if write && !self.spec.no_fsync {
                    ops.fsync()?;
                }
                Ok(())
            })
            .map_err(|e| AiError::Io(e.to_string()))?;
            bytes += f.bytes;
        }
        Ok(bytes)
    }

    /// A simulated rank's checkpoints (a worker of the step phase): for each, the compute
    /// sleep, the meeting before it, its files, the meeting after it.
    fn worker(
        &self,
        rank: u64,
        start: Nanos,
        meeting: &dyn StepMeeting,
        count: u32,
        done: &Mutex<Vec<(u32, u64, u64, Nanos)>>,
    ) -> Result<StepWork, String> {
        let clock = MonotonicClock;
        let mut io = FileIo::new(
            &clock,
            BackendKind::Psync,
            self.spec.transfer_size.get(),
            start,
        )
        .map_err(|e| e.to_string())?;
        // DLIO builds its tensors in memory before it checkpoints: each rank's own bytes.
        io.fill_buffer(|b| Rng::new(rank).fill(b))
            .map_err(|e| e.to_string())?;
        let mut bytes = 0;
        for k in 1..=count {
            clock.sleep(self.spec.time_between.nanos());
            if meeting.meet(u64::from(2 * k - 1), false) {
                break;
            }
            let t = clock.now();
            let r = self.run(&mut io, rank, k);
            let took = clock.now().saturating_sub(t);
            if let Ok(b) = &r {
                bytes += b;
                if let Ok(mut d) = done.lock() {
                    d.push((k, rank, *b, took));
                }
            }
            let failed = r.as_ref().err().map(|e| e.to_string());
            if let Some(e) = &failed {
                io.note_error(&EngineError::Setup(e.clone()));
            }
            if meeting.meet(u64::from(2 * k), failed.is_some()) {
                break;
            }
        }
        Ok(StepWork {
            measure: io.finish(),
            completed: bytes,
        })
    }

    /// The flush step: every file `ranks` wrote, written back and dropped from the
    /// page cache (fdatasync, then fadvise DONTNEED).
    fn flush(&self, ranks: std::ops::Range<u64>) -> Result<(), AiError> {
        for rank in ranks {
            for step in 1..=self.spec.writes {
                for f in self.shape.files_of_rank(rank) {
                    let path = step_dir(self.dir, step).join(format!("{}.pt", f.name));
                    DataFile::open(&path, OpenSpec::default())
                        .and_then(|file| file.drop_cache())
                        .map_err(|e| AiError::Io(e.to_string()))?;
                }
            }
        }
        Ok(())
    }
}

/// Rank 0 creates every checkpoint's folder; every rank learns whether it could.
fn make_step_dirs(comm: &dyn Comm, spec: &CheckpointSpec, dir: &Path) -> Result<(), AiError> {
    let made = if comm.rank() == 0 {
        (1..=spec.writes).try_for_each(|s| std::fs::create_dir_all(step_dir(dir, s)))
    } else {
        Ok(())
    };
    let ok = comm.all_ok(made.is_ok());
    made.map_err(|e| AiError::Setup(format!("{}: {e}", dir.display())))?;
    if !ok {
        return Err(AiError::Setup(
            "rank 0 could not create the checkpoint folders".into(),
        ));
    }
    Ok(())
}

/// The cross-rank part of the checkpoint meetings: before checkpoint k (meeting 2k - 1)
/// whether to stop, after it (meeting 2k) its duration, its bytes and the slowest
/// simulated rank of the job.
struct Rounds<'a> {
    comm: &'a dyn Comm,
    count: u32,
    interrupt: &'a AtomicBool,
    /// Each simulated rank's checkpoints on this process: (checkpoint, rank, bytes, time).
    done: &'a Mutex<Vec<(u32, u64, u64, Nanos)>>,
    began: Mutex<Nanos>,
    rounds: Mutex<Vec<Round>>,
    interrupted: AtomicBool,
    /// When the first checkpoint began and the last one ended (all ranks met).
    first_began: Mutex<Option<Nanos>>,
    last_end: Mutex<Option<Nanos>>,
}

impl Rounds<'_> {
    fn first_and_last(&self) -> (Option<Nanos>, Option<Nanos>) {
        let get = |m: &Mutex<Option<Nanos>>| *m.lock().unwrap_or_else(|e| e.into_inner());
        (get(&self.first_began), get(&self.last_end))
    }
}

impl StepHook for Rounds<'_> {
    fn after_step(&self, step: u64, failed: bool) -> bool {
        let comm = self.comm;
        let stop = u64::from(self.interrupt.load(Ordering::Relaxed));
        let (_, maxes) = comm.reduce(&[], &[stop, u64::from(failed)], None, &|_| {});
        if maxes[1] > 0 {
            return true;
        }
        let now = MonotonicClock.now();
        if step % 2 == 1 {
            if maxes[0] > 0 {
                self.interrupted.store(true, Ordering::Relaxed);
                return true;
            }
            *self.began.lock().unwrap_or_else(|e| e.into_inner()) = now;
            self.first_began
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert(now);
            return false;
        }
        let k = (step / 2) as u32;
        *self.last_end.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
        let began = *self.began.lock().unwrap_or_else(|e| e.into_inner());
        let done = self.done.lock().map(|d| d.clone()).unwrap_or_default();
        let mine = done.iter().filter(|d| d.0 == k);
        let (slow_rank, slow) = mine
            .clone()
            .map(|d| (d.1, d.3.as_secs_f64()))
            .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
        // The slowest rank of the job: every process's slowest, its rank and time.
        let all: Vec<(u64, f64)> = comm.all_gather(&(slow_rank, slow)).unwrap_or_default();
        let (slowest_rank, slowest) = all
            .into_iter()
            .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
        let bytes = comm.all_sum(mine.map(|d| d.2).sum());
        if let Ok(mut r) = self.rounds.lock() {
            r.push(Round {
                duration: now.saturating_sub(began).as_secs_f64(),
                slowest_rank,
                slowest,
                bytes,
            });
        }
        k >= self.count
    }
}

/// Runs the checkpoints in `dir` (a directory iolab owns): the writes, then (the page
/// cache emptied) the reads, each direction a step phase of the engine with a worker
/// per simulated rank. Collective.
pub fn run_checkpoints(
    comm: &dyn Comm,
    shape: &LlmShape,
    spec: &CheckpointSpec,
    dir: &Path,
    interrupt: &AtomicBool,
) -> Result<CheckpointOutcome, AiError> {
    let mine = my_ranks(shape, comm);
    let mut out = CheckpointOutcome {
        rank_bytes: (0..shape.ranks)
            .map(|r| shape.files_of_rank(r).iter().map(|f| f.bytes).sum())
            .collect(),
        ..CheckpointOutcome::default()
    };
    make_step_dirs(comm, spec, dir)?;
    let mut writes_end = None;
    for (write, count) in [(true, spec.writes), (false, spec.reads.min(spec.writes))] {
        if count == 0 {
            continue;
        }
        let io = RankIo {
            shape,
            spec,
            dir,
            stop: interrupt,
            write,
        };
        if !write && !spec.keep_cache {
            // MLPerf clears the caches between writing and reading back: v3.0's flush
            // step, each written file's pages dropped (no root needed).
            comm.barrier();
            let dropped = io.flush(mine.clone()).is_ok();
            out.cache_dropped = Some(comm.all_ok(dropped));
        }
        let d = run_direction(comm, &io, &mine, count, interrupt)?;
        out.interrupted |= d.interrupted;
        if comm.rank() == 0 {
            out.phases
                .push(round_phase(shape, &d.rounds, d.phase, out.interrupted));
        }
        let (first_began, last_end, rounds) = (d.first_began, d.last_end, d.rounds);
        if write {
            writes_end = last_end;
            out.writes = rounds;
        } else {
            // v3.0's memory rule: the first read starts within 30 s of the last write's end.
            out.read_gap_s = writes_end
                .zip(first_began)
                .map(|(w, r)| r.saturating_sub(w).as_secs_f64());
            out.reads = rounds;
        }
        if out.interrupted {
            break;
        }
    }
    Ok(out)
}

/// What one direction's step phase gave: the engine's phase, the rounds, whether it was
/// interrupted, when its first round began and its last ended.
struct Direction {
    phase: PhaseResult,
    rounds: Vec<Round>,
    interrupted: bool,
    first_began: Option<Nanos>,
    last_end: Option<Nanos>,
}

/// `count` checkpoints of one direction (`io.write`) as a step phase of the engine, a
/// worker per simulated rank of `mine`. An I/O error on any rank fails it on all.
fn run_direction(
    comm: &dyn Comm,
    io: &RankIo<'_>,
    mine: &std::ops::Range<u64>,
    count: u32,
    interrupt: &AtomicBool,
) -> Result<Direction, AiError> {
    let done = Mutex::new(Vec::new());
    let hook = Rounds {
        comm,
        count,
        interrupt,
        done: &done,
        began: Mutex::new(Nanos::ZERO),
        rounds: Mutex::new(Vec::new()),
        interrupted: AtomicBool::new(false),
        first_began: Mutex::new(None),
        last_end: Mutex::new(None),
    };
    let name = if io.write {
        "checkpoint-write"
    } else {
        "checkpoint-read"
    };
    let step_spec = StepPhaseSpec {
        name: name.into(),
        spec: serde_json::to_value(io.spec).unwrap_or_default(),
        workers: (mine.end - mine.start) as usize,
    };
    let env = Env::new(comm, interrupt);
    let run = run_steps(
        &env,
        &MonotonicClock,
        &step_spec,
        &hook,
        |i, start, meeting| io.worker(mine.start + i as u64, start, meeting, count, &done),
    )
    .map_err(|e| AiError::Setup(e.to_string()))?;
    if run.errors > 0 {
        let first = run.result.errors.first().map(|e| e.message.clone());
        return Err(AiError::Io(first.unwrap_or_else(|| {
            "another rank failed its checkpoint I/O".into()
        })));
    }
    let interrupted = hook.interrupted.load(Ordering::Relaxed) || run.interrupted;
    let (first_began, last_end) = hook.first_and_last();
    Ok(Direction {
        phase: run.result,
        rounds: hook.rounds.into_inner().unwrap_or_default(),
        interrupted,
        first_began,
        last_end,
    })
}

/// The stored phase of one direction: the engine's, with the checkpoints' figures.
fn round_phase(
    shape: &LlmShape,
    rounds: &[Round],
    mut phase: PhaseResult,
    interrupted: bool,
) -> PhaseResult {
    let mean =
        |f: &dyn Fn(&Round) -> f64| rounds.iter().map(f).sum::<f64>() / rounds.len().max(1) as f64;
    let secs = |s: f64| Nanos((s.max(0.0) * 1e9) as u64);
    let figures = CheckpointFigures {
        checkpoints: rounds.len() as u64,
        checkpoint_bytes: ByteCount(shape.total_bytes()),
        duration_mean: secs(mean(&|r| r.duration)),
        throughput_mean: BytesPerSec(mean(&|r| {
            if r.duration > 0.0 {
                r.bytes as f64 / r.duration
            } else {
                0.0
            }
        })),
        slowest_rank_mean: secs(mean(&|r| r.slowest)),
        simulated_ranks: shape.ranks,
    };
    let params = [
        ("model", shape.model.dlio_workload().to_string()),
        ("tp", shape.tp.to_string()),
        ("pp", shape.pp.to_string()),
        ("dp", shape.dp.to_string()),
        ("zero", shape.zero.to_string()),
        ("ranks", shape.ranks.to_string()),
    ];
    for (k, v) in params {
        phase.params.insert(k.into(), v);
    }
    if shape.is_subset() {
        phase.params.insert("mode".into(), "subset".into());
    }
    phase.figures = Some(PhaseFigures::Checkpoint(figures));
    phase.interrupted |= interrupted;
    phase
}
