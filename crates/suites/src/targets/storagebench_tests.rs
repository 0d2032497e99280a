//! Tests of the beegfs-ctl StorageBench reader (iolab-compat) and of its figures in the
//! slow-target analysis, on fixtures in crates/compat/tests/fixtures/targets.

use iolab_compat::beegfs::*;
use iolab_core::result::OpKind;

use super::figures_of;
use crate::targets::analysis::{analyze, flag_lines};

const HEALTHY: &str = include_str!("../../../compat/tests/fixtures/targets/healthy-22.txt");
const SLOW_NODE: &str = include_str!("../../../compat/tests/fixtures/targets/slow-node-22.txt");
const SINGLE_BAD: &str = include_str!("../../../compat/tests/fixtures/targets/single-bad-22.txt");
const MALFORMED: &str = include_str!("../../../compat/tests/fixtures/targets/malformed-22.txt");

#[test]
fn reads_header_status_and_every_target() {
    let sections = parse_storage_bench("healthy-22.txt", HEALTHY).unwrap();
    assert_eq!(sections.len(), 1);
    let s = &sections[0];
    assert_eq!(s.op, Some(OpKind::Write));
    assert_eq!(s.status.get("Finished"), Some(&22));
    assert_eq!(s.targets.len(), 22);
    let t19 = s.targets.iter().find(|t| t.id == "19").unwrap();
    assert_eq!(t19.node, "node006-numa0-1");
    assert_eq!(t19.node_num_id, Some(6));
    let min = s.header.min.as_ref().unwrap();
    assert!(min.node.as_deref().unwrap().starts_with("node"));
    assert!(min.target.is_some());
    // The header's aggregate is the sum of the list: nothing to note.
    assert!(s.notes().is_empty(), "{:?}", s.notes());
    let a = analyze(&figures_of(s), 10.0).unwrap();
    assert!(a.is_clean(), "{:?}", flag_lines(&a));
    assert_eq!(a.aggregate, s.header.aggregate.unwrap());
    assert_eq!(a.min.throughput, min.bytes_per_sec);
    assert_eq!(Some(&a.min.id), min.target.as_ref());
}

#[test]
fn the_issue_line_parses() {
    let s =
        parse_storage_bench("x", "19 2705987 KiB/s nodeID: node006-numa0-1 [ID: 19]\n").unwrap();
    let t = &s[0].targets[0];
    assert_eq!(t.id, "19");
    assert_eq!(t.bytes_per_sec, 2705987.0 * 1024.0);
    assert_eq!(
        (t.node.as_str(), t.node_num_id),
        ("node006-numa0-1", Some(19))
    );
    assert_eq!(s[0].op, None);
}

#[test]
fn a_slow_server_is_flagged_as_a_node() {
    let s = &parse_storage_bench("slow-node-22.txt", SLOW_NODE).unwrap()[0];
    let a = analyze(&figures_of(s), 10.0).unwrap();
    assert_eq!(a.slow_nodes.len(), 1, "{:?}", flag_lines(&a));
    assert_eq!(a.slow_nodes[0].node, "node006");
    assert_eq!(a.slow_nodes[0].ids, vec!["19", "20", "21", "22"]);
    let below = a.slow_nodes[0].below_median_percent;
    assert!((16.0..20.0).contains(&below), "{below}");
    assert!(a.slow_targets.is_empty());
}

#[test]
fn a_single_bad_target_is_flagged() {
    let s = &parse_storage_bench("single-bad-22.txt", SINGLE_BAD).unwrap()[0];
    assert_eq!(s.op, Some(OpKind::Read));
    let a = analyze(&figures_of(s), 10.0).unwrap();
    assert!(a.slow_nodes.is_empty());
    assert_eq!(a.slow_targets.len(), 1);
    assert_eq!(a.slow_targets[0].id, "7");
    assert!(a.slow_targets[0].below_median_percent > 40.0);
}

