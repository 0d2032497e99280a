//! iolab-core: the vocabulary every other iolab crate speaks. Units as types
//! ([`units`]), user intent ([`spec`]), measured facts ([`result`]), latency histograms
//! ([`histogram`], recorded through [`latency_counts`]), statistics ([`stats`]),
//! reproducible randomness ([`rng`]), block contents ([`pattern`]), the machine
//! inventory ([`inventory`]) and device samples ([`telemetry`]), UTC dates ([`civil`]),
//! the mount table's format ([`mountinfo`]). No I/O here.
#![forbid(unsafe_code)]

pub mod audit;
pub mod checkpoint;
pub mod civil;
pub mod data_gen;
pub mod endurance;
pub mod error;
pub mod histogram;
pub mod input;
pub mod inventory;
pub mod kvcache;
pub mod ladder;
pub mod latency_counts;
pub mod listing;
pub mod live_latency;
pub mod mountinfo;
pub mod pattern;
pub mod pts;
pub mod result;
pub mod rng;
pub mod spec;
pub mod stats;
pub mod steady;
pub mod targets;
pub mod telemetry;
pub mod train;
pub mod units;

pub use error::{SpecError, UnitError};
pub use histogram::{LatencyHistogram, LatencySummary};
pub use units::{ByteCount, BytesPerSec, CpuList, Nanos, OpsPerSec, TimeSpan, bandwidth, rate};
