//! `iolab fio` options beyond one job at a time: several files per job after an offset
//! with fio's names (checked against real fio when it is installed), loops, ramp_time,
//! jobs that run at the same time, wait_for, startdelay, report entries per clone or per
//! group, status dumps, context switches and disk statistics. Small scale.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Ran, fio_or_iolab, iolab, path};

fn fio_json(args: &[&str]) -> Value {
    let r = Ran::from(iolab().arg("fio").args(args).output().unwrap()).expect(0);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

/// The regular files under `dir` (relative names) with their sizes.
fn files(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .filter(|(n, _)| !n.starts_with('.') && !n.ends_with(".json"))
        .collect();
    v.sort();
    v
}

/// Two jobs: j with 3 files per clone after an 8 KiB offset, two clones; k with its
/// own filename_format, after a stonewall.
const JOBS: [&str; 14] = [
    "--output-format=json",
    "--bs=4k",
    "--rw=write",
    "--name=j",
    "--size=96k",
    "--nrfiles=3",
    "--numjobs=2",
    "--offset=8k",
    "--name=k",
    "--stonewall",
    "--size=32k",
    "--nrfiles=2",
    "--filename_format=k-$jobnum-f$filenum",
    "--loops=2",
];

#[test]
fn several_files_per_job_after_an_offset_are_fios_files() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    let mut args = vec!["--keep", d.as_str()];
    args.extend(JOBS);
    let v = fio_json(&args);
    let jobs = v["jobs"].as_array().unwrap();
    // No group_reporting: each of j's clones is an entry, as fio prints them.
    let entries: Vec<(&str, u64, u64)> = jobs
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap(),
                j["write"]["io_bytes"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
            )
        })
        .collect();
    // j: 96 KiB in 3 files of 32 KiB; k: 32 KiB in 2 files of 16 KiB, twice (loops).
    assert_eq!(
        entries,
        [("j", 98304, 24), ("j", 98304, 24), ("k", 65536, 16)]
    );
    let ours = files(&dir.path().join("iolab-work"));
    let mut want: Vec<(String, u64)> = (0..2)
        .flat_map(|c| (0..3).map(move |f| (format!("j.{c}.{f}"), 8192 + 32768)))
        .collect();
    // k's options are its own: no offset.
    want.extend((0..2).map(|f| (format!("k-0-f{f}"), 16384)));
    want.sort();
    assert_eq!(ours, want);

    // Real fio, when installed, makes the same files and does the same I/O.
    if Command::new("fio").arg("--version").output().is_err() {
        eprintln!("skipping the comparison with real fio: fio is not installed");
        return;
    }
    let theirs_dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(theirs_dir.path()));
    let out = Command::new("fio").arg(&d).args(JOBS).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let their_entries: Vec<(&str, u64, u64)> = theirs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap(),
                j["write"]["io_bytes"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(entries, their_entries);
    assert_eq!(ours, files(theirs_dir.path()));
}

#[test]
fn loops_repeat_the_job_and_a_ramp_is_run_but_not_counted() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    let v = fio_json(&[
        &d,
        "--output-format=json",
        "--name=l",
        "--rw=randread",
        "--size=64k",
        "--loops=3",
    ]);
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 3 * 65536);
    let started = std::time::Instant::now();
    let v = fio_json(&[
        &d,
        "--output-format=json",
        "--name=r",
        "--rw=randread",
        "--size=1m",
        "--time_based",
        "--runtime=1",
        "--ramp_time=1",
    ]);
    // The job ran for its ramp and its runtime; the figures cover the runtime only.
    assert!(started.elapsed().as_secs_f64() >= 2.0);
    let runtime = v["jobs"][0]["read"]["runtime"].as_u64().unwrap();
    assert!((1000..1500).contains(&runtime), "{runtime}");
}

/// A reader and a writer at the same time, a job that waits for the reader, one that
/// starts a second late, then one after a stonewall.
const AT_ONCE: &str = "\
[global]
directory=${DIR}
size=256k
time_based
runtime=1
group_reporting

[reader]
rw=randread

[writer]
rw=randwrite

[after-reader]
rw=read
wait_for=reader

[late]
rw=write
startdelay=1

[next]
stonewall
rw=read
";

