//! iolab-engine: what to do and when. [`plan`] turns a spec into this rank's work,
//! [`offsets`] chooses blocks, [`worker`] runs the I/O loop, [`phase`] runs workers in
//! step across ranks and [`assemble`] turns their outcomes into a `PhaseResult`;
//! [`data`] runs a whole data workload on a target prepared by [`target`] inside a
//! [`workdir`] iolab owns.

#![forbid(unsafe_code)]

pub mod assemble;
mod clock;
pub mod control;
pub mod data;
mod error;
mod fio_rand;
mod hist_log;
mod image;
mod kept;
pub mod kvcache;
pub mod layout;
pub mod memory;
pub mod meta;
mod meta_error;
pub mod object;
mod offsets;
pub mod phase;
pub mod plan;
pub mod recorder;
mod sizes;
pub mod target;
pub mod train;
pub mod workdir;
pub mod worker;

pub use clock::{Clock, FakeClock, MonotonicClock};
pub use data::{DataOptions, DataOutcome, run_data};
pub use error::EngineError;
pub use hist_log::HistSample;
pub use image::{NewImage, create_image, is_missing, remove_image};
pub use phase::{Env, PhaseProbe, Progress, RankProgress, Stall, UnitProgress};
pub use target::{PreparedTarget, prepare_target, prepare_target_named};
