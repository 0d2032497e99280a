//! Samples taken beside a phase, once per interval: [`Telemetry`] holds per-device
//! series ([`DeviceSeries`], from /proc/diskstats) and host CPU use ([`CpuSeries`], from
//! /proc/stat), so a report can show whether the device or the client was the limit.
//! Collected by the `iolab-host` crate.

use serde::{Deserialize, Serialize};

use crate::units::Nanos;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Telemetry {
    /// Time between samples.
    pub interval: Nanos,
    /// Host the samples were taken on.
    pub host: String,
    /// Wall-clock time of the first snapshot (the start of the first interval),
    /// milliseconds since the Unix epoch, to align the samples with a phase's timeline.
    pub started_at_ms: i64,
    /// End of each sample's interval, in milliseconds after `started_at_ms`; one entry per
    /// value in every series. Usually multiples of `interval`; the last may be shorter.
    pub sample_ends_ms: Vec<u64>,
    pub devices: Vec<DeviceSeries>,
    pub cpu: CpuSeries,
    /// What could not be sampled, and why ("sdb: not in /proc/diskstats").
    pub notes: Vec<String>,
}

/// One block device, one value per interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceSeries {
    pub name: String,
    pub read_iops: Vec<f64>,
    pub write_iops: Vec<f64>,
    pub read_bytes_per_sec: Vec<f64>,
    pub write_bytes_per_sec: Vec<f64>,
    /// Average number of requests in flight (iostat's aqu-sz).
    pub queue_size: Vec<f64>,
    /// Average time a read / write took, queueing included, in milliseconds (r_await).
    pub read_await_ms: Vec<f64>,
    pub write_await_ms: Vec<f64>,
    /// Share of the interval the device was busy, in percent (%util).
    pub util_percent: Vec<f64>,
}

/// Host CPU use per interval, in percent of all CPUs, as iostat's avg-cpu computes it:
/// user includes guest time, system includes hard and soft interrupts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuSeries {
    pub user_percent: Vec<f64>,
    pub system_percent: Vec<f64>,
    pub iowait_percent: Vec<f64>,
    pub nice_percent: Vec<f64>,
    /// Time a hypervisor ran something else while this guest wanted the CPU.
    pub steal_percent: Vec<f64>,
    pub idle_percent: Vec<f64>,
}
