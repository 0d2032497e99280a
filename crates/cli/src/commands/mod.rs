//! One module per subcommand ([`crate::args::dispatch`] runs the one asked for).

/// The most ranks `study plan` and `io500 plan` take for --ranks: more than any machine
/// runs, and few enough that the plans' figures stay inside u64.
pub const MAX_PLAN_RANKS: u32 = 1 << 20;

pub mod audit;
pub mod checkpoint;
pub mod endurance;
pub mod find;
mod finish;
pub mod fio;
pub mod inventory;
pub mod io500;
pub mod ior;
pub mod kvcache;
pub mod kvcache_s3;
pub mod ladder;
pub mod mdtest;
pub mod meta;
pub mod net;
pub mod pts;
pub mod results;
pub mod run;
pub mod s3;
pub mod study;
pub mod targets;
pub mod train;
