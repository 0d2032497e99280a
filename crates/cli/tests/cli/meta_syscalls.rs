//! The system calls of `iolab meta` against mdtest's, counted with strace on a small run
//! (where strace is installed; scripts/test.sh installs it). Every file operation is
//! classified by what it is (an open that creates, a stat, an open to read, an unlink,
//! an lseek, a write or read of the file's bytes) and counted per file.
//!
//! mdtest 4.1.0+dev (IOR 5fcf0ba, the one IO500 builds), `-a POSIX -w 3901 -e 3901`,
//! per file: create = openat(AT_FDCWD, whole path, O_RDWR|O_CREAT, 0664), lseek(0),
//! write(3901), close; stat = newfstatat(AT_FDCWD, whole path, 0); read =
//! openat(AT_FDCWD, whole path, O_RDWR), lseek(0), read(3901), close; remove =
//! unlink(whole path). When mdtest is on PATH the test runs it too and compares.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{iolab, on_path, path, strace_threads};

const FILES: u64 = 40;

/// What one traced call does to a benchmark file, if anything. `file_fd` is the
/// descriptor of the benchmark file opened last on this thread: lseek, write and read
/// count only on it.
fn classify(line: &str, file_fd: &mut Option<String>) -> Option<&'static str> {
    // strace pads before " = result": one space, whatever the width.
    let line = &line.split_whitespace().collect::<Vec<_>>().join(" ");
    let (call, args) = line.split_once('(')?;
    let whole = line.contains("(AT_FDCWD, \"") || call == "unlink";
    let on_file = line.contains("file.mdtest.");
    let on_fd = file_fd
        .as_deref()
        .is_some_and(|fd| args.starts_with(&format!("{fd},")));
    Some(match call {
        "openat" if on_file => {
            *file_fd = line.rsplit_once(" = ").map(|(_, fd)| fd.to_string());
            match (line.contains("O_CREAT"), whole) {
                (true, true) => "create open (whole path)",
                (true, false) => "create open (relative)",
                (false, true) => "read open (whole path)",
                (false, false) => "read open (relative)",
            }
        }
        "newfstatat" if on_file => {
            if whole {
                "stat (whole path)"
            } else {
                "stat (relative)"
            }
        }
        "unlink" if on_file => "unlink (whole path)",
        "unlinkat" if on_file => "unlinkat (relative)",
        "lseek" if on_fd && line.ends_with(", 0, SEEK_SET) = 0") => "lseek to 0",
        "write" if on_fd && line.ends_with(", 3901) = 3901") => "write 3901 bytes",
        "read" if on_fd && line.ends_with("= 3901") => "read 3901 bytes",
        "sync" => "sync",
        _ => return None,
    })
}

/// Runs `cmd` under strace and counts the classified calls.
fn traced(cmd: &mut Command, work: &Path) -> BTreeMap<&'static str, u64> {
    let calls = "openat,newfstatat,unlink,unlinkat,lseek,read,write,sync";
    let mut counts = BTreeMap::new();
    for text in strace_threads(cmd, work, calls) {
        let mut file_fd = None;
        for line in text.lines() {
            if let Some(kind) = classify(line, &mut file_fd) {
                *counts.entry(kind).or_insert(0) += 1;
            }
        }
    }
    counts
}

fn iolab_meta(dir: &Path, paths: &str) -> Command {
    let mut c = iolab();
    c.args(["meta", "--dir", path(dir), "--no-store", "-Q"])
        .args(["-n", &FILES.to_string(), "--file-size", "3901"])
        .args(["--ops", "create,stat,read,remove", "--paths", paths]);
    c
}

