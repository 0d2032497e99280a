//! Tests of pfind's walk: what it counts (entries that are not directories) and matches,
//! the same figures on one rank and on several sharing the walk by stealing, a directory
//! larger than the queue, and the refusal of threads.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use iolab_comm::{Comm, InProcess, SingleProcess};
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::{FindSpec, FindWalk, SizeTest};

use super::run_find;
use crate::clock::MonotonicClock;
use crate::phase::Env;

fn pfind(comm: &dyn Comm, spec: &FindSpec, top: &Path) -> PhaseResult {
    let stop = AtomicBool::new(false);
    let env = Env::new(comm, &stop);
    let p = run_find(&env, &MonotonicClock, spec, top).unwrap();
    assert_eq!(p.error_count, 0, "{:?}", p.errors);
    assert_eq!(p.params["walk"], "pfind");
    p
}

/// (entries counted, matched)
fn counts(p: &PhaseResult) -> (u64, u64) {
    (
        p.op(OpKind::Scan).map(|o| o.ops).unwrap_or(0),
        p.extra["matched"] as u64,
    )
}

fn io500(reference: &Path) -> FindSpec {
    FindSpec {
        newer: Some(reference.to_path_buf()),
        size: Some(SizeTest::bytes(3901)),
        name: Some("*01*".into()),
        walk: FindWalk::Pfind,
        ..FindSpec::default()
    }
}

fn old_file(path: &Path) {
    std::fs::write(path, b"").unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(100))
        .unwrap();
}

#[test]
fn pfind_counts_what_is_not_a_directory_and_matches_as_pfind() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("timestamp");
    old_file(&reference);
    let top = tmp.path().join("top");
    std::fs::create_dir_all(top.join("a/sub")).unwrap();
    std::fs::create_dir_all(top.join("b")).unwrap();
    for (name, len) in [
        ("a/f01", 3901),
        ("a/g01", 100),
        ("a/sub/x01", 3901),
        ("a/sub/.h01", 3901),
        ("b/y11", 3901),
        ("top01", 3901),
    ] {
        std::fs::write(top.join(name), vec![b'x'; len]).unwrap();
    }
    std::os::unix::fs::symlink("a", top.join("link01")).unwrap();
    // Seven entries are not directories (a, a/sub and b are not counted, as pfind counts
    // total_files); f01, x01, .h01 and top01 match; the link is 1 byte.
    let p = pfind(&SingleProcess::new(), &io500(&reference), &top);
    assert_eq!(counts(&p), (7, 4));
    // Without predicates every entry that is not a directory matches.
    let all = FindSpec {
        walk: FindWalk::Pfind,
        ..FindSpec::default()
    };
    assert_eq!(counts(&pfind(&SingleProcess::new(), &all, &top)), (7, 7));
}

#[test]
fn ranks_share_the_walk_and_count_every_entry_once() {
    // 40 directories of 150 files, and one of 12,000 whose names all match: more than
    // the 10,000 items the queue holds, so its last entries are looked at at once.
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("timestamp");
    old_file(&reference);
    let top = tmp.path().join("top");
    let mut expect = 0;
    for d in 0..40 {
        let dir = top.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..150 {
            let name = format!("file.{d}.{i}");
            let len = if i % 2 == 0 { 3901 } else { 0 };
            std::fs::write(dir.join(&name), vec![b'x'; len]).unwrap();
            expect += u64::from(len == 3901 && name.contains("01"));
        }
    }
    let big = top.join("big");
    std::fs::create_dir_all(&big).unwrap();
    for i in 0..12_000 {
        let len = if i % 3 == 0 { 3901 } else { 0 };
        std::fs::write(big.join(format!("f01.{i}")), vec![b'x'; len]).unwrap();
        expect += u64::from(len == 3901);
    }
    let spec = io500(&reference);
    let one = counts(&pfind(&SingleProcess::new(), &spec, &top));
    assert_eq!(one, (18_000, expect));
    for ranks in [2, 3] {
        let got = InProcess::run(
            ranks,
            |_| "node-a".into(),
            |comm| {
                let p = pfind(comm, &spec, &top);
                let per_rank: Vec<u64> = p
                    .per_rank
                    .iter()
                    .map(|r| r.ops.get(&OpKind::Scan).map_or(0, |o| o.ops))
                    .collect();
                (counts(&p), per_rank)
            },
        );
        assert_eq!(got[0].0, one, "{ranks} ranks");
        let busy = got[0].1.iter().filter(|&&n| n > 0).count();
        assert!(
            busy > 1,
            "{ranks} ranks: work was not shared: {:?}",
            got[0].1
        );
        assert_eq!(got[0].1.iter().sum::<u64>(), 18_000);
    }
}

#[test]
fn pfind_runs_one_walker_per_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = FindSpec {
        walk: FindWalk::Pfind,
        threads: 2,
        ..FindSpec::default()
    };
    let stop = AtomicBool::new(false);
    let comm = SingleProcess::new();
    let env = Env::new(&comm, &stop);
    let e = run_find(&env, &MonotonicClock, &spec, tmp.path()).unwrap_err();
    assert!(e.to_string().contains("--threads"), "{e}");
}
