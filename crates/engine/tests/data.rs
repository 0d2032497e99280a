//! Engine tests: exact numbers on the null backend with a fake clock, and real files on
//! psync/io_uring with byte counts, file contents and verification.

use std::sync::atomic::AtomicBool;

use iolab_comm::SingleProcess;
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::{BackendKind, DataSpec, Layout, Placement, RandomKind, RwKind, TargetSpec};
use iolab_core::units::{ByteCount, Nanos, TimeSpan};
use iolab_engine::{DataOptions, run_data};
use iolab_engine::{Env, FakeClock, MonotonicClock, prepare_target};

fn null_spec() -> DataSpec {
    DataSpec {
        backend: BackendKind::Null,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::mib(4)),
        ..DataSpec::default()
    }
}

fn run_with(
    spec: &DataSpec,
    target: &TargetSpec,
    clock: &dyn iolab_engine::Clock,
) -> Vec<PhaseResult> {
    let comm = SingleProcess::new();
    let prepared = prepare_target(&comm, target, spec.backend, true).unwrap();
    let stop = AtomicBool::new(false);
    let env = Env::new(&comm, &stop);
    run_data(
        &env,
        &Clocked(clock),
        spec,
        &prepared,
        &DataOptions::default(),
    )
    .unwrap()
    .phases
}

/// Lets a test pick its clock at run time.
struct Clocked<'a>(&'a dyn iolab_engine::Clock);

impl iolab_engine::Clock for Clocked<'_> {
    fn now(&self) -> Nanos {
        self.0.now()
    }
    fn sleep(&self, span: Nanos) {
        self.0.sleep(span)
    }
}

/// On the null backend with a clock that steps `step` ns per reading.
fn run_fake(spec: &DataSpec, step: u64) -> Vec<PhaseResult> {
    run_with(spec, &TargetSpec::default(), &FakeClock::new(Nanos(step)))
}

/// On real files with the real clock.
fn run_real(spec: &DataSpec, target: &TargetSpec) -> Vec<PhaseResult> {
    run_with(spec, target, &MonotonicClock)
}

#[test]
fn a_size_that_is_not_whole_blocks_moves_whole_blocks_and_says_so() {
    let spec = DataSpec {
        size: Some(ByteCount(10_000)),
        threads: 2,
        ..null_spec()
    };
    let p = &run_fake(&spec, 100)[0];
    assert_eq!(p.op(OpKind::Read).unwrap().bytes, ByteCount(2 * 8192));
    assert!(
        p.warnings.iter().any(|w| w
            == "--size of 10000 bytes is not a whole number of 4096-byte blocks: 8192 bytes per thread are used"),
        "{:?}",
        p.warnings
    );
    let whole = &run_fake(&null_spec(), 100)[0];
    assert!(
        !whole.warnings.iter().any(|w| w.contains("whole number")),
        "{:?}",
        whole.warnings
    );
}

#[test]
fn null_backend_exact_counts_latency_and_time() {
    let phases = run_fake(&null_spec(), 1000);
    let p = &phases[0];
    let read = p.op(OpKind::Read).unwrap();
    assert_eq!(read.ops, 1024);
    assert_eq!(read.bytes, ByteCount::mib(4));
    // Every I/O is stamped once before and once after: exactly one clock step.
    assert_eq!(read.latency.min, Nanos(1000));
    assert_eq!(read.latency.max, Nanos(1000));
    assert_eq!(read.latency.p99_99, Nanos(1000));
    // Start, two stamps per I/O, and the finish: 2049 steps after the start.
    assert_eq!(p.elapsed, Nanos(2_049_000));
    assert_eq!(read.iops.get(), 1024.0 / 2.049e-3);
    assert_eq!(p.first_done, p.elapsed);
    assert_eq!(p.workers, 1);
    assert!(p.op(OpKind::Write).is_none());
}

#[test]
fn queue_depth_batches_share_their_stamps() {
    let mut spec = null_spec();
    spec.queue_depth = 8;
    let phases = run_fake(&spec, 1000);
    let read = phases[0].op(OpKind::Read).unwrap();
    assert_eq!(read.ops, 1024);
    assert_eq!(read.latency.max, Nanos(1000));
    // 128 batches of 8, two stamps each.
    assert_eq!(phases[0].elapsed, Nanos((2 * 128 + 1) * 1000));
}

