//! A training run's live figures (`iolab train`).

use serde::Serialize;

/// A training run's figures as its steps go (iolab train): the whole job's.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TrainLive {
    pub epoch: u32,
    pub epochs: u32,
    pub step: u64,
    pub steps: u64,
    pub accelerators: u64,
    /// Compute over time so far this epoch, all accelerators (the epoch's AU as
    /// docs/figures.md defines it is stored when the epoch ends).
    pub au_percent: f64,
    pub samples_per_sec: f64,
}
