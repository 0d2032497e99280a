//! Engine tests of `iolab targets`: exact per-target bookkeeping on the null backend
//! with a per-thread fake clock (one target made slower by its clock, and found), real
//! directories and a device image, and several ranks each running their own node's
//! targets.

use std::cell::Cell;
use std::sync::atomic::AtomicBool;

use iolab_comm::{Comm, InProcess, SingleProcess};
use iolab_core::result::OpKind;
use iolab_core::spec::{BackendKind, DataSpec, RwKind, TargetEntry, TargetsSpec};
use iolab_core::units::{ByteCount, Nanos};

use super::*;
use iolab_engine::Clock;
use iolab_engine::Env;

/// Every worker thread has its own time, starting at START and advancing by its step
/// per reading (slower for the workers listed); other threads always read START. So a
/// worker doing N I/Os finishes at exactly (2N + 1) steps, whatever the interleaving.
struct ThreadClock {
    slow_workers: Vec<usize>,
    slow_step: u64,
}

const START: u64 = 1_000_000;
const STEP: u64 = 1000;

thread_local! {
    static NOW: Cell<u64> = const { Cell::new(START) };
}

impl Clock for ThreadClock {
    fn now(&self) -> Nanos {
        let worker = std::thread::current()
            .name()
            .and_then(|n| n.strip_prefix("iolab-w"))
            .and_then(|i| i.parse::<usize>().ok());
        let Some(w) = worker else {
            return Nanos(START);
        };
        let step = if self.slow_workers.contains(&w) {
            self.slow_step
        } else {
            STEP
        };
        NOW.with(|t| {
            t.set(t.get() + step);
            Nanos(t.get())
        })
    }
}

fn entry(id: &str, node: &str, path: &str) -> TargetEntry {
    TargetEntry {
        id: id.into(),
        node: node.into(),
        path: path.into(),
        rated: None,
    }
}

fn null_data(threads: u32) -> DataSpec {
    DataSpec {
        backend: BackendKind::Null,
        rw: RwKind::Write,
        threads,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::kib(64)),
        ..DataSpec::default()
    }
}

fn run_on<C: Clock>(
    comm: &dyn Comm,
    clock: &C,
    entries: &[TargetEntry],
    spec: &TargetsSpec,
    data: &DataSpec,
) -> Vec<TargetsPhase> {
    let stop = AtomicBool::new(false);
    let env = Env::new(comm, &stop);
    let opts = PrepareOptions {
        backend: data.backend,
        writes: true,
        allow_destroy: spec.allow_destroy,
        direct: data.direct,
    };
    let mut set = prepare_targets(comm, entries, opts).unwrap();
    let phases = run_targets(&env, clock, &mut set, spec, data).unwrap();
    cleanup_targets(comm, set, false).unwrap();
    phases
}

#[test]
fn per_target_bytes_and_time_of_the_slowest_thread() {
    let comm = SingleProcess::new();
    let host = comm.host().to_string();
    let entries: Vec<TargetEntry> = (1..=4)
        .map(|i| entry(&i.to_string(), &host, &format!("/t{i}")))
        .collect();
    // Two threads per target; worker 7 is target 4's second thread, 25 % slower.
    let clock = ThreadClock {
        slow_workers: vec![7],
        slow_step: 1250,
    };
    let phases = run_on(
        &comm,
        &clock,
        &entries,
        &TargetsSpec::default(),
        &null_data(2),
    );
    assert_eq!(phases.len(), 1);
    let p = &phases[0];
    assert_eq!(p.targets.len(), 4);
    for (i, t) in p.targets.iter().enumerate() {
        assert_eq!(t.name, format!("target {}", i + 1));
        assert_eq!(t.params["node"], host);
        let w = t.op(OpKind::Write).unwrap();
        assert_eq!(w.bytes, ByteCount::kib(128));
        assert_eq!(w.ops, 32);
        // 16 I/Os per thread: 33 clock steps; target 4 waits for its slow thread.
        let elapsed = if i == 3 { 33 * 1250 } else { 33 * STEP };
        assert_eq!(t.elapsed, Nanos(elapsed));
        assert_eq!(w.bandwidth.get(), 131072.0 * 1e9 / elapsed as f64);
        assert_eq!(t.extra["bytes_per_sec"], w.bandwidth.get());
    }
    assert_eq!(p.targets[3].first_done, Nanos(33 * STEP));
    let a = p.analysis.as_ref().unwrap();
    assert_eq!(a.slow_targets.len(), 1);
    assert_eq!(a.slow_targets[0].id, "4");
    assert!((a.slow_targets[0].below_median_percent - 20.0).abs() < 1e-9);
    assert_eq!(p.targets[3].extra["slow"], 1.0);
    assert_eq!(a.aggregate, p.summary.extra["aggregate_bytes_per_sec"]);
    // The summary keeps time and per-rank rows; operations live in the targets.
    assert!(p.summary.ops.is_empty());
    assert_eq!(p.summary.workers, 8);
    assert_eq!(p.summary.per_rank[0].ops[&OpKind::Write].bytes, 4 * 131072);
    assert!(p.summary.warnings[0].starts_with("target 4 on node "));
}

