//! `iolab fio` on the files users' job files name: a missing `filename` made as fio
//! makes it (laid out for reads, iolab's own image afterwards, so a later job of the
//! same file may write it), a user's file with data refused, `size=N%`, `rw=...:N`,
//! and the reporting options (`unified_rw_reporting`, `percentile_list`,
//! `lat_percentiles`), each checked against real fio where it is installed.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Ran, iolab, path};

/// `iolab fio` with iolab's own options (`--keep`) first, then fio's.
fn fio_json(args: &[&str]) -> (Value, Ran) {
    let (ours, fios): (Vec<&str>, Vec<&str>) = args.iter().partition(|a| **a == "--keep");
    let r = Ran::from(
        iolab()
            .args(["fio", "--no-store"])
            .args(ours)
            .arg("--output-format=json")
            .args(fios)
            .output()
            .unwrap(),
    )
    .expect(0);
    let v = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout));
    (v, r)
}

fn real_fio(dir: &Path, args: &[&str]) -> Option<Value> {
    if Command::new("fio").arg("--version").output().is_err() {
        eprintln!("skipping the comparison with real fio: fio is not installed");
        return None;
    }
    let mut fio = Command::new("fio");
    fio.current_dir(dir).arg("--output-format=json").args(args);
    let out = Ran::from(fio.output().unwrap()).expect(0);
    Some(serde_json::from_str(&out.stdout).unwrap())
}

fn io_bytes(v: &Value, dir: &str) -> Vec<u64> {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j[dir]["io_bytes"].as_u64().unwrap())
        .collect()
}

/// fio's ssd-test.fio shrunk: its read jobs make and lay out the file, its write jobs
/// then write it (iolab's own image), and it is gone at the end.
#[test]
fn a_missing_file_is_made_and_later_jobs_may_write_it() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let job = dir.path().join("ssd.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nbs=4k\nsize=1m\ndirectory={}\nfilename=ssd.test.file\n\
             [seq-read]\nrw=read\nstonewall\n[rand-read]\nrw=randread\nstonewall\n\
             [seq-write]\nrw=write\nstonewall\n[rand-write]\nrw=randwrite\nstonewall\n",
            path(dir.path())
        ),
    )
    .unwrap();
    let (v, r) = fio_json(&[path(&job)]);
    assert_eq!(io_bytes(&v, "read"), [1 << 20, 1 << 20, 0, 0]);
    assert_eq!(io_bytes(&v, "write"), [0, 0, 1 << 20, 1 << 20]);
    assert!(
        r.stderr.contains(
            "ssd.test.file did not exist: made it (1048576 bytes, laid out in full for reading)"
        ),
        "{}",
        r.stderr
    );
    // Made by this run and not kept: removed.
    assert!(!dir.path().join("ssd.test.file").exists());

    // Kept, it is iolab's image: a later run writes it without --allow-destroy.
    let f = format!("--filename={}", path(&dir.path().join("kept")));
    fio_json(&["--keep", "--name=r", "--rw=read", "--size=64k", &f]);
    let kept = std::fs::read(dir.path().join("kept")).unwrap();
    assert_eq!(kept.len(), 64 << 10);
    assert!(
        kept.chunks(4096).all(|c| c.iter().any(|b| *b != 0)),
        "laid out"
    );
    let (v, _) = fio_json(&["--name=w", "--rw=write", "--size=64k", &f]);
    assert_eq!(io_bytes(&v, "write"), [64 << 10]);
}

