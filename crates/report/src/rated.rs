//! Measured figures against the rated ones the user gave (S3: "26.8M IOPS = 101% of
//! 26.4M theoretical"): a run carries its rated figures in its spec (`rated`, the
//! [`TargetEntry`] rows of a targets file: docs/targets.md), and [`rated_rows`] judges
//! each data phase cluster-wide and per node, in the unit the figures are rated in: IOPS
//! (read and write together) for blocks under 64 KiB, MB/s for larger ones.
//! [`rated_table`] lays the rows out.

use iolab_core::result::{OpKind, PhaseKind, PhaseResult, RunRecord};
use iolab_core::spec::{RatedUnit, TargetEntry};

use crate::measure::{IOPS_BLOCK_LIMIT, Measure, Units};
use crate::sweep::Params;
use crate::table::Table;

/// Where a [`RatedRow`] applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every node of the run against every rated device.
    Cluster { nodes: usize },
    /// One host against the devices listed for it.
    Node(String),
}

/// One phase (or one node of it) against its rated figure.
#[derive(Clone, Debug, PartialEq)]
pub struct RatedRow {
    pub phase: String,
    /// What sets the phase apart from others of its name: "4KiB, 90% reads".
    pub point: String,
    pub scope: Scope,
    pub unit: RatedUnit,
    /// In the rated unit: I/Os per second, or decimal megabytes per second.
    pub measured: f64,
    pub rated: f64,
    /// How many rated devices (targets file rows) add up to `rated`.
    pub devices: usize,
    pub percent: f64,
}