#[test]
fn a_time_based_run_stops_at_its_runtime() {
    let mut spec = null_spec();
    spec.runtime = Some(TimeSpan(Nanos::from_millis(1)));
    let phases = run_fake(&spec, 1000);
    // 1 ms of 2 µs I/Os; it loops past the 1024 blocks of its file.
    let read = phases[0].op(OpKind::Read).unwrap();
    assert_eq!(read.ops, 500);
    let mut longer = spec.clone();
    longer.runtime = Some(TimeSpan(Nanos::from_millis(10)));
    let phases = run_fake(&longer, 1000);
    assert_eq!(phases[0].op(OpKind::Read).unwrap().ops, 5000);
}

#[test]
fn total_size_is_split_exactly_and_mixes_follow_the_percentage() {
    let mut spec = null_spec();
    spec.size = None;
    spec.total_size = Some(ByteCount::kib(4 * 1001));
    spec.threads = 3;
    spec.rw = RwKind::Randrw;
    spec.rwmix_read = 70;
    let phases = run_fake(&spec, 10);
    let p = &phases[0];
    let reads = p.op(OpKind::Read).unwrap().ops;
    let writes = p.op(OpKind::Write).unwrap().ops;
    assert_eq!(reads + writes, 1001);
    assert!((630..770).contains(&reads), "{reads} reads of 1001");
    assert_eq!(p.workers, 3);
    assert_eq!(p.per_rank[0].ops[&OpKind::Read].ops, reads);
}

#[test]
fn the_timeline_adds_up_to_the_totals() {
    let mut spec = null_spec();
    spec.threads = 2;
    spec.size = Some(ByteCount::mib(64));
    // 100 µs per stamp: the phase spans several one-second intervals.
    let phases = run_fake(&spec, 100_000);
    let p = &phases[0];
    let series = p.timeline.series(OpKind::Read).unwrap();
    assert!(series.ops.len() > 3, "{}", series.ops.len());
    assert_eq!(
        series.ops.iter().sum::<u64>(),
        p.op(OpKind::Read).unwrap().ops
    );
    assert_eq!(series.bytes.iter().sum::<u64>(), ByteCount::mib(128).get());
}

fn dir_target(dir: &std::path::Path, keep: bool) -> TargetSpec {
    TargetSpec {
        dir: Some(dir.to_path_buf()),
        keep,
        ..TargetSpec::default()
    }
}

fn files_in(dir: &std::path::Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir.join("iolab-work"))
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .filter(|(n, _)| n.starts_with("data"))
        .collect();
    v.sort();
    v
}

#[test]
fn a_sequential_write_writes_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let spec = DataSpec {
        rw: RwKind::Write,
        threads: 2,
        block_size: ByteCount::kib(64),
        size: Some(ByteCount::mib(1)),
        fsync_at_end: true,
        ..DataSpec::default()
    };
    let phases = run_real(&spec, &dir_target(dir.path(), true));
    let p = &phases[0];
    let w = p.op(OpKind::Write).unwrap();
    assert_eq!(w.ops, 32);
    assert_eq!(w.bytes, ByteCount::mib(2));
    assert_eq!(p.op(OpKind::Fsync).unwrap().ops, 2);
    assert_eq!(
        files_in(dir.path()),
        vec![
            ("data.r0.t0".into(), 1 << 20),
            ("data.r0.t1".into(), 1 << 20)
        ]
    );
    // Incompressible and never the same 4 KiB twice.
    let data = std::fs::read(dir.path().join("iolab-work/data.r0.t0")).unwrap();
    let mut blocks: Vec<&[u8]> = data.chunks(4096).collect();
    blocks.sort();
    blocks.dedup();
    assert_eq!(blocks.len(), 256);
}

#[test]
fn a_read_lays_out_its_files_first_and_reads_them_whole() {
    let dir = tempfile::tempdir().unwrap();
    let spec = DataSpec {
        rw: RwKind::Randread,
        random: RandomKind::FullCoverage,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::kib(512)),
        ..DataSpec::default()
    };
    let phases = run_real(&spec, &dir_target(dir.path(), true));
    assert_eq!(phases[0].op(OpKind::Read).unwrap().ops, 128);
    assert_eq!(
        files_in(dir.path()),
        vec![("data.r0.t0".into(), 512 * 1024)]
    );
    let data = std::fs::read(dir.path().join("iolab-work/data.r0.t0")).unwrap();
    assert!(
        data.chunks(4096).all(|c| c.iter().any(|b| *b != 0)),
        "laid-out files have no holes"
    );
}

