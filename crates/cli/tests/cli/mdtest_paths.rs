//! Where `iolab mdtest` works: mdtest's own paths at mdtest's depth. mdtest -d D makes
//! `D/test-dir.<iteration>-0/` and its trees in it (`mdtest_tree.0/` shared,
//! `mdtest_tree.<task>.0/` with -u), and names file j of task t `file.mdtest.<t>.<j>`
//! (IOR 4.1 mdtest.c: prep_testdir, create_remove_items); a call that removes takes D
//! away again when it made D. iolab creates, marks and locks `test-dir.<iteration>-0` as
//! its work directory, and so still removes only what it made.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::common::{Ran, error_line, iolab, on_path, path, strace_threads};

fn mdtest(args: &[&str]) -> Ran {
    Ran::from(
        iolab()
            .args(["mdtest", "--no-store"])
            .args(args)
            .output()
            .unwrap(),
    )
}

/// Every path below `dir`, relative to it, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = crate::mdtest::walk(dir)
        .iter()
        .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
        .collect();
    out.sort();
    out
}

/// A -C call leaves mdtest's tree where mdtest leaves it, one work directory per
/// iteration (`test-dir.0-0`, `test-dir.1-0`) holding iolab's marker, lock and record
/// beside it; the -r call removes the files, the trees and the work directories, and
/// leaves D, which it did not make. A call with every phase on a missing D removes D too.
#[test]
fn the_tree_is_mdtests_own_at_mdtests_depth() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("md");
    mdtest(&["-n", "3", "-u", "-F", "-i", "2", "-C", "-d", path(&md)]).expect(0);
    let mut want = Vec::new();
    for it in 0..2 {
        let t = format!("test-dir.{it}-0");
        for mark in [".iolab-meta.json", ".iolab-workdir", ".lock"] {
            want.push(format!("{t}/{mark}"));
        }
        want.push(t.clone());
        want.push(format!("{t}/mdtest_tree.0.0"));
        for j in 0..3 {
            want.push(format!("{t}/mdtest_tree.0.0/file.mdtest.0.{j}"));
        }
    }
    want.sort();
    assert_eq!(tree(&md), want);
    mdtest(&["-n", "3", "-u", "-F", "-i", "2", "-r", "-d", path(&md)]).expect(0);
    assert_eq!(tree(&md), Vec::<String>::new(), "-r leaves D itself");
    assert!(md.is_dir());

    let fresh = dir.path().join("fresh");
    mdtest(&["-n", "3", "-F", "-d", path(&fresh)]).expect(0);
    assert!(
        !fresh.exists(),
        "made by the call, removed by it as mdtest does"
    );
}

/// The paths of every file call, traced: mdtest's, in mdtest's order. When mdtest is on
/// PATH it runs on the same arguments and the two lists of paths are the same (iolab's
/// marker, lock and record aside).
#[test]
fn file_calls_name_mdtests_paths() {
    if !on_path("strace", "-V") {
        eprintln!("strace not on PATH: the traced paths are skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("md");
    let args = ["-n", "4", "-F", "-w", "10", "-e", "10", "-d", path(&md)];
    let mut ours = iolab();
    ours.args(["mdtest", "--no-store"]).args(args);
    let paths = |cmd: &Command| -> (Vec<String>, BTreeSet<String>) {
        let top = format!("\"{}/", md.display());
        let mut on_files = Vec::new();
        let mut all = BTreeSet::new();
        for text in strace_threads(cmd, dir.path(), "%file") {
            for line in text.lines() {
                let Some((_, rest)) = line.split_once(&top) else {
                    continue;
                };
                let p = rest.split('"').next().unwrap_or("").trim_end_matches('/');
                if p.contains("/.") || p.starts_with('.') {
                    continue; // iolab's marker, lock and record
                }
                all.insert(p.to_string());
                if p.contains("file.mdtest.") {
                    let call = line.split('(').next().unwrap_or("");
                    on_files.push(format!("{call} {p}"));
                }
            }
        }
        (on_files, all)
    };
    // One trace per thread, read in no particular order: the calls as a sorted list.
    let (mut calls, all) = paths(&ours);
    calls.sort();
    let mut want = Vec::new();
    for call in ["openat", "newfstatat", "openat", "unlink"] {
        for j in 0..4 {
            want.push(format!(
                "{call} test-dir.0-0/mdtest_tree.0/file.mdtest.0.{j}"
            ));
        }
    }
    want.sort();
    assert_eq!(calls, want);
    assert!(!md.exists());
    if !on_path("mdtest", "-h") {
        eprintln!("mdtest not on PATH: compared with its recorded paths only");
        return;
    }
    let mut theirs = Command::new("mdtest");
    theirs.args(args);
    let (mut their_calls, their_all) = paths(&theirs);
    their_calls.sort();
    assert_eq!(
        (their_calls, their_all),
        (calls, all),
        "mdtest's paths against iolab's"
    );
}

/// iolab's work directory is mdtest's test-dir.0-0 now, so the guards hold there: one
/// that iolab did not make (mdtest's own left-over, or a user's) is refused untouched;
/// a user's files put beside iolab's, in its work directory, its tree and D, survive
/// the call that removes, which says what it left.
#[test]
fn only_what_iolab_made_is_removed_from_mdtests_directories() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("md");
    let theirs = md.join("test-dir.0-0");
    std::fs::create_dir_all(theirs.join("mdtest_tree.0")).unwrap();
    std::fs::write(theirs.join("mdtest_tree.0/file.mdtest.0.0"), b"kept").unwrap();
    let r = mdtest(&["-n", "3", "-F", "-d", path(&md)]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let e = error_line(&r);
    assert!(e.contains(&theirs.display().to_string()), "{e}");
    assert!(e.contains(".iolab-workdir"), "{e}");
    assert_eq!(
        std::fs::read(theirs.join("mdtest_tree.0/file.mdtest.0.0")).unwrap(),
        b"kept"
    );
    std::fs::remove_dir_all(&theirs).unwrap();

    mdtest(&["-n", "3", "-F", "-C", "-d", path(&md)]).expect(0);
    let mine = [
        md.join("notes.txt"),
        md.join("test-dir.0-0/notes.txt"),
        md.join("test-dir.0-0/mdtest_tree.0/notes.txt"),
    ];
    for (i, f) in mine.iter().enumerate() {
        std::fs::write(f, format!("user file {i}")).unwrap();
    }
    let r = mdtest(&["-n", "3", "-F", "-r", "-d", path(&md)]).expect(0);
    assert!(r.stderr.contains("left 1 directory"), "{}", r.stderr);
    for (i, f) in mine.iter().enumerate() {
        assert_eq!(
            std::fs::read_to_string(f).unwrap(),
            format!("user file {i}")
        );
    }
    let left = tree(&md);
    assert!(
        left.iter().all(|p| !p.contains("file.mdtest")),
        "every file iolab made is gone: {left:?}"
    );
}
