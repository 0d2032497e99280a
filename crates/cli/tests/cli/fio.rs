//! `iolab fio`: the reference studies' fio command lines and job files run unchanged (at
//! a small scale), print fio's shapes, and bad input runs nothing.

use serde_json::Value;

use crate::common::{path, run};

/// S3's job (randrw, rwmixread 90 then 70, bs 4k and 2048k, iodepth 8, numjobs 8,
/// direct, thread, time_based, group_reporting) at a 1 s runtime and 4 MiB per job.
const S3_JOB: &str = "\
[global]
ioengine=io_uring
rw=randrw
bs=${BS}
direct=1
thread
iodepth=8
numjobs=8
time_based
runtime=${RUNTIME}
size=4m
group_reporting

[mix-90]
rwmixread=90

[mix-70]
stonewall
rwmixread=70
";

/// S3's job file at both of its block sizes: fio's JSON with the mixes' shares, each
/// run stored with its command line, and the two runs compared and reported as any
/// other runs.
#[test]
fn s3s_job_file_runs_unchanged_and_writes_fios_json() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let db = dir.path().join("db");
    let job = dir.path().join("s3.fio");
    std::fs::write(
        &job,
        S3_JOB.replace(
            "[global]",
            &format!("[global]\ndirectory={}", path(dir.path())),
        ),
    )
    .unwrap();
    let with_db = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = crate::common::iolab();
        c.env("IOLAB_DB", &db).args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        crate::common::Ran::from(c.output().unwrap())
    };
    for (bs, bytes, id) in [("4k", 4096, "r1"), ("2048k", 2 << 20, "r2")] {
        let out = dir.path().join(format!("out-{bs}.json"));
        let output = format!("--output={}", path(&out));
        let r = with_db(
            &["fio", "--output-format=json", &output, path(&job)],
            &[("RUNTIME", "1"), ("BS", bs)],
        )
        .expect(0);
        assert!(
            r.stderr.contains(&format!("stored as {id}")),
            "{}",
            r.stderr
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let jobs = v["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(
            (jobs[0]["jobname"].as_str(), jobs[1]["groupid"].as_u64()),
            (Some("mix-90"), Some(1))
        );
        for (j, share) in jobs.iter().zip([0.9, 0.7]) {
            let reads = j["read"]["total_ios"].as_u64().unwrap() as f64;
            let writes = j["write"]["total_ios"].as_u64().unwrap() as f64;
            assert!(reads > 0.0 && writes > 0.0, "{j}");
            // 2 MiB I/Os are few in a second: a wider band.
            let measured = reads / (reads + writes);
            let band = if bytes == 4096 { 0.05 } else { 0.2 };
            assert!(
                (measured - share).abs() < band,
                "{bs}: read share {measured} for {share}"
            );
            assert_eq!(
                j["read"]["io_bytes"].as_u64().unwrap(),
                reads as u64 * bytes
            );
            // The [global] section's options are fio's "global options", the job's own
            // its "job options".
            assert_eq!(v["global options"]["rw"], "randrw");
            assert_eq!(v["global options"]["bs"], bs);
            assert!(j["job options"]["rwmixread"].is_string(), "{j}");
            assert_eq!(j["iodepth_level"]["8"], 100.0);
        }
        // The work directory is gone: iolab removed what it wrote.
        assert!(!dir.path().join("iolab-work").exists());
        // Stored with the command line as given.
        let shown = with_db(&["results", "show", id, "--format", "json"], &[]).expect(0);
        let v: Value = serde_json::from_str(&shown.stdout).unwrap();
        let v = if v.is_array() { v[0].clone() } else { v };
        assert_eq!(v["kind"], "fio", "{v}");
        assert_eq!(v["spec"]["fio"][2], path(&job), "{v}");
    }
    // Compared and reported as any other runs: phase by phase, by the jobs' names.
    let c = with_db(&["compare", "r1", "r2"], &[]).expect(0);
    assert!(
        c.stdout.contains("mix-90") && c.stdout.contains("mix-70"),
        "{}",
        c.stdout
    );
    let md = dir.path().join("report.md");
    with_db(
        &["report", "r1", "--vs", "r2", "--markdown", path(&md)],
        &[],
    )
    .expect(0);
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("mix-90") && md.contains("| "), "{md}");
}

/// S5's matrix lines (psync, iodepth 1, direct): async and O_SYNC writes, sequential
/// 128k and random 4k, and the reads, each exactly its bytes.
#[test]
fn s5s_matrix_lines_run_with_their_sync_and_block_sizes() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    for (rw, bs, sync) in [
        ("write", "128k", "0"),
        ("randwrite", "4k", "0"),
        ("write", "128k", "1"),
        ("randwrite", "4k", "1"),
        ("read", "128k", "0"),
        ("randread", "4k", "0"),
    ] {
        let r = run(&[
            "fio",
            "--output-format=json",
            "--name=cell",
            "--ioengine=psync",
            "--iodepth=1",
            "--direct=1",
            &format!("--rw={rw}"),
            &format!("--bs={bs}"),
            &format!("--sync={sync}"),
            "--size=2m",
            "--numjobs=2",
            "--group_reporting",
            &d,
        ])
        .expect(0);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        let j = &v["jobs"][0];
        let dir_key = if rw.contains("read") { "read" } else { "write" };
        assert_eq!(
            j[dir_key]["io_bytes"].as_u64(),
            Some(2 * (2 << 20)),
            "{rw} {bs} sync={sync}: {j}"
        );
        assert_eq!(j["job options"]["sync"], sync, "{j}");
    }
}

