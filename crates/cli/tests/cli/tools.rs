//! The analysis commands that need no workload: endurance, audit, inventory.

use crate::common::{error_line, path, run};

#[test]
fn endurance_gives_the_published_figures() {
    let r = run(&[
        "endurance",
        "--rated",
        "2.61PBW",
        "--write-rate",
        "100MiB/s",
        "--years",
        "5",
    ])
    .expect(0);
    assert!(
        r.stdout
            .contains("over 5 years:   14.69 PiB (16.53 PB) written"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("WEARS OUT after 0.79 years"),
        "{}",
        r.stdout
    );
    let r = run(&["endurance", "--rated", "41PBW", "--write-rate", "100MiB/s"]).expect(0);
    assert!(r.stdout.contains("verdict:         lasts"), "{}", r.stdout);
    let r = run(&[
        "endurance",
        "--dwpd",
        "1",
        "--capacity",
        "2TB",
        "--write-rate",
        "100MiB/s",
        "--json",
    ])
    .expect(0);
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["projection"]["rated"], 3_650_000_000_000_000u64);
    assert_eq!(j["lasts"], false);
}

/// The rated figure in any unit iolab reads (what `endurance` itself prints, 14.69 PiB,
/// is accepted back), and a run's mean write rate, not its peak, with its source named.
#[test]
fn endurance_takes_any_size_and_a_runs_mean_rate() {
    let r = run(&[
        "endurance",
        "--rated",
        "14.69PiB",
        "--write-rate",
        "100MiB/s",
        "--json",
    ])
    .expect(0);
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        j["projection"]["rated"],
        (14.69 * (1u64 << 50) as f64).round() as u64
    );

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("e.db");
    let json = dir.path().join("run.json");
    let stored = crate::common::iolab()
        .env("IOLAB_DB", &db)
        .args([
            "run",
            "--backend",
            "null",
            "--rw",
            "write",
            "--size",
            "64MiB",
        ])
        .args(["-t", "2", "-Q", "--json", path(&json)])
        .output()
        .unwrap();
    assert!(stored.status.success());
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let phase = &result["phases"][0];
    let written = phase["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "write")
        .unwrap()["bytes"]
        .as_f64()
        .unwrap();
    let secs = phase["elapsed"].as_f64().unwrap() / 1e9;
    let e = crate::common::iolab()
        .env("IOLAB_DB", &db)
        .args([
            "endurance",
            "--rated",
            "600TBW",
            "--from-run",
            "r1",
            "--json",
        ])
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&e.stdout).unwrap();
    let rate = j["projection"]["rate"].as_f64().unwrap();
    let want = written / secs;
    assert!((rate - want).abs() <= want * 1e-6, "{rate} vs {want}");
    let source = j["rate_source"].as_str().unwrap();
    assert!(
        source.starts_with(
            "mean write rate of run r1 over its 1 phase(s): 128.00 MiB (134.22 MB) written in "
        ),
        "{source}"
    );
    // A run of milliseconds stands for no years of writing: said beside the figure (the
    // null backend wrote through no page cache, so no cache warning).
    let warnings: Vec<&str> = j["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("run r1 wrote for only ")
            && warnings[0].contains("too short to stand for years"),
        "{warnings:?}"
    );
    // Commands that store nothing do not offer --no-store.
    for cmd in ["compare", "report", "results", "endurance"] {
        let r = run(&[cmd, "--no-store"]).expect(2);
        assert!(error_line(&r).contains("--no-store"), "{cmd}: {}", r.stderr);
    }
}

