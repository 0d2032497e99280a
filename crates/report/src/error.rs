//! The errors of the report crate: [`ReportError`]. Rendering itself cannot fail; only
//! choosing what to render from user input can.

use thiserror::Error;

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ReportError {
    #[error("unknown report format '{name}'; use one of text, markdown, csv, json, html")]
    UnknownFormat { name: String },
}
