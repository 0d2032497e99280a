//! Tests of the metadata workload on one rank: exact counts and latencies on the null
//! backend with a fake clock, the tree on disk, a remove phase that leaves nothing, a read
//! that catches a changed file, stonewall and wear-out, kept trees. Several ranks are in
//! `rank_tests`.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use iolab_comm::{Comm, SingleProcess};
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::{BackendKind, MetaItems, MetaOp, MetaSpec, TargetSpec};
use iolab_core::units::{ByteCount, Nanos, TimeSpan};

use super::*;
use crate::clock::{Clock, FakeClock, MonotonicClock};
use crate::phase::Env;
use crate::target::{PreparedTarget, prepare_target};
use run::DEFAULT_TREE;
use tree::{KeptTree, RECORD};

pub(super) fn spec(ops: &[MetaOp], threads: u32, files_per_dir: u64, dirs: u32) -> MetaSpec {
    MetaSpec {
        ops: ops.to_vec(),
        threads,
        files_per_dir,
        dirs_per_thread: Some(dirs),
        ..MetaSpec::default()
    }
}

pub(super) fn target(comm: &dyn Comm, dir: Option<&Path>) -> PreparedTarget {
    let t = TargetSpec {
        dir: dir.map(Path::to_path_buf),
        ..TargetSpec::default()
    };
    let kind = if dir.is_some() {
        BackendKind::Psync
    } else {
        BackendKind::Null
    };
    prepare_target(comm, &t, kind, true).unwrap()
}

pub(super) fn run_on(
    comm: &dyn Comm,
    clock: &impl Clock,
    s: &MetaSpec,
    t: &PreparedTarget,
    opts: &MetaOptions,
) -> Result<MetaOutcome, crate::EngineError> {
    let stop = AtomicBool::new(false);
    let env = Env::new(comm, &stop);
    run_meta(&env, clock, s, t, opts)
}

pub(super) fn ops(p: &PhaseResult, op: OpKind) -> u64 {
    p.op(op).map(|o| o.ops).unwrap_or(0)
}

/// Files below `dir`, as paths relative to it, sorted.
pub(super) fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

pub(super) fn root(base: &Path) -> PathBuf {
    base.join(crate::workdir::WORKDIR_NAME).join(DEFAULT_TREE)
}

#[test]
fn null_backend_exact_counts_latency_and_time() {
    let comm = SingleProcess::new();
    let all = [MetaOp::Create, MetaOp::Stat, MetaOp::Read, MetaOp::Remove];
    let null = |threads| MetaSpec {
        backend: iolab_core::spec::MetaBackendKind::Null,
        ..spec(&all, threads, 10, 3)
    };
    let opts = MetaOptions::default();
    let clock = FakeClock::new(Nanos(1000));
    let out = run_on(&comm, &clock, &null(1), &target(&comm, None), &opts).unwrap();
    let names: Vec<&str> = out.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["create", "stat", "read", "remove"]);
    let kinds = [OpKind::Create, OpKind::Stat, OpKind::Read, OpKind::Remove];
    for (p, op) in out.phases.iter().zip(kinds) {
        assert_eq!(p.kind, iolab_core::result::PhaseKind::Meta);
        let o = p.op(op).unwrap();
        assert_eq!(o.ops, 30, "{}", p.name);
        // Stamped once before and once after each operation: one clock step.
        assert_eq!((o.latency.min, o.latency.max), (Nanos(1000), Nanos(1000)));
        // The start, two readings per operation and the finish.
        assert_eq!(p.elapsed, Nanos(61_000));
        assert_eq!(o.iops.get(), 30.0 / 61e-6);
        assert_eq!(p.params["items"], "30");
        assert_eq!(p.params["dirs_per_thread"], "3");
        assert_eq!(p.error_count + p.verify_failures, 0);
    }
    assert_eq!(out.created, vec![0]);
    // Two threads: twice the files, each phase exactly.
    let out = run_on(&comm, &clock, &null(2), &target(&comm, None), &opts).unwrap();
    for (p, op) in out.phases.iter().zip(kinds) {
        assert_eq!((ops(p, op), p.workers), (60, 2), "{}", p.name);
    }
}

