//! AI training's workloads on the engine's parts: [`reader::SampleReader`] reads a
//! sample's byte ranges through an `IoBackend` into a `Recorder` by the `Clock`;
//! [`step::run_accelerator`] runs one simulated accelerator's steps (batch, compute
//! slept on the `Clock`, the step meeting) and [`step_phase::run_steps`] runs an epoch
//! of them as a phase; [`files::FileIo`] writes and reads whole files (checkpoints, a
//! dataset) through a worker's backend, [`file_phase::run_file_phase`] as a phase.
//! Suites compose them (which files, which byte ranges: the format's read plan);
//! nothing here knows a file format.

pub mod file_phase;
pub mod files;
pub mod reader;
pub mod step;
pub mod step_phase;

pub use crate::phase::{StepHook, StepMeeting};
pub use crate::recorder::WorkerMeasure;
pub use file_phase::{FilePhase, FilePhaseSpec, run_file_phase};
pub use files::{FileIo, FileOps};
pub use reader::{ReaderPool, ReaderSetup, SampleReader};
pub use step::{AcceleratorSteps, BatchResult, StepDone, run_accelerator};
pub use step_phase::{StepPhase, StepPhaseSpec, StepWork, run_steps};

#[cfg(test)]
mod file_tests;
#[cfg(test)]
mod step_tests;
#[cfg(test)]
mod tests;
