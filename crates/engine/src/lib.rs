//! iolab-engine: what to do and when. [`plan`] turns a spec into this rank's work,
//! [`offsets`] chooses blocks, [`worker`] runs the I/O loop, [`phase`] runs workers in
//! step across ranks and [`assemble`] turns their outcomes into a `PhaseResult`;
//! [`data`] runs a whole data workload on a target prepared by [`target`] inside a
//! [`workdir`] iolab owns.

#![forbid(unsafe_code)]

pub mod assemble;
pub mod clock;
pub mod control;
pub mod data;
pub mod error;
mod fio_rand;
pub mod hist_log;
pub mod image;
mod kept;
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
pub use phase::{Env, PhaseProbe, Progress, RankProgress, Stall, UnitProgress};
pub use target::{PreparedTarget, prepare_target, prepare_target_named};
