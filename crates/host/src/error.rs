//! Errors of the host crate: [`HostError`]. Inventory and audit never fail (what they
//! cannot read becomes "unknown" plus a note); errors exist only for parsing a line of a
//! kernel table and for names a user types (an audit profile).

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum HostError {
    #[error(
        "{table} line has {found} fields, expected one of {expected}: '{line}'; \
         is this a Linux /proc file from a supported kernel?"
    )]
    FieldCount {
        table: &'static str,
        found: usize,
        expected: &'static str,
        line: String,
    },
    #[error("{table} field '{field}' is not a number: '{value}' in '{line}'")]
    NotANumber {
        table: &'static str,
        field: &'static str,
        value: String,
        line: String,
    },
    #[error("unknown audit profile '{given}': use one of {known}")]
    UnknownProfile { given: String, known: String },
}
