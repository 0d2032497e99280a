//! Stored runs as listed: [`RunId`], how a stored run is named (the store's row id 42 is
//! shown as "r42", the form `RunRecord::id` carries; "r42", "R42" and "42" all parse back
//! to it), and [`RunSummaryRow`], one line of `iolab results list` with its [`Peak`]
//! figures. The store fills them; the renderers lay them out.

use std::fmt;
use std::str::FromStr;

use crate::error::UnitError;
use crate::result::{OpKind, RunProcess, RunStatus};
use crate::units::{BytesPerSec, OpsPerSec};

/// A run's id in the store: the `runs.id` row id, displayed as "r42".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(pub i64);

impl RunId {
    /// Reads "r42", "R42" or "42" (surrounding spaces ignored); `None` for anything else,
    /// including zero and negative numbers, which no stored run has.
    pub fn parse(text: &str) -> Option<RunId> {
        let text = text.trim();
        let digits = text
            .strip_prefix('r')
            .or_else(|| text.strip_prefix('R'))
            .unwrap_or(text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        match digits.parse::<i64>() {
            Ok(n) if n > 0 => Some(RunId(n)),
            _ => None,
        }
    }

    /// The row id, as the `runs.id` column holds it.
    pub fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

impl FromStr for RunId {
    type Err = UnitError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        RunId::parse(text).ok_or_else(|| UnitError::RunId(text.to_string()))
    }
}

/// How a peak is measured: bandwidth for data moved, a rate for everything else.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Figure {
    Bandwidth(BytesPerSec),
    Rate(OpsPerSec),
}

/// The best whole-phase figure of one operation over a run's phases.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Peak {
    pub op: OpKind,
    pub figure: Figure,
}

/// One line of `iolab results list`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummaryRow {
    pub id: RunId,
    pub label: Option<String>,
    pub kind: String,
    pub status: RunStatus,
    pub started_at_ms: i64,
    pub finished_at_ms: Option<i64>,
    /// True for runs stored with the store's `import_run`.
    pub imported: bool,
    pub target: String,
    /// Phases stored so far.
    pub phases: u32,
    /// The process that stores the run, where recorded (see [`RunProcess`]).
    pub process: Option<RunProcess>,
    /// Per operation, the peak of the phases' headline figures (as
    /// `PhaseResult::headline` picks them), ordered by operation, bandwidth before rate
    /// when an operation has both (writes in data and in metadata phases).
    pub headline: Vec<Peak>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_with_an_r() {
        assert_eq!(RunId(42).to_string(), "r42");
    }

    #[test]
    fn parses_both_forms() {
        assert_eq!(RunId::parse("r42"), Some(RunId(42)));
        assert_eq!(RunId::parse("R42"), Some(RunId(42)));
        assert_eq!(RunId::parse("42"), Some(RunId(42)));
        assert_eq!(RunId::parse(" r7 "), Some(RunId(7)));
        assert_eq!("r42".parse::<RunId>().unwrap(), RunId(42));
    }

    #[test]
    fn rejects_what_is_not_an_id() {
        for text in [
            "",
            "r",
            "r0",
            "0",
            "-3",
            "r-3",
            "v7.4",
            "42a",
            "r 42",
            "+4",
            "99999999999999999999",
        ] {
            assert_eq!(RunId::parse(text), None, "{text:?}");
        }
        let err = "v7.4".parse::<RunId>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "'v7.4' is not a run id: use the form r42 or 42"
        );
    }
}
