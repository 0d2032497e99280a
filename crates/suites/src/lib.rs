//! iolab-suites: what is composed of engine workloads. [`fio`] runs fio's planned jobs
//! phase by phase and makes fio's report entries, [`io500`] runs IO500's phases in
//! its order with its parameters and scores them (IO500's language itself is in
//! iolab-compat), [`ior`] runs an IOR command line's repetitions, [`mdtest`] an mdtest
//! command line's tests, [`pts`] SNIA PTS's
//! tests on a device, [`targets`] measures every storage target at once and flags slow
//! ones (and [`targets::net`] the network alone), [`study`] runs the phases a study file
//! expands to, [`ladder`] searches for the highest IOPS at an acceptable latency, and
//! [`train`] and [`checkpoint`] are AI training's data loading and LLM checkpointing
//! (DLIO's, MLPerf Storage's), [`kvcache`] LLM inference's KV cache; all three stop on
//! one [`AiError`].

#![forbid(unsafe_code)]

pub mod checkpoint;
mod error;
pub mod fio;
pub mod io500;
pub mod ior;
pub mod kvcache;
pub mod ladder;
pub mod mdtest;
pub mod pts;
pub mod study;
pub mod targets;
pub mod train;

pub use error::AiError;