#[test]
fn s5s_command_line_prints_fios_normal_and_terse_output() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    let r = run(&[
        "fio",
        "--name=seq-write",
        "--ioengine=psync",
        "--iodepth=1",
        "--direct=1",
        "--rw=write",
        "--bs=128k",
        "--size=8m",
        "--numjobs=1",
        &d,
    ])
    .expect(0);
    // fio's number format in its header line, not the byte count.
    assert!(
        r.stdout.starts_with(
            "seq-write: (g=0): rw=write, bs=(R) 128KiB-128KiB, (W) 128KiB-128KiB, (T) 128KiB-128KiB, ioengine=psync, iodepth=1\n"
        ),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("  write: IOPS="), "{}", r.stdout);
    assert!(r.stdout.contains("(8192KiB/"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("Run status group 0 (all jobs):\n  WRITE: bw="),
        "{}",
        r.stdout
    );
    let r = run(&[
        "fio",
        "--minimal",
        "--name=r",
        "--rw=randread",
        "--bs=4k",
        "--size=1m",
        "--runtime=1",
        "--time_based",
        &d,
    ])
    .expect(0);
    let fields: Vec<&str> = r.stdout.trim().split(';').collect();
    // 121 fields, and 9 more for each disk under the directory (none on tmpfs).
    assert_eq!((fields.len() - 121) % 9, 0, "{}", r.stdout);
    assert_eq!(fields[2], "r");
}

#[test]
fn bad_input_is_one_line_exit_2_and_runs_nothing() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    let cases: [(&[&str], &str); 9] = [
        (
            &["fio", "--name=a", "--size=1m", "--foo=1"],
            "command line: --foo: [a] foo: unknown option 'foo' (nothing was run)",
        ),
        (
            &["fio", "--name=a", "--size=1m", "--zonemode=zbd"],
            "[a] zonemode: zbd (zoned block devices) is not supported: use none or strided",
        ),
        (
            &["fio", "--name=a", "--size=1q"],
            "'1q' has an unknown unit 'q'",
        ),
        (
            &["fio", "--name=a", "--size=1m", "--offset=1000"],
            "command line: --offset: [a] offset: 1000 is not a multiple of the block size 4096",
        ),
        (
            &["fio", "--name=a", "--size=1m", "--filename_format=../x"],
            "[a] filename_format: '../x' is not a file name inside the directory",
        ),
        (
            &["fio", "--output-format=xml", "--name=a", "--size=1m"],
            "'xml' is not an output format",
        ),
        // Times past 100 years panicked in a worker (a deadline beyond u64 nanoseconds).
        (
            &["fio", "--name=a", "--size=1m", "--runtime=18446744073s"],
            "[a] runtime: '18446744073s' is more than 100 years",
        ),
        (
            &[
                "fio",
                "--name=a",
                "--size=1m",
                "--thinktime=18446744073709551615",
            ],
            "[a] thinktime: '18446744073709551615' microseconds is more than 100 years",
        ),
        // 2^44 passes over 1 MiB: counted at once and refused (the count ran for hours).
        (
            &[
                "fio",
                "--name=a",
                "--size=1m",
                "--io_size=18446744073709551615",
            ],
            "[a] io_size: 18446744073709551615 bytes over a region of 1048576 make 17592186044416 passes",
        ),
    ];
    for (args, want) in cases {
        let mut args = args.to_vec();
        args.push(&d);
        let r = run(&args).expect(2);
        assert!(r.error_line().contains(want), "{args:?}: {}", r.stderr);
    }
    // Two jobs of one phase on the same files (fio would share them).
    let r = run(&["fio", &d, "--name=a", "--size=1m", "--name=a", "--size=1m"]).expect(2);
    assert!(
        r.error_line()
            .contains("[a] name: [a] and [a] run at the same time on the same files"),
        "{}",
        r.stderr
    );
    let bad = dir.path().join("bad.fio");
    std::fs::write(&bad, "[global\nrw=read\n").unwrap();
    let r = run(&["fio", path(&bad)]).expect(2);
    assert!(
        r.error_line()
            .contains("bad.fio:1: section header '[global' has no closing ']'"),
        "{}",
        r.stderr
    );
    std::fs::write(&bad, "[a]\nsize=1m\nbs 4k\n").unwrap();
    let r = run(&["fio", path(&bad)]).expect(2);
    assert!(
        r.error_line()
            .contains("bad.fio:3: 'bs 4k' is not an option: use key=value"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing but the job file"
    );
}

