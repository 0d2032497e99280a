//! Per-target benchmarks with defect detection (`iolab targets`, study S2) and the
//! network benchmark beside them (`iolab net`, S2's NetBench). [`prepare_targets`] gives
//! each rank the targets of its own node ([`TargetSet`]), [`run_targets`] runs a data
//! workload on all of them at once (or one at a time) and returns a [`TargetsPhase`] per
//! direction, [`analysis`] finds slow targets and nodes with median and MAD, [`beegfs`]
//! reads beegfs-ctl StorageBench output into the same analysis, and [`net`] streams
//! between ranks over TCP.

pub mod analysis;
pub mod assign;
pub mod beegfs;
pub mod net;
mod prepare;
mod results;
mod run;
mod units;

pub use analysis::{TargetAnalysis, TargetFigure, analyze, flag_lines, place};
pub use prepare::{LocalTarget, PrepareOptions, TargetSet, cleanup_targets, prepare_targets};
pub use results::summary_extra;
pub use run::{TargetsPhase, run_targets};

#[cfg(test)]
mod run_tests;
