//! MLPerf Storage v2.0's LLM checkpointing as DLIO's `_checkpoint_write` and
//! `_checkpoint_read` run it: `writes` checkpoints, each after a compute sleep and a
//! barrier, every simulated rank writing its shards (iolab_core::checkpoint) into
//! `global_epoch1_step<N>/`, each file fsynced, then a barrier (DLIO's
//! checkpoint_rank_sync): a checkpoint's duration is the slowest rank's. Then the page
//! cache is emptied and `reads` checkpoints are read back the same way. Simulated ranks
//! are threads, spread over the job's processes in contiguous blocks (as mpirun places
//! ranks by slot).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use iolab_backend::buffer::BufferPool;
use iolab_backend::files::{DataFile, OpenSpec};
use iolab_comm::{Comm, CommExt};
use iolab_core::checkpoint::LlmShape;
use iolab_core::result::{CheckpointFigures, CpuUsage, OpCount, OpKind, PhaseFigures, PhaseResult};
use iolab_core::spec::CheckpointSpec;
use iolab_core::units::{ByteCount, BytesPerSec, Nanos};
use iolab_core::{LatencyHistogram, SpecError};
use iolab_engine::{Available, ranks_on_this_host};

use crate::train::{TrainError, whole_phase};

/// A simulated rank's checkpoint I/O: its bytes and time, or why it failed.
type RankResult = (u64, Result<(u64, f64), TrainError>);

/// One checkpoint written or read.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Round {
    /// From the barrier before it to the barrier after it: the slowest rank's time.
    pub duration: f64,
    /// The slowest simulated rank and its own time.
    pub slowest_rank: u64,
    pub slowest: f64,
    pub bytes: u64,
}

/// A checkpointing run, all ranks (on rank 0).
#[derive(Clone, Debug, Default)]
pub struct CheckpointOutcome {
    pub writes: Vec<Round>,
    pub reads: Vec<Round>,
    /// Bytes each simulated rank writes per checkpoint.
    pub rank_bytes: Vec<u64>,
    pub phases: Vec<PhaseResult>,
    /// The flush step before the reads (every written file's pages dropped with
    /// fadvise DONTNEED, after fdatasync) succeeded on every rank.
    pub cache_dropped: Option<bool>,
    /// Seconds from the end of the last write to the start of the first read (v3.0's
    /// memory rule wants at most 30 when the checkpoints fit 3 x a node's memory).
    pub read_gap_s: Option<f64>,
    pub interrupted: bool,
}

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

struct RankIo<'a> {
    shape: &'a LlmShape,
    spec: &'a CheckpointSpec,
    dir: &'a Path,
    stop: &'a AtomicBool,
}

impl RankIo<'_> {
    /// Writes or reads one rank's files of checkpoint `step`; returns bytes and time.
    fn run(
        &self,
        rank: u64,
        step: u32,
        write: bool,
        buf: &mut BufferPool,
        hist: &mut LatencyHistogram,
    ) -> Result<(u64, f64), TrainError> {
        let started = Instant::now();
        let mut bytes = 0;
        let chunk = self.spec.transfer_size.get() as usize;
        for f in self.shape.files_of_rank(rank) {
            if self.stop.load(Ordering::Relaxed) {
                return Err(TrainError::Interrupted);
            }
            let path = step_dir(self.dir, step).join(format!("{}.pt", f.name));
            let file = DataFile::open(
                &path,
                OpenSpec {
                    write,
                    create: write,
                    truncate: write,
                    ..OpenSpec::default()
                },
            )
            .map_err(|e| TrainError::Io(e.to_string()))?;
            let mut off = 0u64;
            while off < f.bytes {
                let n = chunk.min((f.bytes - off) as usize);
                let t = Instant::now();
                if write {
                    file.write_all_at(&buf.get(0)[..n], off)
                        .map_err(|e| TrainError::Io(e.to_string()))?;
                } else {
                    let got = file
                        .read_at(&mut buf.get_mut(0)[..n], off)
                        .map_err(|e| TrainError::Io(e.to_string()))?;
                    if got == 0 {
                        return Err(TrainError::Io(format!(
                            "{} is shorter than the {} bytes written",
                            path.display(),
                            f.bytes
                        )));
                    }
                }
                hist.record(t.elapsed().as_nanos() as u64);
                off += n as u64;
            }
            if write && !self.spec.no_fsync {
                file.fsync().map_err(|e| TrainError::Io(e.to_string()))?;
            }
            bytes += f.bytes;
        }
        Ok((bytes, started.elapsed().as_secs_f64()))
    }

    /// The flush step: every file `ranks` wrote, written back and dropped from the
    /// page cache (fdatasync, then fadvise DONTNEED).
    fn flush(&self, ranks: std::ops::Range<u64>) -> Result<(), TrainError> {
        for rank in ranks {
            for step in 1..=self.spec.writes {
                for f in self.shape.files_of_rank(rank) {
                    let path = step_dir(self.dir, step).join(format!("{}.pt", f.name));
                    DataFile::open(&path, OpenSpec::default())
                        .and_then(|file| file.drop_cache())
                        .map_err(|e| TrainError::Io(e.to_string()))?;
                }
            }
        }
        Ok(())
    }
}