#[test]
fn malformed_lines_name_file_and_line() {
    let e = parse_storage_bench("malformed-22.txt", MALFORMED).unwrap_err();
    assert_eq!(
        e.to_string(),
        "malformed-22.txt:23: throughput '3O45974' is not a number"
    );
    let cases = [
        (
            "List of all targets:\n1 100 KiB/s nodeID: a [ID: 1]\n2 100 KB nodeID: a\n",
            "f:3: unit 'KB' after throughput 100 is not KiB/s, MiB/s, GiB/s or B/s",
        ),
        (
            "List of all targets:\n1 100 KiB/s node a\n",
            "f:2: target 1 has no 'nodeID: <node>'; expected a line like '<target-id> <throughput> KiB/s nodeID: <node> [ID: <n>]'",
        ),
        (
            "List of all targets:\n1 100\n",
            "f:2: expected a target line like '<target-id> <throughput> KiB/s nodeID: <node> [ID: <n>]', found '1 100'",
        ),
        (
            "1 100 KiB/s nodeID: a\n1 200 KiB/s nodeID: a\n",
            "f:2: target 1 on a is listed twice (first at line 1)",
        ),
        (
            "Min throughput: fast KiB/s\n",
            "f:1: throughput 'fast' is not a number",
        ),
        (
            "Write benchmark results:\nMin throughput: 1 KiB/s\n",
            "f: lists no target; save the output of `beegfs-ctl --storagebench --alltargets --status --verbose` (--verbose prints every target)",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(
            parse_storage_bench("f", text).unwrap_err().to_string(),
            want
        );
    }
}

#[test]
fn prose_around_the_list_is_ignored() {
    // Prose with numbers before the results, a separator and a saved prompt after.
    let text = "iolab bench log\n3 nodes were benchmarked\n\nWrite benchmark results:\nList of all targets:\n1 100 KiB/s nodeID: a [ID: 1]\n2 200 KiB/s nodeID: b [ID: 2]\n-----\nuser@mgmt01:~$ exit\n4 nodes: all done\n";
    let s = parse_storage_bench("prose.txt", text).unwrap();
    assert_eq!(s.len(), 1);
    let ids: Vec<&str> = s[0].targets.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, vec!["1", "2"]);
    // The list ends at a blank line after its targets, or at any other line.
    for end in ["\n", "not a target\n", "Total: 2 targets\n"] {
        let text =
            format!("List of all targets:\n\n1 100 KiB/s nodeID: a\n{end}3 targets were read\n");
        let s = parse_storage_bench("f", &text).unwrap();
        assert_eq!(s[0].targets.len(), 1, "{text:?}");
    }
    // A line shaped like a target with a bad throughput is still an error, in the list.
    assert_eq!(
        parse_storage_bench(
            "f",
            "List of all targets:\n1 100 KiB/s nodeID: a\n2 1OO KiB/s x\n"
        )
        .unwrap_err()
        .to_string(),
        "f:3: throughput '1OO' is not a number"
    );
}

#[test]
fn unfinished_runs_and_inconsistent_headers_are_noted() {
    let text = "Server benchmark status:\nRunning:     2\nFinished:    1\n\nWrite benchmark results:\nAggregate throughput: 900 KiB/s\n\nList of all targets:\n1 100 KiB/s nodeID: a [ID: 1]\n";
    let s = &parse_storage_bench("f", text).unwrap()[0];
    let notes = s.notes();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].contains("Running 2"));
    assert!(notes[1].contains("differs from the 100 KiB/s"));
}

#[test]
fn write_and_read_sections_are_kept_apart() {
    let text = "Write benchmark results:\nList of all targets:\n1 100 KiB/s nodeID: a\n\nRead benchmark results:\nList of all targets:\n1 90 MiB/s nodeID: a\n";
    let s = parse_storage_bench("f", text).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[1].op, Some(OpKind::Read));
    assert_eq!(s[1].targets[0].bytes_per_sec, 90.0 * 1024.0 * 1024.0);
}

#[test]
fn services_of_one_machine_are_one_node() {
    assert_eq!(host_of("node006-numa0-1"), "node006");
    assert_eq!(host_of("node006-numa12"), "node006");
    assert_eq!(host_of("stor-a"), "stor-a");
    assert_eq!(host_of("-numa0-1"), "-numa0-1");
    assert_eq!(host_of("node7-numa0-x"), "node7-numa0-x");
    // One target per service alias, four services per machine; node004 is slow.
    let mut text = String::from("Write benchmark results:\nList of all targets:\n");
    let mut id = 0;
    for host in 1..=6 {
        for (numa, svc) in [(0, 1), (0, 2), (1, 1), (1, 2)] {
            id += 1;
            let kib = if host == 4 {
                2_300_000
            } else {
                3_250_000 + id * 1000
            };
            text.push_str(&format!(
                "{id} {kib} KiB/s nodeID: node00{host}-numa{numa}-{svc} [ID: {id}]\n"
            ));
        }
    }
    let s = &parse_storage_bench("f", &text).unwrap()[0];
    let a = analyze(&figures_of(s), 10.0).unwrap();
    assert_eq!(a.slow_nodes.len(), 1, "{:?}", flag_lines(&a));
    assert_eq!(a.slow_nodes[0].node, "node004");
    assert_eq!(a.slow_nodes[0].ids, vec!["13", "14", "15", "16"]);
    assert!(a.slow_targets.is_empty());
    // Each target is still shown with its service alias.
    let t13 = a.targets.iter().find(|t| t.id == "13").unwrap();
    assert_eq!(
        (t13.node.as_str(), t13.service.as_deref()),
        ("node004", Some("node004-numa0-1"))
    );
    assert_eq!(a.min.service.as_deref(), Some("node004-numa0-1"));
    // A plain host name is its own node, with no service.
    let plain = &parse_storage_bench(
        "g",
        "Write benchmark results:\n1 100 KiB/s nodeID: node1 [ID: 1]\n",
    )
    .unwrap()[0];
    assert_eq!(figures_of(plain)[0].service, None);
}