#[test]
fn create_builds_the_tree_on_disk() {
    let base = tempfile::tempdir().unwrap();
    let comm = SingleProcess::new();
    let t = target(&comm, Some(base.path()));
    let s = MetaSpec {
        depth: 2,
        branching: 2,
        file_size: ByteCount(100),
        ..spec(&[MetaOp::Create], 2, 2, 5)
    };
    let out = run_on(&comm, &MonotonicClock, &s, &t, &MetaOptions::default()).unwrap();
    assert_eq!(ops(&out.phases[0], OpKind::Create), 20);
    assert_eq!(
        out.phases[0].op(OpKind::Create).unwrap().bytes,
        ByteCount(2000)
    );
    let files = files_under(&root(base.path()));
    assert_eq!(files.len(), 20);
    assert!(
        files.contains(&"test-dir.0-0/mdtest_tree.0.0/b0/b0/d0/file.mdtest.0.0".to_string()),
        "{files:?}"
    );
    assert!(
        files.contains(&"test-dir.0-0/mdtest_tree.1.0/b0/b0/d4/file.mdtest.1.1".to_string()),
        "{files:?}"
    );
    assert!(
        files.contains(&"test-dir.0-0/mdtest_tree.1.0/b1/b1/d3/file.mdtest.1.0".to_string()),
        "{files:?}"
    );
    let size = std::fs::metadata(
        root(base.path()).join("test-dir.0-0/mdtest_tree.0.0/b0/b1/d1/file.mdtest.0.1"),
    )
    .unwrap()
    .len();
    assert_eq!(size, 100);
    // Kept: the tree stays with a record of what it holds.
    finish_meta(&comm, &s, &t, &MetaOptions::default(), &out, true).unwrap();
    let record: KeptTree =
        serde_json::from_str(&std::fs::read_to_string(root(base.path()).join(RECORD)).unwrap())
            .unwrap();
    assert_eq!(record.created, vec![10, 10]);
    assert_eq!(files_under(&root(base.path())).len(), 21);
}

#[test]
fn a_remove_phase_leaves_nothing_behind() {
    let base = tempfile::tempdir().unwrap();
    let comm = SingleProcess::new();
    let t = target(&comm, Some(base.path()));
    let all = [
        MetaOp::Mkdir,
        MetaOp::Create,
        MetaOp::Stat,
        MetaOp::Read,
        MetaOp::Remove,
        MetaOp::Rmdir,
    ];
    let s = MetaSpec {
        depth: 1,
        branching: 3,
        file_size: ByteCount(3901),
        ..spec(&all, 2, 4, 4)
    };
    let out = run_on(&comm, &MonotonicClock, &s, &t, &MetaOptions::default()).unwrap();
    let counts: Vec<(String, u64)> = out
        .phases
        .iter()
        .map(|p| (p.name.clone(), p.ops.iter().map(|o| o.ops).sum()))
        .collect();
    // mkdir: t<w>, 3 intermediate and 4 leaves per thread.
    let want = [
        ("mkdir", 16),
        ("create", 32),
        ("stat", 32),
        ("read", 32),
        ("remove", 32),
        ("rmdir", 16),
    ];
    let want: Vec<(String, u64)> = want.iter().map(|(n, c)| (n.to_string(), *c)).collect();
    assert_eq!(counts, want);
    assert_eq!(
        out.phases[3].op(OpKind::Read).unwrap().bytes,
        ByteCount(32 * 3901)
    );
    assert!(!out.tree_exists);
    // Only the tree root and mdtest's test-dir.0-0 are left for cleanup.
    assert_eq!(files_under(&root(base.path())), Vec::<String>::new());
    assert!(root(base.path()).join("test-dir.0-0").is_dir());
    finish_meta(&comm, &s, &t, &MetaOptions::default(), &out, false).unwrap();
    assert!(!root(base.path()).exists());
}

/// mdtest -D: the items are directories, made, stat'ed and removed by name as mdtest
/// names them; a tree kept after create is removed whole at the end (its directory
/// items too), and an item that is not a directory fails the stat's check.
#[test]
fn directory_items_are_made_stated_and_removed() {
    let base = tempfile::tempdir().unwrap();
    let comm = SingleProcess::new();
    let t = target(&comm, Some(base.path()));
    let s = MetaSpec {
        items: MetaItems::Dirs,
        ..spec(&[MetaOp::Create, MetaOp::Stat], 1, 5, 2)
    };
    let out = run_on(&comm, &MonotonicClock, &s, &t, &MetaOptions::default()).unwrap();
    assert_eq!(ops(&out.phases[0], OpKind::Create), 10);
    assert_eq!(out.phases[0].params["items"], "dirs");
    assert_eq!(ops(&out.phases[1], OpKind::Stat), 10);
    assert_eq!(out.phases[1].verify_failures, 0);
    let leaf = root(base.path()).join("test-dir.0-0/mdtest_tree.0.0/d1");
    let mut made: Vec<String> = std::fs::read_dir(&leaf)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    made.sort();
    assert_eq!(made.len(), 5);
    assert_eq!(made[0], "dir.mdtest.0.0");
    assert!(leaf.join("dir.mdtest.0.4").is_dir());
    // Cleanup removes the directory items and the tree.
    finish_meta(&comm, &s, &t, &MetaOptions::default(), &out, false).unwrap();
    assert!(!root(base.path()).exists());

    // An item that is a file where create made a directory fails the stat's check.
    let keep = MetaSpec {
        items: MetaItems::Dirs,
        ..spec(&[MetaOp::Create], 1, 3, 1)
    };
    let out = run_on(&comm, &MonotonicClock, &keep, &t, &MetaOptions::default()).unwrap();
    finish_meta(&comm, &keep, &t, &MetaOptions::default(), &out, true).unwrap();
    let item = root(base.path()).join("test-dir.0-0/mdtest_tree.0.0/dir.mdtest.0.1");
    std::fs::remove_dir(&item).unwrap();
    std::fs::write(&item, b"").unwrap();
    let stat = MetaSpec {
        items: MetaItems::Dirs,
        ..spec(&[MetaOp::Stat, MetaOp::Remove], 1, 3, 1)
    };
    let out = run_on(&comm, &MonotonicClock, &stat, &t, &MetaOptions::default()).unwrap();
    assert_eq!(out.phases[0].verify_failures, 1);
    assert!(
        out.phases[0].errors[0]
            .message
            .contains("not the directory create made")
    );
    // rmdir of the file fails: the phase says so (and leaves the user's file alone).
    assert!(out.phases[1].error_count > 0);
}

