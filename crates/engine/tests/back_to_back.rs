//! Runs back to back in one process, as a study or `iolab suite` makes them: each run
//! takes the work directory's lock, and a worker thread's private descriptor table
//! (`unshare(CLONE_FILES)`, data and metadata workers) must not hold its copy of that
//! lock past the run, or the next run finds the directory busy, held by its own pid.

use std::sync::atomic::AtomicBool;

use iolab_comm::SingleProcess;
use iolab_core::result::OpKind;
use iolab_core::spec::{BackendKind, DataSpec, MetaOp, MetaSpec, RwKind, TargetSpec};
use iolab_core::units::ByteCount;
use iolab_engine::{DataOptions, run_data};
use iolab_engine::{Env, MonotonicClock, prepare_target};
use iolab_engine::{MetaOptions, finish_meta, run_meta};

/// Enough runs that a worker still ending while the next run locks would be caught: the
/// window is the time between `join` returning and the kernel releasing the thread's
/// table, and a run here takes about a millisecond.
const RUNS: usize = 30;

fn kept(dir: &std::path::Path) -> TargetSpec {
    TargetSpec {
        dir: Some(dir.to_path_buf()),
        keep: true,
        ..TargetSpec::default()
    }
}

fn data_runs_back_to_back(backend: BackendKind, queue_depth: u32, threads: u32) {
    let dir = tempfile::tempdir().unwrap();
    let comm = SingleProcess::new();
    for run in 0..RUNS {
        let spec = DataSpec {
            rw: if run == 0 {
                RwKind::Write
            } else {
                RwKind::Randread
            },
            backend,
            queue_depth,
            threads,
            block_size: ByteCount::kib(4),
            size: Some(ByteCount::kib(4 * 16)),
            ..DataSpec::default()
        };
        let prepared = prepare_target(&comm, &kept(dir.path()), backend, true)
            .unwrap_or_else(|e| panic!("{backend:?} run {run}: {e}"));
        let stop = AtomicBool::new(false);
        let env = Env::new(&comm, &stop).with_settle(std::time::Duration::ZERO);
        let out = run_data(
            &env,
            &MonotonicClock,
            &spec,
            &prepared,
            &DataOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{backend:?} run {run}: {e}"));
        let op = if run == 0 {
            OpKind::Write
        } else {
            OpKind::Read
        };
        assert_eq!(
            out.phases[0].op(op).unwrap().ops,
            16 * u64::from(threads),
            "run {run}"
        );
    }
}

#[test]
fn psync_runs_back_to_back_find_the_work_directory_free() {
    data_runs_back_to_back(BackendKind::Psync, 1, 2);
}

#[test]
fn uring_runs_back_to_back_find_the_work_directory_free() {
    if let Err(why) = iolab_backend::uring_available() {
        eprintln!("SKIPPED: io_uring is not available here: {why}");
        return;
    }
    data_runs_back_to_back(BackendKind::Uring, 8, 2);
}

#[test]
fn metadata_runs_back_to_back_find_the_work_directory_free() {
    let dir = tempfile::tempdir().unwrap();
    let comm = SingleProcess::new();
    for run in 0..RUNS {
        let spec = MetaSpec {
            ops: vec![MetaOp::Create, MetaOp::Stat, MetaOp::Remove],
            threads: 2,
            files_per_dir: 8,
            dirs_per_thread: Some(1),
            ..MetaSpec::default()
        };
        let prepared = prepare_target(&comm, &kept(dir.path()), BackendKind::Psync, true)
            .unwrap_or_else(|e| panic!("run {run}: {e}"));
        let stop = AtomicBool::new(false);
        let env = Env::new(&comm, &stop).with_settle(std::time::Duration::ZERO);
        let opts = MetaOptions::default();
        let out = run_meta(&env, &MonotonicClock, &spec, &prepared, &opts)
            .unwrap_or_else(|e| panic!("run {run}: {e}"));
        assert_eq!(
            out.phases[0].op(OpKind::Create).unwrap().ops,
            16,
            "run {run}"
        );
        finish_meta(&comm, &spec, &prepared, &opts, &out, false)
            .unwrap_or_else(|e| panic!("run {run}: {e}"));
    }
}
