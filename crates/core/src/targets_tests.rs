//! Tests of the per-target statistics and flagging with synthetic figures.

use super::*;

const GB: f64 = 1e9;

fn fig(id: &str, node: &str, gbps: f64) -> TargetFigure {
    TargetFigure {
        id: id.into(),
        node: node.into(),
        throughput: gbps * GB,
        iops: 0.0,
        service: None,
        rated: None,
    }
}

/// 22 targets, 4 per node on nodes 1-5 except node 5 with 2, 4 on node 6; healthy ones
/// vary by about ±2 %.
fn cluster(node6: f64) -> Vec<TargetFigure> {
    let wobble = [
        1.00, 1.02, 0.99, 0.98, 1.01, 1.00, 0.995, 1.015, 0.985, 1.005,
    ];
    let mut v = Vec::new();
    for t in 1..=22u32 {
        let node = match t {
            1..=4 => "node001",
            5..=8 => "node002",
            9..=12 => "node003",
            13..=16 => "node004",
            17..=18 => "node005",
            _ => "node006",
        };
        let base = if t >= 19 { 3.3 * node6 } else { 3.3 };
        v.push(fig(&t.to_string(), node, base * wobble[t as usize % 10]));
    }
    v
}

#[test]
fn a_uniform_set_flags_nothing() {
    let a = analyze(&cluster(1.0), 10.0).unwrap();
    assert!(a.is_clean(), "{:?}", flag_lines(&a));
    assert_eq!(a.count, 22);
    assert!(a.targets.iter().all(|t| !t.slow));
    // Identical figures: MAD 0, still nothing flagged.
    let same: Vec<TargetFigure> = (0..5).map(|i| fig(&i.to_string(), "n", 2.0)).collect();
    let a = analyze(&same, 10.0).unwrap();
    assert!(a.is_clean());
    assert_eq!(a.mad, 0.0);
}

#[test]
fn a_slow_node_is_flagged_once_as_a_node() {
    let a = analyze(&cluster(0.82), 10.0).unwrap();
    assert!(a.slow_targets.is_empty(), "{:?}", a.slow_targets);
    assert_eq!(a.slow_nodes.len(), 1);
    let n = &a.slow_nodes[0];
    assert_eq!(n.node, "node006");
    assert_eq!((n.slow, n.targets), (4, 4));
    assert_eq!(n.ids, vec!["19", "20", "21", "22"]);
    assert!(
        (n.below_median_percent - 18.0).abs() < 2.0,
        "{}",
        n.below_median_percent
    );
    assert!(a.verdict("node006", "19").unwrap().node_slow);
    assert_eq!(a.min.node, "node006");
    let lines = flag_lines(&a);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with("node node006: all 4 targets are slow, "),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("node-level cause (controller, NUMA, firmware)"));
}

#[test]
fn a_single_bad_target_is_flagged_with_its_distance() {
    let mut figs = cluster(1.0);
    figs[6].throughput = 0.55 * 3.3 * GB; // target 7 on node002
    let a = analyze(&figs, 10.0).unwrap();
    assert!(a.slow_nodes.is_empty());
    assert_eq!(a.slow_targets.len(), 1);
    let t = &a.slow_targets[0];
    assert_eq!((t.id.as_str(), t.node.as_str()), ("7", "node002"));
    let expected = (a.median - t.throughput) / a.median * 100.0;
    assert!((t.below_median_percent - expected).abs() < 1e-9);
    assert_eq!(
        flag_lines(&a),
        vec![format!(
            "target 7 on node node002: {:.1}% below the median",
            expected
        )]
    );
    assert_eq!(a.min.id, "7");
}

#[test]
fn three_of_four_slow_is_a_node_two_of_four_are_targets() {
    let mut figs = cluster(1.0);
    for f in figs
        .iter_mut()
        .filter(|f| ["19", "20", "21"].contains(&f.id.as_str()))
    {
        f.throughput *= 0.7;
    }
    let a = analyze(&figs, 10.0).unwrap();
    assert_eq!(a.slow_nodes.len(), 1);
    assert_eq!((a.slow_nodes[0].slow, a.slow_nodes[0].targets), (3, 4));
    assert!(flag_lines(&a)[0].starts_with("node node006: 3 of 4 targets are slow"));
    let mut figs = cluster(1.0);
    for f in figs
        .iter_mut()
        .filter(|f| ["19", "20"].contains(&f.id.as_str()))
    {
        f.throughput *= 0.7;
    }
    let a = analyze(&figs, 10.0).unwrap();
    assert!(a.slow_nodes.is_empty());
    assert_eq!(a.slow_targets.len(), 2);
}

#[test]
fn below_threshold_or_within_the_spread_is_not_flagged() {
    // 8 % below with a tight spread: under the 10 % threshold.
    let mut figs = cluster(1.0);
    figs[0].throughput = 0.92 * 3.3 * GB;
    assert!(analyze(&figs, 10.0).unwrap().is_clean());
    assert!(!analyze(&figs, 5.0).unwrap().is_clean());
    // A widely spread set: 15 % below the median is within its normal spread.
    let wide: Vec<TargetFigure> = [1.0, 1.3, 0.8, 1.2, 0.85, 1.25, 0.9]
        .iter()
        .enumerate()
        .map(|(i, v)| fig(&i.to_string(), "n", *v))
        .collect();
    let a = analyze(&wide, 10.0).unwrap();
    assert!(a.is_clean(), "{:?}", flag_lines(&a));
}

#[test]
fn too_few_targets_are_not_compared() {
    let a = analyze(&[fig("a", "n", 1.0), fig("b", "n", 0.1)], 10.0).unwrap();
    assert!(a.is_clean());
    assert_eq!(a.notes.len(), 1);
    assert!(analyze(&[], 10.0).is_none());
}