#[test]
fn parse_only_shows_the_workload_and_runs_nothing() {
    let r = run(&[
        "fio",
        "--parse-only",
        "--name=x",
        "--rw=randrw",
        "--rwmixread=70",
        "--bs=2048k",
        "--ioengine=libaio",
        "--iodepth=8",
        "--numjobs=8",
        "--size=1g",
        "--directory=/nonexistent",
    ])
    .expect(0);
    for want in [
        "[x] group 0 phase 0 on dir /nonexistent",
        "  files = /nonexistent/iolab-work/x.<jobnum>.<filenum>",
        "backend = \"uring\"",
        "queue_depth = 8",
        "threads = 8",
        "rwmix_read = 70",
        "note: ioengine=libaio runs on io_uring",
    ] {
        assert!(r.stdout.contains(want), "{want}: {}", r.stdout);
    }
}

/// A write job with verify= reads back what it wrote and, as fio, counts that read-back
/// in the job's own read figures (alone, and for two clones under group_reporting);
/// the run says its checking is iolab's own.
#[test]
fn a_verifying_write_job_reports_its_read_back_as_fio_does() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = format!("--directory={}", path(dir.path()));
    for (numjobs, bytes) in [("1", 1u64 << 20), ("2", 2 << 20)] {
        let r = run(&[
            "fio",
            "--no-store",
            "--output-format=json",
            "--name=v",
            "--rw=write",
            "--bs=4k",
            "--size=1m",
            "--verify=crc32c",
            &format!("--numjobs={numjobs}"),
            "--group_reporting",
            &d,
        ])
        .expect(0);
        assert!(
            r.stderr.contains("verify=crc32c is checked with iolab's"),
            "{}",
            r.stderr
        );
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        let j = &v["jobs"][0];
        assert_eq!(j["write"]["io_bytes"].as_u64(), Some(bytes), "{j}");
        assert_eq!(j["read"]["io_bytes"].as_u64(), Some(bytes), "{j}");
        assert_eq!(j["read"]["total_ios"].as_u64(), Some(bytes / 4096), "{j}");
    }
}

/// Every key path real fio (on PATH; scripts/test.sh installs Debian's) writes in its JSON
/// for a job is in iolab fio's JSON for the same job, with the same JSON type: the check
/// bench/fio_json_keys.py makes, kept as a test.
#[test]
fn iolab_fios_json_has_every_key_real_fio_writes() {
    let has_fio = std::process::Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_fio {
        eprintln!("SKIPPED: fio is not on PATH (scripts/test.sh installs it)");
        return;
    }
    let job = [
        "--name=mix",
        "--rw=randrw",
        "--rwmixread=70",
        "--bs=4k",
        "--size=2m",
        "--numjobs=2",
        "--thread",
        "--group_reporting",
        "--ioengine=psync",
        "--output-format=json+",
    ];
    let (fio_dir, iolab_dir) = (
        tempfile::tempdir_in("/var/tmp").unwrap(),
        tempfile::tempdir_in("/var/tmp").unwrap(),
    );
    let fio = std::process::Command::new("fio")
        .args(job)
        .arg(format!("--directory={}", path(fio_dir.path())))
        .output()
        .unwrap();
    assert!(
        fio.status.success(),
        "{}",
        String::from_utf8_lossy(&fio.stderr)
    );
    let text = String::from_utf8_lossy(&fio.stdout);
    let reference: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let mut args = vec!["fio", "--no-store"];
    args.extend(job);
    let d = format!("--directory={}", path(iolab_dir.path()));
    args.push(&d);
    let ours: Value = serde_json::from_str(&run(&args).expect(0).stdout).unwrap();
    let (want, got) = (key_paths(&reference, ""), key_paths(&ours, ""));
    let missing: Vec<String> = want
        .iter()
        .filter(|(k, t)| got.get(*k) != Some(t))
        .map(|(k, t)| format!("{k} ({t}, iolab: {:?})", got.get(k)))
        .collect();
    assert!(missing.is_empty(), "{} keys: {missing:#?}", missing.len());
    assert!(want.len() > 200, "{}", want.len());
}

/// Every key path of `v` with its JSON type; keys under "percentile" and "bins" (named
/// by their value) as one, arrays by their first element.
fn key_paths(v: &Value, at: &str) -> std::collections::BTreeMap<String, &'static str> {
    let mut out = std::collections::BTreeMap::new();
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    if !at.is_empty() {
        out.insert(at.to_string(), kind);
    }
    match v {
        Value::Object(m) => {
            let named_by_value = at.ends_with("percentile") || at.ends_with("bins");
            for (k, x) in m {
                let k = if named_by_value { "*" } else { k.as_str() };
                out.extend(key_paths(x, &format!("{at}.{k}")));
            }
        }
        Value::Array(a) => {
            if let Some(x) = a.first() {
                out.extend(key_paths(x, &format!("{at}[]")));
            }
        }
        _ => {}
    }
    out
}
