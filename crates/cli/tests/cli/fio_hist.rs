//! fio's histogram log (`write_hist_log`, `log_hist_msec`): fio 3.33's file names and
//! columns (time, direction, block size, the 1856 `io_u_plat` bins), its windows (each
//! line at least `log_hist_msec` after the one before, counting from the first
//! completion), the I/Os of the lines no more than the job's, and the same file from
//! real fio when it is on PATH; and `log_unix_epoch`'s wall-clock times.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Ran, fio_or_iolab, iolab, path};

/// Each line: (time ms, direction, block size, its bins).
fn lines(file: &Path) -> Vec<(u64, u64, u64, Vec<u64>)> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines()
        .map(|l| {
            let v: Vec<u64> = l
                .split(", ")
                .map(|x| x.parse().unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect();
            assert_eq!(v.len(), 3 + 1856, "{}: {l}", file.display());
            (v[0], v[1], v[2], v[3..].to_vec())
        })
        .collect()
}

const JOB: [&str; 10] = [
    "--name=h",
    "--rw=randread",
    "--bs=4k",
    "--size=4m",
    "--time_based",
    "--runtime=1",
    "--rate_iops=2000",
    "--numjobs=2",
    "--write_hist_log=logs/h",
    "--log_hist_msec=100",
];

/// Checks the logs a run wrote in `dir` against its JSON `v`.
fn check(tool: &str, dir: &Path, v: &Value) {
    for (clone, job) in v["jobs"].as_array().unwrap().iter().enumerate() {
        let file = dir.join(format!("logs/h_clat_hist.{}.log", clone + 1));
        let l = lines(&file);
        // 1 s at 100 ms: 9 lines in both tools here (the first window opens at the
        // first completion; what completes after the last line is not logged).
        assert!((3..=10).contains(&l.len()), "{tool}: {} lines", l.len());
        let mut logged = 0;
        for (k, (at, d, bs, bins)) in l.iter().enumerate() {
            assert_eq!((*d, *bs), (0, 4096), "{tool}");
            // The windows keep in step: line k closes at least (k + 1) windows in.
            assert!(*at >= 100 * (k as u64 + 1), "{tool}: line {k} at {at} ms");
            let n: u64 = bins.iter().sum();
            assert!(n > 0, "{tool}: line {k} is empty");
            logged += n;
        }
        let total = job["read"]["total_ios"].as_u64().unwrap();
        assert!(logged <= total, "{tool}: {logged} logged of {total}");
    }
}

#[test]
fn hist_logs_are_fios_lines_of_fios_bins() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    let d = format!("--directory={}", path(dir.path()));
    let r = Ran::from(
        iolab()
            .current_dir(dir.path())
            .args(["fio", "--no-store", "--output-format=json", &d])
            .args(JOB)
            .output()
            .unwrap(),
    )
    .expect(0);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    check("iolab", dir.path(), &v);
    let names = |dir: &Path| {
        let mut n: Vec<String> = std::fs::read_dir(dir.join("logs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    assert_eq!(
        names(dir.path()),
        ["h_clat_hist.1.log", "h_clat_hist.2.log"]
    );

    // per_job_logs=0: one file the clones append to; without log_hist_msec an empty
    // file, as fio writes.
    let one = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::create_dir(one.path().join("logs")).unwrap();
    Ran::from(
        iolab()
            .current_dir(one.path())
            .args([
                "fio",
                "--no-store",
                &format!("--directory={}", path(one.path())),
            ])
            .args(JOB)
            .args(["--per_job_logs=0", "--name=e", "--rw=read", "--size=1m"])
            .args(["--write_hist_log=logs/e", "--stonewall"])
            .output()
            .unwrap(),
    )
    .expect(0);
    assert_eq!(names(one.path()), ["e_clat_hist.3.log", "h_clat_hist.log"]);
    let both = lines(&one.path().join("logs/h_clat_hist.log"));
    assert!(both.len() >= 6, "{} lines", both.len());
    assert_eq!(
        std::fs::metadata(one.path().join("logs/e_clat_hist.3.log"))
            .unwrap()
            .len(),
        0
    );

    if Command::new("fio").arg("--version").output().is_err() {
        eprintln!("SKIPPED the comparison with real fio: fio is not on PATH");
        return;
    }
    let theirs = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::create_dir(theirs.path().join("logs")).unwrap();
    let mut fio = Command::new("fio");
    fio.current_dir(theirs.path())
        .arg("--output-format=json")
        .arg(format!("--directory={}", path(theirs.path())))
        .args(JOB);
    let out = Ran::from(fio.output().unwrap()).expect(0);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    check("fio 3.33", theirs.path(), &v);
    assert_eq!(names(theirs.path()), names(dir.path()));
}

/// log_unix_epoch: the time column is the wall clock in ms (fio's alternate_epoch,
/// taken again when the ramp ends), in the bandwidth and the histogram logs alike: in
/// both tools each line's time lies between the ramp's end plus one window and the
/// run's end, the bandwidth lines 500 ms apart (within fio's
/// millisecond of lag).
#[test]
fn log_unix_epoch_dates_the_lines_by_the_wall_clock_as_fio() {
    let job = [
        "--name=u",
        "--rw=read",
        "--size=4m",
        "--time_based",
        "--runtime=2",
        "--ramp_time=1",
        "--rate_iops=500",
        "--write_bw_log=logs/u",
        "--log_avg_msec=500",
        "--write_hist_log=logs/u",
        "--log_hist_msec=500",
        "--log_unix_epoch=1",
    ];
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    let fio_here = Command::new("fio").arg("--version").output().is_ok();
    let mut counts = Vec::new();
    for tool in ["iolab", "fio"] {
        if tool == "fio" && !fio_here {
            eprintln!("SKIPPED the comparison with real fio: fio is not on PATH");
            continue;
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        std::fs::create_dir(dir.path().join("logs")).unwrap();
        let mut cmd = fio_or_iolab(tool, &[]);
        let before = now();
        Ran::from(
            cmd.current_dir(dir.path())
                .arg(format!("--directory={}", path(dir.path())))
                .args(job)
                .output()
                .unwrap(),
        )
        .expect(0);
        let after = now();
        let bw = std::fs::read_to_string(dir.path().join("logs/u_bw.1.log")).unwrap();
        let times: Vec<u64> = bw
            .lines()
            .map(|l| l.split(", ").next().unwrap().parse().unwrap())
            .collect();
        assert!(times.len() >= 3, "{tool}: {bw}");
        for (k, t) in times.iter().enumerate() {
            assert!(
                *t >= before + 1000 + 500,
                "{tool}: line {k} at {t}, run from {before}"
            );
            assert!(*t <= after, "{tool}: line {k} at {t}, run ended {after}");
            if k > 0 {
                assert!((t - times[k - 1]).abs_diff(500) <= 10, "{tool}: {times:?}");
            }
        }
        let hist = lines(&dir.path().join("logs/u_clat_hist.1.log"));
        assert!(!hist.is_empty(), "{tool}");
        for (at, ..) in &hist {
            assert!(
                *at >= before + 1000 && *at <= after,
                "{tool}: {at} not in {before}..{after}"
            );
        }
        counts.push(times.len());
    }
    if let [ours, theirs] = counts[..] {
        assert!(
            ours.abs_diff(theirs) <= 1,
            "bw lines: iolab {ours}, fio {theirs}"
        );
    }
}
