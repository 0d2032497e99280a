//! The storage targets of `iolab targets` in the live state: [`TargetInfo`] names one
//! (the list every rank shares, by index), [`TargetRow`] is its row — in the current
//! phase its counts so far and rates over the last second from the engine's per-unit
//! progress, in the last finished phase its stored figures and the flags of the
//! report's analysis. Flags exist only once a phase ended: they are the report's own,
//! read from the stored target phases, never judged again here (house rule 12).

use std::collections::BTreeMap;

use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::units::Nanos;
use iolab_engine::UnitProgress;
use iolab_suites::targets::analysis::MIN_TARGETS;
use iolab_suites::targets::throughput_of;
use serde::Serialize;

/// A storage target, as `iolab targets` placed it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TargetInfo {
    pub id: String,
    /// The host it runs on.
    pub host: String,
    pub path: String,
}

/// One target's figures in a phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TargetRow {
    pub id: String,
    pub host: String,
    pub path: String,
    /// Operations and bytes so far (current phase) or in all (finished phase).
    pub ops: u64,
    pub bytes: u64,
    /// Current phase: over the last second. Finished phase: the report's figures, the
    /// target's data operations over its own time.
    pub iops: f64,
    pub bytes_per_sec: f64,
    /// Finished phase, when the report's analysis ran (three targets or more): distance
    /// from the median in percent, flagged slow alone, flagged as part of a slow node.
    /// None while the phase runs: flags come when it ends.
    pub vs_median_percent: Option<f64>,
    pub slow: Option<bool>,
    pub node_slow: Option<bool>,
    /// The same in words: "slow", "on a slow node", "ok", or "not compared" when there
    /// were too few targets to compare.
    pub flag: Option<String>,
    /// The target's index in the shared list.
    #[serde(skip)]
    unit: u32,
    /// Counts at the last per-second sample and when they were taken.
    #[serde(skip)]
    sampled: (u64, u64, Nanos),
}

/// Updates the current phase's target rows from a progress report; when a sample is
/// due, each target's rates since its last sample (each over the time between the two
/// moments its counts were taken).
pub(super) fn targets_now(
    rows: &mut Vec<TargetRow>,
    list: &[TargetInfo],
    per_unit: &[UnitProgress],
    sample_due: bool,
) {
    for u in per_unit {
        let Some(t) = list.get(u.unit as usize) else {
            continue;
        };
        let at = match rows.binary_search_by_key(&u.unit, |r| r.unit) {
            Ok(i) => i,
            Err(i) => {
                rows.insert(
                    i,
                    TargetRow {
                        id: t.id.clone(),
                        host: t.host.clone(),
                        path: t.path.clone(),
                        unit: u.unit,
                        ..TargetRow::default()
                    },
                );
                i
            }
        };
        let row = &mut rows[at];
        (row.ops, row.bytes) = (u.ops, u.bytes);
        let (ops, bytes, then) = row.sampled;
        if sample_due && u.at > then {
            let dt = u.at.saturating_sub(then).as_secs_f64();
            row.iops = u.ops.saturating_sub(ops) as f64 / dt;
            row.bytes_per_sec = u.bytes.saturating_sub(bytes) as f64 / dt;
            row.sampled = (u.ops, u.bytes, u.at);
        }
    }
}

/// The rows of a finished targets phase, from its stored target phases.
pub(super) fn finished_rows(targets: &[PhaseResult]) -> Vec<TargetRow> {
    targets
        .iter()
        .map(|p| {
            let param = |k: &str| p.params.get(k).cloned().unwrap_or_default();
            let extra = |k: &str| p.extra.get(k).copied();
            let flag = |k: &str| extra(k).map(|v| v != 0.0);
            let (bytes_per_sec, iops) = throughput_of(p);
            let (slow, node_slow) = (flag("slow"), flag("node_slow"));
            let words = match (slow, node_slow) {
                _ if targets.len() < MIN_TARGETS => {
                    format!("not compared (fewer than {MIN_TARGETS} targets)")
                }
                (_, Some(true)) => "on a slow node".to_string(),
                (Some(true), _) => "slow".to_string(),
                (Some(false), _) => "ok".to_string(),
                (None, _) => "not compared".to_string(),
            };
            TargetRow {
                id: param("id"),
                host: param("host"),
                path: param("path"),
                ops: p.ops.iter().map(|o| o.ops).sum(),
                bytes: p.ops.iter().map(|o| o.bytes.get()).sum(),
                iops,
                bytes_per_sec,
                vs_median_percent: extra("vs_median_percent"),
                slow,
                node_slow,
                flag: Some(words),
                ..TargetRow::default()
            }
        })
        .collect()
}

/// Adds a finished phase's operations and bytes to the counters by (target, host,
/// operation).
pub(super) fn count(
    counted: &mut BTreeMap<(String, String, OpKind), (u64, u64)>,
    targets: &[PhaseResult],
) {
    for p in targets {
        let id = p.params.get("id").cloned().unwrap_or_default();
        let host = p.params.get("host").cloned().unwrap_or_default();
        for o in &p.ops {
            let e = counted.entry((id.clone(), host.clone(), o.op)).or_default();
            e.0 += o.ops;
            e.1 += o.bytes.get();
        }
    }
}
