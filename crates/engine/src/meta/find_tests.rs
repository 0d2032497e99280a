//! Tests of the find walk against a tree with known matches: each predicate alone and
//! together (IO500's -newer -size -name), types, several threads and ranks giving the
//! same counts, clear errors, and a tree left exactly as it was.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use iolab_comm::{Comm, InProcess, SingleProcess};
use iolab_core::result::{OpKind, PhaseKind, PhaseResult};
use iolab_core::spec::{EntryType, FindSpec, SizeTest};

use super::run_find;
use crate::clock::MonotonicClock;
use crate::phase::Env;

struct Tree {
    _tmp: tempfile::TempDir,
    top: PathBuf,
    reference: PathBuf,
}

fn write(path: &Path, len: usize, age: Option<u64>) {
    std::fs::write(path, vec![b'x'; len]).unwrap();
    if let Some(secs) = age {
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(secs))
            .unwrap();
    }
}

/// 11 entries below top; the reference file is 100 s old, f010 older still.
fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("timestamp");
    write(&reference, 0, Some(100));
    let top = tmp.path().join("top");
    for d in ["a/sub", "b"] {
        std::fs::create_dir_all(top.join(d)).unwrap();
    }
    write(&top.join("a/f01"), 3901, None);
    write(&top.join("a/f010"), 3901, Some(1000));
    write(&top.join("a/g01"), 100, None);
    write(&top.join("a/sub/x01"), 3901, None);
    write(&top.join("a/sub/.h01"), 3901, None);
    write(&top.join("b/y11"), 0, None);
    write(&top.join("top01"), 3901, None);
    std::os::unix::fs::symlink("a", top.join("link01")).unwrap();
    Tree {
        _tmp: tmp,
        top,
        reference,
    }
}

fn find_on(
    comm: &dyn Comm,
    spec: &FindSpec,
    top: &Path,
) -> Result<PhaseResult, crate::EngineError> {
    let stop = AtomicBool::new(false);
    let env = Env::new(comm, &stop);
    run_find(&env, &MonotonicClock, spec, top)
}

/// (scanned, matched)
fn counts(p: &PhaseResult) -> (u64, u64) {
    (
        p.op(OpKind::Scan).map(|o| o.ops).unwrap_or(0),
        p.extra["matched"] as u64,
    )
}

fn find(t: &Tree, f: impl Fn(&mut FindSpec)) -> (u64, u64) {
    let mut spec = FindSpec::default();
    f(&mut spec);
    let p = find_on(&SingleProcess::new(), &spec, &t.top).unwrap();
    assert_eq!(p.kind, PhaseKind::Find);
    assert_eq!(p.error_count, 0, "{:?}", p.errors);
    counts(&p)
}

#[test]
fn each_predicate_matches_what_find_would() {
    let t = tree();
    assert_eq!(find(&t, |_| {}), (11, 11));
    assert_eq!(find(&t, |s| s.name = Some("*01*".into())), (11, 7));
    assert_eq!(find(&t, |s| s.size = Some(SizeTest::bytes(3901))), (11, 5));
    assert_eq!(find(&t, |s| s.size = Some("-1k".parse().unwrap())), (11, 1));
    assert_eq!(find(&t, |s| s.newer = Some(t.reference.clone())), (11, 10));
    assert_eq!(
        find(&t, |s| {
            s.entry_type = EntryType::F;
            s.name = Some("*01*".into())
        }),
        (11, 6)
    );
    assert_eq!(find(&t, |s| s.entry_type = EntryType::D), (11, 3));
}

