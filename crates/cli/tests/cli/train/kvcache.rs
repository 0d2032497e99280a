//! `iolab kvcache`: a small run on a directory with a CPU tier, its stored figures
//! adding up, nothing left behind; bad input refused in one line, nothing written.

use super::json_of;
use crate::common::{path, run};

#[test]
fn kvcache_runs_users_over_two_tiers_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("k.json");
    let r = run(&[
        "kvcache",
        "--model",
        "tiny-1b",
        "--users",
        "3",
        "--duration",
        "2s",
        "--generation-mode",
        "none",
        "--cpu-memory",
        "32MiB",
        "--trials",
        "2",
        "--dir",
        path(dir.path()),
        "--json",
        path(&json),
        "--no-store",
    ])
    .expect(0);
    assert!(
        r.stdout.contains("tiny-1b (24576 bytes/token), 3 users"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("over 2 trials"), "{}", r.stdout);
    assert!(r.stdout.contains("cache hit rate"), "{}", r.stdout);
    let v = json_of(&json);
    let trials = v["spec"]["kvcache"].as_array().unwrap();
    assert_eq!(trials.len(), 2);
    for (t, phase) in trials.iter().zip(v["phases"].as_array().unwrap()) {
        let f = &t["figures"];
        assert!(f["requests"].as_u64().unwrap() > 0, "{t}");
        // The stored phase's storage bytes are the figures' bytes.
        assert_eq!(phase["ops"][1]["bytes"], f["storage"]["bytes_written"]);
        assert_eq!(phase["ops"][0]["bytes"], f["storage"]["bytes_read"]);
        // Every entry is header + tokens x 24576 bytes: the CPU tier's writes are too.
        let cpu_written = f["cpu"]["bytes_written"].as_u64().unwrap();
        let cpu_writes = f["cpu"]["writes"].as_u64().unwrap();
        assert!(
            cpu_writes == 0 || cpu_written >= cpu_writes * (128 + 24576),
            "{f}"
        );
    }
    // Only the work directory's own files were made, and they are gone.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "k.json")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn kvcache_refuses_bad_input_in_one_line_writing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    let cases: [(&[&str], &str); 4] = [
        (&["--model", "gpt-5"], "gpt-5"),
        (&["--cpu-memory", "100TiB"], "--cpu-memory"),
        (&["--storage-capacity", "1MiB"], "--dir"),
        (&["--option", "4"], "--option"),
    ];
    for (extra, names) in cases {
        let mut args = vec!["kvcache", "--dir", d, "--duration", "1s", "--no-store"];
        args.extend_from_slice(extra);
        let r = run(&args).expect(2);
        assert!(r.stderr.contains(names), "{extra:?}: {}", r.stderr);
        assert_eq!(
            r.stderr.trim().lines().count(),
            1,
            "{extra:?}: {}",
            r.stderr
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "{extra:?}"
        );
    }
}
