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
