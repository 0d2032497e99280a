//! `iolab kvcache` runs small: users over a CPU and a storage tier, the capacity
//! autoscaler's steps, the null backend and the join window, each with its stored
//! figures.

use super::{kvcache_run, left_in};

#[test]
fn kvcache_runs_users_over_two_tiers_and_leaves_nothing() {
    let (r, v, dir) = kvcache_run(&[
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
    ]);
    assert!(
        r.stdout.contains("tiny-1b (24576 bytes/token), 3 users"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("over 2 trials"), "{}", r.stdout);
    assert!(r.stdout.contains("cache hit rate"), "{}", r.stdout);
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
    let left = left_in(dir.path());
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn kvcache_autoscale_capacity_steps_users_and_says_where_it_stands() {
    let (r, v, _) = kvcache_run(&[
        "--model",
        "tiny-1b",
        "--users",
        "1",
        "--duration",
        "1s",
        "--generation-mode",
        "none",
        "--autoscale",
        "capacity",
        "--autoscale-steps",
        "3",
    ]);
    // A line after each step: where it stands, why, at most what is left.
    assert!(
        r.stderr
            .contains("kvcache autoscale capacity: step 1 of at most 3: 1 users"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("; next 6 users, at most 2 more step(s) of 1 s"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("peak: "), "{}", r.stdout);
    let steps = v["spec"]["kvcache_autoscale"]["steps"].as_array().unwrap();
    // The first step always grows by 5 (40 % of 1 is under the least step); the
    // third is the last --autoscale-steps allows.
    let users: Vec<u64> = steps.iter().map(|s| s["users"].as_u64().unwrap()).collect();
    assert_eq!(users.len(), 3, "{steps:?}");
    assert_eq!(&users[..2], [1, 6]);
    assert!(steps[2]["next_users"].is_null());
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 3);
    assert_eq!(phases[1]["name"], "kvcache step 2 (6 users)");
    let best = v["spec"]["kvcache_autoscale"]["users"].as_u64().unwrap();
    assert!(users.contains(&best), "{best} {users:?}");
}

/// On the null backend the storage tier's entries go through the engine's I/O loop and
/// recorder but touch no file: the timeline counts the pieces, nothing is on disk.
#[test]
fn kvcache_on_the_null_backend_touches_no_file() {
    let (_, v, _) = kvcache_run(&[
        "--model",
        "tiny-1b",
        "--users",
        "2",
        "--duration",
        "2s",
        "--generation-mode",
        "none",
        "--backend",
        "null",
        "--storage-capacity",
        "1GiB",
    ]);
    let t = &v["spec"]["kvcache"][0];
    let written = t["figures"]["storage"]["bytes_written"].as_u64().unwrap();
    assert!(written > 0, "{t}");
    // The per-second timeline is the backend's writes: every whole entry's bytes, and
    // the pieces of one a worker was writing when the run ended.
    let series = v["phases"][0]["timeline"]["series"].as_array().unwrap();
    let writes = series.iter().find(|s| s["op"] == "write").unwrap();
    let bytes: u64 = writes["bytes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .sum();
    assert!(bytes >= written, "{bytes} {written}");
    assert!(!series.iter().any(|s| s["op"] == "fsync"), "{series:?}");
    assert_eq!(v["spec"]["settings"]["backend"], "null");
}

#[test]
fn kvcache_join_window_counts_requests_finishing_after_the_duration() {
    // Fast generation sleeps 2 ms a token (0.1 to 2 s a request): with a 10 s window
    // every request being served at the end of the 1 s finishes and counts.
    let (_, v, _) = kvcache_run(&[
        "--model",
        "tiny-1b",
        "--users",
        "3",
        "--duration",
        "1s",
        "--generation-mode",
        "fast",
        "--join-window",
        "10s",
        "-Q",
    ]);
    let t = &v["spec"]["kvcache"][0];
    assert_eq!(t["cut"], 0, "{t}");
    assert!(t["figures"]["requests"].as_u64().unwrap() > 0, "{t}");
    // The rates stay over the duration asked for.
    assert_eq!(t["figures"]["duration"], 1_000_000_000u64);
    let window = v["spec"]["settings"]["join_window"].as_str().unwrap();
    assert!(window.starts_with("10"), "{window}");
}