/// A user's file holding data stays refused for writes, naming --allow-destroy, and
/// is left byte for byte; reads of it need no flag, `size=100%` reads all of it.
#[test]
fn a_users_file_with_data_is_refused_for_writes() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let file = dir.path().join("user.dat");
    let data: Vec<u8> = (0..(256u32 << 10)).map(|i| (i % 251) as u8 + 1).collect();
    std::fs::write(&file, &data).unwrap();
    let f = format!("--filename={}", path(&file));
    let r = Ran::from(
        iolab()
            .args([
                "fio",
                "--no-store",
                "--name=w",
                "--rw=write",
                "--size=64k",
                &f,
            ])
            .output()
            .unwrap(),
    )
    .expect(2);
    let line = r.error_line();
    assert!(
        line.contains("it holds data (a non-zero byte at offset 0")
            && line.contains("pass --allow-destroy"),
        "{line}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), data);
    let (v, _) = fio_json(&["--name=r", "--rw=read", "--size=100%", &f]);
    assert_eq!(io_bytes(&v, "read"), [256 << 10]);
    let (v, _) = fio_json(&["--name=r", "--rw=read", "--size=50%", "--offset=25%", &f]);
    assert_eq!(io_bytes(&v, "read"), [128 << 10]);
    // fio: no more than what lies after the offset.
    let (v, _) = fio_json(&["--name=r", "--rw=read", "--size=100%", "--offset=75%", &f]);
    assert_eq!(io_bytes(&v, "read"), [64 << 10]);
    assert_eq!(std::fs::read(&file).unwrap(), data);
    if let Some(theirs) = real_fio(
        dir.path(),
        &[
            "--name=r",
            "--rw=read",
            "--size=100%",
            "--offset=75%",
            "--filename=user.dat",
        ],
    ) {
        assert_eq!(io_bytes(&theirs, "read"), [64 << 10]);
    }
}

#[test]
fn bad_files_and_percentages_are_one_line() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let missing = format!("--filename={}", path(&dir.path().join("new")));
    for (args, want) in [
        (
            vec!["--name=r", "--rw=read", missing.as_str()],
            "[r] size: is needed to create",
        ),
        (
            vec!["--name=r", "--rw=read", "--size=50%", missing.as_str()],
            "[r] size: 50% is a share of",
        ),
        (
            vec!["--name=r", "--rw=read", "--size=110%", missing.as_str()],
            "command line: --size: [r] size: '110%' is not a percentage from 1% to 100%",
        ),
        (
            vec![
                "--name=r",
                "--rw=read",
                "--size=1m",
                "--offset=150%",
                missing.as_str(),
            ],
            "'150%' is not a percentage from 0% to 100%",
        ),
        (
            vec!["--name=r", "--rw=read", "--size=100%", "--directory=/tmp"],
            "100% is a share of an existing file or device",
        ),
    ] {
        let r = Ran::from(
            iolab()
                .args(["fio", "--no-store"])
                .args(&args)
                .output()
                .unwrap(),
        )
        .expect(2);
        let line = r.error_line();
        assert!(line.contains(want), "{args:?}: {line}");
        assert!(!dir.path().join("new").exists(), "nothing made: {args:?}");
    }
}

/// rw=read:-8k reads backwards and rw=write:4k leaves holes: the same I/Os as fio.
#[test]
fn rw_modifiers_move_what_fio_moves() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    for rw in ["--rw=read:-8k", "--rw=write:4k", "--rw=randread:4"] {
        let args = [d.as_str(), "--name=m", rw, "--bs=4k", "--size=96k"];
        let (v, _) = fio_json(&args);
        let dirn = if rw.contains("write") {
            "write"
        } else {
            "read"
        };
        assert_eq!(io_bytes(&v, dirn), [96 << 10], "{rw}");
        assert_eq!(
            v["jobs"][0]["job options"]["rw"],
            rw.trim_start_matches("--rw=")
        );
    }
    let r = Ran::from(
        iolab()
            .args([
                "fio",
                "--no-store",
                &d,
                "--name=m",
                "--rw=read:6k",
                "--bs=4k",
                "--size=96k",
            ])
            .output()
            .unwrap(),
    )
    .expect(2);
    assert!(
        r.error_line()
            .contains("not a multiple of the block size 4096"),
        "{}",
        r.stderr
    );
}

