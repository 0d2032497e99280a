//! The writer threads of `train datagen`, as MLPerf Storage v3.0's DLIO runs them:
//! [`sized_writers`] sizes a write_threads of 1 as DLIO does and checks their buffers
//! fit in memory; [`Writers`] deals the files to them as DLIO's generator does.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use iolab_comm::Comm;
use iolab_core::SpecError;
use iolab_core::spec::{ThreadsKind, TrainConfig};
use iolab_core::units::ByteCount;
use iolab_engine::{Available, ranks_on_this_host};

use crate::AiError;
use crate::train::format::CHUNK;
use crate::train::prepare::agreed;
use crate::train::threads::{HostCpus, agree_host, sized_writes};

/// A writer's buffer: a chunk and the largest put that can follow an unfilled one.
pub const WRITE_BUFFER: u64 = 2 * CHUNK as u64;

/// Which files each of this rank's writer threads writes, as v3.0 DLIO's generator
/// deals them (dlio_benchmark/data_generator/data_generator.py at cbe20010): the job's
/// accelerator `a` (rank r's k-th is r x accelerators + k; each is one of DLIO's ranks)
/// has files a, a + A, a + 2A, ... (A the job's accelerators; lines 159-165) and
/// min(write_threads, its files) threads (line 185; one for tfrecord and parquet:
/// [`TrainConfig::writer_threads`]), each taking the next of its files
/// not yet taken, in that order, as a ThreadPoolExecutor's `map` hands a rank's files to
/// its idle threads (line 256). No file is written by two threads, and what a file
/// holds depends on its index alone.
pub struct Writers {
    /// The job's accelerators (DLIO's comm_size).
    accelerators: u64,
    /// This rank's accelerators that have files: each one's first file and how many of
    /// its files were taken.
    queues: Vec<(u64, AtomicU64)>,
    /// Each worker's queue.
    queue_of: Vec<usize>,
}

impl Writers {
    /// Rank `rank` of `ranks`' writers for `cfg`'s files.
    pub fn new(cfg: &TrainConfig, rank: u32, ranks: u32) -> Writers {
        let per_rank = u64::from(cfg.accelerators.max(1));
        let accelerators = per_rank * u64::from(ranks.max(1));
        let threads = u64::from(cfg.writer_threads().max(1));
        let (mut queues, mut queue_of) = (Vec::new(), Vec::new());
        for k in 0..per_rank {
            let first = u64::from(rank) * per_rank + k;
            let files = files_of(cfg.files, first, accelerators);
            if files > 0 {
                queue_of.extend(std::iter::repeat_n(
                    queues.len(),
                    threads.min(files) as usize,
                ));
                queues.push((first, AtomicU64::new(0)));
            }
        }
        Writers {
            accelerators,
            queues,
            queue_of,
        }
    }

    /// This rank's writer threads: at least one (a rank without files runs one that
    /// writes none).
    pub fn workers(&self) -> usize {
        self.queue_of.len().max(1)
    }

    /// The next file worker `t` writes, or None once its accelerator's are all taken.
    pub fn next(&self, t: usize, files: u64) -> Option<u64> {
        let (first, taken) = &self.queues[*self.queue_of.get(t)?];
        let k = taken.fetch_add(1, Ordering::Relaxed);
        let i = first.saturating_add(k.saturating_mul(self.accelerators));
        (i < files).then_some(i)
    }
}

/// How many of `files` fall to accelerator `a` of `accelerators` (a, a + A, ...).
fn files_of(files: u64, a: u64, accelerators: u64) -> u64 {
    if a >= files {
        0
    } else {
        (files - a - 1) / accelerators.max(1) + 1
    }
}

/// `cfg` with the write_threads `train datagen` runs: a 1 sized as v3.0 DLIO sizes it
/// ([`sized_writes`], from the job's agreed host), once every rank has found its
/// writers' buffers fit in its host's memory; or the first failing rank's error on
/// each (a `DLIO_MAX_AUTO_THREADS` DLIO could not read among them). Nothing is written.
/// Collective.
pub fn sized_writers(comm: &dyn Comm, cfg: &TrainConfig) -> Result<TrainConfig, AiError> {
    let ranks_here = ranks_on_this_host(comm);
    let host = agreed(
        comm,
        HostCpus::read(ranks_here, ThreadsKind::Write).map_err(AiError::from),
    )?;
    let cfg = sized_writes(cfg, agree_host(comm, host));
    let writers = Writers::new(&cfg, comm.rank(), comm.size()).workers() as u64;
    let on_host = writers.saturating_mul(u64::from(ranks_here.max(1)));
    agreed(
        comm,
        check_writer_memory(&cfg, on_host).map_err(AiError::from),
    )?;
    Ok(cfg)
}