fn expected(rows: &[(&'static str, u64)]) -> BTreeMap<&'static str, u64> {
    rows.iter().map(|(k, n)| (*k, n * FILES)).collect()
}

#[test]
fn meta_makes_mdtests_calls_with_whole_paths() {
    if !on_path("strace", "-V") {
        eprintln!("strace not on PATH: the system-call comparison is skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let got = traced(&mut iolab_meta(dir.path(), "whole"), dir.path());
    let mdtest = expected(&[
        ("create open (whole path)", 1),
        ("lseek to 0", 2),
        ("write 3901 bytes", 1),
        ("stat (whole path)", 1),
        ("read open (whole path)", 1),
        ("read 3901 bytes", 1),
        ("unlink (whole path)", 1),
    ]);
    assert_eq!(got, mdtest);

    let relative = traced(&mut iolab_meta(dir.path(), "relative"), dir.path());
    let want = expected(&[
        ("create open (relative)", 1),
        ("write 3901 bytes", 1),
        ("stat (relative)", 1),
        ("read open (relative)", 1),
        ("read 3901 bytes", 1),
        ("unlinkat (relative)", 1),
    ]);
    assert_eq!(relative, want);

    if !on_path("mdtest", "-h") {
        eprintln!("mdtest not on PATH: compared with its recorded calls only");
        return;
    }
    let md = dir.path().join("md");
    let mut run = Command::new("mdtest");
    run.args(["-n", &FILES.to_string(), "-w", "3901", "-e", "3901", "-F"])
        .args(["-C", "-T", "-E", "-r", "-a", "POSIX", "-d", path(&md)]);
    let peer = traced(&mut run, dir.path());
    assert_eq!(got, peer, "iolab meta against mdtest");
}

/// `--sync-after-create` is mdtest's -Y: one sync(2) per rank after all its workers'
/// creates, whatever the number of threads; none without it.
#[test]
fn sync_after_create_syncs_once_per_rank() {
    if !on_path("strace", "-V") {
        eprintln!("strace not on PATH: the sync count is skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let meta = |extra: &[&str]| {
        let mut c = iolab();
        c.args(["meta", "--dir", path(dir.path()), "--no-store", "-Q"])
            .args(["-n", "20", "--threads", "3", "--ops", "create,remove"])
            .args(extra);
        traced(&mut c, dir.path()).get("sync").copied().unwrap_or(0)
    };
    assert_eq!(meta(&["--sync-after-create"]), 1);
    assert_eq!(meta(&[]), 0);
    // mdtest -Y with every phase: one sync per rank after each of the two.
    assert_eq!(meta(&["--sync-after-every-phase"]), 2);
}

/// `iolab find` looks at an entry as pfind (IO500's find) does: only entries whose name
/// matches are stat'ed, each with lstat of its whole path from the root
/// (`newfstatat(AT_FDCWD, "/…/dir/file.01", AT_SYMLINK_NOFOLLOW)`); `--paths relative`
/// uses fstatat from the open directory instead.
#[test]
fn find_lstats_matching_names_by_whole_path() {
    if !on_path("strace", "-V") {
        eprintln!("strace not on PATH: the find calls are skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree").join("sub");
    std::fs::create_dir_all(&tree).unwrap();
    let stamp = dir.path().join("stamp");
    std::fs::write(&stamp, b"").unwrap();
    for i in 0..30 {
        std::fs::write(tree.join(format!("file.{i}")), vec![0u8; 3901]).unwrap();
    }
    let count = |paths: &str| -> (usize, usize) {
        let mut find = Command::new(env!("CARGO_BIN_EXE_iolab"));
        find.args(["find", "--no-store", "-Q", "--dir"])
            .arg(dir.path().join("tree"))
            .args(["--newer", path(&stamp), "--newer-by", "ctime-seconds"])
            .args(["--size", "3901c", "--name", "*1*", "--paths", paths]);
        let text = strace_threads(&find, dir.path(), "newfstatat,statx").concat();
        let real = tree.canonicalize().unwrap();
        let whole = format!("(AT_FDCWD, \"{}/file.", real.display());
        let on_files = |l: &&str| l.contains("\"file.") || l.contains("/file.");
        let lines: Vec<&str> = text.lines().filter(on_files).collect();
        let whole_lstats = lines
            .iter()
            .filter(|l| l.contains(&whole) && l.contains("AT_SYMLINK_NOFOLLOW"))
            .count();
        (lines.len(), whole_lstats)
    };
    // Names with a 1 among file.0 .. file.29: 1, 10..19, 21 = 12.
    assert_eq!(count("whole"), (12, 12));
    assert_eq!(count("relative"), (12, 0));
}

/// `iolab find --walk pfind` reads and looks as pfind does (pfind aaba722, the one
/// io500's find links; strace of `pfind DIR -newer F -size 3901c -name '*1*' -C -q
/// 10000`): the top opened twice and each directory once with glibc's opendir flags,
/// read by getdents64 of 32 KiB, and each name-matching entry lstat'ed by pfind's
/// spelling of its whole path, top + "/" + "/sub/file.N". When pfind is on PATH the test
/// runs it too and compares.
#[test]
fn find_walks_and_looks_as_pfind_does() {
    if !on_path("strace", "-V") {
        eprintln!("strace not on PATH: pfind's calls are skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    let stamp = dir.path().join("stamp");
    std::fs::write(&stamp, b"").unwrap();
    for i in 0..30 {
        std::fs::write(tree.join(format!("sub/file.{i}")), vec![0u8; 3901]).unwrap();
    }
    let top = tree.canonicalize().unwrap().display().to_string();
    // (opens of the top, opens of sub, getdents64 sizes on them, whole-path lstats)
    let calls = |cmd: &Command| {
        let flags = "O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY)";
        let (mut top_opens, mut sub_opens, mut lstats) = (0, 0, 0);
        let mut sizes = std::collections::BTreeSet::new();
        for trace in strace_threads(cmd, dir.path(), "openat,newfstatat,getdents64,close") {
            let mut fd: Option<String> = None;
            for line in trace.lines() {
                // rustix spells out O_LARGEFILE, which the kernel sets on every open of a
                // 64-bit process anyway: the same call.
                let line = &line.replace("O_LARGEFILE|", "");
                let result = line.rsplit_once(" = ").map(|(_, r)| r.to_string());
                if line.contains(&format!("(AT_FDCWD, \"{top}\", {flags}")) {
                    top_opens += 1;
                    fd = result;
                } else if line.contains(&format!("(AT_FDCWD, \"{top}/sub\", {flags}")) {
                    sub_opens += 1;
                    fd = result;
                } else if line.contains(&format!("(AT_FDCWD, \"{top}//sub/file."))
                    && line.contains("AT_SYMLINK_NOFOLLOW")
                {
                    lstats += 1;
                } else if let Some(f) = &fd {
                    if line.starts_with(&format!("getdents64({f},")) {
                        let size = line.rsplit_once(", ").map(|(_, s)| s.split(')').next());
                        sizes.insert(size.flatten().unwrap_or("").to_string());
                    } else if line.starts_with(&format!("close({f})")) {
                        fd = None;
                    }
                }
            }
        }
        (top_opens, sub_opens, sizes, lstats)
    };
    let mut find = Command::new(env!("CARGO_BIN_EXE_iolab"));
    find.args(["find", "--no-store", "-Q", "--walk", "pfind", "--dir"])
        .arg(&tree)
        .args(["--newer", path(&stamp), "--newer-by", "ctime-seconds"])
        .args(["--size", "3901c", "--name", "*1*"]);
    let ours = calls(&find);
    // Names with a 1 among file.0 .. file.29: 1, 10..19, 21 = 12.
    let want = (2, 1, ["32768".to_string()].into_iter().collect(), 12);
    assert_eq!(ours, want);
    if on_path("pfind", "-h") {
        let mut pfind = Command::new("pfind");
        pfind
            .arg(&tree)
            .args(["-newer", path(&stamp), "-size", "3901c", "-name", "*1*"])
            .args(["-C", "-q", "10000"]);
        assert_eq!(calls(&pfind), ours, "pfind's calls against iolab's");
    } else {
        eprintln!("pfind not on PATH: compared with its recorded calls only");
    }
}
