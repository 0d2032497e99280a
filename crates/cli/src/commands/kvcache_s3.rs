//! `iolab kvcache --s3-endpoint URL --bucket NAME`: the KV cache's storage tier in an S3
//! bucket. The options, credentials and clients are `iolab s3`'s (commands/s3.rs), as is
//! the bucket's handling (iolab_suites::kvcache::bucket): checked before any load (made
//! with --create-bucket), the run's marker written first and removed last, a bucket the
//! run made removed at the end. The cache deletes each object it evicts and the trial's
//! end deletes the rest.

use anyhow::Result;
use clap::Args;

use iolab_backend::object::S3Options;
use iolab_core::SpecError;
use iolab_core::spec::S3Spec;
use iolab_core::units::ByteCount;
use iolab_suites::kvcache::bucket::{Bucket, ClientOf};

use crate::args::OutputArgs;
use crate::runtime::Runtime;

/// Where the storage tier's objects go (instead of files under --dir).
#[derive(Args, Debug, Clone, Default)]
pub struct KvS3Args {
    /// The storage tier in an S3 bucket at this endpoint (credentials from the
    /// environment or the AWS files, as `iolab s3` takes them); --dir holds no entries.
    #[arg(
        long = "s3-endpoint",
        value_delimiter = ',',
        value_name = "URL",
        requires = "bucket"
    )]
    pub s3_endpoints: Vec<String>,
    /// The bucket of the S3 tier.
    #[arg(long, requires = "s3_endpoints")]
    pub bucket: Option<String>,
    /// Make the bucket when it does not exist (and remove it at the end).
    #[arg(long, requires = "s3_endpoints")]
    pub create_bucket: bool,
    /// Entries larger than this go up as a multipart upload of parts of this size, still
    /// one write of an entry (S3 takes at most 5GiB in a single PUT) [default: 1GiB].
    #[arg(long = "s3-part-size", value_name = "SIZE", requires = "s3_endpoints")]
    pub s3_part_size: Option<ByteCount>,
}

/// The part size of the S3 tier's multipart uploads without --s3-part-size: an entry of
/// up to 1 GiB is one PUT request (llama3.1-70b's largest, 7.6 GiB, goes in 8 parts).
const DEFAULT_PART_SIZE: u64 = 1 << 30;

impl KvS3Args {
    pub fn on(&self) -> bool {
        !self.s3_endpoints.is_empty()
    }

    /// `iolab s3`'s spec for this tier: its endpoint, bucket and one connection per
    /// worker; its own options named as kvcache names them.
    fn spec(&self, workers: u32, seed: u64) -> Result<S3Spec, SpecError> {
        let spec = S3Spec {
            endpoints: self.s3_endpoints.clone(),
            bucket: self.bucket.clone().unwrap_or_default(),
            create_bucket: self.create_bucket,
            concurrency: workers.max(1),
            part_size: Some(self.s3_part_size.unwrap_or(ByteCount(DEFAULT_PART_SIZE))),
            seed,
            ..S3Spec::default()
        };
        spec.validate().map_err(|e| {
            let option = match e.option.as_str() {
                "--endpoint" => "--s3-endpoint".to_string(),
                "--part-size" => "--s3-part-size".to_string(),
                _ => e.option,
            };
            SpecError::new(option, e.reason)
        })?;
        Ok(spec)
    }
}

/// The S3 tier's spec and every worker's client options, checked before anything runs.
pub fn client_setup(
    args: &KvS3Args,
    output: &OutputArgs,
    workers: u32,
    seed: u64,
) -> Result<(S3Spec, S3Options)> {
    let spec = args.spec(workers, seed)?;
    let access = crate::commands::s3::access_for(&spec)?;
    let client = crate::commands::s3::client_options(&spec, &access, output)?;
    Ok((spec, client))
}

/// Checks (or makes) the bucket and writes the run's marker, before anything else is
/// written or stored. Collective.
pub fn open_bucket<'s>(rt: &Runtime, setup: &'s (S3Spec, S3Options)) -> Result<Bucket<'s>> {
    let (spec, client) = setup;
    let factory: ClientOf<'s> =
        Box::new(move |g| crate::commands::s3::client_of(client, spec.seed, g));
    let opts = crate::commands::s3::object_options(client);
    Ok(Bucket::open(rt.comm.as_ref(), spec, factory, &opts)?)
}

/// What of the bucket's release is to be said, on stderr (rank 0).
pub fn say_left(rt: &Runtime, left: &[String]) {
    if rt.is_root() {
        for w in left {
            eprintln!("iolab: {w}");
        }
    }
}
