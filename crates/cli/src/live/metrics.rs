//! `/metrics`: the live state in Prometheus' text exposition format (0.0.4), encoded by
//! the `prometheus` crate. Operations and bytes are counters (`_total`): by phase and
//! operation they grow while a phase runs and end equal to its stored result; by host
//! they are the finished phases'. What is not a count (rates now, workers, the ETA)
//! is a gauge. The run id, label and command are labels of every series. A series' labels
//! come in the same order on every scrape: its own (by name, as the `prometheus` crate
//! sorts them), then the run's `command`, `label`, `run`. (The registry's common labels
//! would follow a HashMap's order, drawn anew for each scrape: they are added here.)

use std::collections::BTreeMap;

use prometheus::proto::{LabelPair, Metric, MetricFamily, MetricType, Quantile, Summary};
use prometheus::{Encoder, GaugeVec, IntCounterVec, Opts, Registry, TextEncoder};

use super::state::{CurrentPhase, LiveState};

mod targets;
#[cfg(test)]
mod tests;
mod workloads;

/// The text Prometheus scrapes.
pub fn render(s: &LiveState) -> Result<String, prometheus::Error> {
    let labels = BTreeMap::from([
        ("run".to_string(), s.run_id.clone()),
        ("label".to_string(), s.label.clone().unwrap_or_default()),
        ("command".to_string(), s.command.clone()),
    ]);
    let registry = Registry::new_custom(Some("iolab".into()), None)?;
    counters(&registry, s)?;
    run_gauges(&registry, s)?;
    if let Some(t) = &s.train {
        workloads::train_gauges(&registry, t)?;
    }
    if let Some(k) = &s.kvcache {
        workloads::kvcache_gauges(&registry, k)?;
    }
    if let Some(c) = &s.current {
        phase_gauges(&registry, c)?;
    }
    targets::targets(&registry, s)?;
    let mut families = registry.gather();
    for family in &mut families {
        for metric in family.mut_metric() {
            let mut own = metric.take_label();
            own.extend(labels.iter().map(|(k, v)| label_pair(k, v)));
            metric.set_label(own);
        }
    }
    if !s.latency.is_empty() {
        families.push(latency_summary(s, &labels));
    }
    let mut out = Vec::new();
    TextEncoder::new().encode(&families, &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn counter(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<IntCounterVec, prometheus::Error> {
    let c = IntCounterVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(c.clone()))?;
    Ok(c)
}

/// Operations and bytes by phase and operation, and of finished phases by host.
fn counters(registry: &Registry, s: &LiveState) -> Result<(), prometheus::Error> {
    let by_phase = ["phase", "op"];
    let ops = counter(
        registry,
        "operations_total",
        "Operations completed, by phase: growing while the phase runs, then its stored result's",
        &by_phase,
    )?;
    let bytes = counter(
        registry,
        "bytes_total",
        "Bytes moved, by phase: growing while the phase runs, then its stored result's",
        &by_phase,
    )?;
    for (phase, op, n, b) in s.counters.values() {
        ops.with_label_values(&[phase, op.name()]).inc_by(n);
        bytes.with_label_values(&[phase, op.name()]).inc_by(b);
    }
    let by_host = ["op", "host"];
    let host_ops = counter(
        registry,
        "host_operations_total",
        "Operations completed in finished phases, by host",
        &by_host,
    )?;
    let host_bytes = counter(
        registry,
        "host_bytes_total",
        "Bytes moved in finished phases, by host",
        &by_host,
    )?;
    for ((op, host), (n, b)) in &s.counted {
        host_ops.with_label_values(&[op.name(), host]).inc_by(*n);
        host_bytes.with_label_values(&[op.name(), host]).inc_by(*b);
    }
    Ok(())
}

/// A gauge without labels of its own, set to `v`.
fn set(registry: &Registry, name: &str, help: &str, v: f64) -> Result<(), prometheus::Error> {
    gauge(registry, name, help, &[])?
        .with_label_values(&[] as &[&str])
        .set(v);
    Ok(())
}

/// Where the run is: phases planned and done, running or not, the ETA.
fn run_gauges(registry: &Registry, s: &LiveState) -> Result<(), prometheus::Error> {
    let (position, planned) = s.position();
    set(
        registry,
        "phases_planned",
        "Phases this run will run",
        planned as f64,
    )?;
    set(
        registry,
        "phases_done",
        "Phases finished",
        position.saturating_sub(1) as f64,
    )?;
    gauge(
        registry,
        "running",
        "1 while the run lasts, 0 once it ended",
        &["status"],
    )?
    .with_label_values(&[s.status.as_str()])
    .set(if s.status == "running" { 1.0 } else { 0.0 });
    if let Some(eta) = s.eta_secs {
        set(
            registry,
            "eta_seconds",
            "Estimated seconds until the run ends",
            eta,
        )?;
    }
    Ok(())
}

/// The current phase's rates now, elapsed time, workers and the last second's latency.
fn phase_gauges(registry: &Registry, c: &CurrentPhase) -> Result<(), prometheus::Error> {
    let phase = [c.name.as_str()];
    for (name, help, v) in [
        (
            "phase_iops",
            "Operations per second over the last second",
            c.iops_now,
        ),
        (
            "phase_bytes_per_second",
            "Bytes per second over the last second",
            c.bytes_per_sec_now,
        ),
        (
            "phase_elapsed_seconds",
            "Seconds since the current phase started",
            c.elapsed_secs,
        ),
        (
            "phase_workers_done",
            "Workers that finished their share",
            c.workers_done as f64,
        ),
        (
            "phase_workers",
            "Workers of the current phase",
            c.workers as f64,
        ),
    ] {
        gauge(registry, name, help, &["phase"])?
            .with_label_values(&phase)
            .set(v);
    }
    let now = gauge(
        registry,
        "phase_latency_now_seconds",
        "Latency quantiles of the operations of the last second (coarse: within 19 %)",
        &["phase", "quantile"],
    )?;
    for (q, v) in [("0.5", c.p50_now), ("0.99", c.p99_now)] {
        if let Some(v) = v {
            now.with_label_values(&[c.name.as_str(), q]).set(v);
        }
    }
    Ok(())
}

/// The latency of the last finished phase as a Prometheus summary per operation: its
/// quantiles (from the phase's HdrHistogram), `_count` (operations measured) and `_sum`
/// (their mean times the count, in seconds), with the run's labels as every series.
fn latency_summary(s: &LiveState, run_labels: &BTreeMap<String, String>) -> MetricFamily {
    let mut family = MetricFamily::default();
    family.set_name("iolab_latency_seconds".into());
    family.set_help("Latency of each operation of the last finished phase".into());
    family.set_field_type(MetricType::SUMMARY);
    let metrics = s
        .latency
        .iter()
        .map(|l| {
            let mut summary = Summary::default();
            summary.set_sample_count(l.count);
            summary.set_sample_sum(l.mean * l.count as f64);
            summary.set_quantile(
                l.quantiles
                    .iter()
                    .filter_map(|(q, v)| {
                        let mut quantile = Quantile::default();
                        quantile.set_quantile(q.parse().ok()?);
                        quantile.set_value(*v);
                        Some(quantile)
                    })
                    .collect(),
            );
            let mut labels = vec![label_pair("op", &l.op)];
            labels.extend(run_labels.iter().map(|(k, v)| label_pair(k, v)));
            let mut m = Metric::from_label(labels);
            m.set_summary(summary);
            m
        })
        .collect();
    family.set_metric(metrics);
    family
}

fn label_pair(name: &str, value: &str) -> LabelPair {
    let mut l = LabelPair::default();
    l.set_name(name.into());
    l.set_value(value.into());
    l
}

fn gauge(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<GaugeVec, prometheus::Error> {
    let g = GaugeVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(g.clone()))?;
    Ok(g)
}
