//! Per-target benchmarks (`iolab targets`) and the network benchmark (`iolab net`).
//! [`TargetsSpec`] holds what `iolab targets` adds to the data workload ([`DataSpec`]
//! describes the I/O itself); [`TargetEntry`] is one storage target, read from a targets
//! file by [`parse_targets`] or given as a path, with an optional [`Rated`] figure;
//! [`NetSpec`] is a network-only measurement between ranks.
//!
//! [`DataSpec`]: super::DataSpec

mod file;

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::error::SpecError;
use crate::spec::{DataSpec, RwKind};
use crate::units::{ByteCount, TimeSpan};

pub use file::parse_targets;

/// How far below the median a target must fall to be flagged, in percent, by default.
pub const DEFAULT_THRESHOLD_PERCENT: f64 = 10.0;

/// The unit of a rated (theoretical) figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RatedUnit {
    /// Decimal megabytes per second (10^6 bytes/s), as vendors rate devices.
    #[serde(rename = "MB/s")]
    MegabytesPerSec,
    /// I/O operations per second.
    #[serde(rename = "IOPS")]
    Iops,
}

impl RatedUnit {
    pub fn name(self) -> &'static str {
        match self {
            RatedUnit::MegabytesPerSec => "MB/s",
            RatedUnit::Iops => "IOPS",
        }
    }
}

/// What a target is rated for: the theoretical figure results are compared against.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rated {
    pub value: f64,
    pub unit: RatedUnit,
}

/// One storage target: a directory (iolab works in a subdirectory it owns) or a block
/// device, on a node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetEntry {
    /// How the target is named in results ("19", "nvme0").
    pub id: String,
    /// The host that runs the target; empty: every host (a path given on the command
    /// line, or a targets file without a node column).
    pub node: String,
    pub path: PathBuf,
    pub rated: Option<Rated>,
}

/// `iolab targets`: the options beyond the data workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct TargetsSpec {
    /// Directories or block devices to benchmark, each a target on every host (under
    /// MPI the ranks on a host share its targets).
    #[arg(value_name = "DIR_OR_DEVICE", conflicts_with = "targets_file")]
    pub paths: Vec<PathBuf>,

    /// A TOML or CSV file listing the targets: id, node, path and optionally rated_mbps or
    /// rated_iops (format and examples: docs/targets.md). Under MPI each rank runs the
    /// targets of its own node.
    #[arg(long, value_name = "FILE")]
    pub targets_file: Option<PathBuf>,

    /// Run a write phase (the default when neither --write nor --read is given).
    #[arg(long)]
    pub write: bool,

    /// Run a read phase; after --write it reads what the write wrote, otherwise the
    /// files are laid out first (untimed).
    #[arg(long)]
    pub read: bool,

    /// Benchmark one target at a time instead of all at once (isolates each target from
    /// shared controllers and links).
    #[arg(long)]
    pub one_at_a_time: bool,

    /// List every target, not only the minimum, maximum, average and aggregate.
    #[arg(short = 'v', long)]
    pub verbose: bool,

    /// Flag a target that falls this many percent below the median (and is an outlier by
    /// median and MAD).
    #[arg(long, value_name = "PERCENT", default_value_t = DEFAULT_THRESHOLD_PERCENT)]
    pub threshold: f64,

    /// Allow writing to a device that holds a file system signature or is mounted.
    #[arg(long)]
    pub allow_destroy: bool,

    /// Keep the files iolab wrote (they are removed at the end by default).
    #[arg(long)]
    pub keep: bool,
}

impl Default for TargetsSpec {
    fn default() -> Self {
        crate::spec::command_line_defaults()
    }
}

impl TargetsSpec {
    /// Checks what can be checked without looking at the targets.
    pub fn validate(&self) -> Result<(), SpecError> {
        check_threshold(self.threshold)?;
        if self.paths.is_empty() && self.targets_file.is_none() {
            return Err(SpecError::new(
                "targets",
                "no target given; name directories or devices, or pass --targets-file FILE",
            ));
        }
        Ok(())
    }

    /// The phases to run, in order. `--write`/`--read` choose the direction; a random
    /// `--rw` (randwrite, randread) makes them random. Without either flag the phase is
    /// `rw` itself.
    pub fn phases(&self, rw: RwKind) -> Result<Vec<RwKind>, SpecError> {
        if !self.write && !self.read {
            return Ok(vec![rw]);
        }
        if rw.is_mixed() {
            return Err(SpecError::new(
                "--rw",
                format!(
                    "{} cannot be combined with --write/--read; drop --write/--read to run the mixed workload",
                    rw.name()
                ),
            ));
        }
        let random = rw.is_random();
        let mut phases = Vec::new();
        if self.write {
            phases.push(if random {
                RwKind::Randwrite
            } else {
                RwKind::Write
            });
        }
        if self.read {
            phases.push(if random {
                RwKind::Randread
            } else {
                RwKind::Read
            });
        }
        Ok(phases)
    }

    /// The phases to run for the workload `data`, once the two are known to fit together.
    pub fn plan_phases(&self, data: &DataSpec) -> Result<Vec<RwKind>, SpecError> {
        let phases = self.phases(data.rw)?;
        if data.wear_out {
            return Err(SpecError::new(
                "--wear-out",
                "does not apply to iolab targets: each target is measured by its own bytes and time; drop it",
            ));
        }
        if data.verify && !phases.iter().any(|p| p.reads()) {
            return Err(SpecError::new(
                "--verify",
                "checks data as it is read: add --read to read back what --write wrote",
            ));
        }
        Ok(phases)
    }
}

