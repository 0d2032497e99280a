//! User intent. One definition per setting: each spec struct is parsed from command-line
//! flags (clap), read from study files (TOML), sent between MPI ranks and stored with
//! every run (serde). [`DataSpec`] is a data workload, [`MetaSpec`] a metadata workload,
//! [`FindSpec`] a tree walk, [`TargetSpec`] where a workload runs.

pub mod access;
mod checkpoint;
mod data;
mod data_access;
mod data_kinds;
mod data_validate;
mod fio_sequence;
mod fio_settings;
pub mod io500;
mod kvcache;
mod meta;
pub mod s3;
mod study;
mod study_estimate;
mod targets;
mod train;

pub use access::{Distribution, RateProcess, SizeMix, ThinkCount};
pub use checkpoint::*;
pub use data::*;
pub use data_access::IoSizes;
pub use fio_settings::*;
pub use kvcache::*;
pub use meta::*;
pub use s3::{Addressing, ObjectSizes, S3Endpoint, S3Op, S3Spec};
pub use study::*;
pub use study_estimate::{PhaseEstimate, StudyEstimate};
pub use targets::*;
pub use train::*;

use crate::error::SpecError;

/// A spec with every option at its command-line default, so each default is defined once,
/// on its flag (the specs' `Default` impls).
pub fn command_line_defaults<T: clap::Args + clap::FromArgMatches>() -> T {
    let matches = T::augment_args(clap::Command::new("iolab")).get_matches_from(["iolab"]);
    T::from_arg_matches(&matches).expect("every option of a spec has a default")
}

/// Worker threads per rank: at least 1, at most 4096.
pub fn validate_threads(threads: u32) -> Result<(), SpecError> {
    if threads == 0 {
        return Err(SpecError::new("--threads", "must be at least 1"));
    }
    if threads > 4096 {
        return Err(SpecError::new(
            "--threads",
            format!(
                "{threads} threads is more than the 4096 iolab supports per rank; use more ranks"
            ),
        ));
    }
    Ok(())
}
