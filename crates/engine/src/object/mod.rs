//! Object storage workloads (S3, warp's semantics): [`start_s3`] checks the bucket and
//! makes the run's plan ([`ObjectPlan`]), [`run_s3`] runs the phases of --ops (put, get,
//! stat, list, delete, mixed) through the shared phase runner with one worker per
//! connection, and [`finish_s3`] removes what the run wrote. The workers reach storage
//! through an [`ObjectBackend`](iolab_backend::object::ObjectBackend) made by an
//! [`ObjectFactory`], so tests run them on `NullObjects` and count requests.

mod cleanup;
mod plan;
mod run;
mod window;
mod worker;

#[cfg(test)]
mod tests;

pub use cleanup::{CLEANUP_ATTEMPTS, finish_s3, release_bucket};
pub use plan::ObjectPlan;
pub use run::{ObjectOptions, run_s3, start_s3};
pub use worker::ObjectFactory;
