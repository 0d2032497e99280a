//! The live state by host: each host's counts and rates in the running phase (summed
//! from its ranks' progress every tick, rates over each per-second sample) and in the
//! last finished phase.

use iolab_core::result::PhaseResult;
use iolab_engine::RankProgress;
use serde::Serialize;

/// One host's figures in the last finished phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HostRow {
    pub host: String,
    pub ranks: usize,
    pub workers: u32,
    pub ops: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bytes_per_sec: f64,
}

/// Adds the ranks' counts up by host into `rows`; when a sample is due, each host's rates
/// over the `dt` seconds since the last one.
pub(super) fn hosts_now(
    rows: &mut Vec<HostRow>,
    per_rank: &[RankProgress],
    sample_due: bool,
    dt: f64,
) {
    if per_rank.is_empty() {
        return;
    }
    let mut totals: Vec<HostRow> = Vec::new();
    for r in per_rank {
        let row = match totals.iter().position(|h| h.host == r.host) {
            Some(i) => &mut totals[i],
            None => {
                totals.push(HostRow {
                    host: r.host.clone(),
                    ..HostRow::default()
                });
                totals.last_mut().expect("pushed")
            }
        };
        row.ranks += 1;
        row.ops += r.ops;
        row.bytes += r.bytes;
    }
    for t in &mut totals {
        let before = rows.iter().find(|h| h.host == t.host);
        (t.iops, t.bytes_per_sec) = match before {
            Some(b) if sample_due && dt > 0.0 => (
                t.ops.saturating_sub(b.ops) as f64 / dt,
                t.bytes.saturating_sub(b.bytes) as f64 / dt,
            ),
            Some(b) if !sample_due => (b.iops, b.bytes_per_sec),
            _ => (0.0, 0.0),
        };
        if !sample_due && let Some(b) = before {
            // Between samples the counts of the last sample stay, so that the next rate
            // is over a whole second.
            (t.ops, t.bytes) = (b.ops, b.bytes);
        }
    }
    *rows = totals;
}

/// A finished phase's rows by host.
pub(super) fn host_rows(phase: &PhaseResult) -> Vec<HostRow> {
    phase
        .per_host()
        .iter()
        .map(|h| HostRow {
            host: h.host.clone(),
            ranks: h.ranks.len(),
            workers: h.workers,
            ops: h.ops,
            bytes: h.bytes.get(),
            iops: h.iops.get(),
            bytes_per_sec: h.bandwidth.get(),
        })
        .collect()
}
