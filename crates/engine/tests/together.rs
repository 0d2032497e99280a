//! Jobs that run together in one phase (fio's jobs between stonewalls): each with its
//! own files, start rule and figures; several files per worker after an offset, loops,
//! ramps, start delays, context switches and status snapshots.

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use iolab_comm::SingleProcess;
use iolab_core::result::OpKind;
use iolab_core::spec::{BackendKind, DataSpec, FioSettings, RwKind, TargetSpec};
use iolab_core::units::{ByteCount, TimeSpan};
use iolab_engine::DataOptions;
use iolab_engine::FileNames;
use iolab_engine::PhaseMeta;
use iolab_engine::{DataJob, JobRun, JobsRun, StatusEvery, WorkerRow, run_data_jobs};
use iolab_engine::{Env, MonotonicClock, PreparedTarget, prepare_target};

fn dir_target(dir: &std::path::Path) -> TargetSpec {
    TargetSpec {
        dir: Some(dir.to_path_buf()),
        ..TargetSpec::default()
    }
}

fn run(jobs: &[DataJob<'_>], status: Option<StatusEvery<'_>>) -> JobsRun {
    let comm = SingleProcess::new();
    let stop = AtomicBool::new(false);
    let env = Env::new(&comm, &stop);
    run_data_jobs(&env, &MonotonicClock, jobs, status).unwrap()
}

fn null(rw: RwKind, runtime_ms: u64) -> DataSpec {
    DataSpec {
        rw,
        backend: BackendKind::Null,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::mib(1)),
        runtime: Some(TimeSpan(iolab_core::units::Nanos::from_millis(runtime_ms))),
        ..DataSpec::default()
    }
}

fn ops(rows: &[WorkerRow], op: OpKind) -> u64 {
    rows.iter()
        .filter_map(|r| r.measure.ops.get(&op))
        .map(|m| m.count.ops)
        .sum()
}

#[test]
fn files_per_worker_take_turns_after_an_offset_with_their_names_and_sizes() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let comm = SingleProcess::new();
    let spec = DataSpec {
        rw: RwKind::Write,
        threads: 2,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::kib(96)),
        verify: true,
        ..DataSpec::default()
    };
    let target = prepare_target(&comm, &dir_target(dir.path()), spec.backend, true).unwrap();
    let opts = DataOptions {
        names: FileNames::Template("w.{worker}.{file}".into()),
        fio: FioSettings {
            files_per_worker: 3,
            start_offset: ByteCount(8192),
            loops: 2,
            ..FioSettings::default()
        },
        ..DataOptions::default()
    };
    let job = DataJob {
        spec: &spec,
        target: &target,
        opts,
        after: None,
        exit: None,
        never: false,
    };
    let run = run(&[job], None);
    let j = &run.jobs[0];
    // 96 KiB per worker in 3 files: 8 blocks each, written twice (loops).
    assert_eq!(ops(&j.rows, OpKind::Write), 2 * 2 * 24);
    assert_eq!(j.completed, vec![48, 48]);
    let work = dir.path().join("iolab-work");
    for w in 0..2 {
        for f in 0..3 {
            let path = work.join(format!("w.{w}.{f}"));
            let len = std::fs::metadata(&path).unwrap().len();
            assert_eq!(len, 8192 + 8 * 4096, "{}", path.display());
            // The offset stays a hole: nothing was written before it.
            let data = std::fs::read(&path).unwrap();
            assert!(data[..8192].iter().all(|b| *b == 0));
            assert!(data[8192..8192 + 4096].iter().any(|b| *b != 0));
        }
    }
    assert_eq!(j.files.len(), 6);
    // The verify pass read every block back from the right file and place.
    let v = j.verify.as_ref().unwrap();
    assert_eq!(v.verify_failures, 0);
    assert_eq!(v.op(OpKind::Read).unwrap().ops, 96);
}

#[test]
fn jobs_run_together_each_with_its_own_figures_and_start() {
    let comm = SingleProcess::new();
    let spec_a = null(RwKind::Randread, 300);
    let spec_b = null(RwKind::Write, 200);
    let spec_c = null(RwKind::Read, 200);
    let target = PreparedTarget::Null;
    let _ = &comm;
    let jobs = [
        DataJob {
            spec: &spec_a,
            target: &target,
            opts: DataOptions::default(),
            after: None,
            exit: None,
            never: false,
        },
        // Starts when a is done.
        DataJob {
            spec: &spec_b,
            target: &target,
            opts: DataOptions::default(),
            after: Some(0),
            exit: None,
            never: false,
        },
        // Starts 300 ms in, measured after a 100 ms ramp.
        DataJob {
            spec: &spec_c,
            target: &target,
            opts: DataOptions {
                fio: FioSettings {
                    start_delay: Some(TimeSpan(iolab_core::units::Nanos::from_millis(300))),
                    ramp: Some(TimeSpan(iolab_core::units::Nanos::from_millis(100))),
                    ..FioSettings::default()
                },
                ..DataOptions::default()
            },
            after: None,
            exit: None,
            never: false,
        },
    ];
    let t0 = Instant::now();
    let run = run(&jobs, None);
    let took = t0.elapsed();
    assert!(took >= Duration::from_millis(500), "{took:?}");
    let ms = |j: usize| run.jobs[j].rows[0].elapsed.0 / 1_000_000;
    // Each job's time is its own: not the phase's.
    assert!((300..450).contains(&ms(0)), "{}", ms(0));
    assert!((200..350).contains(&ms(1)), "{}", ms(1));
    assert!((200..350).contains(&ms(2)), "{}", ms(2));
    assert!(ops(&run.jobs[0].rows, OpKind::Read) > 0);
    assert_eq!(ops(&run.jobs[0].rows, OpKind::Write), 0);
    assert!(ops(&run.jobs[1].rows, OpKind::Write) > 0);
    // The ramp's I/Os were done but not counted.
    let c = &run.jobs[2].rows[0];
    assert!(c.completed > ops(&run.jobs[2].rows, OpKind::Read));
    // A phase of any rows: two jobs' figures together.
    let both = run.phase(
        PhaseMeta::default(),
        &run.jobs[0]
            .rows
            .iter()
            .chain(&run.jobs[1].rows)
            .collect::<Vec<_>>(),
    );
    assert_eq!(
        both.op(OpKind::Read).unwrap().ops,
        ops(&run.jobs[0].rows, OpKind::Read)
    );
    assert_eq!(both.workers, 2);
}

