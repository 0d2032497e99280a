//! What a figure measures and how it reads: [`Measure`] (bandwidth, IOPS or an operation
//! rate) chosen per group and operation, human formatting of values in [`Units`] (binary
//! MiB/s or decimal MB/s), of the place a peak was reached ("at 32 threads") and of
//! changes ("42% lower").

use iolab_core::result::{OpKind, PhaseKind};
use iolab_core::units::{ByteCount, BytesPerSec, OpsPerSec};
use serde::{Deserialize, Serialize};

use crate::error::ReportError;

/// Data phases whose blocks are all smaller than this are judged by IOPS, as the
/// reference studies do (random 4 KiB: IOPS; sequential 1 MiB: bandwidth).
pub const IOPS_BLOCK_LIMIT: u64 = 64 * 1024;

/// How bandwidth reads: binary (MiB/s, GiB/s: 2^20 bytes), as iolab prints by default, or
/// decimal (MB/s, GB/s: 10^6 bytes), as storage vendors and the reference studies quote it.
/// Rates of operations read alike in both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Units {
    #[default]
    Binary,
    Decimal,
}

impl Units {
    /// Bytes per second for people: "4.47 GiB/s" or "4.80 GB/s".
    pub fn bandwidth(self, bytes_per_sec: f64) -> String {
        match self {
            Units::Binary => BytesPerSec(bytes_per_sec).human(),
            Units::Decimal => BytesPerSec(bytes_per_sec).human_decimal(),
        }
    }
}

impl std::str::FromStr for Units {
    type Err = ReportError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "binary" | "iec" => Ok(Units::Binary),
            "decimal" | "si" => Ok(Units::Decimal),
            _ => Err(ReportError::UnknownUnits {
                name: s.to_string(),
            }),
        }
    }
}

/// The figure of merit of an operation in a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// Bytes per second, for data moved by reads, writes and transfers.
    Bandwidth,
    /// I/O operations per second, for small-block data phases.
    Iops,
    /// Operations per second, for metadata and everything else.
    OpsRate,
}

/// The block size a phase's `block_size` parameter stands for: its one size, or the mean
/// I/O size of a mix of sizes (`4KiB/10:64KiB/90`, `4KiB-64KiB`), which is what its
/// bandwidth over its IOPS comes to.
pub fn block_size_of(params: &std::collections::BTreeMap<String, String>) -> Option<ByteCount> {
    let v = params.get("block_size")?;
    v.parse::<ByteCount>().ok().or_else(|| {
        let mix: iolab_core::spec::SizeMix = v.parse().ok()?;
        Some(ByteCount(mix.mean().round() as u64))
    })
}

impl Measure {
    /// The measure of `op` in a phase of `kind` whose block size is `block_size` (the
    /// largest one, when a group has several). Follows `PhaseResult::headline`: data
    /// moved outside metadata phases is bandwidth, unless blocks are small.
    pub fn choose(op: OpKind, kind: PhaseKind, block_size: Option<ByteCount>) -> Measure {
        if !op.moves_data() || kind == PhaseKind::Meta {
            Measure::OpsRate
        } else if block_size.is_some_and(|b| b.get() < IOPS_BLOCK_LIMIT) {
            Measure::Iops
        } else {
            Measure::Bandwidth
        }
    }

    /// The word naming the measure in a metric: "bandwidth", "IOPS", "ops/s".
    pub fn word(self) -> &'static str {
        match self {
            Measure::Bandwidth => "bandwidth",
            Measure::Iops => "IOPS",
            Measure::OpsRate => "ops/s",
        }
    }

    /// The unit of raw values in machine-readable output.
    pub fn unit(self) -> &'static str {
        match self {
            Measure::Bandwidth => "bytes/s",
            Measure::Iops | Measure::OpsRate => "ops/s",
        }
    }

    /// A value for people: "4.47 GiB/s", "16.6k IOPS", "54.0k ops/s".
    pub fn format(self, value: f64) -> String {
        self.format_in(value, Units::Binary)
    }

    /// A value for people in `units`: "4.80 GB/s" in decimal.
    pub fn format_in(self, value: f64, units: Units) -> String {
        match self {
            Measure::Bandwidth => units.bandwidth(value),
            Measure::Iops => format!("{} IOPS", OpsPerSec(value).human()),
            Measure::OpsRate => format!("{} ops/s", OpsPerSec(value).human()),
        }
    }
}

