//! IO500 as a language: its phases in order with their parameters ([`phases`]), the
//! score with IO500's validity rules ([`score()`]), reading IO500's result files
//! ([`parse`]) and writing iolab's result in the same format ([`output`]). Nothing here
//! runs a workload; the suite that runs these phases is iolab-suites' `io500`.

pub mod commands;
pub mod error;
pub mod output;
pub mod parse;
mod parse_ini;
mod parse_summary;
pub mod phases;
pub mod score;
pub mod score_hash;
pub mod sha256;

pub use error::Io500Error;
pub use output::{
    ResultDir, phase_line, read_result_dir, render, result_line, score_line, write_result_dir,
};
pub use parse::{Check, FileScore, Integrity, ParsedResult, SourceFormat, parse_text, read};
pub use phases::{PHASES, PhaseDef, ScoreGroup, phase};
pub use score::{Invalid, PhaseFigure, Score, marked_invalid, score};
