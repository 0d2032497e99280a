//! IO500's score from per-phase figures: [`PhaseFigure`] in, [`Score`] out, with every
//! [`Invalid`] reason that keeps the run from a submission. The arithmetic is IO500's
//! `calc_score` (src/main.c): per group the product of the figures above 0 to the power
//! 1/n, a group with none scores 0, and the total is the square root of the two.

use std::fmt;

use iolab_core::units::{GIB, Nanos, TimeSpan};
use serde::{Deserialize, Serialize};

use super::phases::{PHASES, PhaseDef, ScoreGroup, phase};
use iolab_core::spec::io500::IO500_STONEWALL_SECS;

/// One phase's figure as IO500 reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseFigure {
    /// IO500's phase name ("ior-easy-write").
    pub name: String,
    /// GiB/s for IOR phases, kIOPS for mdtest phases and find.
    #[serde(with = "nan_as_null")]
    pub value: f64,
    /// Phase time in seconds, wear-out included (NaN when the source does not say).
    #[serde(with = "nan_as_null")]
    pub time: f64,
    /// False when the source marked the phase invalid.
    #[serde(default = "valid_default")]
    pub valid: bool,
    /// I/O errors during the phase.
    #[serde(default)]
    pub errors: u64,
    /// find: the files that matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<u64>,
    /// Bytes moved (IOR), when known exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Files or entries handled (mdtest, find), when known exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<u64>,
    /// What the source said about the phase ("; ERROR INVALID ..." lines).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

fn valid_default() -> bool {
    true
}

/// JSON has no NaN: an unknown figure or time is written as null and read back as NaN.
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

impl PhaseFigure {
    /// A figure as printed: `value` in the phase's unit, `time` in seconds.
    pub fn new(name: &str, value: f64, time: f64) -> Self {
        PhaseFigure {
            name: name.to_string(),
            value,
            time,
            valid: true,
            errors: 0,
            found: None,
            bytes: None,
            items: None,
            notes: Vec::new(),
        }
    }

    /// An IOR figure: bytes moved / phase time / 2^30 (GiB/s).
    pub fn from_bytes(name: &str, bytes: u64, elapsed: Nanos) -> Self {
        let secs = elapsed.as_secs_f64();
        let value = if secs > 0.0 {
            bytes as f64 / secs / GIB as f64
        } else {
            0.0
        };
        PhaseFigure {
            bytes: Some(bytes),
            ..PhaseFigure::new(name, value, secs)
        }
    }

    /// An mdtest or find figure: items / phase time / 1000 (kIOPS).
    pub fn from_items(name: &str, items: u64, elapsed: Nanos) -> Self {
        let secs = elapsed.as_secs_f64();
        let value = if secs > 0.0 {
            items as f64 / secs / 1000.0
        } else {
            0.0
        };
        PhaseFigure {
            items: Some(items),
            ..PhaseFigure::new(name, value, secs)
        }
    }
}

/// Why a run is not valid for an IO500 submission. Every reason is fine for testing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "reason")]
pub enum Invalid {
    /// A scored phase is not in the result (IO500 counts it as 0).
    Missing { phase: String },
    /// A scored phase measured 0; it is left out of its group's mean.
    Zero { phase: String },
    /// The stonewall was not IO500's 300 s.
    Stonewall { secs: f64 },
    /// A write phase ran for less than 300 s.
    ShortWrite { phase: String, secs: f64 },
    /// A phase counted I/O errors.
    IoErrors { phase: String, errors: u64 },
    /// find matched no file.
    FindMatchedNothing,
    /// The source itself marked a phase (or, without a phase, the run) invalid.
    Reported { phase: Option<String>, why: String },
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Invalid::Missing { phase } => write!(f, "{phase} is missing (IO500 scores it 0)"),
            Invalid::Zero { phase } => {
                write!(f, "{phase} measured 0; it is left out of its group's mean")
            }
            Invalid::Stonewall { secs } => write!(
                f,
                "the stonewall was {} s; IO500 requires {IO500_STONEWALL_SECS} s",
                trim_float(*secs)
            ),
            Invalid::ShortWrite { phase, secs } => write!(
                f,
                "{phase} ran {secs:.3} s; a write phase must run at least {IO500_STONEWALL_SECS} s"
            ),
            Invalid::IoErrors { phase, errors } => {
                write!(f, "{phase} counted {errors} I/O errors")
            }
            Invalid::FindMatchedNothing => write!(f, "find matched no file"),
            Invalid::Reported {
                phase: Some(p),
                why,
            } => write!(f, "{p}: {why}"),
            Invalid::Reported { phase: None, why } => write!(f, "{why}"),
        }
    }
}

impl Invalid {
    /// True when the run itself went wrong (a phase of 0, I/O errors, find matched
    /// nothing); false for a run that is only not submission grade (a test run with a
    /// short stonewall, or a phase IO500 itself marked invalid: what went wrong in it is
    /// found again from its figures).
    pub fn is_failure(&self) -> bool {
        !matches!(
            self,
            Invalid::Stonewall { .. } | Invalid::ShortWrite { .. } | Invalid::Reported { .. }
        )
    }

    /// The phase a reason is about, if it is about one.
    pub fn phase(&self) -> Option<&str> {
        match self {
            Invalid::Missing { phase }
            | Invalid::Zero { phase }
            | Invalid::ShortWrite { phase, .. }
            | Invalid::IoErrors { phase, .. } => Some(phase),
            Invalid::FindMatchedNothing => Some("find"),
            Invalid::Reported { phase, .. } => phase.as_deref(),
            Invalid::Stonewall { .. } => None,
        }
    }
}

fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// IO500's score of a run, and why it is not valid for submission (if it is not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// Geometric mean of the scored IOR phases, GiB/s.
    pub bandwidth: f64,
    /// Geometric mean of the scored mdtest phases and find, kIOPS.
    pub metadata: f64,
    /// sqrt(bandwidth * metadata).
    pub total: f64,
    /// Phases that entered each mean.
    pub bandwidth_phases: usize,
    pub metadata_phases: usize,
    /// Empty for a run valid for submission.
    pub reasons: Vec<Invalid>,
    /// Observations that do not change validity (unscored phases marked invalid, ...).
    pub notes: Vec<String>,
}

impl Score {
    pub fn valid(&self) -> bool {
        self.reasons.is_empty()
    }
}

/// Whether a figure enters its group's mean: above 0 (IO500 skips `t <= 0`) and finite.
pub fn counts(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

/// IO500's geometric mean of one group: the product of the figures above 0 raised to
/// 1/n, computed as IO500 does (product first); 0 when no figure is above 0.
pub fn group_mean(values: &[f64]) -> (f64, usize) {
    let mut product = 1.0f64;
    let mut n = 0;
    for &v in values {
        if !counts(v) {
            continue;
        }
        product *= v;
        n += 1;
    }
    if n == 0 {
        (0.0, 0)
    } else {
        (product.powf(1.0 / n as f64), n)
    }
}

/// What keeps one scored phase's figure from a submission (nothing for a good one): the
/// figure alone decides, so a phase is marked [INVALID] the same as it ends and in the
/// score.
fn phase_reasons(def: &PhaseDef, fig: &PhaseFigure) -> Vec<Invalid> {
    let mut reasons = Vec::new();
    if !counts(fig.value) {
        reasons.push(Invalid::Zero {
            phase: def.name.into(),
        });
    }
    if def.is_write() && fig.time < IO500_STONEWALL_SECS as f64 {
        reasons.push(Invalid::ShortWrite {
            phase: def.name.into(),
            secs: fig.time,
        });
    }
    if fig.errors > 0 {
        reasons.push(Invalid::IoErrors {
            phase: def.name.into(),
            errors: fig.errors,
        });
    }
    if fig.found == Some(0) {
        reasons.push(Invalid::FindMatchedNothing);
    }
    if !fig.valid && reasons.is_empty() {
        let why = if fig.notes.is_empty() {
            "marked invalid".to_string()
        } else {
            fig.notes.join("; ")
        };
        reasons.push(Invalid::Reported {
            phase: Some(def.name.into()),
            why,
        });
    }
    reasons
}

/// Whether the score holds a reason against this phase (IO500 marks its line `[INVALID]`
/// then); unscored phases have none.
pub fn marked_invalid(fig: &PhaseFigure) -> bool {
    phase(&fig.name)
        .filter(|d| d.scored())
        .is_some_and(|d| !phase_reasons(d, fig).is_empty())
}

/// The score of `phases` (IO500 names; the first figure of a name counts). `stonewall`
/// is the configured stonewall when known. Unknown and unscored phases only add notes.
pub fn score(phases: &[PhaseFigure], stonewall: Option<TimeSpan>) -> Score {
    let mut reasons = Vec::new();
    let mut notes = Vec::new();
    if let Some(s) = stonewall
        && s != TimeSpan::from_secs(IO500_STONEWALL_SECS)
    {
        reasons.push(Invalid::Stonewall {
            secs: s.as_secs_f64(),
        });
    }
    let mut bw = Vec::new();
    let mut md = Vec::new();
    for def in PHASES.iter().filter(|p| p.scored()) {
        let Some(fig) = phases.iter().find(|f| f.name == def.name) else {
            reasons.push(Invalid::Missing {
                phase: def.name.into(),
            });
            continue;
        };
        match def.group {
            Some(ScoreGroup::Bandwidth) => bw.push(fig.value),
            _ => md.push(fig.value),
        }
        if def.is_write() && fig.time.is_nan() {
            notes.push(format!(
                "{} has no time in the result; its {IO500_STONEWALL_SECS} s minimum is not checked",
                def.name
            ));
        }
        reasons.extend(phase_reasons(def, fig));
    }
    for fig in phases {
        let known = phase(&fig.name);
        if known.is_some_and(|d| d.scored()) {
            continue;
        }
        let bad = !fig.valid || (!counts(fig.value) && fig.name != "timestamp");
        if bad {
            notes.push(format!(
                "{} is marked invalid or measured 0; it is not scored, so the score stands",
                fig.name
            ));
        }
        if known.is_none() && !super::phases::EXTENDED_PHASES.contains(&fig.name.as_str()) {
            notes.push(format!(
                "{} is not an IO500 phase iolab knows; not scored",
                fig.name
            ));
        }
    }
    let (bandwidth, bandwidth_phases) = group_mean(&bw);
    let (metadata, metadata_phases) = group_mean(&md);
    Score {
        bandwidth,
        metadata,
        total: (bandwidth * metadata).sqrt(),
        bandwidth_phases,
        metadata_phases,
        reasons,
        notes,
    }
}

#[cfg(test)]
#[path = "score_tests.rs"]
mod tests;
