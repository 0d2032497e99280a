//! Metadata workloads (mdtest class) and tree walks (find). [`run_meta`] runs the phases
//! of a [`MetaSpec`](iolab_core::spec::MetaSpec) (create, stat, read, remove, mkdir,
//! rmdir) over a [`MetaPlan`] tree through the shared phase runner, and [`finish_meta`]
//! keeps or removes the tree; [`run_find`] walks a tree in parallel, [`run_pfind`] as
//! pfind does (IO500's find). Files live in
//! `<workdir>/<tree>/`: a private tree per thread or one shared by all.

mod content;
mod find;
mod pfind;
mod plan;
mod run;
mod tree;
mod worker;

#[cfg(test)]
mod find_tests;
#[cfg(test)]
mod pfind_tests;
#[cfg(test)]
mod rank_tests;
#[cfg(test)]
mod tests;

pub use crate::meta_error::MetaError;
pub use find::run_find;
pub use run::{MetaOptions, MetaOutcome, finish_meta, run_meta};
