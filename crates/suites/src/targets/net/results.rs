//! From a finished direction of `iolab net` to results: one `PhaseResult` per link
//! ("net 0->2", params sender/receiver and their hosts) and a summary whose `extra`
//! holds minimum, maximum, average and aggregate throughput, with slow links flagged
//! the way slow targets are (median and MAD).

use iolab_comm::Comm;
use iolab_core::result::{PhaseKind, PhaseResult};

use super::{Direction, Link, NetPhase};
use crate::targets::analysis::{TargetAnalysis, TargetFigure, analyze};
use crate::targets::throughput_of;
use iolab_engine::{PhaseMeta, UnitPhase, UnitResult};

/// A link slower than the median by this many percent (and an outlier) is flagged.
const SLOW_LINK_PERCENT: f64 = 10.0;

pub(super) fn meta(name: String, d: &Direction<'_>) -> PhaseMeta {
    let mut params = std::collections::BTreeMap::new();
    params.insert("direction".to_string(), d.direction.to_string());
    params.insert("streams".to_string(), d.spec.streams.to_string());
    params.insert("block_size".to_string(), d.spec.block_size.to_string());
    params.insert(
        "pattern".to_string(),
        format!("{:?}", d.spec.pattern).to_lowercase(),
    );
    PhaseMeta {
        name,
        kind: Some(PhaseKind::Net),
        params,
        repetition: 0,
        spec: serde_json::to_value(d.spec).unwrap_or_default(),
        warnings: Vec::new(),
    }
}

/// The identity of one link's phase ("net 0->2").
pub(super) fn link_meta(d: &Direction<'_>, link: Link) -> PhaseMeta {
    let host = |rank: u32| d.endpoints[rank as usize].host.clone();
    let mut m = meta(format!("net {}->{}", link.sender, link.receiver), d);
    m.params.insert("sender".into(), link.sender.to_string());
    m.params
        .insert("receiver".into(), link.receiver.to_string());
    m.params.insert("sender_host".into(), host(link.sender));
    m.params.insert("receiver_host".into(), host(link.receiver));
    m
}

pub(super) fn finish(comm: &dyn Comm, d: &Direction<'_>, phase: UnitPhase) -> NetPhase {
    let host = |rank: u32| d.endpoints[rank as usize].host.clone();
    let mut pairs = Vec::new();
    let mut figures = Vec::new();
    for UnitResult { unit, result } in phase.units {
        let link = d.links[unit as usize];
        let (throughput, iops) = throughput_of(&result);
        figures.push(TargetFigure {
            id: format!("{}->{}", link.sender, link.receiver),
            node: format!("{}->{}", host(link.sender), host(link.receiver)),
            throughput,
            iops,
            service: None,
            rated: None,
        });
        pairs.push(result);
    }
    let mut summary = phase.summary;
    if comm.size() == 1 {
        summary.warnings.push(
            "one process: two of its threads streamed over the loopback interface, which measures this host's TCP stack, not a network; run under mpirun on two or more hosts".to_string(),
        );
    } else if d.links.iter().all(|l| host(l.sender) == host(l.receiver)) {
        summary.warnings.push(
            "every pair is on one host: the streams went over loopback, not a network; spread ranks over hosts (mpirun --map-by node)".to_string(),
        );
    }
    if comm.size() > 1
        && comm.size() % 2 == 1
        && d.spec.pattern == iolab_core::spec::NetPattern::Pairs
    {
        summary.warnings.push(format!(
            "rank {} has no partner (an odd number of ranks); it sent and received nothing",
            comm.size() - 1
        ));
    }
    let analysis = analyze(&figures, SLOW_LINK_PERCENT);
    if let Some(a) = &analysis {
        annotate(&mut summary, &mut pairs, a);
    }
    NetPhase {
        direction: d.direction.to_string(),
        summary,
        pairs,
        analysis,
    }
}

fn annotate(summary: &mut PhaseResult, pairs: &mut [PhaseResult], a: &TargetAnalysis) {
    for (p, v) in pairs.iter_mut().zip(&a.targets) {
        p.extra.insert("bytes_per_sec".into(), v.throughput);
        p.extra
            .insert("vs_median_percent".into(), v.vs_median_percent);
        p.extra.insert("slow".into(), f64::from(u8::from(v.slow)));
    }
    let x = &mut summary.extra;
    x.insert("pairs".into(), a.count as f64);
    x.insert("min_bytes_per_sec".into(), a.min.throughput);
    x.insert("max_bytes_per_sec".into(), a.max.throughput);
    x.insert("average_bytes_per_sec".into(), a.average);
    x.insert("aggregate_bytes_per_sec".into(), a.aggregate);
    x.insert("median_bytes_per_sec".into(), a.median);
    summary.warnings.extend(slow_link_lines(a));
}

/// Links flagged slow, in words.
pub fn slow_link_lines(a: &TargetAnalysis) -> Vec<String> {
    a.targets
        .iter()
        .filter(|v| v.slow)
        .map(|v| {
            format!(
                "link {} ({}): {:.1}% below the median",
                v.id, v.node, -v.vs_median_percent
            )
        })
        .collect()
}
