//! The IO500 suite as data and arithmetic: its phases in order ([`phases`]) resolved with
//! their parameters against an [`Io500Spec`] ([`plan`]), the score with IO500's validity
//! rules ([`score`]), reading IO500's result files ([`parse`]), iolab's own result in the
//! same format ([`output`]), runs in the store ([`record`]) and a run's needs
//! ([`estimate`]). Running the phases is the runner's job; nothing here does I/O but
//! reading and writing result files.

pub mod error;
pub mod estimate;
pub mod output;
pub mod parse;
mod parse_ini;
mod parse_summary;
pub mod phases;
pub mod plan;
pub mod record;
pub mod run;
pub mod score;
pub mod score_hash;
pub mod sha256;
pub mod spec;

pub use error::Io500Error;
pub use estimate::{Assumptions, Io500Estimate, PhaseEstimate, estimate};
pub use output::{
    ResultDir, phase_line, read_result_dir, render, result_line, score_line, write_result_dir,
};
pub use parse::{Check, FileScore, Integrity, ParsedResult, SourceFormat, parse_text, read};
pub use phases::{PHASES, PhaseDef, ScoreGroup, phase};
pub use plan::{PhasePlan, plan_phases};
pub use record::{figure_of, phase_result, run_from_parsed, score_from_run, score_json};
pub use run::{Io500Outcome, run_io500};
pub use score::{Invalid, PhaseFigure, Score, marked_invalid, score};
pub use spec::{Io500Config, Io500Spec};