/// Checks a --threshold value.
pub fn check_threshold(threshold: f64) -> Result<(), SpecError> {
    if !(threshold > 0.0 && threshold < 100.0) {
        return Err(SpecError::new(
            "--threshold",
            format!("{threshold} is not a percentage between 0 and 100 (e.g. 10)"),
        ));
    }
    Ok(())
}

/// Which ranks stream to which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum NetPattern {
    /// Rank i with rank i + size/2: each pair is measured in both directions.
    Pairs,
    /// Rank i sends to rank i+1 (and, in the reverse phase, to rank i-1).
    Ring,
}

/// `iolab net`: streams between ranks over TCP, no storage involved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct NetSpec {
    /// Data each stream sends.
    #[arg(short = 's', long, default_value = "1GiB", conflicts_with = "runtime")]
    pub size: ByteCount,

    /// Stream for this long instead of a fixed size.
    #[arg(long)]
    pub runtime: Option<TimeSpan>,

    /// Size of each send.
    #[arg(short = 'b', long, default_value = "1MiB")]
    pub block_size: ByteCount,

    /// TCP connections per sending rank and direction.
    #[arg(long, default_value_t = 1)]
    pub streams: u32,

    /// Which ranks stream to which.
    #[arg(long, value_enum, default_value_t = NetPattern::Pairs)]
    pub pattern: NetPattern,

    /// How other ranks reach this one: a host name or IP address, {host} and {rank}
    /// replaced (e.g. {host}-ib0 for IP over InfiniBand). Ranks on the same host use
    /// the loopback interface.
    #[arg(long, default_value = "{host}")]
    pub address: String,

    /// TCP port to listen on (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,

    /// How long to wait for a peer to connect, or for data, before giving up.
    #[arg(long, default_value = "30s")]
    pub timeout: TimeSpan,
}

impl Default for NetSpec {
    fn default() -> Self {
        crate::spec::command_line_defaults()
    }
}

impl NetSpec {
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.block_size.get() == 0 || self.block_size.get() > 1 << 30 {
            return Err(SpecError::new(
                "--block-size",
                "must be between 1 byte and 1GiB",
            ));
        }
        if self.streams == 0 || self.streams > 1024 {
            return Err(SpecError::new("--streams", "must be between 1 and 1024"));
        }
        if self.runtime.is_none() && self.size.get() == 0 {
            return Err(SpecError::new("--size", "must be larger than 0"));
        }
        if let Some(r) = self.runtime
            && r.nanos().0 == 0
        {
            return Err(SpecError::new("--runtime", "must be longer than 0s"));
        }
        if self.timeout.nanos().0 < 1_000_000 {
            return Err(SpecError::new("--timeout", "must be at least 1ms"));
        }
        if self.address.trim().is_empty() {
            return Err(SpecError::new(
                "--address",
                "is empty; use {host}, a host name or an IP address",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        spec: TargetsSpec,
    }

    #[test]
    fn defaults_match_the_flags_and_toml() {
        let d = TargetsSpec::default();
        assert_eq!(d.threshold, DEFAULT_THRESHOLD_PERCENT);
        assert!(!d.write && !d.read && !d.one_at_a_time);
        assert_eq!(toml::from_str::<TargetsSpec>("").unwrap(), d);
        let n = NetSpec::default();
        assert_eq!(n.size, ByteCount::gib(1));
        assert_eq!(n.pattern, NetPattern::Pairs);
        assert_eq!(toml::from_str::<NetSpec>("").unwrap(), n);
        assert!(n.validate().is_ok());
    }

    #[test]
    fn flags_choose_the_phases() {
        let s = Cli::parse_from(["iolab", "--write", "--read", "/a", "/b"]).spec;
        assert_eq!(s.paths.len(), 2);
        assert_eq!(
            s.phases(RwKind::Write).unwrap(),
            vec![RwKind::Write, RwKind::Read]
        );
        assert_eq!(
            s.phases(RwKind::Randwrite).unwrap(),
            vec![RwKind::Randwrite, RwKind::Randread]
        );
        assert_eq!(s.phases(RwKind::Rw).unwrap_err().option, "--rw");
        let data = DataSpec {
            rw: RwKind::Write,
            verify: true,
            ..DataSpec::default()
        };
        assert_eq!(s.plan_phases(&data).unwrap().len(), 2);
        let write_only = Cli::parse_from(["iolab", "--write", "/a"]).spec;
        assert_eq!(
            write_only.plan_phases(&data).unwrap_err().option,
            "--verify"
        );
        let plain = Cli::parse_from(["iolab", "/a"]).spec;
        assert_eq!(
            plain.phases(RwKind::Randread).unwrap(),
            vec![RwKind::Randread]
        );
    }

    #[test]
    fn validation_names_the_option() {
        let mut s = TargetsSpec {
            paths: vec!["/a".into()],
            ..TargetsSpec::default()
        };
        assert!(s.validate().is_ok());
        s.threshold = 0.0;
        assert_eq!(s.validate().unwrap_err().option, "--threshold");
        s.threshold = 10.0;
        s.paths.clear();
        assert_eq!(s.validate().unwrap_err().option, "targets");
        let bad = |f: fn(&mut NetSpec)| {
            let mut n = NetSpec::default();
            f(&mut n);
            n.validate().unwrap_err().option
        };
        assert_eq!(bad(|n| n.streams = 0), "--streams");
        assert_eq!(bad(|n| n.block_size = ByteCount(0)), "--block-size");
        assert_eq!(bad(|n| n.address = " ".into()), "--address");
    }
}
