//! [`Io500Spec`]: the IO500 settings a user may change, with IO500's own defaults (the
//! values its `--list` prints). One definition: the `iolab io500` flags, the stored
//! configuration and a result directory's config.json ([`Io500Config`]) come from it.

use crate::SpecError;
use crate::units::{ByteCount, TimeSpan};
use clap::Args;
use serde::{Deserialize, Serialize};

/// The stonewall IO500 requires for a valid submission (`[debug] stonewall-time`).
pub const IO500_STONEWALL_SECS: u64 = 300;
/// ior-easy transfer size (`[ior-easy] transferSize = 2m`).
pub const IOR_EASY_TRANSFER: u64 = 2 * 1024 * 1024;
/// ior-easy block size per rank, an upper bound the stonewall ends first
/// (`[ior-easy] blockSize = 9920000m`).
pub const IOR_EASY_BLOCK: u64 = 9_920_000 * 1024 * 1024;
/// ior-hard transfer and block size (`-t 47008 -b 47008`), fixed by the rules.
pub const IOR_HARD_TRANSFER: u64 = 47008;
/// ior-hard segments per rank (`[ior-hard] segmentCount = 10000000`).
pub const IOR_HARD_SEGMENTS: u64 = 10_000_000;
/// ior-rnd4K-easy-read transfer size (`-t 4096 -b 4096`).
pub const IOR_RND4K_TRANSFER: u64 = 4096;
/// Bytes written into (and read from) every mdtest-hard file (`-w 3901 -e 3901`).
pub const MDTEST_HARD_FILE_SIZE: u64 = 3901;
/// Files per rank of mdtest-easy and mdtest-hard (`[mdtest-*] n = 1000000`).
pub const FILES_PER_RANK: u64 = 1_000_000;
/// The most files one rank may create in an mdtest phase: they all go in one directory,
/// and iolab's metadata engine takes at most this many in one (its --files-per-dir limit).
pub const MAX_FILES_PER_RANK: u64 = u32::MAX as u64;
/// find's predicates (`-newer timestampfile -size 3901c -name "*01*"`).
pub const FIND_SIZE: u64 = MDTEST_HARD_FILE_SIZE;
pub const FIND_NAME: &str = "*01*";

/// What `iolab io500` runs. Defaults are IO500's; changing the stonewall makes a run
/// invalid for submission, the other settings are ones IO500 lets submitters tune.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct Io500Spec {
    /// How long each write and create phase runs before its stonewall (IO500 requires
    /// 300s for a valid result; shorter is fine for testing).
    #[arg(long, default_value = "300s")]
    pub stonewall: TimeSpan,

    /// Transfer size of ior-easy (IOR -t; IO500's default is 2MiB).
    #[arg(long, default_value = "2MiB", value_name = "BYTES")]
    pub ior_easy_transfer: ByteCount,

    /// Most data one rank writes in ior-easy (IOR -b); the stonewall normally ends the
    /// phase first.
    #[arg(long, default_value = "9920000MiB", value_name = "BYTES")]
    pub ior_easy_block: ByteCount,

    /// Most segments of 47008 bytes one rank writes in ior-hard (IOR -s).
    #[arg(long, default_value_t = IOR_HARD_SEGMENTS, value_name = "N")]
    pub ior_hard_segments: u64,

    /// Most files one rank creates in mdtest-easy and in mdtest-hard (mdtest -n); the
    /// stonewall normally ends creation first.
    #[arg(long, default_value_t = FILES_PER_RANK, value_name = "N")]
    pub files_per_rank: u64,

    /// Empty the whole page cache (after writing dirty data back) on every node before
    /// every phase, as IO500's `drop-caches = TRUE` does (needs root). Off by default,
    /// as in IO500; then, on one node, reads are probably served from memory.
    #[arg(long)]
    pub drop_caches: bool,

    /// Wait before each phase while DIR/<phase name> exists, as IO500's `[debug]
    /// pause-dir` (to look at the files between phases); not part of the configuration.
    #[arg(long, value_name = "DIR")]
    #[serde(skip)]
    pub pause_dir: Option<std::path::PathBuf>,
}

impl Default for Io500Spec {
    fn default() -> Self {
        crate::spec::command_line_defaults()
    }
}