#[test]
fn shared_strided_file_is_covered_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let spec = DataSpec {
        rw: RwKind::Write,
        threads: 3,
        layout: Layout::Shared,
        placement: Placement::Strided,
        block_size: ByteCount(47008),
        size: Some(ByteCount(47008 * 10)),
        verify: true,
        ..DataSpec::default()
    };
    let phases = run_real(&spec, &dir_target(dir.path(), true));
    assert_eq!(
        phases.len(),
        2,
        "a --verify write is followed by its read-back"
    );
    assert_eq!(phases[0].op(OpKind::Write).unwrap().ops, 30);
    assert_eq!(phases[1].name, "verify");
    assert_eq!(phases[1].op(OpKind::Read).unwrap().ops, 30);
    assert_eq!(phases[1].verify_failures, 0);
    assert_eq!(
        files_in(dir.path()),
        vec![("data.shared".into(), 47008 * 30)]
    );
}

#[test]
fn verify_catches_a_corrupted_block_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let write = DataSpec {
        rw: RwKind::Write,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::kib(64)),
        verify: true,
        ..DataSpec::default()
    };
    let phases = run_real(&write, &dir_target(dir.path(), true));
    assert_eq!(phases[1].verify_failures, 0);
    let path = dir.path().join("iolab-work/data.r0.t0");
    let mut data = std::fs::read(&path).unwrap();
    data[5 * 4096 + 100] ^= 0xFF;
    std::fs::write(&path, data).unwrap();
    let read = DataSpec {
        rw: RwKind::Read,
        ..write
    };
    let phases = run_real(&read, &dir_target(dir.path(), true));
    let p = &phases[0];
    assert_eq!(p.verify_failures, 1);
    assert_eq!(p.errors[0].offset, Some(5 * 4096));
    assert!(
        p.errors[0].path.ends_with("iolab-work/data.r0.t0"),
        "{}",
        p.errors[0].path
    );
    assert!(
        p.errors[0].message.contains("checksum mismatch"),
        "{}",
        p.errors[0].message
    );
}

#[test]
fn io_uring_with_direct_io_moves_the_same_bytes() {
    if let Err(why) = iolab_backend::uring_available() {
        eprintln!("SKIPPED: io_uring unavailable: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    if iolab_backend::files::fs_type(dir.path()).unwrap() == "tmpfs" {
        eprintln!("SKIPPED: tmpfs does not do direct I/O");
        return;
    }
    let spec = DataSpec {
        rw: RwKind::Randwrite,
        random: RandomKind::FullCoverage,
        backend: BackendKind::Uring,
        queue_depth: 16,
        direct: true,
        verify: true,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::mib(2)),
        ..DataSpec::default()
    };
    let phases = run_real(&spec, &dir_target(dir.path(), false));
    assert_eq!(phases[0].op(OpKind::Write).unwrap().ops, 512);
    assert_eq!(phases[1].op(OpKind::Read).unwrap().ops, 512);
    assert_eq!(phases[1].verify_failures, 0);
    assert_eq!(phases[0].error_count, 0);
}

#[test]
fn fsync_every_n_writes_at_any_queue_depth() {
    // fio's fsync=N: one fsync after every N writes, also with many writes in flight.
    let dir = tempfile::tempdir().unwrap();
    let mut backends = vec![(BackendKind::Psync, 1)];
    if iolab_backend::uring_available().is_ok() {
        backends.extend([(BackendKind::Uring, 1), (BackendKind::Uring, 16)]);
    }
    for (backend, queue_depth) in backends {
        for every in [1, 7, 10] {
            let spec = DataSpec {
                rw: RwKind::Write,
                backend,
                queue_depth,
                block_size: ByteCount::kib(4),
                size: Some(ByteCount::kib(4 * 256)),
                fsync_every: Some(every),
                ..DataSpec::default()
            };
            let phases = run_real(&spec, &dir_target(dir.path(), false));
            assert_eq!(phases[0].op(OpKind::Write).unwrap().ops, 256);
            assert_eq!(
                phases[0].op(OpKind::Fsync).unwrap().ops,
                256 / every,
                "{backend:?} QD{queue_depth} every {every}"
            );
        }
    }
}