#[test]
fn cleanup_removes_the_tree_without_a_remove_phase() {
    let base = tempfile::tempdir().unwrap();
    let comm = SingleProcess::new();
    let t = target(&comm, Some(base.path()));
    let s = spec(&[MetaOp::Create, MetaOp::Stat], 1, 5, 3);
    let out = run_on(&comm, &MonotonicClock, &s, &t, &MetaOptions::default()).unwrap();
    // A file of the user's in a leaf is left alone, with its directories.
    std::fs::write(
        root(base.path()).join("test-dir.0-0/mdtest_tree.0.0/d1/notes.txt"),
        b"mine",
    )
    .unwrap();
    let warnings = finish_meta(&comm, &s, &t, &MetaOptions::default(), &out, false).unwrap();
    assert_eq!(
        files_under(&root(base.path())),
        vec!["test-dir.0-0/mdtest_tree.0.0/d1/notes.txt".to_string()]
    );
    assert!(
        warnings[0].starts_with("left 4 directories that hold entries iolab did not create"),
        "{warnings:?}"
    );
}

#[test]
fn a_read_catches_a_changed_file() {
    let base = tempfile::tempdir().unwrap();
    let comm = SingleProcess::new();
    let t = target(&comm, Some(base.path()));
    let s = MetaSpec {
        file_size: ByteCount(3901),
        ..spec(&[MetaOp::Create], 1, 5, 2)
    };
    let made = run_on(&comm, &MonotonicClock, &s, &t, &MetaOptions::default()).unwrap();
    finish_meta(&comm, &s, &t, &MetaOptions::default(), &made, true).unwrap();
    let victim = root(base.path()).join("test-dir.0-0/mdtest_tree.0.0/d1/file.mdtest.0.3");
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[2000] ^= 0xFF;
    std::fs::write(&victim, &bytes).unwrap();
    let read = MetaSpec {
        ops: vec![MetaOp::Read, MetaOp::Remove],
        ..s.clone()
    };
    let out = run_on(&comm, &MonotonicClock, &read, &t, &MetaOptions::default()).unwrap();
    let p = &out.phases[0];
    assert_eq!(ops(p, OpKind::Read), 10);
    assert_eq!(p.verify_failures, 1);
    assert_eq!(p.errors[0].path, victim.display().to_string());
    assert!(
        p.errors[0].message.contains("first at byte 2000"),
        "{}",
        p.errors[0].message
    );
    assert_eq!(ops(&out.phases[1], OpKind::Remove), 10);
    finish_meta(&comm, &read, &t, &MetaOptions::default(), &out, false).unwrap();
    assert!(!root(base.path()).exists());
}

#[test]
fn stonewall_later_phases_work_on_exactly_what_was_created() {
    let base = tempfile::tempdir().unwrap();
    let comm = SingleProcess::new();
    let t = target(&comm, Some(base.path()));
    let s = MetaSpec {
        runtime: Some(TimeSpan(Nanos::from_micros(50))),
        ..spec(
            &[MetaOp::Create, MetaOp::Stat, MetaOp::Read, MetaOp::Remove],
            1,
            10,
            10,
        )
    };
    let clock = FakeClock::new(Nanos(1000));
    let out = run_on(
        &comm,
        &clock,
        &s,
        &t,
        &MetaOptions {
            name_prefix: Some("md".into()),
            ..MetaOptions::default()
        },
    )
    .unwrap();
    // Two clock readings per create: the 25th ends exactly at the 50 µs deadline.
    let created = ops(&out.phases[0], OpKind::Create);
    assert_eq!(created, 25);
    assert_eq!(out.phases[0].params["stonewall"], "50us");
    assert_eq!(out.phases[0].params["items"], "100");
    assert_eq!(out.phases[1].name, "md-stat");
    for (p, op) in out.phases[1..]
        .iter()
        .zip([OpKind::Stat, OpKind::Read, OpKind::Remove])
    {
        assert_eq!(ops(p, op), 25, "{}", p.name);
        assert_eq!(p.error_count, 0, "{:?}", p.errors);
    }
}

