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

use super::kvcache::KvCacheLive;
use super::state::{CurrentPhase, LiveState, TrainLive};

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
        train_gauges(&registry, t)?;
    }
    if let Some(k) = &s.kvcache {
        kvcache_gauges(&registry, k)?;
    }
    if let Some(c) = &s.current {
        phase_gauges(&registry, c)?;
    }
    targets(&registry, s)?;
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

/// A training run's AU and throughput as it goes.
fn train_gauges(registry: &Registry, t: &TrainLive) -> Result<(), prometheus::Error> {
    set(
        registry,
        "train_au_percent",
        "Accelerator utilization so far this epoch, all accelerators (%)",
        t.au_percent,
    )?;
    set(
        registry,
        "train_samples_per_second",
        "Samples per second so far this epoch, all accelerators",
        t.samples_per_sec,
    )?;
    set(
        registry,
        "train_epoch",
        "The epoch running",
        f64::from(t.epoch),
    )?;
    set(
        registry,
        "train_step",
        "The step of the epoch running",
        t.step as f64,
    )?;
    set(
        registry,
        "train_accelerators",
        "Simulated accelerators of the job",
        t.accelerators as f64,
    )
}

/// A KV cache trial's last second (this rank's workers: rank 0's).
fn kvcache_gauges(registry: &Registry, k: &KvCacheLive) -> Result<(), prometheus::Error> {
    let phase = [k.phase.as_str()];
    let s = &k.second;
    for (name, help, v) in [
        (
            "kvcache_tokens_per_second",
            "Tokens the requests completed in the last second generated, per second",
            Some(s.tokens_per_sec),
        ),
        (
            "kvcache_read_bytes_per_second",
            "Bytes of whole entries read from the storage tier in the last second, per second",
            Some(s.read_bytes_per_sec),
        ),
        (
            "kvcache_write_bytes_per_second",
            "Bytes of whole entries written to the storage tier in the last second, per second",
            Some(s.write_bytes_per_sec),
        ),
        (
            "kvcache_read_device_p95_seconds",
            "p95 of the storage tier's read device spans of the last second (coarse: within 19 %)",
            s.read_device_p95,
        ),
        (
            "kvcache_write_device_p95_seconds",
            "p95 of the storage tier's write device spans of the last second (coarse: within 19 %)",
            s.write_device_p95,
        ),
        (
            "kvcache_users",
            "Simulated users of the running trial",
            Some(f64::from(k.users)),
        ),
    ] {
        if let Some(v) = v {
            gauge(registry, name, help, &["phase"])?
                .with_label_values(&phase)
                .set(v);
        }
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

/// The storage targets of `iolab targets`: counters of finished phases by target, host
/// and operation (equal to the stored target phases'), the current phase's per-target
/// counts and rates, and the report's flags of the last finished targets phase.
fn targets(registry: &Registry, s: &LiveState) -> Result<(), prometheus::Error> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::state::OpLatency;

    /// Each series' label names, in the order of the text, for every series line.
    fn label_orders(text: &str) -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with('#') && l.contains('{'))
            .map(|l| {
                let inner = &l[l.find('{').unwrap() + 1..l.rfind('}').unwrap()];
                let names: Vec<&str> = inner
                    .split("\",")
                    .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
                    .collect();
                format!("{}: {}", &l[..l.find('{').unwrap()], names.join(","))
            })
            .collect()
    }

    #[test]
    fn every_scrape_gives_a_series_labels_in_the_same_order() {
        let s = LiveState {
            command: "run".into(),
            run_id: "r1".into(),
            label: Some("nightly".into()),
            status: "running".into(),
            latency: ["read", "write"]
                .iter()
                .map(|op| OpLatency {
                    op: op.to_string(),
                    count: 10,
                    mean: 0.001,
                    quantiles: vec![("0.5".into(), 0.001), ("0.99".into(), 0.002)],
                })
                .collect(),
            kvcache: Some(KvCacheLive {
                phase: "kvcache trial 1".into(),
                users: 4,
                second: iolab_suites::kvcache::live::KvSecond {
                    tokens_per_sec: 500.0,
                    read_bytes_per_sec: 2048.0,
                    write_bytes_per_sec: 1024.0,
                    read_device_p95: Some(0.02),
                    write_device_p95: None,
                },
            }),
            ..LiveState::default()
        };
        let text = render(&s).unwrap();
        assert!(
            text.contains("iolab_kvcache_tokens_per_second{phase=\"kvcache trial 1\",command=\"run\",label=\"nightly\",run=\"r1\"} 500\n"),
            "{text}"
        );
        assert!(text.contains("iolab_kvcache_read_device_p95_seconds{phase=\"kvcache trial 1\",command=\"run\",label=\"nightly\",run=\"r1\"} 0.02\n"), "{text}");
        // No write span ended in the second: no p95 for it, not a zero.
        assert!(
            !text.contains("iolab_kvcache_write_device_p95_seconds{"),
            "{text}"
        );
        let first = label_orders(&text);
        assert!(
            first.contains(
                &"iolab_kvcache_write_bytes_per_second: phase,command,label,run".to_string()
            ),
            "{first:?}"
        );
        let latency: Vec<&String> = first
            .iter()
            .filter(|l| l.starts_with("iolab_latency_seconds:"))
            .collect();
        assert_eq!(latency.len(), 4, "{first:?}");
        assert!(
            latency
                .iter()
                .all(|l| l.ends_with(": op,command,label,run,quantile")),
            "{latency:?}"
        );
        assert!(
            first.contains(&"iolab_running: status,command,label,run".to_string()),
            "{first:?}"
        );
        // A HashMap's order is drawn anew for each map: twenty scrapes would differ.
        for _ in 0..20 {
            assert_eq!(label_orders(&render(&s).unwrap()), first);
        }
    }
}
