//! The errors of the report crate: [`ReportError`]. Rendering itself cannot fail; only
//! choosing what to render from user input can.

use thiserror::Error;

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ReportError {
    #[error("unknown report format '{name}'; use one of text, markdown, csv, json, html")]
    UnknownFormat { name: String },
    #[error("unknown units '{name}'; use binary (MiB/s, GiB/s) or decimal (MB/s, GB/s)")]
    UnknownUnits { name: String },
}