impl Io500Spec {
    /// Checks what can be checked without looking at the target.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.stonewall.nanos().0 == 0 {
            return Err(SpecError::new("--stonewall", "must be longer than 0s"));
        }
        let transfer = self.ior_easy_transfer.get();
        if transfer == 0 {
            return Err(SpecError::new(
                "--ior-easy-transfer",
                "must be larger than 0",
            ));
        }
        if self.ior_easy_block.get() < transfer
            || !self.ior_easy_block.get().is_multiple_of(transfer)
        {
            return Err(SpecError::new(
                "--ior-easy-block",
                format!(
                    "{} must be a multiple of --ior-easy-transfer {}",
                    self.ior_easy_block, self.ior_easy_transfer
                ),
            ));
        }
        if self.ior_hard_segments == 0 {
            return Err(SpecError::new("--ior-hard-segments", "must be at least 1"));
        }
        // One rank's share of ior-hard is segments x 47008 bytes, counted in u64.
        if self.ior_hard_segments > u64::MAX / IOR_HARD_TRANSFER {
            return Err(SpecError::new(
                "--ior-hard-segments",
                format!(
                    "{} segments of {IOR_HARD_TRANSFER} bytes are more than 16 EiB",
                    self.ior_hard_segments
                ),
            ));
        }
        if self.files_per_rank == 0 {
            return Err(SpecError::new("--files-per-rank", "must be at least 1"));
        }
        // Said here, before the first phase, not by the metadata engine at mdtest-easy
        // naming an option io500 does not have.
        if self.files_per_rank > MAX_FILES_PER_RANK {
            return Err(SpecError::new(
                "--files-per-rank",
                format!(
                    "{} is more than the {MAX_FILES_PER_RANK} files iolab creates in one directory",
                    self.files_per_rank
                ),
            ));
        }
        Ok(())
    }

    /// The stonewall IO500 requires for a submission is exactly 300 s.
    pub fn stonewall_is_io500s(&self) -> bool {
        self.stonewall == TimeSpan::from_secs(IO500_STONEWALL_SECS)
    }
}

/// The resolved configuration of a run, as its result directory keeps it (config.json)
/// and the store keeps it with the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Io500Config {
    /// "iolab 0.1.0".
    pub tool: String,
    /// MPI ranks (IO500's procs).
    pub ranks: u32,
    /// The directory it ran in, as given.
    pub target: String,
    pub spec: Io500Spec,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_io500s() {
        let s = Io500Spec::default();
        assert_eq!(s.stonewall, TimeSpan::from_secs(300));
        assert_eq!(s.ior_easy_transfer.get(), IOR_EASY_TRANSFER);
        assert_eq!(s.ior_easy_block.get(), IOR_EASY_BLOCK);
        assert_eq!(s.ior_hard_segments, 10_000_000);
        assert_eq!(s.files_per_rank, 1_000_000);
        assert!(s.stonewall_is_io500s());
        assert!(s.validate().is_ok());
        // An empty configuration is the default one, and it round-trips through JSON.
        assert_eq!(serde_json::from_str::<Io500Spec>("{}").unwrap(), s);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Io500Spec>(&json).unwrap(), s);
    }

    #[test]
    fn validation_names_the_option() {
        let bad = |f: fn(&mut Io500Spec)| {
            let mut s = Io500Spec::default();
            f(&mut s);
            s.validate().unwrap_err().option
        };
        assert_eq!(bad(|s| s.stonewall = TimeSpan::from_secs(0)), "--stonewall");
        assert_eq!(
            bad(|s| s.ior_easy_transfer = ByteCount(0)),
            "--ior-easy-transfer"
        );
        assert_eq!(
            bad(|s| s.ior_easy_block = ByteCount(3 * 1024 * 1024)),
            "--ior-easy-block"
        );
        assert_eq!(bad(|s| s.files_per_rank = 0), "--files-per-rank");
        assert_eq!(
            bad(|s| s.files_per_rank = MAX_FILES_PER_RANK + 1),
            "--files-per-rank"
        );
        assert_eq!(bad(|s| s.ior_hard_segments = 0), "--ior-hard-segments");
        let most = Io500Spec {
            files_per_rank: MAX_FILES_PER_RANK,
            ..Io500Spec::default()
        };
        assert!(most.validate().is_ok());
    }
}
