//! User intent. One definition per setting: each spec struct is parsed from command-line
//! flags (clap), read from study files (TOML), sent between MPI ranks and stored with
//! every run (serde). [`DataSpec`] is a data workload, [`MetaSpec`] a metadata workload,
//! [`FindSpec`] a tree walk, [`TargetSpec`] where a workload runs.

mod data;
mod meta;
mod study;
mod targets;

pub use data::*;
#[allow(unused_imports)] // until the metadata and targets specs land
pub use meta::*;
pub use study::*;
#[allow(unused_imports)]
pub use targets::*;