/// unified_rw_reporting and the percentile options: fio's keys, where fio puts them.
#[test]
fn reporting_options_write_fios_keys() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v["jobs"][0].as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    for unified in ["mixed", "both", "none", "1"] {
        let u = format!("--unified_rw_reporting={unified}");
        let args = [
            "--name=u",
            "--rw=randrw",
            "--bs=4k",
            "--size=256k",
            u.as_str(),
        ];
        let mut ours_args = vec![d.as_str()];
        ours_args.extend(args);
        let (ours, _) = fio_json(&ours_args);
        if unified != "none" {
            let m = &ours["jobs"][0]["mixed"];
            assert_eq!(m["io_bytes"], 256 << 10, "{unified}");
            assert_eq!(m["total_ios"], 64);
        }
        if let Some(theirs) = real_fio(dir.path(), &args) {
            assert_eq!(keys(&ours), keys(&theirs), "{unified}");
        }
    }
    let args = [
        "--name=p",
        "--rw=randread",
        "--bs=4k",
        "--size=256k",
        "--lat_percentiles=1",
        "--clat_percentiles=0",
        "--percentile_list=50:99:99.999",
    ];
    let mut ours_args = vec![d.as_str()];
    ours_args.extend(args);
    let (ours, _) = fio_json(&ours_args);
    let read = &ours["jobs"][0]["read"];
    assert!(read["clat_ns"].get("percentile").is_none());
    let p: Vec<&String> = read["lat_ns"]["percentile"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(p, ["50.000000", "99.000000", "99.999000"]);
    if let Some(theirs) = real_fio(dir.path(), &args) {
        let t = &theirs["jobs"][0]["read"];
        assert!(t["clat_ns"].get("percentile").is_none());
        let tp: Vec<&String> = t["lat_ns"]["percentile"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(p, tp);
    }
    // The normal output's labels take the list's precision, as fio's.
    let r = Ran::from(
        iolab()
            .args(["fio", "--no-store", &d])
            .args(&args[..5])
            .arg("--percentile_list=50:99:99.999")
            .output()
            .unwrap(),
    )
    .expect(0);
    assert!(r.stdout.contains("    lat percentiles ("), "{}", r.stdout);
    assert!(r.stdout.contains("| 50.000th=["), "{}", r.stdout);
}

/// A size-based job that ends within its ramp: fio resets its counters only when a ramp
/// ends, so it reports every byte and the job's time, but no latencies or bandwidth
/// samples (fio 3.33: 4 clones x 64 MiB with ramp_time=1 report 256 MiB, clat N=0).
#[test]
fn a_job_that_ends_within_its_ramp_counts_its_bytes_without_latencies() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    let args = [
        d.as_str(),
        "--name=s",
        "--rw=read",
        "--bs=128k",
        "--size=2m",
        "--numjobs=4",
        "--ramp_time=30",
        "--group_reporting",
    ];
    let started = std::time::Instant::now();
    let (ours, _) = fio_json(&args);
    // It did not wait for the ramp: the work was done before.
    assert!(started.elapsed().as_secs() < 30);
    let check = |v: &Value, who: &str| {
        let r = &v["jobs"][0]["read"];
        assert_eq!(r["io_bytes"], 8 << 20, "{who}");
        assert_eq!(r["total_ios"], 64, "{who}");
        assert_eq!(r["clat_ns"]["N"], 0, "{who}");
        assert_eq!(r["lat_ns"]["N"], 0, "{who}");
        assert_eq!(r["bw_samples"], 0, "{who}");
        assert!(r["clat_ns"].get("percentile").is_none(), "{who}");
    };
    check(&ours, "iolab");
    if let Some(theirs) = real_fio(dir.path(), &args[1..]) {
        check(&theirs, "fio");
    }
}