#[test]
fn endurance_bad_input_is_one_line() {
    let r = run(&["endurance", "--rated", "lots", "--write-rate", "1MiB/s"]).expect(2);
    assert!(
        error_line(&r).starts_with("iolab: error: --rated: invalid size 'lots'"),
        "{}",
        r.stderr
    );
    let r = run(&["endurance", "--write-rate", "1MiB/s"]).expect(2);
    assert!(
        error_line(&r).contains("give the rated endurance"),
        "{}",
        r.stderr
    );
    // A rate of 0 has no lifetime ("inf years", "infx").
    let r = run(&["endurance", "--rated", "600TBW", "--write-rate", "0B/s"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: --write-rate: must be more than 0 B/s"
    );
    let r = run(&["endurance", "--rated", "0TBW", "--write-rate", "1MiB/s"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: --rated: must be more than 0 bytes"
    );
    // Periods and ratings that are no numbers, or overflow 64 bits, were printed as
    // "inf years" or saturated to a 16 EiB rating.
    for (extra, expected) in [
        (
            vec!["--warranty-years", "inf"],
            "--warranty-years: inf is not a number of years above 0 and at most 1000",
        ),
        (
            vec!["--warranty-years", "NaN"],
            "--warranty-years: NaN is not a number of years above 0 and at most 1000",
        ),
        (
            vec!["--years", "1e30"],
            "--years: 1000000000000000000000000000000 is not a number of years above 0 and at most 1000",
        ),
        (
            vec!["--capacity", "1000PB"],
            "--dwpd 5000 x --capacity 888 PiB x --warranty-years 5 rates 16 EiB or more; check the figures",
        ),
    ] {
        let mut args = vec!["endurance", "--dwpd", "5000", "--write-rate", "1MiB/s"];
        if !extra.contains(&"--capacity") {
            args.extend(["--capacity", "1TB"]);
        }
        args.extend(&extra);
        let r = run(&args).expect(2);
        assert_eq!(
            error_line(&r),
            format!("iolab: error: {expected}"),
            "{args:?}"
        );
    }
    let r = run(&["endurance", "--rated", "20EiB", "--write-rate", "1MiB/s"]).expect(2);
    assert!(
        error_line(&r).starts_with("iolab: error: --rated: invalid size '20EiB'"),
        "{}",
        r.stderr
    );
}

#[test]
fn endurance_gives_short_lifetimes_in_days() {
    // 600 TB at 1 GB/s lasts 600,000 s: "0.02 years" said little.
    let r = run(&["endurance", "--rated", "600TBW", "--write-rate", "1GB/s"]).expect(0);
    assert!(
        r.stdout.contains("lifetime:        6.9 days at this rate"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("WEARS OUT after 6.9 days:"),
        "{}",
        r.stdout
    );
}

#[test]
fn audit_reads_and_reports_without_failing() {
    let r = run(&[
        "audit",
        "--dir",
        "/tmp",
        "--json",
        "--profile",
        "nfs-server",
    ])
    .expect(0);
    let findings: Vec<serde_json::Value> = serde_json::from_str(&r.stdout).unwrap();
    assert!(findings.len() >= 10, "{}", findings.len());
    for f in &findings {
        assert!(
            ["pass", "warn", "unknown"].contains(&f["status"].as_str().unwrap()),
            "{f}"
        );
        assert!(!f["why"].as_str().unwrap().is_empty());
    }
    assert!(
        findings
            .iter()
            .any(|f| f["id"].as_str().unwrap().contains("nfsd")),
        "the nfs-server profile checks nfsd threads"
    );
    let r = run(&["audit", "--profile", "toaster"]).expect(2);
    assert!(
        error_line(&r).starts_with("iolab: error: --profile: "),
        "{}",
        r.stderr
    );
}

#[test]
fn inventory_describes_the_target() {
    let r = run(&["inventory", "--dir", "/tmp", "--json"]).expect(0);
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(j["memory_bytes"].as_u64().unwrap() > 0);
    assert!(!j["target"]["fs_type"].as_str().unwrap().is_empty());
    let r = run(&["inventory"]).expect(0);
    assert!(r.stdout.starts_with("host:"), "{}", r.stdout);
}

#[test]
fn a_ladder_steps_the_queue_depth_and_reports_its_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("l.json");
    let r = run(&[
        "ladder",
        "--backend",
        "null",
        "--rw",
        "randread",
        "--size",
        "64MiB",
        "--step-time",
        "1s",
        "--max",
        "4",
        "--slo",
        "p99<=1s",
        "--json",
        out.to_str().unwrap(),
    ])
    .expect(0);
    assert!(
        r.stdout.contains("ladder: objective p99 <= 1.00 s"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("highest load within the objective: QD 4"),
        "{}",
        r.stdout
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let phases = j["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 3);
    assert_eq!(j["kind"], "ladder");
    let qds: Vec<&str> = phases
        .iter()
        .map(|p| p["params"]["queue_depth"].as_str().unwrap())
        .collect();
    assert_eq!(qds, ["1", "2", "4"]);
    assert!(phases.iter().all(|p| p["extra"]["meets_objective"] == 1.0));
    // What the steps warned of is printed too, once each: buffered reads of a small
    // file warn that the page cache may serve them.
    let work = dir.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let r = run(&[
        "ladder",
        "--dir",
        path(&work),
        "--rw",
        "randread",
        "--size",
        "1MiB",
        "--axis",
        "threads",
        "--max",
        "2",
        "--step-time",
        "1s",
        "--slo",
        "p99<=1s",
        "--no-store",
    ])
    .expect(0);
    let cache = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("warning: buffered reads of "))
        .count();
    assert_eq!(cache, 2, "one per step (1 and 2 MiB):\n{}", r.stdout);
    let r = run(&["ladder", "--backend", "null", "--slo", "p99 under 1ms"]).expect(2);
    assert!(
        error_line(&r).starts_with("iolab: error: --slo: invalid objective"),
        "{}",
        r.stderr
    );
    // A percentile results do not keep is refused, not judged against another.
    let r = run(&["ladder", "--backend", "null", "--slo", "p42<=1ms"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: --slo: invalid objective 'p42<=1ms': p42 is not a measured percentile; use p50, p90, p99, p99.9, p99.99 or mean"
    );
}
