//! The tuning audit's verdicts, as `iolab audit` prints and writes them: a [`Finding`]
//! per check and subject, with its [`Status`] and [`Severity`]. The checks themselves
//! read the machine (iolab-host's audit); these are what they found.

use serde::{Deserialize, Serialize};

/// How much a finding matters: `Ok` for a pass, the check's own severity for a miss,
/// `Info` when the value could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Ok,
    /// Worth knowing; results are comparable either way but should state it.
    Info,
    /// Likely to cost performance or skew results.
    Warn,
    /// Makes results wrong or the system fragile.
    Critical,
}

/// The verdict on one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Warn,
    /// The source could not be read (missing, no permission, hidden by a container) or
    /// did not hold a value the check understands.
    Unknown,
}

/// One check's verdict on one subject (a device, an interface) or on the host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub id: String,
    pub title: String,
    /// The device or interface the finding is about; `None` for host-wide settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Where the value was read ("/proc/sys/net/core/rmem_max").
    pub source: String,
    pub current: Option<String>,
    pub recommended: String,
    pub severity: Severity,
    pub status: Status,
    pub why: String,
    /// Why the status is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
