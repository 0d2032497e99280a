//! AI training I/O, as DLIO (MLPerf Storage's load generator) emulates it: [`datagen`]
//! writes a dataset in DLIO's layout and formats, [`run`] trains on one (simulated
//! accelerators, reader threads, prefetch, a compute sleep per step, a job-wide barrier
//! after each), [`search`] finds the most accelerators that keep AU at the threshold.
//! [`dataset`] lists a dataset whoever wrote it. Figures are defined in
//! iolab_core::train; file formats in iolab_compat::dlio.

pub mod datagen;
pub mod dataset;
pub mod loader;
pub mod run;
pub mod search;

pub use datagen::{GenOutcome, generate};
pub use dataset::Dataset;
pub use run::{LiveStep, TrainHooks, TrainOutcome, train_epochs};

use iolab_core::SpecError;

/// Why a training run or generation did not complete.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// Options or a dataset that cannot run (exit 2).
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("{0}")]
    Setup(String),
    /// An I/O error while reading or writing (the first one).
    #[error("{0}")]
    Io(String),
    #[error("interrupted")]
    Interrupted,
}
