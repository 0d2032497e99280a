//! The KV cache's storage tier in an S3 bucket: a [`Bucket`] is the run's, checked (or
//! made) and marked as the run's before anything is written ([`Bucket::open`]); the
//! trials keep their objects under its prefix ([`Bucket::run`]), and at the end its
//! marker, and a bucket the run made, go ([`Bucket::release`]).

use iolab_backend::object::{ObjectBackend, ObjectError};
use iolab_comm::Comm;
use iolab_core::spec::S3Spec;
use iolab_engine::{EngineError, ObjectOptions, ObjectPlan, release_bucket, start_s3};

use super::{ObjectTier, Storage};
use crate::AiError;

/// How each worker gets its client (worker `g`'s: its first endpoint and its seed).
pub type ClientOf<'s> = Box<dyn Fn(u32) -> Result<Box<dyn ObjectBackend>, ObjectError> + Sync + 's>;

/// The bucket of a run, checked (or made) and marked as the run's.
pub struct Bucket<'s> {
    spec: &'s S3Spec,
    factory: ClientOf<'s>,
    plan: ObjectPlan,
    made: bool,
}

impl<'s> Bucket<'s> {
    /// Checks (or makes) the bucket of `spec` and writes the run's marker, before
    /// anything else is written or stored. Collective.
    pub fn open(
        comm: &dyn Comm,
        spec: &'s S3Spec,
        factory: ClientOf<'s>,
        opts: &ObjectOptions,
    ) -> Result<Bucket<'s>, EngineError> {
        let (plan, made) = start_s3(comm, spec, &*factory, opts)?;
        Ok(Bucket {
            spec,
            factory,
            plan,
            made,
        })
    }

    /// Runs `f` with the storage tier (`files`' work directory and limit) in the
    /// bucket, then releases it ([`Bucket::release`]): what `f` gave, and what of the
    /// release is to be said.
    pub fn run<T>(
        self,
        comm: &dyn Comm,
        (files, keep): (&Storage<'_>, bool),
        f: impl FnOnce(&Storage<'_>) -> Result<T, AiError>,
    ) -> (Result<T, AiError>, Vec<String>) {
        let tier = ObjectTier {
            factory: &*self.factory,
            prefix: self.plan.root.clone(),
            keep,
        };
        let r = f(&Storage {
            objects: Some(&tier),
            device: None,
            ..*files
        });
        comm.barrier();
        (r, self.release(comm, keep))
    }

    /// The run's marker and a bucket the run made removed unless `keep`: what could not
    /// be (or with `keep`, where the objects stay), to be said. Collective.
    pub fn release(self, comm: &dyn Comm, keep: bool) -> Vec<String> {
        if keep {
            return vec![format!(
                "--keep: the storage tier's objects at the end kept under s3://{}/{} (with its marker)",
                self.spec.bucket, self.plan.root
            )];
        }
        release_bucket(comm, &self.plan, self.made, &*self.factory)
    }
}