#[test]
fn io500_predicates_together_with_threads_and_ranks() {
    let t = tree();
    let io500 = |threads| FindSpec {
        newer: Some(t.reference.clone()),
        size: Some(SizeTest::bytes(3901)),
        name: Some("*01*".into()),
        threads,
        ..FindSpec::default()
    };
    // f01, sub/x01, sub/.h01 and top01: f010 is too old, g01 too small.
    let one = find_on(&SingleProcess::new(), &io500(1), &t.top).unwrap();
    assert_eq!(counts(&one), (11, 4));
    assert_eq!(one.params["size"], "3901c");
    let three = find_on(&SingleProcess::new(), &io500(3), &t.top).unwrap();
    assert_eq!((counts(&three), three.workers), ((11, 4), 3));
    let ranks = InProcess::run(
        2,
        |_| "node-a".into(),
        |comm| {
            let p = find_on(comm, &io500(2), &t.top).unwrap();
            let scans: Vec<u64> = p
                .per_rank
                .iter()
                .map(|r| r.ops[&OpKind::Scan].ops)
                .collect();
            (counts(&p), scans)
        },
    );
    // Top entries a, b, link01, top01 are dealt out by name: rank 0 walks a and
    // link01, rank 1 b and top01. Rank 0 holds both ranks' rows, rank 1 its own.
    assert_eq!(ranks[0].0, (11, 4));
    assert_eq!(ranks[0].1, [8, 3]);
    assert_eq!(ranks[1].1, [3]);
}

#[test]
fn a_large_directory_shared_by_the_walkers_is_counted_once() {
    // One directory of 20,000 files (IO500's mdtest-hard shape): its walker hands chunks
    // to idle walkers; every entry is still examined exactly once.
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("timestamp");
    write(&reference, 0, Some(100));
    let big = tmp.path().join("top/big");
    std::fs::create_dir_all(&big).unwrap();
    let mut expect = 0;
    for i in 0..20_000u32 {
        let name = format!("file.{i:05}");
        let len = if i % 3 == 0 { 3901 } else { 0 };
        std::fs::write(big.join(&name), vec![b'x'; len]).unwrap();
        if len == 3901 && name.contains("01") {
            expect += 1;
        }
    }
    let io500 = |threads| FindSpec {
        newer: Some(reference.clone()),
        size: Some(SizeTest::bytes(3901)),
        name: Some("*01*".into()),
        threads,
        ..FindSpec::default()
    };
    let top = tmp.path().join("top");
    for threads in [1, 2, 4] {
        let p = find_on(&SingleProcess::new(), &io500(threads), &top).unwrap();
        assert_eq!(counts(&p), (20_001, expect), "{threads} threads");
    }
    let ranks = InProcess::run(
        2,
        |_| "node-a".into(),
        |comm| counts(&find_on(comm, &io500(3), &big).unwrap()),
    );
    assert_eq!(ranks[0], (20_000, expect));
}

fn snapshot(top: &Path) -> Vec<(PathBuf, SystemTime, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![top.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            }
            out.push((e.path(), m.modified().unwrap(), m.len()));
        }
    }
    out.sort();
    out
}

#[test]
fn find_changes_nothing() {
    let t = tree();
    let before = snapshot(&t.top);
    find(&t, |s| {
        s.threads = 4;
        s.newer = Some(t.reference.clone())
    });
    assert_eq!(snapshot(&t.top), before);
}

#[test]
fn errors_name_the_option() {
    let t = tree();
    let comm = SingleProcess::new();
    let missing = find_on(&comm, &FindSpec::default(), &t.top.join("nope"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        missing,
        format!(
            "--dir {} does not exist; give the directory to walk",
            t.top.join("nope").display()
        )
    );
    let spec = FindSpec {
        newer: Some(t.top.join("absent")),
        ..FindSpec::default()
    };
    let newer = find_on(&comm, &spec, &t.top).unwrap_err().to_string();
    assert_eq!(
        newer,
        format!(
            "--newer {}: cannot read its modification time (No such file or directory); give an existing file",
            t.top.join("absent").display()
        )
    );
    let file = find_on(&comm, &FindSpec::default(), &t.top.join("top01"))
        .unwrap_err()
        .to_string();
    assert!(
        file.ends_with("is not a directory; give the directory to walk"),
        "{file}"
    );
}