#[test]
fn stonewall_files_on_disk_and_wear_out_evens_the_workers() {
    let base = tempfile::tempdir().unwrap();
    let comm = SingleProcess::new();
    let t = target(&comm, Some(base.path()));
    let one = MetaSpec {
        runtime: Some(TimeSpan(Nanos::from_micros(50))),
        ..spec(&[MetaOp::Create], 1, 10, 10)
    };
    let out = run_on(
        &comm,
        &FakeClock::new(Nanos(1000)),
        &one,
        &t,
        &MetaOptions::default(),
    )
    .unwrap();
    let files = files_under(&root(base.path()));
    assert_eq!(files.len(), 25);
    assert!(
        files.contains(&"test-dir.0-0/mdtest_tree.0.0/d2/file.mdtest.0.4".to_string())
            && !files.contains(&"test-dir.0-0/mdtest_tree.0.0/d2/file.mdtest.0.5".to_string())
    );
    finish_meta(&comm, &one, &t, &MetaOptions::default(), &out, false).unwrap();

    let worn = MetaSpec {
        runtime: Some(TimeSpan(Nanos::from_micros(200))),
        wear_out: true,
        ..spec(&[MetaOp::Create, MetaOp::Stat], 3, 100, 2)
    };
    let out = run_on(
        &comm,
        &FakeClock::new(Nanos(1000)),
        &worn,
        &t,
        &MetaOptions::default(),
    )
    .unwrap();
    let most = *out.created.iter().max().unwrap();
    assert!(most > 0 && most < 200, "{:?}", out.created);
    assert_eq!(
        out.created,
        vec![most; 3],
        "wear-out catches every worker up"
    );
    assert_eq!(ops(&out.phases[1], OpKind::Stat), 3 * most);
    finish_meta(&comm, &worn, &t, &MetaOptions::default(), &out, false).unwrap();
}

#[test]
fn kept_trees_are_reused_and_protected() {
    let base = tempfile::tempdir().unwrap();
    let comm = SingleProcess::new();
    let t = target(&comm, Some(base.path()));
    let s = spec(&[MetaOp::Stat], 1, 3, 1);
    let err = run_on(&comm, &MonotonicClock, &s, &t, &MetaOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("there is no tree to work on in "), "{err}");
    let create = spec(&[MetaOp::Create], 1, 3, 1);
    let out = run_on(&comm, &MonotonicClock, &create, &t, &MetaOptions::default()).unwrap();
    finish_meta(&comm, &create, &t, &MetaOptions::default(), &out, true).unwrap();
    let again = run_on(&comm, &MonotonicClock, &create, &t, &MetaOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        again.contains("holds a tree kept by an earlier run"),
        "{again}"
    );
    let other = spec(&[MetaOp::Stat], 1, 4, 1);
    let mismatch = run_on(&comm, &MonotonicClock, &other, &t, &MetaOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        mismatch.contains("3 files per dir") && mismatch.contains("4 files per dir"),
        "{mismatch}"
    );
    let rmdir = spec(&[MetaOp::Rmdir], 1, 3, 1);
    let full = run_on(&comm, &MonotonicClock, &rmdir, &t, &MetaOptions::default())
        .unwrap_err()
        .to_string();
    assert!(full.contains("still holds 3 files"), "{full}");
    // Stat on a kept tree leaves it kept; remove,rmdir empties it.
    let out = run_on(&comm, &MonotonicClock, &s, &t, &MetaOptions::default()).unwrap();
    assert_eq!(ops(&out.phases[0], OpKind::Stat), 3);
    finish_meta(&comm, &s, &t, &MetaOptions::default(), &out, false).unwrap();
    assert!(root(base.path()).join(RECORD).exists());
    let gone = spec(&[MetaOp::Remove, MetaOp::Rmdir], 1, 3, 1);
    let out = run_on(&comm, &MonotonicClock, &gone, &t, &MetaOptions::default()).unwrap();
    finish_meta(&comm, &gone, &t, &MetaOptions::default(), &out, false).unwrap();
    assert!(!root(base.path()).exists());
}
