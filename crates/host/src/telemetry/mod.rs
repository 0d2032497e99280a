//! Device and CPU telemetry beside a phase: [`diskstats`] and [`cpustat`] parse the
//! kernel's counters and compute iostat's rates from two readings, [`SeriesBuilder`]
//! turns a sequence of [`Snapshot`]s into a `core::telemetry::Telemetry`, and
//! [`Sampler`] takes the snapshots on a background thread once per interval;
//! [`DiskWatch`] adds up what devices did over measured intervals ([`DiskTotals`]).

pub mod cpustat;
mod disk_totals;
pub mod diskstats;
mod sampler;
mod series;

pub use cpustat::{CpuPercent, CpuTimes, cpu_percent};
pub use disk_totals::{DeviceTotals, DiskTotals, DiskWatch};
pub use diskstats::{DiskRates, DiskStat, disk_rates};
pub use sampler::{ProcSource, Sampler, SnapshotSource};
pub use series::{SeriesBuilder, Snapshot};