#[test]
fn a_stonewall_cuts_a_size_based_phase() {
    let mut spec = null_spec();
    spec.size = Some(ByteCount::gib(1));
    spec.stonewall = Some(TimeSpan(Nanos::from_millis(1)));
    let phases = run_fake(&spec, 1000);
    assert_eq!(phases[0].op(OpKind::Read).unwrap().ops, 500);
}

#[test]
fn a_read_after_a_stonewalled_write_reads_exactly_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir_target(dir.path(), true);
    let comm = SingleProcess::new();
    let prepared = prepare_target(&comm, &target, BackendKind::Psync, true).unwrap();
    let stop = AtomicBool::new(false);
    let env = Env::new(&comm, &stop);
    let write = DataSpec {
        rw: RwKind::Write,
        block_size: ByteCount::kib(64),
        size: Some(ByteCount::gib(64)),
        stonewall: Some(TimeSpan(Nanos::from_millis(300))),
        verify: true,
        ..DataSpec::default()
    };
    let opts = DataOptions {
        no_verify_pass: true,
        ..DataOptions::default()
    };
    let w = run_data(&env, &MonotonicClock, &write, &prepared, &opts).unwrap();
    let written = w.completed.clone();
    assert!(written[0] > 0);
    let file = dir.path().join("iolab-work/data.r0.t0");
    let before = std::fs::metadata(&file).unwrap().modified().unwrap();
    assert_eq!(std::fs::metadata(&file).unwrap().len(), written[0] * 65536);
    let read = DataSpec {
        rw: RwKind::Read,
        stonewall: None,
        ..write
    };
    let r = run_data(
        &env,
        &MonotonicClock,
        &read,
        &prepared,
        &DataOptions {
            written_blocks: Some(written.clone()),
            ..opts
        },
    )
    .unwrap();
    let p = &r.phases[0];
    assert_eq!(p.op(OpKind::Read).unwrap().ops, written[0]);
    assert_eq!(p.verify_failures, 0, "the blocks the write wrote, checked");
    assert_eq!(
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        before,
        "not laid out again"
    );
}

/// A file prepared for reading only is never written, whatever the phase asks: not by a
/// write, and not by the layout a verified read needs first.
#[test]
fn a_target_prepared_for_reading_is_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.bin");
    let data: Vec<u8> = (0..(256u32 << 10)).map(|i| (i % 251) as u8).collect();
    std::fs::write(&file, &data).unwrap();
    let target = TargetSpec {
        device: Some(file.clone()),
        ..TargetSpec::default()
    };
    let comm = SingleProcess::new();
    let prepared = prepare_target(&comm, &target, BackendKind::Psync, false).unwrap();
    let stop = AtomicBool::new(false);
    let env = Env::new(&comm, &stop);
    for (rw, verify) in [(RwKind::Read, true), (RwKind::Write, false)] {
        let spec = DataSpec {
            rw,
            verify,
            block_size: ByteCount::kib(4),
            ..DataSpec::default()
        };
        let err = run_data(
            &env,
            &MonotonicClock,
            &spec,
            &prepared,
            &DataOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("refusing to write to") && err.contains("prepared for reading only"),
            "{rw:?}: {err}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), data, "{rw:?}: written");
    }
    // A plain read reads it as it is.
    let read = DataSpec {
        rw: RwKind::Read,
        block_size: ByteCount::kib(4),
        ..DataSpec::default()
    };
    let r = run_data(
        &env,
        &MonotonicClock,
        &read,
        &prepared,
        &DataOptions::default(),
    )
    .unwrap();
    assert_eq!(
        r.phases[0].op(OpKind::Read).unwrap().bytes,
        ByteCount(256 << 10)
    );
    assert_eq!(std::fs::read(&file).unwrap(), data);
}

/// Mixed workloads whose reads and writes have sizes and sequences of their own.
#[path = "data/mixed.rs"]
mod mixed;

/// Sizes drawn per I/O, skewed offsets, pacing, think time and the minimum rate.
#[path = "data/access.rs"]
mod access;

/// The plain loops against the full loop.
#[path = "data/plain.rs"]
mod plain;
