//! `iolab checkpoint`: DLIO's bytes per rank written and read back.

use super::json_of;
use crate::common::{path, run};

#[test]
fn checkpoint_writes_dlio_s_bytes_per_rank_and_reads_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let plan = run(&["checkpoint", "--model", "llama3-8b", "--plan"]).expect(0);
    // DLIO's sizes for Llama 3 8B on 8 ranks, ZeRO 3: 2007565312 + 12045637632 per rank.
    assert!(
        plan.stdout
            .contains("zero_pp_rank_7_mp_rank_0_optim_states.pt  12045637632 bytes"),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout
            .contains("zero_pp_rank_0_mp_rank_0_model_states.pt  2007565312 bytes")
    );
    let json = dir.path().join("c.json");
    let r = run(&[
        "checkpoint",
        "--model",
        "llama3-405b",
        "--ranks",
        "8",
        "--dp",
        "2",
        "--scale",
        "0.00001",
        "--writes",
        "2",
        "--reads",
        "1",
        "--time-between",
        "0",
        "--dir",
        path(dir.path()),
        "--json",
        path(&json),
        "--no-store",
    ])
    .expect(0);
    assert!(r.stdout.contains("subset"), "{}", r.stdout);
    let v = json_of(&json);
    let ranks: Vec<u64> = v["spec"]["rank_bytes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .collect();
    assert_eq!(ranks.len(), 8);
    let per_checkpoint: u64 = ranks.iter().sum();
    let write = &v["phases"][0];
    assert_eq!(write["name"], "checkpoint-write");
    assert_eq!(
        write["ops"][0]["bytes"].as_u64().unwrap(),
        2 * per_checkpoint
    );
    let read = &v["phases"][1];
    assert_eq!(read["ops"][0]["bytes"].as_u64().unwrap(), per_checkpoint);
    // Every checkpoint's figures are stored, and the phases' means recompute from them
    // (docs/figures.md).
    for (phase, kind, n) in [(write, "write", 2), (read, "read", 1)] {
        let rounds = v["spec"]["checkpoints"][kind].as_array().unwrap();
        assert_eq!(rounds.len(), n, "{kind}");
        let mut gibps = 0.0;
        let mut dur = 0.0;
        for r in rounds {
            assert_eq!(r["bytes"].as_u64().unwrap(), per_checkpoint, "{kind}");
            let d = r["duration_s"].as_f64().unwrap();
            assert!(d > 0.0 && r["slowest_s"].as_f64().unwrap() <= d, "{r}");
            assert!(r["slowest_rank"].as_u64().unwrap() < 8);
            gibps += per_checkpoint as f64 / 1073741824.0 / d / n as f64;
            dur += d / n as f64;
        }
        // The phase's typed figures: bytes/s, and the mean duration in whole ns.
        let x = &phase["figures"];
        assert_eq!(x["workload"], "checkpoint", "{x}");
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        assert!(
            close(x["throughput_mean"].as_f64().unwrap() / 1073741824.0, gibps),
            "{x} {gibps}"
        );
        assert!(
            (x["duration_mean"].as_f64().unwrap() - dur * 1e9).abs() <= 1.0,
            "{x} {dur}"
        );
    }
    assert!(v["spec"]["cache_dropped"].is_boolean(), "{}", v["spec"]);
    // Nothing left behind.
    assert_eq!(
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name() != "c.json")
            .count(),
        0
    );
}

/// A small llama3-8b run (8 ranks, a hundred-thousandth of the bytes) in `dir`, with
/// `extra` options.
fn small(dir: &std::path::Path, extra: &[&str]) -> crate::common::Ran {
    let mut a = vec![
        "checkpoint",
        "--model",
        "llama3-8b",
        "--scale",
        "0.00001",
        "--writes",
        "1",
        "--reads",
        "1",
        "--dir",
        path(dir),
        "--no-store",
    ];
    if !extra.contains(&"--time-between") {
        a.extend(["--time-between", "0"]);
    }
    a.extend(extra);
    run(&a)
}

#[test]
fn v3_memory_rule_passes_with_the_flush_step_and_a_read_within_30_s() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("c.json");
    let r = small(dir.path(), &["--json", path(&json)]).expect(0);
    assert!(
        r.stdout.contains("the first read started") && r.stdout.contains("VALID under v3.0"),
        "{}",
        r.stdout
    );
    let v = json_of(&json);
    // Small checkpoints: the flush step (fadvise DONTNEED of every file written) ran and
    // the read started within 30 s; the rule and its gap are stored.
    assert_eq!(v["spec"]["cache_dropped"], true, "{}", v["spec"]);
    let gap = v["spec"]["read_gap_s"].as_f64().unwrap();
    assert!((0.0..30.0).contains(&gap), "{gap}");
    let checks = v["spec"]["validity"].as_array().unwrap();
    assert_eq!(checks[0]["rule"], "v3.0 checkpoint memory");
    assert_eq!(checks[0]["ok"], true, "{}", checks[0]);
    assert!(
        checks[0]["detail"]
            .as_str()
            .unwrap()
            .contains("flushed from the page cache")
    );
    assert_eq!(checks[1]["rule"], "v3.0 subset");
    assert_eq!(v["spec"]["verdict"]["valid"], true);
    // Without the flush step the rule fails in the verdict (the run still completes).
    let r = small(dir.path(), &["--keep-cache"]).expect(0);
    assert!(
        r.stdout.contains("FAIL  v3.0 checkpoint memory")
            && r.stdout.contains("no cache-flush step")
            && r.stdout.contains("NOT VALID under v3.0"),
        "{}",
        r.stdout
    );
}

#[test]
fn v3_closed_refuses_what_the_rules_forbid_in_one_line_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, want) in [
        (
            &["--closed", "--keep-cache"][..],
            "--keep-cache: the checkpoints (",
        ),
        (
            &["--closed", "--time-between", "31s"][..],
            "the read to start within 30 s of the write: at most 30s",
        ),
        (
            &["--closed", "--ranks", "4", "--dp", "8"][..],
            "--ranks: a subset run of llama3_8b on 4 ranks; v3.0 allows subsets of llama3_8b on 8 only (--closed)",
        ),
    ] {
        let r = small(dir.path(), extra).expect(2);
        let line = r.error_line();
        assert!(line.contains(want), "{line}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{line}");
    }
    // The same subset without --closed runs, and its verdict says why it is not valid.
    let r = small(dir.path(), &["--ranks", "4", "--dp", "8"]).expect(0);
    assert!(r.stdout.contains("FAIL  v3.0 subset"), "{}", r.stdout);
}
