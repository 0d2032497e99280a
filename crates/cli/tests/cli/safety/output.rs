//! Standard output that is full or closed: one line and exit 74 (never a panic, exit
//! 101); a reader that stops early (`| head`) ends iolab quietly.

use std::fs;
use std::process::{Command, Stdio};

use crate::common::{Ran, iolab, path};

fn to_dev_full(args: &[&str], db: &std::path::Path) -> Ran {
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    Ran::from(
        iolab()
            .env("IOLAB_DB", db)
            .args(args)
            .stdout(full)
            .output()
            .unwrap(),
    )
}

#[test]
fn a_full_stdout_is_one_line_and_exit_74_and_the_run_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("o.db");
    for args in [
        &["run", "--backend", "null", "--size", "1MiB"][..],
        &["results", "list"][..],
        &["results", "show", "r1"][..],
        &["--help"][..],
    ] {
        let r = to_dev_full(args, &db);
        assert_eq!(r.code, 74, "{args:?}: {}", r.stderr);
        assert_eq!(
            r.stderr.trim(),
            "iolab: error: writing to standard output: No space left on device",
            "{args:?}"
        );
    }
    // The run whose summary could not be printed was stored, complete.
    let r = Ran::from(
        iolab()
            .env("IOLAB_DB", &db)
            .args(["results", "list"])
            .output()
            .unwrap(),
    )
    .expect(0);
    assert!(r.stdout.contains("complete"), "{}", r.stdout);
}

#[test]
fn a_reader_that_stops_early_ends_iolab_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("many.fio");
    let mut text = String::from("[global]\nrw=read\nsize=1m\nfilename=/tmp/x\nstonewall\n");
    for i in 0..300 {
        text.push_str(&format!("[job{i}]\n"));
    }
    fs::write(&job, text).unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' fio --parse-only '{}' | head -c 10 >/dev/null",
            env!("CARGO_BIN_EXE_iolab"),
            path(&job)
        ))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.trim().is_empty(), "nothing said: {stderr}");
}
