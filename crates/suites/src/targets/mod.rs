//! Per-target benchmarks with defect detection (`iolab targets`, study S2) and the
//! network benchmark beside them (`iolab net`, S2's NetBench). [`prepare_targets`] gives
//! each rank the targets of its own node ([`TargetSet`]), [`run_targets`] runs a data
//! workload on all of them at once (or one at a time) and returns a [`TargetsPhase`] per
//! direction, [`analysis`] finds slow targets and nodes with median and MAD (also of
//! beegfs-ctl StorageBench output read by iolab-compat, through [`figures_of`]), and
//! [`net`] streams between ranks over TCP.

pub mod assign;
pub mod net;
mod prepare;
mod results;
mod run;
mod warnings;

/// The statistics are pure maths over figures, in `core` where the renderers read them.
pub use iolab_core::targets as analysis;
pub use iolab_core::targets::{
    TargetAnalysis, TargetFigure, TargetsPhase, analyze, flag_lines, place,
};
pub use prepare::{LocalTarget, PrepareOptions, TargetSet, cleanup_targets, prepare_targets};
pub use results::{summary_extra, throughput_of};
pub use run::{run_targets, run_targets_with};

#[cfg(test)]
mod run_tests;
#[cfg(test)]
mod storagebench_tests;

use iolab_compat::beegfs::{BenchSection, host_of};

/// A StorageBench section's targets as figures for [`analyze`]: each on the machine its
/// service runs on, since a node-level cause (controller, firmware) is shared by every
/// service of one machine.
pub fn figures_of(section: &BenchSection) -> Vec<TargetFigure> {
    section
        .targets
        .iter()
        .map(|t| TargetFigure {
            id: t.id.clone(),
            node: host_of(&t.node).to_string(),
            service: (host_of(&t.node) != t.node).then(|| t.node.clone()),
            throughput: t.bytes_per_sec,
            iops: 0.0,
            rated: None,
        })
        .collect()
}
