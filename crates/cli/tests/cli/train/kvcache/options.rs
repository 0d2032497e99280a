//! `iolab kvcache --option 1|2|3` end to end, made small by flags beside it (one user of
//! seed 39, whose requests' contexts are 154-618 tokens, for a few seconds): the
//! option's settings apply, the run is reported open, every entry written or read is
//! whole, what was queued at the end is dropped, not cut, and nothing is left behind.

use super::{kvcache_run, left_in};

/// Entries are the `.npy` header and whole tokens: `bytes` over `ops` entries.
fn whole_entries(ops: u64, bytes: u64, per_token: u64) -> bool {
    bytes >= ops * (128 + per_token) && (bytes - 128 * ops).is_multiple_of(per_token)
}

#[test]
fn kvcache_closed_options_run_small_with_whole_entries() {
    let cases = [
        ("1", "llama3.1-8b", 131_072u64, 16, 0u64, "5s"),
        ("2", "llama3.1-8b", 131_072, 16, 4 << 30, "5s"),
        ("3", "llama3.1-70b-instruct", 327_680, 4, 0, "8s"),
    ];
    for (option, model, per_token, allocs, cpu, duration) in cases {
        let (r, v, dir) = kvcache_run(&[
            "--option",
            option,
            "--users",
            "1",
            "--seed",
            "39",
            "--duration",
            duration,
        ]);
        let head = format!("kvcache · {model} ({per_token} bytes/token), 1 users");
        assert!(r.stdout.contains(&head), "option {option}: {}", r.stdout);
        assert!(!r.stdout.contains("closed option"), "{}", r.stdout);
        let phase = &v["phases"][0];
        let s = &phase["spec"];
        assert_eq!(s["max_concurrent_allocs"], allocs, "option {option}: {s}");
        assert_eq!(s["cpu_memory"], cpu, "option {option}: {s}");
        assert_eq!(s["generation_mode"], "none", "option {option}: {s}");
        assert_eq!(s["closed_option"], serde_json::Value::Null);
        let t = &v["spec"]["kvcache"][0];
        let f = &t["figures"];
        let n = |v: &serde_json::Value| v.as_u64().unwrap();
        let (st, c) = (&f["storage"], &f["cpu"]);
        if cpu == 0 {
            // Every entry on the storage tier: at least one written, all whole.
            assert!(n(&st["writes"]) > 0, "option {option}: {f}");
            assert_eq!(n(&c["writes"]), 0, "option {option}: {f}");
        } else {
            // 4 GiB holds a few seconds of one user's entries: none reach storage.
            assert!(n(&c["writes"]) > 0, "option {option}: {f}");
            assert_eq!(n(&st["writes"]), 0, "option {option}: {f}");
            assert!(whole_entries(
                n(&c["writes"]),
                n(&c["bytes_written"]),
                per_token
            ));
        }
        for (ops, bytes) in [("writes", "bytes_written"), ("reads", "bytes_read")] {
            let (ops, bytes) = (n(&st[ops]), n(&st[bytes]));
            assert!(whole_entries(ops, bytes, per_token), "option {option}: {f}");
        }
        assert_eq!(phase["ops"][1]["bytes"], st["bytes_written"]);
        assert_eq!(phase["ops"][0]["bytes"], st["bytes_read"]);
        // One worker: at most one request cut at the end; the rest queued are dropped,
        // and only requests a worker took have a queue wait.
        let (requests, cut, dropped) = (n(&f["requests"]), n(&t["cut"]), n(&t["dropped"]));
        assert!(cut <= 1, "option {option}: {t}");
        assert_eq!(requests + cut + dropped, n(&t["issued"]), "{t}");
        assert_eq!(n(&f["queue_wait"]["count"]), requests + cut, "{t}");
        let left = left_in(dir.path());
        assert!(left.is_empty(), "option {option}: {left:?}");
    }
}