#[test]
fn a_worker_counts_its_context_switches() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let comm = SingleProcess::new();
    let spec = DataSpec {
        rw: RwKind::Write,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::kib(64)),
        fsync_every: Some(1),
        ..DataSpec::default()
    };
    let target = prepare_target(&comm, &dir_target(dir.path()), spec.backend, true).unwrap();
    let job = DataJob {
        spec: &spec,
        target: &target,
        opts: DataOptions::default(),
        after: None,
        exit: None,
        never: false,
    };
    let run = run(&[job], None);
    let row = &run.jobs[0].rows[0];
    // 16 fsyncs wait for the device: the thread sleeps, so it switches.
    assert!(row.context_switches > 0, "{row:?}");
    assert_eq!(ops(&run.jobs[0].rows, OpKind::Fsync), 16);
}

#[test]
fn status_reports_come_while_the_jobs_run() {
    let spec = null(RwKind::Randread, 900);
    let target = PreparedTarget::Null;
    let seen: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    let report = |rows: &[WorkerRow]| {
        seen.lock().unwrap().push(ops(rows, OpKind::Read));
    };
    let job = DataJob {
        spec: &spec,
        target: &target,
        opts: DataOptions::default(),
        after: None,
        exit: None,
        never: false,
    };
    let status = StatusEvery {
        every: Duration::from_millis(250),
        report: &report,
    };
    let run = run(&[job], Some(status));
    let seen = seen.into_inner().unwrap();
    assert!(seen.len() >= 2, "{seen:?}");
    // Cumulative, growing, and never past the final count.
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert!(seen[0] > 0);
    assert!(*seen.last().unwrap() <= ops(&run.jobs[0].rows, OpKind::Read));
}

/// A job's completed counts, and its rows' (rank, completed).
type JobCounts = (Vec<u64>, Vec<(u32, u64)>);

/// Each job's completed counts on several ranks come from the phase's one gather of every
/// worker's count: rank-major, only the job's own workers, and the same counts as the
/// rows rank 0 gathered.
#[test]
fn on_several_ranks_each_job_gets_its_own_workers_counts_rank_by_rank() {
    use iolab_comm::{Comm, InProcess};
    use iolab_core::units::Nanos;
    use iolab_engine::FakeClock;
    let results = InProcess::run(
        2,
        |r| format!("node{r}"),
        |comm: &dyn Comm| {
            let spec = |rw, threads| DataSpec {
                rw,
                threads,
                backend: BackendKind::Null,
                block_size: ByteCount::kib(4),
                size: Some(ByteCount::gib(1)),
                runtime: Some(TimeSpan(Nanos::from_millis(1))),
                ..DataSpec::default()
            };
            let (a, b) = (spec(RwKind::Write, 2), spec(RwKind::Read, 1));
            let target = prepare_target(comm, &TargetSpec::default(), a.backend, true).unwrap();
            let job = |spec| DataJob {
                spec,
                target: &target,
                opts: DataOptions::default(),
                after: None,
                exit: None,
                never: false,
            };
            // Rank r's clock runs r+1 times slower: its workers complete fewer I/Os.
            let clock = FakeClock::new(Nanos(1000 * (u64::from(comm.rank()) + 1)));
            let stop = AtomicBool::new(false);
            let env = Env::new(comm, &stop).with_settle(std::time::Duration::ZERO);
            let run = run_data_jobs(&env, &clock, &[job(&a), job(&b)], None).unwrap();
            let counts = |j: &JobRun| j.completed.clone();
            let rows = |j: &JobRun| j.rows.iter().map(|r| (r.rank, r.completed)).collect();
            run.jobs
                .iter()
                .map(|j| (counts(j), rows(j)))
                .collect::<Vec<JobCounts>>()
        },
    );
    // Rank 0 holds every rank's rows: the counts are theirs, rank by rank.
    let jobs = &results[0];
    assert_eq!(jobs.len(), 2);
    for (j, (completed, rows)) in jobs.iter().enumerate() {
        assert_eq!(completed.len(), [4, 2][j], "job {j}");
        let ranks: Vec<u32> = rows.iter().map(|r| r.0).collect();
        assert_eq!(ranks, [vec![0, 0, 1, 1], vec![0, 1]][j], "job {j}");
        let from_rows: Vec<u64> = rows.iter().map(|r| r.1).collect();
        assert_eq!(completed, &from_rows, "job {j}");
        assert!(completed.iter().all(|c| *c > 0), "job {j}: {completed:?}");
    }
    // Every rank got the same counts.
    for other in &results[1..] {
        let counts: Vec<&Vec<u64>> = other.iter().map(|j| &j.0).collect();
        assert_eq!(counts, jobs.iter().map(|j| &j.0).collect::<Vec<_>>());
    }
}
