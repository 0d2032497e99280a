//! The tuning audit: a table of [`Check`]s (see `table.rs`: adding a check is adding a
//! row) run against the machine under test, each giving [`Finding`]s with the current
//! value, the recommended one, a [`Status`] and a [`Severity`]. Checks apply to all audits
//! or only to some [`Profile`]s. The audit reads; it never changes a setting.

mod eval;
mod table;

use std::fmt;
use std::str::FromStr;

use iolab_core::inventory::Inventory;
use serde::{Deserialize, Serialize};

use crate::error::HostError;
use crate::root::SysRoot;

pub use iolab_core::audit::{Finding, Severity, Status};
pub use table::CHECKS;

/// The role of the machine audited; decides which role-specific checks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// A compute node running benchmarks against a parallel or network file system.
    HpcClient,
    NfsClient,
    NfsServer,
    /// A server of a parallel file system (Lustre OSS, BeeGFS storage, Ceph OSD).
    StorageServer,
}

impl Profile {
    pub const ALL: [Profile; 4] = [
        Profile::HpcClient,
        Profile::NfsClient,
        Profile::NfsServer,
        Profile::StorageServer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Profile::HpcClient => "hpc-client",
            Profile::NfsClient => "nfs-client",
            Profile::NfsServer => "nfs-server",
            Profile::StorageServer => "storage-server",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = HostError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Profile::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| HostError::UnknownProfile {
                given: s.to_string(),
                known: Profile::ALL.map(Profile::name).join(", "),
            })
    }
}

/// How a check finds its value(s).
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// A sysctl by its dotted name, read under /proc/sys.
    Sysctl(&'static str),
    /// A file under /sys.
    Sys(&'static str),
    /// A file under /proc.
    Proc(&'static str),
    /// A file under `/sys/class/block/<disk>/` for each physical disk under the target
    /// (every physical disk when no target is given); one finding per disk.
    Device(&'static str, Disks),
    /// A file under `/sys/class/net/<interface>/` for each physical interface that is up.
    Interface(&'static str),
    /// A file under `/sys/devices/system/cpu/cpu<N>/` for each online CPU, merged into one
    /// finding listing the distinct values.
    Cpus(&'static str),
    /// A key option of the target's mount; the default applies when the kernel omits it.
    MountOption(&'static str, Option<&'static str>),
    /// Several key options of the target's mount, shown together.
    MountOptions(&'static [&'static str]),
    /// A file under /sys/class/bdi/<major:minor of the target's mount>/.
    TargetBdi(&'static str),
    /// /sys/devices/system/cpu/vulnerabilities, summarised.
    Vulnerabilities,
    /// The exit latency (µs) of cpu0's deepest enabled idle state (cpuidle).
    DeepestIdleState,
}

/// Which disks a per-device check looks at. A disk whose rotational flag cannot be read
/// counts as non-rotational.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disks {
    All,
    Rotational,
    NonRotational,
}

/// Which part of the value read the rule sees.
#[derive(Clone, Copy, Debug)]
pub enum Pick {
    Whole,
    /// The `[bracketed]` entry of a choice list ("none [mq-deadline]" -> "mq-deadline").
    Bracketed,
    /// The n-th whitespace-separated field, from 0 ("4096 87380 16777216", 2 -> max).
    Field(usize),
}

/// What a good value is.
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// A number at least this large (the first number in the value).
    AtLeast(u64),
    AtMost(u64),
    OneOf(&'static [&'static str]),
    /// No verdict: the value is recorded so results can state it (passes when readable).
    Record,
}

/// When a check applies beyond its profiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    Always,
    /// Only when the target is on NFS.
    TargetNfs,
    /// Only when the kernel's CPU idle driver is this one
    /// (`/sys/devices/system/cpu/cpuidle/current_driver`): a driver's parameters mean
    /// nothing on a machine that runs another (intel_idle on AMD or ARM).
    IdleDriver(&'static str),
}

/// One row of the audit table.
#[derive(Clone, Copy, Debug)]
pub struct Check {
    /// Stable, dotted ("net.rmem-max").
    pub id: &'static str,
    pub title: &'static str,
    /// Runs only in these profiles' audits; empty: in every audit.
    pub profiles: &'static [Profile],
    pub when: When,
    pub source: Source,
    pub pick: Pick,
    pub rule: Rule,
    pub recommended: &'static str,
    /// The severity of a miss.
    pub severity: Severity,
    /// One line: why the setting matters for storage performance or for results.
    pub why: &'static str,
}

impl Check {
    /// True when this check belongs in an audit for `profile` (`None`: the general
    /// checks only).
    pub fn in_profile(&self, profile: Option<Profile>) -> bool {
        self.profiles.is_empty() || profile.is_some_and(|p| self.profiles.contains(&p))
    }
}

/// Audits the machine with the built-in table. `inventory` says which disks, interfaces
/// and mount the per-subject checks look at (collect it with the same root).
pub fn run(root: &SysRoot, inventory: &Inventory, profile: Option<Profile>) -> Vec<Finding> {
    run_checks(root, inventory, CHECKS, profile)
}

/// Audits with any table of checks.
pub fn run_checks(
    root: &SysRoot,
    inventory: &Inventory,
    checks: &[Check],
    profile: Option<Profile>,
) -> Vec<Finding> {
    checks
        .iter()
        .filter(|c| c.in_profile(profile))
        .filter(|c| eval::applies(c, root, inventory))
        .flat_map(|c| eval::evaluate(c, root, inventory))
        .collect()
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