#[test]
fn min_max_average_aggregate() {
    let figs = vec![fig("1", "a", 1.0), fig("2", "b", 3.0), fig("3", "a", 2.0)];
    let a = analyze(&figs, 10.0).unwrap();
    assert_eq!((a.min.id.as_str(), a.min.node.as_str()), ("1", "a"));
    assert_eq!((a.max.id.as_str(), a.max.node.as_str()), ("2", "b"));
    assert_eq!(a.aggregate, 6.0 * GB);
    assert_eq!(a.average, 2.0 * GB);
    assert_eq!(a.median, 2.0 * GB);
    assert_eq!(a.mad, 1.0 * GB);
    assert_eq!(a.targets[0].vs_median_percent, -50.0);
}

#[test]
fn percent_of_theoretical() {
    let mb = |v| {
        Some(Rated {
            value: v,
            unit: RatedUnit::MegabytesPerSec,
        })
    };
    let mut figs = vec![fig("1", "a", 4.0), fig("2", "a", 5.5), fig("3", "a", 5.0)];
    for f in &mut figs {
        f.rated = mb(5000.0);
    }
    let a = analyze(&figs, 10.0).unwrap();
    assert_eq!(a.targets[0].percent_of_rated, Some(80.0));
    assert_eq!(a.targets[1].percent_of_rated, Some(110.00000000000001));
    let t = a.theoretical.unwrap();
    assert_eq!(t.rated_total, 15000.0);
    assert_eq!(t.measured_total, 14500.0);
    assert!((t.percent - 96.666_666_666_666_67).abs() < 1e-9);
    // IOPS: 26.8M of 26.4M rated is 101.5 %.
    let iops = TargetFigure {
        iops: 26.8e6,
        rated: Some(Rated {
            value: 26.4e6,
            unit: RatedUnit::Iops,
        }),
        ..fig("c", "n", 0.0)
    };
    let a = analyze(&[iops], 10.0).unwrap();
    assert!((a.theoretical.unwrap().percent - 101.515_151_515).abs() < 1e-6);
    // Partly rated, or mixed units.
    figs[2].rated = None;
    let a = analyze(&figs, 10.0).unwrap();
    assert_eq!(a.theoretical.unwrap().rated_targets, 2);
    figs[2].rated = Some(Rated {
        value: 1.0,
        unit: RatedUnit::Iops,
    });
    let a = analyze(&figs, 10.0).unwrap();
    assert!(a.theoretical.is_none());
    assert!(a.notes[0].contains("mix MB/s and IOPS"));
}

/// Two nodes of four targets, one about 18 % slower (the BeeGFS study's finding): the
/// overall median falls between them, yet each node against the other finds the slow
/// one, at the default threshold and at 5 %.
#[test]
fn a_slow_node_beside_one_healthy_node_is_found() {
    let wobble = [1.0, 1.02, 0.99, 0.985];
    let mut figs = Vec::new();
    for (i, w) in wobble.iter().enumerate() {
        figs.push(fig(&format!("a{i}"), "node1", 3.3 * w));
        figs.push(fig(&format!("b{i}"), "node2", 3.3 * 0.82 * w));
    }
    for threshold in [5.0, 10.0] {
        let a = analyze(&figs, threshold).unwrap();
        assert_eq!(a.slow_nodes.len(), 1, "{:?}", flag_lines(&a));
        let n = &a.slow_nodes[0];
        assert_eq!(n.node, "node2");
        assert_eq!((n.slow, n.targets), (4, 4));
        assert!((n.below_median_percent - 18.0).abs() < 1.0, "{n:?}");
        assert!((n.reference / GB - 3.3 * 0.995).abs() < 0.01, "{n:?}");
        assert!(a.slow_targets.is_empty());
        assert_eq!(a.reference, "the 4 targets on nodes not flagged");
        let lines = flag_lines(&a);
        assert!(
            lines[0].starts_with("node node2: all 4 targets are slow, ")
                && lines[0].contains("below the median of the other nodes' targets"),
            "{}",
            lines[0]
        );
    }
    // Two healthy nodes: nothing.
    let same: Vec<TargetFigure> = figs
        .iter()
        .map(|f| TargetFigure {
            throughput: if f.node == "node2" {
                f.throughput / 0.82
            } else {
                f.throughput
            },
            ..f.clone()
        })
        .collect();
    assert!(analyze(&same, 5.0).unwrap().is_clean());
}

/// Beside a slow node, a single bad target elsewhere is judged against the healthy
/// nodes, and the line says so.
#[test]
fn single_targets_are_judged_against_the_nodes_not_flagged() {
    let mut figs = cluster(0.82);
    figs[0].throughput = 0.6 * 3.3 * GB; // target 1 on node001
    let a = analyze(&figs, 10.0).unwrap();
    assert_eq!(a.slow_nodes.len(), 1);
    assert_eq!(a.slow_targets.len(), 1);
    assert_eq!(a.reference, "the 18 targets on nodes not flagged");
    let lines = flag_lines(&a);
    assert!(
        lines[1].starts_with("target 1 on node node001: ")
            && lines[1].ends_with("below the median of the 18 targets on nodes not flagged"),
        "{}",
        lines[1]
    );
    // One node only: no node-level verdict, targets against all.
    let one: Vec<TargetFigure> = (0..4)
        .map(|i| fig(&i.to_string(), "n", if i == 0 { 1.0 } else { 2.0 }))
        .collect();
    let a = analyze(&one, 10.0).unwrap();
    assert!(a.slow_nodes.is_empty());
    assert_eq!(a.reference, "all 4 targets");
    assert_eq!(a.slow_targets.len(), 1);
}