/// Refuses `writers` writer threads on this host whose buffers ([`WRITE_BUFFER`] each)
/// need more than 80 % of the memory it can give.
fn check_writer_memory(cfg: &TrainConfig, writers: u64) -> Result<(), SpecError> {
    let need = writers.saturating_mul(WRITE_BUFFER);
    let Some(have) = Available::read(Path::new("/")).bytes() else {
        return Ok(());
    };
    if need as f64 > have as f64 * 0.8 {
        return Err(SpecError::new(
            "--write-threads",
            format!(
                "{writers} writer threads on this host (up to {} per accelerator) x {} of write buffer need {}, more than 80% of the {} available: lower --write-threads or --accelerators",
                cfg.writer_threads(),
                ByteCount(WRITE_BUFFER),
                ByteCount(need).human(),
                ByteCount(have).human()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::spec::{TrainFormat, TrainSpec};

    fn cfg(files: u64, accelerators: u32, write_threads: u32) -> TrainConfig {
        TrainConfig {
            files,
            accelerators,
            write_threads,
            ..TrainSpec::default().resolve().unwrap()
        }
    }

    /// Every file each worker of `w` takes, one worker at a time in turn.
    fn drained(w: &Writers, files: u64) -> Vec<Vec<u64>> {
        let mut got = vec![Vec::new(); w.workers()];
        let mut live: Vec<usize> = (0..w.workers()).collect();
        while !live.is_empty() {
            live.retain(|&t| match w.next(t, files) {
                Some(i) => {
                    got[t].push(i);
                    true
                }
                None => false,
            });
        }
        got
    }

    #[test]
    fn an_accelerators_files_go_to_its_threads_in_order_as_dlios_pool_takes_them() {
        // 10 files, 2 ranks x 2 accelerators (DLIO's 4 ranks), 2 threads each: rank 0's
        // accelerators have files 0, 4, 8 and 1, 5, 9; rank 1's 2, 6 and 3, 7.
        let c = cfg(10, 2, 2);
        let rank0 = Writers::new(&c, 0, 2);
        assert_eq!(rank0.workers(), 4);
        assert_eq!(
            drained(&rank0, 10),
            [vec![0, 8], vec![4], vec![1, 9], vec![5]]
        );
        let rank1 = Writers::new(&c, 1, 2);
        assert_eq!(drained(&rank1, 10), [vec![2], vec![6], vec![3], vec![7]]);
        // One thread writes its accelerator's files in order, as DLIO's serial loop.
        let one = Writers::new(&cfg(7, 1, 1), 0, 1);
        assert_eq!(drained(&one, 7), [vec![0, 1, 2, 3, 4, 5, 6]]);
    }

    #[test]
    fn threads_are_at_most_an_accelerators_files() {
        // DLIO's max(1, min(write_threads, len(jobs))) per rank.
        for (files, accs, threads, ranks, workers) in [
            (3, 1, 8, 1, 3),
            (100, 1, 8, 1, 8),
            (2, 4, 1, 1, 2),
            (2, 4, 3, 1, 2),
            (9, 4, 3, 1, 9),
            (9, 4, 2, 1, 8),
            (0, 1, 4, 1, 1),
            (1, 1, 4, 2, 1),
        ] {
            let w = Writers::new(&cfg(files, accs, threads), ranks - 1, ranks);
            let what = format!("{files} files, {accs} acc x {threads} threads, rank {ranks}");
            assert_eq!(w.workers(), workers, "{what}");
        }
        // tfrecord and parquet: one thread an accelerator, as DLIO's generators loop.
        for format in [TrainFormat::Tfrecord, TrainFormat::Parquet] {
            let c = TrainConfig {
                format,
                ..cfg(100, 2, 8)
            };
            assert_eq!(Writers::new(&c, 0, 1).workers(), 2, "{format:?}");
        }
        // A rank without files runs one worker that writes none.
        let w = Writers::new(&cfg(1, 1, 4), 1, 2);
        assert_eq!(w.next(0, 1), None);
        assert_eq!(files_of(10, 3, 4), 2);
        assert_eq!(files_of(10, 1, 4), 3);
        assert_eq!(files_of(3, 3, 4), 0);
    }

    #[test]
    fn threads_taking_files_at_once_write_each_file_once() {
        let files = 1000;
        let c = cfg(files, 3, 4);
        let w = Writers::new(&c, 0, 1);
        assert_eq!(w.workers(), 12);
        let mut all: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..w.workers())
                .map(|t| {
                    let w = &w;
                    s.spawn(move || std::iter::from_fn(|| w.next(t, files)).collect::<Vec<_>>())
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        all.sort_unstable();
        assert_eq!(all, (0..files).collect::<Vec<_>>());
    }

    #[test]
    fn writer_buffers_over_the_hosts_memory_are_refused_naming_the_option() {
        let c = cfg(1 << 20, 1024, 256);
        let e = check_writer_memory(&c, 1024 * 256).unwrap_err().to_string();
        assert!(
            e.starts_with("--write-threads: 262144 writer threads on this host (up to 256 per accelerator) x 8MiB of write buffer need 2.00 TiB, more than 80% of the "),
            "{e}"
        );
        check_writer_memory(&c, 1).unwrap();
    }
}
