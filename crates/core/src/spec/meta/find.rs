//! Tree walks (IO500's find phase): [`FindSpec`] is what `iolab find` matches, with
//! find's own predicate semantics. [`SizeTest`] is find's `-size [+-]N[cwbkMG]`, rounding
//! up to whole units exactly as find does; [`EntryType`] is `-type`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::SpecError;

/// Which entries may match (find's -type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum EntryType {
    /// Every entry below the directory (find without -type).
    Any,
    /// Regular files only (-type f).
    F,
    /// Directories only (-type d).
    D,
}

/// What -newer compares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum NewerBy {
    /// find's: modified strictly later than the file (nanoseconds).
    #[default]
    Mtime,
    /// pfind's (IO500's find): status changed in the same second as the file or later.
    CtimeSeconds,
}

/// How the ranks and threads of a walk share it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FindWalk {
    /// iolab's: the top directory's entries dealt out to the ranks by name, a rank's
    /// threads sharing its directories and the entries of a large one.
    #[default]
    Threads,
    /// pfind's (IO500's find): one walker per rank, directories never split, idle ranks
    /// stealing half of another rank's pending work.
    Pfind,
}

/// A parallel tree walk. Fields mirror the `iolab find` flags one to one; every given
/// predicate must hold for an entry to match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct FindSpec {
    /// Match entries modified more recently than FILE (find -newer).
    #[arg(long, value_name = "FILE")]
    pub newer: Option<PathBuf>,

    /// Match by size as find -size does: N bytes with c (3901c), or N units rounded up of
    /// k (KiB), M (MiB), G (GiB), w (2 bytes), b (512 bytes, the default); +N more than,
    /// -N less than.
    #[arg(long, value_name = "[+-]N[ckMGwb]", allow_hyphen_values = true)]
    pub size: Option<SizeTest>,

    /// Match names against a shell pattern: * any text, ? one character, [a-z] / [!0-9]
    /// one of (or none of) a set (find -name).
    #[arg(long, value_name = "GLOB")]
    pub name: Option<String>,

    /// Which entries may match.
    #[arg(long = "type", value_name = "TYPE", value_enum, default_value_t = EntryType::Any)]
    pub entry_type: EntryType,

    /// Worker threads (per rank under MPI).
    #[arg(short = 't', long, default_value_t = 1)]
    pub threads: u32,

    /// How an entry that needs its inode is looked at: `whole`, lstat of its whole path
    /// as pfind (IO500's find) calls it, walking every component; `relative`, fstatat
    /// from the open directory (faster on network file systems, not comparable with
    /// pfind).
    #[arg(long, value_enum, default_value_t = super::MetaPaths::Whole)]
    pub paths: super::MetaPaths,

    /// What --newer compares: find's modification time, or pfind's change time in
    /// whole seconds (IO500's find phase).
    #[arg(long, value_enum, default_value_t = NewerBy::Mtime)]
    pub newer_by: NewerBy,

    /// How the walk is shared: `threads`, iolab's (--threads per rank); `pfind`, as pfind
    /// (IO500's find) shares it between ranks, one walker each.
    #[arg(long, value_enum, default_value_t = FindWalk::Threads)]
    pub walk: FindWalk,
}

impl Default for FindSpec {
    fn default() -> Self {
        crate::spec::command_line_defaults()
    }
}

impl FindSpec {
    pub fn validate(&self) -> Result<(), SpecError> {
        crate::spec::validate_threads(self.threads)?;
        if self.walk == FindWalk::Pfind && self.threads != 1 {
            return Err(SpecError::new(
                "--threads",
                "pfind's walk runs one walker per rank; run more ranks (mpirun -np N) instead of threads, or use --walk threads",
            ));
        }
        if self.name.as_deref().is_some_and(|n| n.contains('/')) {
            return Err(SpecError::new(
                "--name",
                "matches a name without its directory, so it cannot contain '/'",
            ));
        }
        Ok(())
    }

    /// Whether matching needs each entry's inode (size or modification time).
    pub fn needs_stat(&self) -> bool {
        self.newer.is_some() || self.size.is_some()
    }
}

/// How a size compares with find's N.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SizeCmp {
    Exactly,
    MoreThan,
    LessThan,
}

/// find's `-size [+-]N[unit]`: the size in units, rounded up, compared with N.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SizeTest {
    pub cmp: SizeCmp,
    pub count: u64,
    /// Bytes per unit: 1 (c), 2 (w), 512 (b), 1024 (k), 1 MiB (M), 1 GiB (G).
    pub unit: u64,
}

impl SizeTest {
    /// A size of exactly `bytes` bytes (find -size Nc).
    pub fn bytes(bytes: u64) -> Self {
        SizeTest {
            cmp: SizeCmp::Exactly,
            count: bytes,
            unit: 1,
        }
    }

    pub fn matches(&self, size: u64) -> bool {
        let units = size.div_ceil(self.unit);
        match self.cmp {
            SizeCmp::Exactly => units == self.count,
            SizeCmp::MoreThan => units > self.count,
            SizeCmp::LessThan => units < self.count,
        }
    }

    fn suffix(&self) -> char {
        match self.unit {
            1 => 'c',
            2 => 'w',
            1024 => 'k',
            1_048_576 => 'M',
            1_073_741_824 => 'G',
            _ => 'b',
        }
    }
}

/// Why a `--size` value does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid size test '{0}': use find's form, e.g. 3901c (exactly 3901 bytes), +1M (more than 1 MiB), -10k (less than 10 KiB)"
)]
pub struct SizeTestError(String);

impl FromStr for SizeTest {
    type Err = SizeTestError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || SizeTestError(s.to_string());
        let text = s.trim();
        let (cmp, rest) = match text.as_bytes().first() {
            Some(b'+') => (SizeCmp::MoreThan, &text[1..]),
            Some(b'-') => (SizeCmp::LessThan, &text[1..]),
            _ => (SizeCmp::Exactly, text),
        };
        let digits_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let count: u64 = rest[..digits_end].parse().map_err(|_| err())?;
        let unit = match &rest[digits_end..] {
            "" | "b" => 512,
            "c" => 1,
            "w" => 2,
            "k" => 1024,
            "M" => 1_048_576,
            "G" => 1_073_741_824,
            _ => return Err(err()),
        };
        Ok(SizeTest { cmp, count, unit })
    }
}

impl fmt::Display for SizeTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = match self.cmp {
            SizeCmp::Exactly => "",
            SizeCmp::MoreThan => "+",
            SizeCmp::LessThan => "-",
        };
        write!(f, "{sign}{}{}", self.count, self.suffix())
    }
}

impl Serialize for SizeTest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for SizeTest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
