//! `/metrics`' text: a series' labels in the same order on every scrape.

use super::*;
use crate::live::kvcache::KvCacheLive;
use crate::live::state::OpLatency;

/// Each series' label names, in the order of the text, for every series line.
fn label_orders(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && l.contains('{'))
        .map(|l| {
            let inner = &l[l.find('{').unwrap() + 1..l.rfind('}').unwrap()];
            let names: Vec<&str> = inner
                .split("\",")
                .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
                .collect();
            format!("{}: {}", &l[..l.find('{').unwrap()], names.join(","))
        })
        .collect()
}

#[test]
fn every_scrape_gives_a_series_labels_in_the_same_order() {
    let s = LiveState {
        command: "run".into(),
        run_id: "r1".into(),
        label: Some("nightly".into()),
        status: "running".into(),
        latency: ["read", "write"]
            .iter()
            .map(|op| OpLatency {
                op: op.to_string(),
                count: 10,
                mean: 0.001,
                quantiles: vec![("0.5".into(), 0.001), ("0.99".into(), 0.002)],
            })
            .collect(),
        kvcache: Some(KvCacheLive {
            phase: "kvcache trial 1".into(),
            users: 4,
            second: iolab_suites::kvcache::live::KvSecond {
                tokens_per_sec: 500.0,
                read_bytes_per_sec: 2048.0,
                write_bytes_per_sec: 1024.0,
                read_device_p95: Some(0.02),
                write_device_p95: None,
            },
        }),
        ..LiveState::default()
    };
    let text = render(&s).unwrap();
    assert!(
        text.contains("iolab_kvcache_tokens_per_second{phase=\"kvcache trial 1\",command=\"run\",label=\"nightly\",run=\"r1\"} 500\n"),
        "{text}"
    );
    assert!(text.contains("iolab_kvcache_read_device_p95_seconds{phase=\"kvcache trial 1\",command=\"run\",label=\"nightly\",run=\"r1\"} 0.02\n"), "{text}");
    // No write span ended in the second: no p95 for it, not a zero.
    assert!(
        !text.contains("iolab_kvcache_write_device_p95_seconds{"),
        "{text}"
    );
    let first = label_orders(&text);
    assert!(
        first
            .contains(&"iolab_kvcache_write_bytes_per_second: phase,command,label,run".to_string()),
        "{first:?}"
    );
    let latency: Vec<&String> = first
        .iter()
        .filter(|l| l.starts_with("iolab_latency_seconds:"))
        .collect();
    assert_eq!(latency.len(), 4, "{first:?}");
    assert!(
        latency
            .iter()
            .all(|l| l.ends_with(": op,command,label,run,quantile")),
        "{latency:?}"
    );
    assert!(
        first.contains(&"iolab_running: status,command,label,run".to_string()),
        "{first:?}"
    );
    // A HashMap's order is drawn anew for each map: twenty scrapes would differ.
    for _ in 0..20 {
        assert_eq!(label_orders(&render(&s).unwrap()), first);
    }
}
