//! User intent. One definition per setting: each spec struct is parsed from command-line
//! flags (clap), read from study files (TOML), sent between MPI ranks and stored with
//! every run (serde). [`DataSpec`] is a data workload, [`MetaSpec`] a metadata workload,
//! [`FindSpec`] a tree walk, [`TargetSpec`] where a workload runs.

mod data;
mod meta;
mod targets;

pub use data::*;
pub use meta::*;
pub use targets::*;