#[test]
fn jobs_without_a_stonewall_run_at_the_same_time() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let job = dir.path().join("at-once.fio");
    std::fs::write(&job, AT_ONCE).unwrap();
    let db = dir.path().join("r.db");
    let started = std::time::Instant::now();
    let r = iolab()
        .env("DIR", dir.path())
        .args(["fio", "--db", path(&db), "--output-format=json", path(&job)])
        .output()
        .unwrap();
    let r = Ran::from(r).expect(0);
    // after-reader and late could not start before 1 s: the run lasts at least 2 s.
    assert!(started.elapsed().as_secs_f64() >= 2.0);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    // group_reporting in one group: one entry for the four jobs of group 0 (named by
    // the first), and one for next.
    let names: Vec<&str> = jobs
        .iter()
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["reader", "next"]);
    let g0 = &jobs[0];
    assert!(g0["read"]["io_bytes"].as_u64().unwrap() > 0);
    assert!(g0["write"]["io_bytes"].as_u64().unwrap() > 0);
    // Each job's runtime is its own second, not the phase's two; fio's job_runtime
    // adds up the four jobs'.
    let runtime = g0["read"]["runtime"].as_u64().unwrap();
    assert!((1000..1600).contains(&runtime), "{runtime}");
    let total = g0["job_runtime"].as_u64().unwrap();
    assert!((4000..6000).contains(&total), "{total}");
    // The stored phases: group 0's started with the phase, next after it.
    let export = Ran::from(
        iolab()
            .args(["results", "export", "--db", path(&db)])
            .output()
            .unwrap(),
    )
    .expect(0);
    let runs: Value = serde_json::from_str(&export.stdout).unwrap();
    // One run: an object (several would be an array).
    let phases = runs["phases"].as_array().unwrap();
    let starts: Vec<i64> = phases
        .iter()
        .map(|p| p["started_at_ms"].as_i64().unwrap())
        .collect();
    assert_eq!(starts.len(), 2, "{phases:?}");
    assert!(starts[1] - starts[0] >= 2000, "{starts:?}");
}

#[test]
fn numjobs_report_per_clone_unless_group_reporting() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    let base = [
        d.as_str(),
        "--output-format=json",
        "--name=c",
        "--rw=read",
        "--size=64k",
        "--numjobs=3",
    ];
    let v = fio_json(&base);
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3);
    assert!(jobs.iter().all(|j| j["read"]["io_bytes"] == 65536));
    let mut grouped = base.to_vec();
    grouped.push("--group_reporting");
    let v = fio_json(&grouped);
    assert_eq!(v["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 3 * 65536);
}

#[test]
fn status_interval_prints_fios_report_while_a_job_runs() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    let job = [
        d.as_str(),
        "--status-interval=1",
        "--name=s",
        "--rw=randread",
        "--size=1m",
        "--time_based",
        "--runtime=3",
    ];
    let r = Ran::from(iolab().arg("fio").args(job).output().unwrap()).expect(0);
    // Dumps after 1 and 2 s (and perhaps 3), then the final report; the head once.
    let reports = r.stdout.matches("Run status group 0 (all jobs):").count();
    assert!((3..=4).contains(&reports), "{}", r.stdout);
    assert_eq!(r.stdout.matches("s: (g=0): rw=randread").count(), 1);
    let mut json = job.to_vec();
    json.push("--output-format=json");
    let r = Ran::from(iolab().arg("fio").args(json).output().unwrap()).expect(0);
    let docs: Vec<Value> = serde_json::Deserializer::from_str(&r.stdout)
        .into_iter::<Value>()
        .map(|d| d.unwrap())
        .collect();
    assert!((3..=4).contains(&docs.len()), "{}", r.stdout);
    let ios: Vec<u64> = docs
        .iter()
        .map(|d| d["jobs"][0]["read"]["total_ios"].as_u64().unwrap())
        .collect();
    assert!(ios.windows(2).all(|w| w[0] <= w[1]), "{ios:?}");
}

#[test]
fn ctx_and_disk_util_are_measured() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    let job = [
        d.as_str(),
        "--name=w",
        "--rw=write",
        "--size=256k",
        "--direct=1",
        "--fsync=1",
    ];
    let mut json = job.to_vec();
    json.push("--output-format=json");
    let v = fio_json(&json);
    // 64 direct writes and fsyncs wait for the disk: the thread switches.
    assert!(v["jobs"][0]["ctx"].as_u64().unwrap() > 0, "{v}");
    let disks = v["disk_util"].as_array().unwrap();
    if disks.is_empty() {
        eprintln!("skipping the disk_util checks: no block device under /var/tmp");
        return;
    }
    assert!(disks[0]["write_ios"].as_u64().unwrap() > 0, "{v}");
    for key in [
        "name",
        "read_ios",
        "read_merges",
        "write_merges",
        "read_ticks",
        "write_ticks",
        "in_queue",
        "util",
    ] {
        assert!(disks[0].get(key).is_some(), "{key}");
    }
    let mut terse = job.to_vec();
    terse.push("--minimal");
    let r = Ran::from(iolab().arg("fio").args(terse).output().unwrap()).expect(0);
    let fields: Vec<&str> = r.stdout.trim().split(';').collect();
    assert_eq!(fields.len(), 121 + 9 * disks.len(), "{}", r.stdout);
    assert_eq!(fields[121], disks[0]["name"].as_str().unwrap());
    assert!(fields[129].ends_with('%'));
}