/// The log files of fio-plot's input: fio's names, five columns, one line per window,
/// as real fio writes them for the same job (within a line per file: the last window
/// falls on either side of the runtime's end).
#[test]
fn logs_have_fios_names_columns_and_windows() {
    let base = tempfile::tempdir_in("/var/tmp").unwrap();
    let run = |who: &str| -> Option<Vec<(String, Vec<usize>)>> {
        let dir = base.path().join(who);
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        let args = [
            "--name=s",
            "--rw=randread",
            "--bs=4k",
            "--size=8m",
            "--numjobs=2",
            "--time_based",
            "--runtime=2",
            "--write_bw_log=logs/p",
            "--write_lat_log=logs/p",
            "--write_iops_log=logs/p",
            "--log_avg_msec=500",
        ];
        if who == "iolab" {
            Ran::from(
                iolab()
                    .current_dir(&dir)
                    .args(["fio", "--no-store", "--output-format=json", "--directory=."])
                    .args(args)
                    .output()
                    .unwrap(),
            )
            .expect(0);
        } else {
            let mut with_dir = vec!["--directory=."];
            with_dir.extend(args);
            real_fio(&dir, &with_dir)?;
        }
        let mut files: Vec<(String, Vec<usize>)> = std::fs::read_dir(dir.join("logs"))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let text = std::fs::read_to_string(e.path()).unwrap();
                let columns = text.lines().map(|l| l.split(", ").count()).collect();
                (e.file_name().to_string_lossy().into_owned(), columns)
            })
            .collect();
        files.sort();
        Some(files)
    };
    let ours = run("iolab").unwrap();
    let names: Vec<&str> = ours.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "p_bw.1.log",
            "p_bw.2.log",
            "p_clat.1.log",
            "p_clat.2.log",
            "p_iops.1.log",
            "p_iops.2.log",
            "p_lat.1.log",
            "p_lat.2.log",
            "p_slat.1.log",
            "p_slat.2.log"
        ]
    );
    for (name, columns) in &ours {
        assert!(columns.iter().all(|c| *c == 5), "{name}: {columns:?}");
        if !name.contains("slat") {
            assert!(
                (3..=5).contains(&columns.len()),
                "{name}: {} lines",
                columns.len()
            );
        }
    }
    let Some(theirs) = run("fio") else { return };
    for ((a, ca), (b, cb)) in ours.iter().zip(&theirs) {
        assert_eq!(a, b);
        assert!(
            ca.len().abs_diff(cb.len()) <= 1,
            "{a}: {} lines, fio {}",
            ca.len(),
            cb.len()
        );
    }
}

#[test]
fn a_log_in_a_missing_directory_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    let r = Ran::from(
        iolab()
            .current_dir(dir.path())
            .args([
                "fio",
                "--no-store",
                &d,
                "--name=s",
                "--size=64k",
                "--write_lat_log=nodir/p",
            ])
            .output()
            .unwrap(),
    )
    .expect(2);
    assert_eq!(
        r.error_line(),
        "iolab: error: command line: --write_lat_log: [s] write_lat_log: the log's directory nodir does not exist; create it first (nothing was run)"
    );
    assert!(!dir.path().join("iolab-work").exists(), "nothing ran");
}

/// fio's page-cache calls on a buffered time-based random read: POSIX_FADV_RANDOM when
/// the file is opened (fadvise_hint=1) and a DONTNEED at every new pass over it
/// (invalidate=1's loop_cache_invalidate), checked with strace.
#[test]
fn a_time_based_buffered_job_drops_its_cache_every_pass_as_fio() {
    if !crate::common::on_path("strace", "-V") {
        eprintln!("skipping: strace is not installed");
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    let trace = dir.path().join("trace");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=fadvise64,pread64", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args(["fio", "--no-store", "--output-format=json", &d])
        .args([
            "--name=r",
            "--rw=randread",
            "--bs=4k",
            "--size=256k",
            "--time_based",
            "--runtime=1",
        ])
        .env("IOLAB_DB", dir.path().join("db"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    let reads = text
        .lines()
        .filter(|l| l.contains("pread64(") && l.ends_with("= 4096"))
        .count();
    let random = text.matches("POSIX_FADV_RANDOM").count();
    let dropped = text.matches("POSIX_FADV_DONTNEED").count();
    assert_eq!(random, 1, "{text}");
    // One before the phase, then one per pass of 64 blocks.
    let passes = reads / 64;
    assert!(passes >= 2, "{reads} reads");
    assert!(
        dropped.abs_diff(passes + 1) <= 1,
        "{dropped} drops for {reads} reads"
    );
}
