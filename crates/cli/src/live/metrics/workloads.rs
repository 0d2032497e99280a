//! The gauges of the AI workloads: a training run's AU and throughput, a KV cache
//! trial's last second.

use prometheus::Registry;

use super::{gauge, set};
use crate::live::kvcache::KvCacheLive;
use crate::live::state::TrainLive;

/// A training run's AU and throughput as it goes.
pub(super) fn train_gauges(registry: &Registry, t: &TrainLive) -> Result<(), prometheus::Error> {
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
pub(super) fn kvcache_gauges(
    registry: &Registry,
    k: &KvCacheLive,
) -> Result<(), prometheus::Error> {
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