#[test]
fn an_offset_in_percent_is_of_the_files_size() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let img = dir.path().join("disk.img");
    std::fs::write(&img, vec![0u8; 4 << 20]).unwrap();
    let f = format!("--filename={}", path(&img));
    let v = fio_json(&[
        &f,
        "--output-format=json",
        "--name=o",
        "--rw=write",
        "--bs=256k",
        "--size=1m",
        "--offset=50%",
    ]);
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 1 << 20);
    // fio writes 2 MiB to 3 MiB of a 4 MiB file; the rest is untouched.
    let data = std::fs::read(&img).unwrap();
    assert!(data[..2 << 20].iter().all(|b| *b == 0));
    assert!(
        data[2 << 20..3 << 20]
            .chunks(4096)
            .all(|c| c.iter().any(|b| *b != 0))
    );
    assert!(data[3 << 20..].iter().all(|b| *b == 0));
}

/// bs=READ,WRITE in a mixed job: each direction moves its own size, the job ends once
/// its size is moved (as fio's does with norandommap), and the header line is fio's
/// (checked against fio's own when it is installed).
#[test]
fn a_mixed_job_reads_and_writes_in_its_own_sizes() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let job = [
        format!("--directory={}", path(dir.path())),
        "--name=m".into(),
        "--rw=randrw".into(),
        "--bs=4k,64k".into(),
        "--size=1m".into(),
        "--norandommap".into(),
        "--ioengine=psync".into(),
    ];
    let mut json = job.to_vec();
    json.push("--output-format=json".into());
    let v = fio_json(&json.iter().map(String::as_str).collect::<Vec<_>>());
    let (r, w) = (&v["jobs"][0]["read"], &v["jobs"][0]["write"]);
    let bytes = |d: &Value| d["io_bytes"].as_u64().unwrap();
    let ios = |d: &Value| d["total_ios"].as_u64().unwrap();
    assert_eq!(bytes(r), ios(r) * 4096);
    assert_eq!(bytes(w), ios(w) * 65536);
    assert!(((1 << 20)..(1 << 20) + 65536).contains(&(bytes(r) + bytes(w))));
    assert!(ios(r) > 0 && ios(w) > 0);

    let text = Ran::from(iolab().arg("fio").args(&job).output().unwrap()).expect(0);
    let head = text.stdout.lines().next().unwrap().to_string();
    assert_eq!(
        head,
        "m: (g=0): rw=randrw, bs=(R) 4096B-4096B, (W) 64.0KiB-64.0KiB, (T) 64.0KiB-64.0KiB, ioengine=psync, iodepth=1"
    );
    if crate::common::peer_on_path("fio", "--version") {
        let fio = Command::new("fio").args(&job).output().unwrap();
        let out = String::from_utf8_lossy(&fio.stdout);
        assert_eq!(out.lines().next(), Some(head.as_str()), "{out}");
    }
}

/// A reversed bsrange (`4k-1k`): fio 3.33's parser swaps the ends (parse.c, `ull1 >
/// ull2`), so it runs as `1k-4k`; so does iolab's. Under strace, each tool's reads of the
/// two jobs are the same calls, sizes and offsets, every size from 1 KiB to 4 KiB.
#[test]
fn a_reversed_bsrange_runs_as_its_ends_in_order_as_fio() {
    if !crate::common::peer_on_path("fio", "--version")
        || !crate::common::peer_on_path("strace", "-V")
    {
        return;
    }
    let reads = |tool: &str, range: &str| -> Vec<(u64, u64)> {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let work = tempfile::tempdir().unwrap();
        let mut cmd = fio_or_iolab(tool, &[]);
        cmd.current_dir(dir.path())
            .arg(format!("--directory={}", path(dir.path())))
            .args(["--name=j", "--rw=randread", "--size=64k"])
            .arg(format!("--bsrange={range}"))
            .args(["--thread", "--ioengine=psync", "--minimal"]);
        let mut ios: Vec<Vec<(u64, u64)>> =
            crate::common::strace_threads(&cmd, work.path(), "pread64")
                .iter()
                .map(|t| {
                    t.lines()
                        .filter_map(|l| l.strip_prefix("pread64("))
                        .map(|l| {
                            let args: Vec<&str> = l.split(", ").collect();
                            let at = args[3].split(')').next().unwrap().parse().unwrap();
                            (args[2].parse().unwrap(), at)
                        })
                        .filter(|&(len, _)| len <= 4096 && len % 1024 == 0)
                        .collect()
                })
                .filter(|t: &Vec<(u64, u64)>| t.len() > 3)
                .collect();
        assert_eq!(ios.len(), 1, "{tool} {range}: {ios:?}");
        ios.remove(0)
    };
    for tool in ["fio", "iolab"] {
        let reversed = reads(tool, "4k-1k");
        assert_eq!(reversed, reads(tool, "1k-4k"), "{tool}");
        assert_eq!(reversed.iter().map(|r| r.0).sum::<u64>(), 65536, "{tool}");
        for len in [1024, 2048, 3072, 4096] {
            assert!(reversed.iter().any(|r| r.0 == len), "{tool}: {reversed:?}");
        }
    }
}
