//! MLPerf's run rule: a warm-up, counted runs with new seeds, the stored verdict.

use super::json_of;
use crate::common::{path, run};

/// The stored phases' names, seeds, AU and samples/s.
fn phases_of(v: &serde_json::Value) -> Vec<(String, String, f64, f64)> {
    v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["params"]["seed"].as_str().unwrap_or_default().to_string(),
                p["figures"]["au_percent"].as_f64().unwrap(),
                p["figures"]["samples_per_sec"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn repeated_runs_have_a_warmup_new_seeds_and_a_stored_verdict() {
    // MLPerf's run rule: a warm-up, then counted runs with a new seed each, within 5 %.
    // Two counted runs here (the rule wants 5), so the verdict is "not valid" and says
    // why; the dataset is far below 5 x memory, so that check fails too.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let common = [
        "--data-dir",
        path(&data),
        "--files",
        "8",
        "--record-length",
        "4096",
    ];
    let mut args = vec!["train", "datagen", "--no-store"];
    args.extend(common);
    run(&args).expect(0);
    let json = dir.path().join("run.json");
    let mut args = vec!["train", "run"];
    args.extend(common);
    args.extend([
        "--batch-size",
        "1",
        "--computation-time",
        "5ms",
        "--warmup",
        "1",
        "--runs",
        "2",
        "--seed",
        "7",
        "--json",
        path(&json),
        "--no-store",
    ]);
    let r = run(&args).expect(0);
    let v = json_of(&json);
    let phases = phases_of(&v);
    let names: Vec<&str> = phases.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "warmup-1-train-epoch-1",
            "run-1-train-epoch-1",
            "run-2-train-epoch-1"
        ]
    );
    let seeds: Vec<&str> = phases.iter().map(|p| p.1.as_str()).collect();
    assert_eq!(seeds, ["7", "8", "9"]);
    // Each run's stored figures are its epoch's; the headline is the counted runs'.
    let runs = v["spec"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0]["run"], "warmup");
    for (run, p) in runs.iter().zip(&phases) {
        assert_eq!(run["au_percent"].as_f64().unwrap(), p.2);
        assert_eq!(run["samples_per_sec"].as_f64().unwrap(), p.3);
        assert_eq!(run["seed"].as_u64().unwrap().to_string(), p.1);
    }
    let counted = &phases[1..];
    let au_mean = (counted[0].2 + counted[1].2) / 2.0;
    let stored = v["spec"]["train"]["au_mean_percent"].as_f64().unwrap();
    assert!(
        (stored - au_mean).abs() < 1e-9,
        "{stored} against {au_mean}"
    );
    // The runs' agreement is max / min - 1 of the counted runs' samples/s.
    let (a, b) = (counted[0].3, counted[1].3);
    let spread = format!("spread {:.1} %", (a.max(b) / a.min(b) - 1.0) * 100.0);
    let checks = v["spec"]["validity"].as_array().unwrap();
    let check = |rule: &str| {
        checks
            .iter()
            .find(|c| c["rule"] == rule)
            .unwrap_or_else(|| panic!("no {rule} in {checks:?}"))
    };
    let sps = check("runs' samples/s within 5 %");
    assert!(sps["detail"].as_str().unwrap().contains(&spread), "{sps}");
    assert_eq!(check("one warm-up run")["ok"], true);
    assert_eq!(check("5 counted runs, new seeds")["ok"], false);
    assert_eq!(check("dataset >= 5 x hosts' memory")["ok"], false);
    let verdict = &v["spec"]["verdict"];
    assert_eq!(verdict["valid"], false);
    let failed: Vec<&str> = verdict["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(failed.contains(&"5 counted runs, new seeds"), "{failed:?}");
    assert!(
        failed.contains(&"dataset >= 5 x hosts' memory"),
        "{failed:?}"
    );
    assert!(!failed.contains(&"one warm-up run"), "{failed:?}");
    assert!(r.stdout.contains("(not counted)"), "{}", r.stdout);
    assert!(
        r.stdout.contains("verdict: NOT VALID")
            && r.stdout.contains("possibly served from the page cache"),
        "{}",
        r.stdout
    );
    // A count of 0 runs, and --mlperf beside --runs: one line, exit 2.
    let mut bad = vec!["train", "run", "--no-store"];
    bad.extend(common);
    let mut zero = bad.clone();
    zero.extend(["--runs", "0"]);
    let line = run(&zero).expect(2).error_line();
    assert!(line.contains("--runs"), "{line}");
    let mut both = bad.clone();
    both.extend(["--mlperf", "--runs", "3"]);
    let line = run(&both).expect(2).error_line();
    assert!(line.contains("--mlperf"), "{line}");
}