/// Rank 0 creates every checkpoint's folder; every rank learns whether it could.
fn make_step_dirs(comm: &dyn Comm, spec: &CheckpointSpec, dir: &Path) -> Result<(), TrainError> {
    let made = if comm.rank() == 0 {
        (1..=spec.writes).try_for_each(|s| std::fs::create_dir_all(step_dir(dir, s)))
    } else {
        Ok(())
    };
    let ok = comm.all_ok(made.is_ok());
    made.map_err(|e| TrainError::Setup(format!("{}: {e}", dir.display())))?;
    if !ok {
        return Err(TrainError::Setup(
            "rank 0 could not create the checkpoint folders".into(),
        ));
    }
    Ok(())
}

/// Runs the checkpoints in `dir` (a directory iolab owns). Collective.
pub fn run_checkpoints(
    comm: &dyn Comm,
    shape: &LlmShape,
    spec: &CheckpointSpec,
    dir: &Path,
    interrupt: &AtomicBool,
) -> Result<CheckpointOutcome, TrainError> {
    let mine = my_ranks(shape, comm);
    let threads = (mine.end - mine.start) as usize;
    let io = RankIo {
        shape,
        spec,
        dir,
        stop: interrupt,
    };
    let mut out = CheckpointOutcome {
        rank_bytes: (0..shape.ranks)
            .map(|r| shape.files_of_rank(r).iter().map(|f| f.bytes).sum())
            .collect(),
        ..CheckpointOutcome::default()
    };
    make_step_dirs(comm, spec, dir)?;
    // Each simulated rank's buffer, filled before any timing (DLIO builds its tensors in
    // memory before it checkpoints).
    let buffers: Vec<Mutex<BufferPool>> = mine
        .clone()
        .map(|rank| {
            let mut b = BufferPool::new(1, spec.transfer_size.get(), 4096)
                .map_err(|e| TrainError::Setup(e.to_string()))?;
            b.fill_random(rank);
            Ok(Mutex::new(b))
        })
        .collect::<Result<_, TrainError>>()?;
    let mut writes_end = None;
    for (write, count) in [(true, spec.writes), (false, spec.reads.min(spec.writes))] {
        if !write && count > 0 && !spec.keep_cache {
            // MLPerf clears the caches between writing and reading back: v3.0's flush
            // step, each written file's pages dropped (no root needed).
            comm.barrier();
            let dropped = io.flush(mine.clone()).is_ok();
            out.cache_dropped = Some(comm.all_ok(dropped));
        }
        let mut hist = LatencyHistogram::new();
        let mut rounds = Vec::new();
        let phase_start = Instant::now();
        let started_at_ms = iolab_core::civil::now_ms();
        let cpu0 = iolab_backend::process::cpu_times();
        for step in 1..=count {
            if spec.time_between.nanos().0 > 0 {
                std::thread::sleep(Duration::from_nanos(spec.time_between.nanos().0));
            }
            let stop = comm.all_max(u64::from(interrupt.load(Ordering::Relaxed))) > 0;
            if stop {
                out.interrupted = true;
                break;
            }
            comm.barrier();
            let t = Instant::now();
            if !write && step == 1 {
                out.read_gap_s = writes_end.map(|w| t.duration_since(w).as_secs_f64());
            }
            let results: Mutex<Vec<RankResult>> = Mutex::new(Vec::new());
            let hists: Mutex<LatencyHistogram> = Mutex::new(LatencyHistogram::new());
            let gate = Barrier::new(threads.max(1));
            std::thread::scope(|s| {
                for (i, rank) in mine.clone().enumerate() {
                    let (io, results, hists, gate) = (&io, &results, &hists, &gate);
                    let buf = &buffers[i];
                    s.spawn(move || {
                        let mut h = LatencyHistogram::new();
                        let mut buf = buf.lock().unwrap_or_else(|e| e.into_inner());
                        gate.wait();
                        let r = io.run(rank, step, write, &mut buf, &mut h);
                        if let Ok(mut g) = hists.lock() {
                            g.merge(&h);
                        }
                        if let Ok(mut g) = results.lock() {
                            g.push((rank, r));
                        }
                    });
                }
            });
            hist.merge(&hists.into_inner().unwrap_or_default());
            let results = results.into_inner().unwrap_or_default();
            let err = results
                .iter()
                .find_map(|(_, r)| r.as_ref().err().map(|e| e.to_string()));
            let all_ok = comm.all_ok(err.is_none());
            if let Some(e) = err {
                return Err(TrainError::Io(e));
            }
            if !all_ok {
                return Err(TrainError::Io(
                    "another rank failed its checkpoint I/O".into(),
                ));
            }
            comm.barrier();
            let duration = t.elapsed().as_secs_f64();
            let (slow_rank, slow) = results
                .iter()
                .filter_map(|(r, x)| x.as_ref().ok().map(|(_, d)| (*r, *d)))
                .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
            let mine_bytes: u64 = results
                .iter()
                .filter_map(|(_, x)| x.as_ref().ok().map(|(b, _)| *b))
                .sum();
            // The slowest rank of the job: every process's slowest, its rank and time.
            let all: Vec<(u64, f64)> = comm
                .all_gather(&(slow_rank, slow))
                .map_err(|e| TrainError::Setup(e.to_string()))?;
            let (slowest_rank, slowest) = all
                .into_iter()
                .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
            rounds.push(Round {
                duration,
                slowest_rank,
                slowest,
                bytes: comm.all_sum(mine_bytes),
            });
        }
        let (u, s) = iolab_backend::process::cpu_times();
        let hists = comm
            .gather(0, &hist.to_bytes().unwrap_or_default())
            .map_err(|e| TrainError::Setup(e.to_string()))?;
        let cpu = CpuUsage {
            user: Nanos(comm.all_sum(u.0 - cpu0.0.0)),
            system: Nanos(comm.all_sum(s.0 - cpu0.1.0)),
            wall: Nanos(phase_start.elapsed().as_nanos() as u64),
            cpus: iolab_backend::process::allowed_cpus().len() as u32,
        };
        if comm.rank() == 0 && count > 0 {
            let mut merged = LatencyHistogram::new();
            for h in hists {
                if let Ok(h) = LatencyHistogram::from_bytes(&h) {
                    merged.merge(&h);
                }
            }
            out.phases.push(round_phase(
                shape,
                spec,
                write,
                &rounds,
                merged,
                cpu,
                started_at_ms,
                comm.size(),
                out.interrupted,
            ));
        }
        if write {
            writes_end = Some(Instant::now());
            out.writes = rounds;
        } else {
            out.reads = rounds;
        }
        if out.interrupted {
            break;
        }
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn round_phase(
    shape: &LlmShape,
    spec: &CheckpointSpec,
    write: bool,
    rounds: &[Round],
    hist: LatencyHistogram,
    cpu: CpuUsage,
    started_at_ms: i64,
    ranks: u32,
    interrupted: bool,
) -> PhaseResult {
    let op = if write { OpKind::Write } else { OpKind::Read };
    let bytes: u64 = rounds.iter().map(|r| r.bytes).sum();
    let time: f64 = rounds.iter().map(|r| r.duration).sum();
    let elapsed = Nanos((time * 1e9) as u64);
    let count = OpCount {
        ops: hist.count(),
        bytes,
    };
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
    let mut params = std::collections::BTreeMap::new();
    params.insert("model".into(), shape.model.dlio_workload().to_string());
    params.insert("tp".into(), shape.tp.to_string());
    params.insert("pp".into(), shape.pp.to_string());
    params.insert("dp".into(), shape.dp.to_string());
    params.insert("zero".into(), shape.zero.to_string());
    params.insert("ranks".into(), shape.ranks.to_string());
    if shape.is_subset() {
        params.insert("mode".into(), "subset".into());
    }
    let name = if write {
        "checkpoint-write"
    } else {
        "checkpoint-read"
    };
    PhaseResult {
        params,
        cpu,
        figures: Some(PhaseFigures::Checkpoint(figures)),
        interrupted,
        ..whole_phase(
            name.into(),
            op,
            count,
            elapsed,
            hist,
            serde_json::to_value(spec).unwrap_or_default(),
            started_at_ms,
            (ranks, shape.ranks as u32),
        )
    }
}
