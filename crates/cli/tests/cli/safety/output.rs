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

/// A refused run writes no report: `iolab fio --output FILE` leaves FILE as it was (it
/// was emptied before the guard even looked at the job's target), also when FILE is the
/// job's own `filename`; a new FILE of a refused run does not stay behind.
#[test]
fn a_refused_fio_run_leaves_its_output_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.img");
    let report = dir.path().join("report.txt");
    let bytes: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 241) as u8 | 1).collect();
    fs::write(&data, &bytes).unwrap();
    fs::write(&report, "last week's report\n").unwrap();
    let fio = |output: &std::path::Path| {
        Ran::from(
            iolab()
                .args(["fio", "--no-store", "--name=w", "--rw=write", "--bs=4k"])
                .arg(format!("--filename={}", path(&data)))
                .arg(format!("--output={}", path(output)))
                .output()
                .unwrap(),
        )
        .expect(2)
    };
    let r = fio(&report);
    assert!(r.stderr.contains("refusing to write to"), "{}", r.stderr);
    assert_eq!(fs::read_to_string(&report).unwrap(), "last week's report\n");
    fio(&data);
    assert_eq!(fs::read(&data).unwrap(), bytes, "not one byte written");
    let new = dir.path().join("new.txt");
    fio(&new);
    assert!(!new.exists());
}

/// --json's early check opens a path that is there only for writing: a link to a file
/// not there yet stays a link (it was removed), and nothing is created beside it when
/// the run is refused.
#[test]
fn the_json_check_leaves_a_dangling_link_alone() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("link.json");
    let target = dir.path().join("target.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let missing = dir.path().join("nonexistent");
    Ran::from(
        iolab()
            .args([
                "run",
                "--no-store",
                "--rw",
                "write",
                "--size",
                "1MiB",
                "--dir",
            ])
            .arg(&missing)
            .arg("--json")
            .arg(&link)
            .output()
            .unwrap(),
    )
    .expect(2);
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(!target.exists());
}