/// Where a figure was measured: "32 threads", "1 thread", "QD 8", "block size 4KiB".
pub fn at_phrase(key: &str, value: &str) -> String {
    let plural = |word: &str| {
        if value == "1" {
            format!("1 {word}")
        } else {
            format!("{value} {word}s")
        }
    };
    match key {
        "threads" => plural("thread"),
        "ranks" => plural("rank"),
        "nodes" => plural("node"),
        "queue_depth" => format!("QD {value}"),
        "rwmix_read" => format!("{value}% reads"),
        _ => format!("{} {value}", axis_name(key).to_lowercase()),
    }
}

/// A parameter as an axis or column title: "Threads", "Queue depth", "Block size".
pub fn axis_name(key: &str) -> String {
    if key == "rwmix_read" {
        return "Read share".to_string();
    }
    let spaced = key.replace(['_', '-'], " ");
    let mut chars = spaced.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A signed change: "+7.4%", "-42%", "+0.0%".
pub fn signed_percent(change: f64) -> String {
    let digits = if change.abs() >= 10.0 { 0 } else { 1 };
    format!("{change:+.digits$}%")
}

/// A change in words, as the NFS study phrases it: "42% lower", "7.4% higher",
/// "unchanged" (below 0.05 %).
pub fn change_words(change: f64) -> String {
    if change.abs() < 0.05 {
        return "unchanged".to_string();
    }
    let digits = if change.abs() >= 10.0 { 0 } else { 1 };
    let dir = if change > 0.0 { "higher" } else { "lower" };
    format!("{:.digits$}% {dir}", change.abs())
}

/// A parameter map as "k=v, k=v".
pub fn params_text<'a>(params: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    params
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_follow_the_studies() {
        let small = Some(ByteCount::kib(4));
        let big = Some(ByteCount::mib(1));
        assert_eq!(
            Measure::choose(OpKind::Read, PhaseKind::Data, small),
            Measure::Iops
        );
        assert_eq!(
            Measure::choose(OpKind::Read, PhaseKind::Data, big),
            Measure::Bandwidth
        );
        assert_eq!(
            Measure::choose(OpKind::Write, PhaseKind::Meta, big),
            Measure::OpsRate
        );
        assert_eq!(
            Measure::choose(OpKind::Fsync, PhaseKind::Data, big),
            Measure::OpsRate
        );
        assert_eq!(Measure::Iops.format(16_600.0), "16.6k IOPS");
        // The study's "peak write ~4.8 GB/s" is 4.47 GiB/s.
        let gb = 4.8e9;
        assert_eq!(Measure::Bandwidth.format(gb), "4.47 GiB/s");
        assert_eq!(
            Measure::Bandwidth.format_in(gb, Units::Decimal),
            "4.80 GB/s"
        );
        assert_eq!(
            Measure::Iops.format_in(7_300.0, Units::Decimal),
            "7.30k IOPS"
        );
        assert_eq!("decimal".parse::<Units>().unwrap(), Units::Decimal);
        assert!("metric".parse::<Units>().is_err());
    }

    #[test]
    fn phrases() {
        assert_eq!(at_phrase("threads", "32"), "32 threads");
        assert_eq!(at_phrase("threads", "1"), "1 thread");
        assert_eq!(at_phrase("queue_depth", "8"), "QD 8");
        assert_eq!(at_phrase("block_size", "4KiB"), "block size 4KiB");
        assert_eq!(change_words(-42.0), "42% lower");
        assert_eq!(change_words(7.43), "7.4% higher");
        assert_eq!(change_words(0.01), "unchanged");
        assert_eq!(signed_percent(-42.2), "-42%");
        assert_eq!(signed_percent(7.43), "+7.4%");
    }
}
