//! The work directory: lock, kept files, stale files, symlinks.

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{Ran, error_line, iolab, path, run};

fn spawn_write(dir: &Path, extra: &[&str]) -> Child {
    iolab()
        .args([
            "run",
            "--dir",
            path(dir),
            "--rw",
            "write",
            "--size",
            "2MiB",
            "-Q",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iolab starts")
}

fn wait(c: Child) -> Ran {
    Ran::from(c.wait_with_output().expect("iolab ends"))
}

/// Either both runs completed, or exactly one was refused with the lock holder named;
/// never another error, and the directory is left clean.
#[test]
fn concurrent_pairs_on_one_dir_serialize_or_complete() {
    let base = tempfile::tempdir().unwrap();
    let mut refused = 0;
    for _ in 0..10 {
        let a = spawn_write(base.path(), &[]);
        let b = spawn_write(base.path(), &[]);
        let (a, b) = (wait(a), wait(b));
        for r in [&a, &b] {
            match r.code {
                0 => {}
                2 => {
                    let line = error_line(r);
                    assert!(
                        line.contains("is in use by pid ") && line.contains(" run "),
                        "{line}"
                    );
                    refused += 1;
                }
                _ => panic!("exit {}\n{}\n{}", r.code, r.stdout, r.stderr),
            }
        }
        assert!(a.code == 0 || b.code == 0, "one of each pair runs");
        assert!(
            !base.path().join("iolab-work").exists(),
            "the work directory is removed after each pair"
        );
    }
    eprintln!("{refused} of 10 pairs serialized by the lock");
}

/// Two hosts (UTS namespaces) on one shared directory: the second is refused while the
/// first runs, naming the first host.
#[test]
fn a_second_host_is_refused_naming_the_first() {
    if !Command::new("unshare")
        .args(["--uts", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("skipped: no UTS namespaces here");
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_iolab");
    let db = base.path().join("db.sqlite");
    let on_host = |host: &str, runtime: &str| {
        Command::new("unshare")
            .args(["--uts", "sh", "-c"])
            .arg(format!(
                "hostname {host} && exec {bin} run --dir {} --rw write --size 1MiB --runtime {runtime} -Q",
                path(base.path())
            ))
            .env("IOLAB_DB", &db)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("unshare runs")
    };
    let a = on_host("nodeA", "4s");
    // nodeA holds the lock once its marker is there.
    let marker = base.path().join("iolab-work").join(".lock");
    for _ in 0..200 {
        if fs::read_to_string(&marker).is_ok_and(|s| s.contains("nodeA")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let b = wait(on_host("nodeB", "1s")).expect(2);
    let line = error_line(&b);
    assert!(
        line.contains("in use by pid ") && line.contains(" on nodeA "),
        "{line}"
    );
    wait(a).expect(0);
    assert!(!base.path().join("iolab-work").exists());
}

/// A kept file cut short, or deleted, fails a --verify read instead of being laid out
/// anew and passing.
#[test]
fn a_truncated_or_deleted_kept_file_fails_verify() {
    let base = tempfile::tempdir().unwrap();
    let dir = path(base.path());
    let args = |rw: &'static str| {
        vec![
            "run",
            "--dir",
            dir,
            "--rw",
            rw,
            "--size",
            "1MiB",
            "-b",
            "64KiB",
            "--verify",
            "--keep",
            "-Q",
            "--no-store",
        ]
    };
    run(&args("write")).expect(0);
    let file = base.path().join("iolab-work").join("data.r0.t0");
    assert_eq!(fs::metadata(&file).unwrap().len(), 1 << 20);
    run(&args("read")).expect(0);

    fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let r = run(&args("read")).expect(1);
    assert!(
        r.stderr
            .contains("data.r0.t0 holds 4096 bytes where iolab wrote 1048576"),
        "{}",
        r.stderr
    );
    assert_eq!(
        fs::metadata(&file).unwrap().len(),
        4096,
        "not laid out anew"
    );

    fs::remove_file(&file).unwrap();
    let r = run(&args("read")).expect(1);
    assert!(
        r.stderr
            .contains("data.r0.t0 is gone (iolab wrote 1048576 bytes)"),
        "{}",
        r.stderr
    );
    assert!(!file.exists());
}

/// Files of an earlier run with more threads do not stay behind; --keep lists what stays.
#[test]
fn stale_files_are_removed_and_kept_ones_named() {
    let base = tempfile::tempdir().unwrap();
    let dir = path(base.path());
    let work = base.path().join("iolab-work");
    let names = || {
        let mut n: Vec<String> = fs::read_dir(&work)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("data."))
            .collect();
        n.sort();
        n
    };
    let r = run(&[
        "run",
        "--dir",
        dir,
        "--rw",
        "write",
        "--size",
        "256KiB",
        "-t",
        "4",
        "--keep",
        "-Q",
        "--no-store",
    ])
    .expect(0);
    assert!(
        r.stderr.contains("kept 4 file(s) in ")
            && r.stderr
                .contains("(--keep): data.r0.t0, data.r0.t1, data.r0.t2, data.r0.t3"),
        "{}",
        r.stderr
    );
    assert_eq!(names().len(), 4);

    let r = run(&[
        "run",
        "--dir",
        dir,
        "--rw",
        "write",
        "--size",
        "256KiB",
        "-t",
        "2",
        "--keep",
        "-Q",
        "--no-store",
    ])
    .expect(0);
    assert!(
        r.stderr
            .contains("removed 2 data file(s) an earlier run left in ")
            && r.stderr.contains(": data.r0.t2, data.r0.t3"),
        "{}",
        r.stderr
    );
    assert_eq!(names(), ["data.r0.t0", "data.r0.t1"]);

    // A file that is not iolab's stays, whatever runs there.
    fs::write(work.join("notes.txt"), b"mine").unwrap();
    run(&[
        "run",
        "--dir",
        dir,
        "--rw",
        "write",
        "--size",
        "256KiB",
        "-Q",
        "--no-store",
    ])
    .expect(0);
    assert!(names().is_empty());
    assert_eq!(fs::read(work.join("notes.txt")).unwrap(), b"mine");
}

/// A symlink where iolab-work belongs is refused, whether it points at a directory
/// iolab marked or nowhere, and nothing behind it is touched.
#[test]
fn a_symlinked_work_directory_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let dir = path(elsewhere.path());
    run(&[
        "run",
        "--dir",
        dir,
        "--rw",
        "write",
        "--size",
        "64KiB",
        "--keep",
        "-Q",
        "--no-store",
    ])
    .expect(0);
    let real = elsewhere.path().join("iolab-work");
    let before = fs::read(real.join("data.r0.t0")).unwrap();
    std::os::unix::fs::symlink(&real, base.path().join("iolab-work")).unwrap();
    let r = run(&[
        "run",
        "--dir",
        path(base.path()),
        "--rw",
        "write",
        "--size",
        "64KiB",
        "-Q",
        "--no-store",
    ])
    .expect(2);
    let line = error_line(&r);
    assert!(line.contains("iolab-work is a symbolic link"), "{line}");
    assert_eq!(fs::read(real.join("data.r0.t0")).unwrap(), before);

    fs::remove_dir_all(&real).unwrap();
    let r = run(&[
        "run",
        "--dir",
        path(base.path()),
        "--rw",
        "write",
        "--size",
        "64KiB",
        "-Q",
        "--no-store",
    ])
    .expect(2);
    let line = error_line(&r);
    assert!(line.contains("iolab-work is a symbolic link"), "{line}");
    assert!(!line.contains("another rank"), "{line}");
    assert!(!real.exists(), "the link's target is not created");
}

/// `iolab ior` writing one 1 MiB block in one transfer, with `args` added.
fn ior_write(args: &[&str]) -> crate::common::Ran {
    let mut all = vec![
        "ior",
        "--no-store",
        "-a",
        "POSIX",
        "-w",
        "-b",
        "1m",
        "-t",
        "1m",
    ];
    all.extend_from_slice(args);
    crate::common::run(&all)
}

/// A data file named as the work directory's own files (IOR's -o, fio's names) is
/// refused before anything is written: writing it would wreck the live lock or marker,
/// and cleaning up would remove them.
#[test]
fn data_files_cannot_take_the_work_directorys_own_names() {
    let dir = tempfile::tempdir().unwrap();
    for name in [".lock", ".iolab-workdir", ".data.iolab"] {
        let target = dir.path().join(name);
        let r = ior_write(&["-o", crate::common::path(&target)]).expect(2);
        assert!(
            r.stderr
                .contains(&format!("'{name}' is a name iolab's work directory keeps")),
            "{name}: {}",
            r.stderr
        );
    }
    let r = crate::common::run(&[
        "fio",
        "--no-store",
        "--name=x",
        "--rw=write",
        "--bs=4k",
        "--size=64k",
        "--filename_format=.lock",
        &format!("--directory={}", crate::common::path(dir.path())),
    ])
    .expect(2);
    assert!(r.stderr.contains("'.lock' is a name"), "{}", r.stderr);
}

/// IOR's and mdtest's stonewall status files are written only where there is none or
/// another status file (a count): a user's file given by mistake is refused before
/// anything runs, and left as it was.
#[test]
fn a_status_file_never_replaces_a_users_file() {
    let dir = tempfile::tempdir().unwrap();
    let precious = dir.path().join("precious.txt");
    fs::write(&precious, "my notes\n").unwrap();
    let status = format!("stoneWallingStatusFile={}", crate::common::path(&precious));
    let out = dir.path().join("f");
    let ior = || {
        ior_write(&[
            "-D",
            "1",
            "-O",
            "stoneWallingWearOut=1",
            "-O",
            &status,
            "-o",
            crate::common::path(&out),
        ])
    };
    let r = ior().expect(2);
    assert!(
        r.stderr.contains("it holds something other than a count"),
        "{}",
        r.stderr
    );
    let md = dir.path().join("md");
    let r = crate::common::run(&[
        "mdtest",
        "--no-store",
        "-C",
        "-n",
        "10",
        "-F",
        "-x",
        crate::common::path(&precious),
        "-d",
        crate::common::path(&md),
    ])
    .expect(2);
    assert!(r.stderr.contains("mdtest -x "), "{}", r.stderr);
    assert_eq!(fs::read_to_string(&precious).unwrap(), "my notes\n");
    // A status file an earlier call wrote (a count) is replaced as IOR replaces it.
    fs::write(&precious, "17").unwrap();
    ior().expect(0);
    assert_eq!(fs::read_to_string(&precious).unwrap(), "1");
}
