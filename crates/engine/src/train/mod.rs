//! AI training's workloads on the engine's parts: [`reader::SampleReader`] reads a
//! sample's byte ranges through an `IoBackend` into a `Recorder` by the `Clock`;
//! [`step::run_accelerator`] runs one simulated accelerator's steps (batch, compute
//! slept on the `Clock`, the step meeting). Suites compose them (which files, which
//! byte ranges: the format's read plan); nothing here knows a file format.

pub mod reader;
pub mod step;

pub use crate::recorder::WorkerMeasure;
pub use reader::{ReaderSetup, SampleReader};
pub use step::{AcceleratorSteps, BatchResult, StepDone, StepMeeting, run_accelerator};

#[cfg(test)]
mod tests;
