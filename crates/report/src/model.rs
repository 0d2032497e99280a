//! [`ReportModel`]: everything a report of some runs shows, computed once (house rule 12)
//! so that Markdown, HTML and text only lay it out: the runs' series, the matrices among
//! them and the sync/async pairs drawn together, each run's figures against its rated
//! ones, and the warnings.

use iolab_core::result::RunRecord;

use crate::aggregate::{Aggregate, aggregate_runs};
use crate::matrix::{Matrix, matrices, sync_pairs};
use crate::matrix_tables::{ResultBlock, result_blocks};
use crate::rated::{RatedRow, rated_rows};
use crate::warnings::{self, Warning};

#[derive(Clone, Debug, PartialEq)]
pub struct ReportModel {
    /// One side per run, the first the subject.
    pub agg: Aggregate,
    pub matrices: Vec<Matrix>,
    /// (async, sync) matrices, indices into `matrices`.
    pub sync_pairs: Vec<(usize, usize)>,
    /// The results in the order they are shown: matrices in place of their groups.
    pub blocks: Vec<ResultBlock>,
    /// Per run, its phases against the rated figures stored with it.
    pub rated: Vec<Vec<RatedRow>>,
    pub warnings: Vec<Warning>,
}

impl ReportModel {
    pub fn build(runs: &[RunRecord]) -> ReportModel {
        let agg = aggregate_runs(runs);
        let matrices = matrices(&agg);
        ReportModel {
            sync_pairs: sync_pairs(&matrices),
            blocks: result_blocks(&agg, &matrices),
            rated: runs.iter().map(rated_rows).collect(),
            warnings: warnings::collect(runs, &agg),
            matrices,
            agg,
        }
    }

    /// True when group `index` is drawn in a matrix's charts rather than its own.
    pub fn in_matrix(&self, index: usize) -> bool {
        self.matrices.iter().any(|m| m.holds(index))
    }
}
