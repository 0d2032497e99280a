//! Per-rank and per-host rows of a phase: a rank's totals, CPU and errors, and the same
//! added up by host (each host's CPUs counted once).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CpuUsage, OpCount, OpKind};
use crate::units::{ByteCount, BytesPerSec, Nanos, OpsPerSec, bandwidth, rate};

/// One rank's share of a phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    pub rank: u32,
    pub host: String,
    pub threads: u32,
    /// Time from the common start to this rank's last worker finishing.
    pub elapsed: Nanos,
    /// When this rank's first worker finished.
    pub first_done: Nanos,
    /// Totals per operation at the end of the phase.
    pub ops: BTreeMap<OpKind, OpCount>,
    pub cpu: CpuUsage,
    pub errors: u64,
    /// The CPUs this rank may run on (empty in records from before it was kept), so that
    /// ranks sharing a host count its CPUs once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_set: Vec<u32>,
}

/// One host's share of a phase: its ranks' rows added up, rates over the phase time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostSummary {
    pub host: String,
    /// The ranks that ran on this host.
    pub ranks: Vec<u32>,
    /// Worker threads on this host, over all its ranks.
    pub workers: u32,
    /// Completed operations and bytes of every type.
    pub ops: u64,
    pub bytes: ByteCount,
    /// Over the phase's elapsed time (the slowest rank anywhere).
    pub iops: OpsPerSec,
    pub bandwidth: BytesPerSec,
    /// The ranks' CPU time added up over the phase's elapsed time; `cpus` counts each of
    /// the host's CPUs once, however many ranks may use it.
    pub cpu: CpuUsage,
    pub errors: u64,
}

/// The CPUs a group of ranks on one host may use, each counted once: the union of their
/// CPU sets, or (for records without them) the most any one rank may use.
pub fn host_cpus<'a>(ranks: impl IntoIterator<Item = &'a RankSummary>) -> u32 {
    let mut set = std::collections::BTreeSet::new();
    let mut most = 0;
    for r in ranks {
        set.extend(r.cpu_set.iter().copied());
        most = most.max(r.cpu.cpus);
    }
    if set.is_empty() {
        most
    } else {
        set.len() as u32
    }
}

/// Per-host rows from per-rank rows, hosts in order of their first rank; `elapsed` is
/// the phase time the rates are over.
pub fn per_host(per_rank: &[RankSummary], elapsed: Nanos) -> Vec<HostSummary> {
    let mut order: Vec<&str> = Vec::new();
    for r in per_rank {
        if !order.contains(&r.host.as_str()) {
            order.push(&r.host);
        }
    }
    order
        .into_iter()
        .map(|host| {
            let ranks: Vec<&RankSummary> = per_rank.iter().filter(|r| r.host == host).collect();
            let mut total = OpCount::default();
            let mut cpu = CpuUsage {
                wall: elapsed,
                cpus: host_cpus(ranks.iter().copied()),
                ..CpuUsage::default()
            };
            for r in &ranks {
                for c in r.ops.values() {
                    total += *c;
                }
                cpu.user = cpu.user + r.cpu.user;
                cpu.system = cpu.system + r.cpu.system;
            }
            HostSummary {
                host: host.to_string(),
                ranks: ranks.iter().map(|r| r.rank).collect(),
                workers: ranks.iter().map(|r| r.threads).sum(),
                ops: total.ops,
                bytes: ByteCount(total.bytes),
                iops: rate(total.ops, elapsed),
                bandwidth: bandwidth(ByteCount(total.bytes), elapsed),
                cpu,
                errors: ranks.iter().map(|r| r.errors).sum(),
            }
        })
        .collect()
}