#[test]
fn uniform_targets_flag_nothing_and_one_at_a_time_adds_times() {
    let comm = SingleProcess::new();
    let entries: Vec<TargetEntry> = (1..=3).map(|i| entry(&i.to_string(), "", "/t")).collect();
    let entries: Vec<TargetEntry> = entries
        .into_iter()
        .enumerate()
        .map(|(i, mut e)| {
            e.path = format!("/t{i}").into();
            e
        })
        .collect();
    let clock = ThreadClock {
        slow_workers: Vec::new(),
        slow_step: STEP,
    };
    let spec = TargetsSpec {
        one_at_a_time: true,
        ..TargetsSpec::default()
    };
    let p = &run_on(&comm, &clock, &entries, &spec, &null_data(1))[0];
    assert!(p.analysis.as_ref().unwrap().is_clean());
    assert!(p.summary.warnings.is_empty(), "{:?}", p.summary.warnings);
    assert_eq!(p.summary.params["mode"], "one-at-a-time");
    assert_eq!(p.summary.elapsed, Nanos(3 * 33 * STEP));
    assert!(p.targets.iter().all(|t| t.elapsed == Nanos(33 * STEP)));
}

#[test]
fn node_names_of_one_machine_are_one_node() {
    // One machine, spelled three ways: by its full name, its short name and not at all.
    let hosts = |_: u32| "vm".to_string();
    let entries = vec![
        entry("1", "vm.example.org", "/a"),
        entry("2", "vm", "/b"),
        entry("3", "", "/c"),
    ];
    let results = InProcess::run(1, hosts, |comm| {
        let clock = ThreadClock {
            slow_workers: Vec::new(),
            slow_step: STEP,
        };
        run_on(
            comm,
            &clock,
            &entries,
            &TargetsSpec::default(),
            &null_data(1),
        )
    });
    let a = results[0][0].analysis.as_ref().unwrap();
    let nodes: Vec<&str> = a.targets.iter().map(|t| t.node.as_str()).collect();
    assert_eq!(nodes, vec!["vm", "vm", "vm"]);
    assert_eq!((a.min.node.as_str(), a.max.node.as_str()), ("vm", "vm"));
}

/// The ids of the targets this rank runs.
fn local_ids(comm: &dyn Comm, entries: &[TargetEntry]) -> Vec<String> {
    let opts = PrepareOptions {
        backend: BackendKind::Null,
        writes: true,
        allow_destroy: false,
        direct: false,
    };
    let set = prepare_targets(comm, entries, opts).unwrap();
    let ids = set
        .local
        .iter()
        .map(|t| t.target.entry.id.clone())
        .collect();
    cleanup_targets(comm, set, false).unwrap();
    ids
}

#[test]
fn ranks_run_the_targets_of_their_own_node() {
    let hosts = |r: u32| {
        if r < 2 {
            "h1".to_string()
        } else {
            "h2".to_string()
        }
    };
    let entries = vec![
        entry("a", "h1", "/a"),
        entry("b", "h2", "/b"),
        entry("c", "h1", "/c"),
        entry("d", "h1", "/d"),
        entry("e", "h2.cluster", "/e"),
    ];
    for one_at_a_time in [false, true] {
        let spec = TargetsSpec {
            one_at_a_time,
            ..TargetsSpec::default()
        };
        let results = InProcess::run(3, hosts, |comm| {
            let clock = ThreadClock {
                slow_workers: Vec::new(),
                slow_step: STEP,
            };
            let phases = run_on(comm, &clock, &entries, &spec, &null_data(1));
            (local_ids(comm, &entries), phases)
        });
        assert_eq!(results[0].0, vec!["a", "d"]);
        assert_eq!(results[1].0, vec!["c"]);
        assert_eq!(results[2].0, vec!["b", "e"]);
        // Rank 0 holds every target's row (it prints and stores them).
        for (_, phases) in &results[..1] {
            let p = &phases[0];
            let placed: Vec<(&str, &str)> = p
                .targets
                .iter()
                .map(|t| (t.params["id"].as_str(), t.params["host"].as_str()))
                .collect();
            assert_eq!(
                placed,
                vec![
                    ("a", "h1"),
                    ("b", "h2"),
                    ("c", "h1"),
                    ("d", "h1"),
                    ("e", "h2")
                ]
            );
            assert!(
                p.targets
                    .iter()
                    .all(|t| t.op(OpKind::Write).unwrap().bytes == ByteCount::kib(64))
            );
            assert_eq!(p.summary.ranks, 3);
        }
        assert_eq!(results[0].1[0].targets[1].params["rank"], "2");
    }
}

