//! The series of `iolab targets`: per storage target.

use prometheus::{IntCounterVec, Opts, Registry};

use super::gauge;
use crate::live::state::LiveState;

/// The storage targets of `iolab targets`: counters of finished phases by target, host
/// and operation (equal to the stored target phases'), the current phase's per-target
/// counts and rates, and the report's flags of the last finished targets phase.
pub(super) fn targets(registry: &Registry, s: &LiveState) -> Result<(), prometheus::Error> {
    if !s.target_counted.is_empty() {
        let labels = ["target", "host", "op"];
        let ops = IntCounterVec::new(
            Opts::new(
                "target_operations_total",
                "Operations completed on each storage target in finished phases",
            ),
            &labels,
        )?;
        let bytes = IntCounterVec::new(
            Opts::new(
                "target_bytes_total",
                "Bytes moved on each storage target in finished phases",
            ),
            &labels,
        )?;
        registry.register(Box::new(ops.clone()))?;
        registry.register(Box::new(bytes.clone()))?;
        for ((target, host, op), (n, b)) in &s.target_counted {
            let labels = [target.as_str(), host.as_str(), op.name()];
            ops.with_label_values(&labels).inc_by(*n);
            bytes.with_label_values(&labels).inc_by(*b);
        }
    }
    if let Some(c) = s.current.as_ref().filter(|c| !c.targets_now.is_empty()) {
        let labels = ["phase", "target", "host"];
        let so_far = [
            (
                "target_phase_operations_total",
                "Operations on each target in the current phase so far",
            ),
            (
                "target_phase_bytes_total",
                "Bytes moved on each target in the current phase so far",
            ),
        ]
        .iter()
        .map(|(name, help)| {
            let c = IntCounterVec::new(Opts::new(*name, *help), &labels)?;
            registry.register(Box::new(c.clone()))?;
            Ok(c)
        })
        .collect::<Result<Vec<_>, prometheus::Error>>()?;
        let g = [
            (
                "target_phase_iops",
                "Operations per second on each target over the last second",
            ),
            (
                "target_phase_bytes_per_second",
                "Bytes per second on each target over the last second",
            ),
        ]
        .iter()
        .map(|(name, help)| gauge(registry, name, help, &labels))
        .collect::<Result<Vec<_>, _>>()?;
        for t in &c.targets_now {
            let l = [c.name.as_str(), t.id.as_str(), t.host.as_str()];
            for (c, v) in so_far.iter().zip([t.ops, t.bytes]) {
                c.with_label_values(&l).inc_by(v);
            }
            for (g, v) in g.iter().zip([t.iops, t.bytes_per_sec]) {
                g.with_label_values(&l).set(v);
            }
        }
    }
    target_flags(registry, s)
}

/// `iolab_target_slow`: the report's flags of the last finished targets phase.
fn target_flags(registry: &Registry, s: &LiveState) -> Result<(), prometheus::Error> {
    let flagged: Vec<_> = s.targets.iter().filter(|t| t.slow.is_some()).collect();
    let Some(phase) = s.targets_phase.as_ref().filter(|_| !flagged.is_empty()) else {
        return Ok(());
    };
    let g = gauge(
        registry,
        "target_slow",
        "1 when the last finished targets phase's analysis flagged the target as slow (kind: alone, or as part of a slow node)",
        &["phase", "target", "host", "kind"],
    )?;
    for t in flagged {
        for (kind, v) in [("target", t.slow), ("node", t.node_slow)] {
            let l = [phase.as_str(), t.id.as_str(), t.host.as_str(), kind];
            g.with_label_values(&l)
                .set(f64::from(u8::from(v.unwrap_or(false))));
        }
    }
    Ok(())
}
