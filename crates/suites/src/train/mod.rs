//! AI training I/O, as DLIO (MLPerf Storage's load generator) emulates it: [`datagen`]
//! writes a dataset in DLIO's layout and formats, [`run`] trains on one (simulated
//! accelerators, reader threads, prefetch, a compute sleep per step, a job-wide barrier
//! after each), [`search`] finds the most accelerators that keep AU at the threshold.
//! [`dataset`] lists a dataset whoever wrote it; [`format`] is the one place a format
//! meets its compat writer and its read plan; [`memory`] what a loader holds and the
//! pre-flight against the host's memory; [`threads`] the reader and writer threads v3.0
//! DLIO sizes a count of 1 to, [`writers`] datagen's writer threads, dealt their files
//! as v3.0 DLIO deals them; [`mod@prepare`] a job made ready on every rank; [`verdict`]
//! MLPerf's checks of a run. Figures are defined in
//! iolab_core::train; file formats in iolab_compat::dlio.

pub mod datagen;
pub mod dataset;
pub mod format;
pub mod loader;
pub mod memory;
mod order;
mod phase;
pub mod prepare;
mod rowgroups;
pub mod run;
pub mod search;
pub mod threads;
pub mod verdict;
pub mod writers;

pub use datagen::{GenOutcome, generate};
pub use dataset::Dataset;
pub use prepare::{Prepared, prepare};
pub use run::{LiveStep, TrainHooks, TrainOutcome, train_epochs};

use iolab_core::rng::Rng;

/// A normal draw (Box-Muller), as numpy's random.normal gives DLIO its sizes and
/// compute times.
pub(crate) fn normal(rng: &mut Rng, mean: f64, stdev: f64) -> f64 {
    if stdev == 0.0 {
        return mean;
    }
    let u1 = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let u2 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    mean + stdev * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}
