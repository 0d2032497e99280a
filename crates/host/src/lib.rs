//! iolab-host: the machine under test. [`inventory::collect`] describes it (CPU, memory,
//! kernel, the target's mount and block devices, NICs), [`audit::run`] checks its tuning
//! against a table of recommendations, and [`telemetry::Sampler`] samples the target's
//! devices and the CPU while a phase runs. Everything is read through a [`SysRoot`], so
//! tests run against fixture trees; nothing here writes to the system.
#![forbid(unsafe_code)]

pub mod audit;
mod block;
mod cpu;
mod error;
pub mod inventory;
pub mod mount_options;
pub use iolab_core::mountinfo;
mod net;
pub mod process;
mod root;
pub mod telemetry;

#[cfg(test)]
mod testing;

pub use audit::{Finding, Profile, Severity, Status};
pub use error::HostError;
pub use process::{Liveness, liveness, this_process};
pub use root::SysRoot;
pub use telemetry::Sampler;
