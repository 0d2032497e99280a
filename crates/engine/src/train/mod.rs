//! AI training's workloads on the engine's parts: [`reader::SampleReader`] reads a
//! sample's byte ranges through an `IoBackend` into a `Recorder` by the `Clock`;
//! [`step::run_accelerator`] runs one simulated accelerator's steps (batch, compute
//! slept on the `Clock`, the step meeting); [`files::FileIo`] writes and reads whole
//! files (checkpoints, a dataset) through a worker's backend. Suites compose them (which files, which
//! byte ranges: the format's read plan); nothing here knows a file format.

pub mod file_phase;
pub mod files;
pub mod reader;
pub mod step;

pub use crate::recorder::WorkerMeasure;
pub use file_phase::{FilePhase, FilePhaseSpec, run_file_phase};
pub use files::{FileIo, FileOps};
pub use reader::{ReaderSetup, SampleReader};
pub use step::{AcceleratorSteps, BatchResult, StepDone, StepMeeting, run_accelerator};

#[cfg(test)]
mod file_tests;
#[cfg(test)]
mod tests;