/// The rated figures stored with a run (none when it has none, or they do not read).
pub fn rated_of(run: &RunRecord) -> Vec<TargetEntry> {
    run.spec
        .get("rated")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// Every data phase of `run` against the rated figures of its unit, cluster-wide first,
/// then per node when the phase ran on more than one.
pub fn rated_rows(run: &RunRecord) -> Vec<RatedRow> {
    let entries = rated_of(run);
    if entries.is_empty() {
        return Vec::new();
    }
    let mut rows = Vec::new();
    for p in run.phases.iter().filter(|p| p.kind == PhaseKind::Data) {
        let Some(unit) = unit_of(p) else { continue };
        let rated: Vec<&TargetEntry> = entries
            .iter()
            .filter(|e| e.rated.is_some_and(|r| r.unit == unit && r.value > 0.0))
            .collect();
        if rated.is_empty() {
            continue;
        }
        let point = point_of(run, p);
        let sum = |of: &[&TargetEntry]| -> f64 {
            of.iter().filter_map(|e| e.rated).map(|r| r.value).sum()
        };
        let hosts = p.per_host();
        let measured = main_ops(p)
            .map(|o| in_unit(unit, o.ops, o.bytes.get(), p))
            .sum();
        rows.push(row(
            p,
            &point,
            Scope::Cluster {
                nodes: hosts.len().max(1),
            },
            unit,
            measured,
            (sum(&rated), rated.len()),
        ));
        if hosts.len() < 2 {
            continue;
        }
        for h in &hosts {
            let own: Vec<&TargetEntry> =
                rated.iter().copied().filter(|e| e.node == h.host).collect();
            if own.is_empty() {
                continue;
            }
            let (ops, bytes) = p
                .per_rank
                .iter()
                .filter(|r| r.host == h.host)
                .flat_map(|r| r.ops.iter())
                .filter(|(op, _)| is_main(**op))
                .fold((0, 0), |(o, b), (_, c)| (o + c.ops, b + c.bytes));
            let measured = in_unit(unit, ops, bytes, p);
            rows.push(row(
                p,
                &point,
                Scope::Node(h.host.clone()),
                unit,
                measured,
                (sum(&own), own.len()),
            ));
        }
    }
    rows
}

fn row(
    p: &PhaseResult,
    point: &str,
    scope: Scope,
    unit: RatedUnit,
    measured: f64,
    (rated, devices): (f64, usize),
) -> RatedRow {
    RatedRow {
        phase: p.name.clone(),
        point: point.to_string(),
        scope,
        unit,
        measured,
        rated,
        devices,
        percent: measured / rated * 100.0,
    }
}

fn is_main(op: OpKind) -> bool {
    op.moves_data() && !op.is_auxiliary()
}

fn main_ops(p: &PhaseResult) -> impl Iterator<Item = &iolab_core::result::OpResult> {
    p.ops.iter().filter(|o| is_main(o.op))
}

/// `ops` operations or `bytes` bytes over the phase's time, in `unit`.
fn in_unit(unit: RatedUnit, ops: u64, bytes: u64, p: &PhaseResult) -> f64 {
    let secs = p.elapsed.as_secs_f64();
    if secs <= 0.0 {
        return 0.0;
    }
    match unit {
        RatedUnit::Iops => ops as f64 / secs,
        RatedUnit::MegabytesPerSec => bytes as f64 / secs / 1e6,
    }
}

/// IOPS for a phase of small blocks, MB/s for one of large blocks (as the figures of
/// merit go), none for a phase without data.
fn unit_of(p: &PhaseResult) -> Option<RatedUnit> {
    main_ops(p).next()?;
    let block = crate::measure::block_size_of(&p.params)?;
    Some(if block.get() < IOPS_BLOCK_LIMIT {
        RatedUnit::Iops
    } else {
        RatedUnit::MegabytesPerSec
    })
}

/// The parameters that vary between the run's phases of this name, in words.
fn point_of(run: &RunRecord, p: &PhaseResult) -> String {
    let same: Vec<&PhaseResult> = run.phases.iter().filter(|q| q.name == p.name).collect();
    let varying: Params = p
        .params
        .iter()
        .filter(|(k, v)| same.iter().any(|q| q.params.get(*k) != Some(*v)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    crate::phase_words::param_words(&varying).join(", ")
}

/// A figure in its rated unit: "26.8M IOPS", "4.80 GB/s".
fn figure(unit: RatedUnit, value: f64) -> String {
    match unit {
        RatedUnit::Iops => Measure::Iops.format(value),
        RatedUnit::MegabytesPerSec => Units::Decimal.bandwidth(value * 1e6),
    }
}

/// Explains [`rated_table`].
pub const RATED_NOTE: &str = "Measured against the rated figures given with the run \
(--rated FILE): blocks under 64 KiB against rated IOPS (reads and writes together), larger \
ones against rated MB/s; all nodes against every rated device, each node against its own.";

/// One row per phase and scope: phase, point, where, measured, rated (and over how many
/// devices), % of rated.
pub fn rated_table(rows: &[RatedRow]) -> Table {
    let mut t = Table::new(&[
        "Phase",
        "Point",
        "Where",
        ">Measured",
        ">Rated",
        ">Devices",
        ">% of rated",
    ]);
    for r in rows {
        let scope = match &r.scope {
            Scope::Cluster { nodes: 1 } => "all (1 node)".to_string(),
            Scope::Cluster { nodes } => format!("all ({nodes} nodes)"),
            Scope::Node(host) => format!("node {host}"),
        };
        t.push(vec![
            r.phase.clone(),
            r.point.clone(),
            scope,
            figure(r.unit, r.measured),
            figure(r.unit, r.rated),
            r.devices.to_string(),
            format!("{:.0}%", r.percent),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{op_result, phase, run_with};
    use iolab_core::result::{CpuUsage, OpCount, RankSummary};
    use iolab_core::spec::Rated;
    use iolab_core::units::Nanos;

    fn entry(node: &str, id: &str, rated: Rated) -> TargetEntry {
        TargetEntry {
            id: id.into(),
            node: node.into(),
            path: "/dev/nvme0n1".into(),
            rated: Some(rated),
        }
    }

    fn rank(rank: u32, host: &str, reads: u64, writes: u64) -> RankSummary {
        let count = |ops: u64| OpCount {
            ops,
            bytes: ops * 4096,
        };
        RankSummary {
            rank,
            host: host.into(),
            threads: 8,
            elapsed: Nanos::SECOND,
            first_done: Nanos::SECOND,
            ops: [(OpKind::Read, count(reads)), (OpKind::Write, count(writes))]
                .into_iter()
                .collect(),
            cpu: CpuUsage::default(),
            errors: 0,
            cpu_set: Vec::new(),
        }
    }

    /// Two nodes of two devices rated 750k IOPS each (3M in all): a 4 KiB 90/10 phase at
    /// 2.7M + 0.3M IOPS is 100 % cluster-wide; node a did 1.6M of its 1.5M (107 %).
    #[test]
    fn small_blocks_against_rated_iops_cluster_wide_and_per_node() {
        let iops = Rated {
            value: 750_000.0,
            unit: RatedUnit::Iops,
        };
        let mbps = Rated {
            value: 3_500.0,
            unit: RatedUnit::MegabytesPerSec,
        };
        let mut small = phase("randrw", &[("block_size", "4KiB"), ("rwmix_read", "90")]);
        small
            .ops
            .push(op_result(OpKind::Read, 2_700_000, 2_700_000 * 4096));
        small
            .ops
            .push(op_result(OpKind::Write, 300_000, 300_000 * 4096));
        small.per_rank = vec![
            rank(0, "a", 1_440_000, 160_000),
            rank(1, "b", 1_260_000, 140_000),
        ];
        let mut big = phase("randrw", &[("block_size", "2MiB"), ("rwmix_read", "90")]);
        big.ops.push(op_result(OpKind::Read, 3_000, 3_000 << 21));
        let mut run = run_with("hci", vec![small, big]);
        let entries = vec![
            entry("a", "nvme0", iops),
            entry("a", "nvme1", iops),
            entry("b", "nvme0", iops),
            entry("b", "nvme1", iops),
            entry("b", "array", mbps),
        ];
        run.spec = serde_json::json!({ "rated": entries });
        let rows = rated_rows(&run);
        let t = rated_table(&rows);
        let text = t.to_text();
        assert_eq!(rows.len(), 4, "{text}");
        assert_eq!(
            t.rows[0],
            [
                "randrw",
                "4KiB",
                "all (2 nodes)",
                "3.00M IOPS",
                "3.00M IOPS",
                "4",
                "100%"
            ]
        );
        assert_eq!(
            t.rows[1][2..],
            ["node a", "1.60M IOPS", "1.50M IOPS", "2", "107%"]
        );
        assert_eq!(
            t.rows[2][2..],
            ["node b", "1.40M IOPS", "1.50M IOPS", "2", "93%"]
        );
        // 3,000 x 2 MiB a second is 6.29 GB/s against 3,500 MB/s rated.
        assert_eq!(
            t.rows[3],
            [
                "randrw",
                "2MiB",
                "all (1 node)",
                "6.29 GB/s",
                "3.50 GB/s",
                "1",
                "180%"
            ]
        );
        // Without rated figures, nothing.
        run.spec = serde_json::Value::Null;
        assert!(rated_rows(&run).is_empty());
    }
}
