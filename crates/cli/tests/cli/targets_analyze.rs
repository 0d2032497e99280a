//! `iolab targets analyze` (the slow server, the slow node, its JSON and errors) and
//! `iolab net` from the command line.

use std::path::{Path, PathBuf};

use crate::common::run as iolab;
use crate::targets::s;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../compat/tests/fixtures/targets")
        .join(name)
}

#[test]
fn analyze_finds_the_slow_server() {
    let r = iolab(&["targets", "analyze", s(&fixture("slow-node-22.txt"))]).expect(0);
    assert!(
        r.stdout
            .contains("write results (beegfs-ctl): 22 targets on 6 nodes"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("node node006: all 4 targets are slow"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("target 22"), "{}", r.stdout);
    let r = iolab(&["targets", "analyze", s(&fixture("healthy-22.txt")), "-v"]).expect(0);
    assert!(
        r.stdout
            .contains("no target is significantly below the median"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("target-id"));
    let r = iolab(&["targets", "analyze", s(&fixture("single-bad-22.txt"))]).expect(0);
    assert!(
        r.stdout.contains("target 7 on node node002-numa0-1: "),
        "{}",
        r.stdout
    );
}

/// Two nodes, one 18 % slower: the median of all eight falls between them, yet the slow
/// node is found, against the other node's targets, and the line says so.
#[test]
fn analyze_finds_a_slow_node_beside_one_healthy_node() {
    for threshold in ["5", "10"] {
        let r = iolab(&[
            "targets",
            "analyze",
            s(&fixture("slow-node-of-2.txt")),
            "--threshold",
            threshold,
        ])
        .expect(0);
        assert!(
            r.stdout.contains("node node002: all 4 targets are slow, 17.7% below the median of the other nodes' targets (targets 5, 6, 7, 8)"),
            "{}",
            r.stdout
        );
        assert!(
            r.stdout.contains("(of the 4 targets on nodes not flagged)"),
            "{}",
            r.stdout
        );
    }
}

#[test]
fn analyze_writes_json_and_rated_percentages() {
    let r = iolab(&[
        "targets",
        "analyze",
        s(&fixture("slow-node-22.txt")),
        "--rated-mbps",
        "3500",
        "--json",
        "-",
    ])
    .expect(0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("only JSON on stdout");
    assert_eq!(v["schema"], "iolab.targets-analysis/1");
    let a = &v["sections"][0]["analysis"];
    assert_eq!(a["count"], 22);
    assert_eq!(a["slow_nodes"][0]["node"], "node006");
    assert!(a["theoretical"]["percent"].as_f64().unwrap() > 50.0);
}

#[test]
fn analyze_errors_name_file_and_line() {
    let path = fixture("malformed-22.txt");
    let r = iolab(&["targets", "analyze", s(&path)]).expect(2);
    assert_eq!(
        r.error_line(),
        format!(
            "iolab: error: {}:23: throughput '3O45974' is not a number",
            s(&path)
        )
    );
    let r = iolab(&["targets", "analyze", "/nonexistent/bench.txt"]).expect(2);
    assert!(
        r.error_line()
            .starts_with("iolab: error: cannot read /nonexistent/bench.txt")
    );
}

#[test]
fn net_over_loopback_counts_every_byte() {
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("net.json");
    let r = iolab(&[
        "net",
        "--size",
        "4MiB",
        "--block-size",
        "64KiB",
        "--streams",
        "2",
        "--no-store",
        "--json",
        s(&json),
    ])
    .expect(0);
    assert!(r.stdout.contains("net-loopback"), "{}", r.stdout);
    assert!(r.stdout.contains("loopback interface"), "{}", r.stdout);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["kind"], "net");
    let pair = &v["phases"][1];
    assert_eq!(pair["name"], "net 0->0");
    assert_eq!(pair["kind"], "net");
    assert_eq!(pair["ops"][0]["op"], "transfer");
    assert_eq!(pair["ops"][0]["bytes"], 8 * 1024 * 1024);
}
