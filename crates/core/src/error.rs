//! Errors of the vocabulary crate: values that do not parse, specs that contradict
//! themselves, histograms that do not decode.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum UnitError {
    #[error(
        "invalid size '{0}': use a whole number of bytes with an optional unit, e.g. 4KiB, 1MiB, 2GB, 4096"
    )]
    Bytes(String),
    #[error(
        "invalid duration '{0}': use a number with a unit, e.g. 30s, 500ms, 5m, 1h (a bare number is seconds)"
    )]
    Duration(String),
    #[error("invalid CPU list '{0}': use numbers and ranges such as 0-7,9,12-15")]
    Cpus(String),
}

impl UnitError {
    pub(crate) fn bytes(s: &str) -> Self {
        UnitError::Bytes(s.to_string())
    }
    pub(crate) fn duration(s: &str) -> Self {
        UnitError::Duration(s.to_string())
    }
    pub(crate) fn cpus(s: &str) -> Self {
        UnitError::Cpus(s.to_string())
    }
}

/// A specification that cannot be run as written. `option` names the flag (or study
/// key) at fault so the user knows what to change.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{option}: {reason}")]
pub struct SpecError {
    pub option: String,
    pub reason: String,
}

impl SpecError {
    pub fn new(option: impl Into<String>, reason: impl Into<String>) -> Self {
        SpecError {
            option: option.into(),
            reason: reason.into(),
        }
    }
}

#[derive(Debug, Error)]
pub enum HistogramError {
    #[error("latency histogram does not decode: {0}")]
    Decode(String),
    #[error("latency histogram does not encode: {0}")]
    Encode(String),
}