#[test]
fn directories_get_their_own_files_and_a_read_reuses_the_write() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let entries: Vec<TargetEntry> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| entry(&format!("t{i}"), "", d.path().to_str().unwrap()))
        .collect();
    let data = DataSpec {
        backend: BackendKind::Psync,
        rw: RwKind::Write,
        threads: 2,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::kib(32)),
        ..DataSpec::default()
    };
    let spec = TargetsSpec {
        write: true,
        read: true,
        ..TargetsSpec::default()
    };
    let comm = SingleProcess::new();
    let stop = AtomicBool::new(false);
    let env = Env::new(&comm, &stop);
    let opts = PrepareOptions {
        backend: BackendKind::Psync,
        writes: true,
        allow_destroy: false,
        direct: false,
    };
    let mut set = prepare_targets(&comm, &entries, opts).unwrap();
    let phases = run_targets(&env, &iolab_engine::MonotonicClock, &mut set, &spec, &data).unwrap();
    assert_eq!(phases.len(), 2);
    assert_eq!(phases[0].rw, RwKind::Write);
    assert_eq!(phases[1].rw, RwKind::Read);
    for (p, op) in [(&phases[0], OpKind::Write), (&phases[1], OpKind::Read)] {
        for t in &p.targets {
            assert_eq!(t.op(op).unwrap().bytes, ByteCount::kib(64), "{}", t.name);
            assert_eq!(t.error_count, 0);
        }
    }
    for (t, d) in set.local.iter().zip(&dirs) {
        assert_eq!(t.files.len(), 2);
        for f in &t.files {
            assert!(f.starts_with(d.path().join("iolab-work")));
            assert_eq!(std::fs::metadata(f).unwrap().len(), 32 * 1024);
            // The write recorded that the file holds complete data: the read reused it.
            let name = f.file_name().unwrap().to_string_lossy();
            assert!(f.with_file_name(format!(".{name}.iolab")).exists());
        }
    }
    cleanup_targets(&comm, set, false).unwrap();
    for d in &dirs {
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}

#[test]
fn a_regular_file_is_written_only_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    let mut held = vec![0u8; 256 * 1024];
    held[100] = 1;
    std::fs::write(&img, &held).unwrap();
    let entries = vec![entry("img", "", img.to_str().unwrap())];
    let comm = SingleProcess::new();
    let opts = PrepareOptions {
        backend: BackendKind::Psync,
        writes: true,
        allow_destroy: false,
        direct: false,
    };
    let err = prepare_targets(&comm, &entries, opts)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("target img: "), "{err}");
    assert!(
        err.contains("it holds data (a non-zero byte at offset 100;"),
        "{err}"
    );
    assert_eq!(std::fs::read(&img).unwrap(), held);
    let missing = vec![entry("x", "", "/nonexistent/iolab-target")];
    let err = prepare_targets(&comm, &missing, opts)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/nonexistent/iolab-target does not exist on"),
        "{err}"
    );

    let data = DataSpec {
        backend: BackendKind::Psync,
        rw: RwKind::Write,
        threads: 2,
        block_size: ByteCount::kib(4),
        size: None,
        ..DataSpec::default()
    };
    let spec = TargetsSpec {
        allow_destroy: true,
        ..TargetsSpec::default()
    };
    let p = &run_on(&comm, &iolab_engine::MonotonicClock, &entries, &spec, &data)[0];
    // The device's size split over its threads.
    assert_eq!(
        p.targets[0].op(OpKind::Write).unwrap().bytes,
        ByteCount::kib(256)
    );
    assert!(img.exists());
}
