//! Object storage workloads over S3 (`iolab s3`), with warp's semantics: [`S3Spec`] says
//! which operations ([`S3Op`]) run as phases against which endpoints and bucket, with
//! what object sizes ([`ObjectSizes`]: fixed, or warp's log2-random sizes) and how many
//! objects, connections and mixed shares. [`S3Endpoint`] is one parsed endpoint URL;
//! credentials are resolved by [`credentials`] and never stored with a run.

pub mod credentials;
mod endpoint;

pub use endpoint::{S3Endpoint, validate_bucket_name};

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::error::SpecError;
use crate::result::OpKind;
use crate::spec::data::DEFAULT_SEED;
use crate::units::{ByteCount, GIB, MIB, TimeSpan};

/// The most parts of one upload in flight at once (a connection each).
pub const MAX_PART_CONCURRENCY: u32 = 256;
/// S3's smallest multipart part (all but the last part), and its most parts.
pub const MIN_PART_SIZE: u64 = 5 * MIB;
pub const MAX_PARTS: u64 = 10_000;
/// The largest object a single PUT may carry (S3's limit).
pub const MAX_SINGLE_PUT: u64 = 5 * GIB;
/// Objects a multi-object DELETE may name (S3's limit).
pub const MAX_BATCH: u32 = 1000;

/// One S3 operation, and the phase that does it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum S3Op {
    /// Upload objects (one PUT each, or a multipart upload with --part-size).
    Put,
    /// Download objects, whole or a range of each (--range-size), streaming the body.
    Get,
    /// HEAD each object (warp's STAT).
    Stat,
    /// List the run's objects, --list-page keys a request.
    List,
    /// Delete objects, one request each or --batch at a time.
    Delete,
    /// GET, STAT, PUT and DELETE drawn by their shares over a pool of objects (warp mixed).
    Mixed,
}

impl S3Op {
    pub fn name(self) -> &'static str {
        match self {
            S3Op::Put => "put",
            S3Op::Get => "get",
            S3Op::Stat => "stat",
            S3Op::List => "list",
            S3Op::Delete => "delete",
            S3Op::Mixed => "mixed",
        }
    }

    /// The operation kind its latencies are recorded under (mixed records four).
    pub fn op_kind(self) -> OpKind {
        match self {
            S3Op::Put => OpKind::Put,
            S3Op::Get => OpKind::Get,
            S3Op::Stat => OpKind::Stat,
            S3Op::List => OpKind::List,
            S3Op::Delete => OpKind::Delete,
            S3Op::Mixed => OpKind::Get,
        }
    }

    /// Phases that need objects to exist before they start.
    pub fn needs_objects(self) -> bool {
        !matches!(self, S3Op::Put)
    }
}

/// How a request names its bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Addressing {
    /// `http://host/bucket/key` (what S3-compatible servers on an IP address need).
    #[default]
    Path,
    /// `http://bucket.host/key` (AWS's default; the server must answer for the name).
    Virtual,
}

/// The shares of warp's mixed benchmark, in any unit (they are normalized).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MixShares {
    pub get: f64,
    pub stat: f64,
    pub put: f64,
    pub delete: f64,
}

/// An S3 workload. Fields mirror the `iolab s3` flags one to one. Every phase ends at
/// --duration when one is given; without it each phase makes one pass: put uploads
/// --objects objects, get and stat visit each once, list lists them all once per
/// worker, delete removes them all.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct S3Spec {
    /// S3 endpoint URLs (http:// or https://, host and port), comma-separated; requests
    /// go to them round robin. Default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, or the
    /// profile's endpoint_url.
    #[arg(long = "endpoint", value_delimiter = ',', value_name = "URL")]
    pub endpoints: Vec<String>,

    /// The bucket to work in. iolab writes only below its own prefix there, and makes
    /// and removes the bucket only with --create-bucket when it does not exist.
    #[arg(long, default_value = "")]
    pub bucket: String,

    /// Key prefix under which the run's objects go (`<prefix>iolab-<token>/...`).
    #[arg(long, default_value = "")]
    pub prefix: String,

    /// Phases to run, in this order.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "put,get,delete"
    )]
    pub ops: Vec<S3Op>,

    /// Objects over all workers of all ranks: what put uploads without --duration and
    /// the pool get, stat, list, delete and mixed work on (warp --objects).
    #[arg(long, default_value_t = 2500)]
    pub objects: u64,

    /// Size of each object (warp --obj.size); with --random-size the largest.
    #[arg(long, default_value = "10MiB")]
    pub object_size: ByteCount,

    /// Draw each object's size from warp's log2-random distribution up to --object-size
    /// (warp --obj.randsize): as many objects in every power-of-two range.
    #[arg(long)]
    pub random_size: bool,

    /// The smallest random size (warp's default: --object-size / 256, at least 128 B).
    #[arg(long, requires = "random_size")]
    pub min_object_size: Option<ByteCount>,

    /// Requests in flight per rank: one connection and one worker thread each (warp
    /// --concurrent).
    #[arg(short = 'c', long, default_value_t = 20)]
    pub concurrency: u32,

    /// Each phase runs this long (warp --duration); without it each phase makes one
    /// pass over the objects.
    #[arg(long)]
    pub duration: Option<TimeSpan>,

    /// Upload objects larger than this in multipart uploads of parts of this size
    /// (at least 5MiB, S3's smallest part).
    #[arg(long)]
    pub part_size: Option<ByteCount>,

    /// Parts of one multipart upload in flight at once, each on a connection of its own
    /// (minio-go's NumThreads); 1 sends them one after another on the worker's.
    #[arg(long, default_value_t = 1)]
    pub part_concurrency: u32,

    /// GET this many bytes at a random offset of each object instead of the whole object.
    #[arg(long)]
    pub range_size: Option<ByteCount>,

    /// Keys asked for per LIST request (max-keys).
    #[arg(long, default_value_t = 1000)]
    pub list_page: u32,

    /// Objects per DELETE request: 1 deletes each with its own request, more use
    /// multi-object delete (warp delete --batch, 100 there).
    #[arg(long, default_value_t = 1)]
    pub batch: u32,

    /// Mixed: share of GETs (warp --get-distrib).
    #[arg(long, default_value_t = 45.0)]
    pub get_distrib: f64,
    /// Mixed: share of STATs (warp --stat-distrib).
    #[arg(long, default_value_t = 30.0)]
    pub stat_distrib: f64,
    /// Mixed: share of PUTs (warp --put-distrib).
    #[arg(long, default_value_t = 15.0)]
    pub put_distrib: f64,
    /// Mixed: share of DELETEs, at most the PUT share (warp --delete-distrib).
    #[arg(long, default_value_t = 10.0)]
    pub delete_distrib: f64,

    /// Path-style (`host/bucket/key`) or virtual-host (`bucket.host/key`) requests.
    #[arg(long, value_enum, default_value_t = Addressing::Path)]
    pub addressing: Addressing,

    /// Region for SigV4 (default: AWS_REGION, AWS_DEFAULT_REGION, the profile's region,
    /// else us-east-1).
    #[arg(long)]
    pub region: Option<String>,

    /// Profile of the AWS config and credentials files (default: AWS_PROFILE, else
    /// "default").
    #[arg(long)]
    pub profile: Option<String>,

    /// PEM file of the certificate authorities to trust for https:// endpoints (default:
    /// AWS_CA_BUNDLE, else the system's).
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<std::path::PathBuf>,

    /// Sign uploads as UNSIGNED-PAYLOAD instead of hashing every body with SHA-256 over
    /// plain http (warp --disable-sha256-payload; https is always unsigned, as warp's).
    #[arg(long)]
    pub disable_sha256_payload: bool,

    /// Make the bucket when it does not exist (and remove it at the end, once empty).
    /// Without it a missing bucket is refused before any load.
    #[arg(long)]
    pub create_bucket: bool,

    /// Tries of a request answered 503 SlowDown, 500, 502, 504, 429 or 408, or that lost
    /// its connection, the first included (warp's, from minio-go: 10), waiting between
    /// them as minio-go does: 200 ms doubling up to 1 s, less a random part (full jitter).
    #[arg(long, default_value_t = 10)]
    pub attempts: u32,

    /// Seed for object sizes, contents and choices.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
}

impl Default for S3Spec {
    fn default() -> Self {
        crate::spec::command_line_defaults()
    }
}

/// Object sizes: one size, or warp's log2-random sizes between two bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectSizes {
    Fixed(u64),
    Log2 { min: u64, max: u64 },
}

impl ObjectSizes {
    /// The largest object there can be.
    pub fn max(self) -> u64 {
        match self {
            ObjectSizes::Fixed(s) => s,
            ObjectSizes::Log2 { max, .. } => max,
        }
    }

    /// The size of an object from a uniform draw `u` in [0, 1): warp's GetExpRandSize.
    /// Sizes spread evenly over the powers of two between the bounds (the lowest range
    /// evenly over its bytes), so small and large objects both get a fair share.
    pub fn draw(self, u: f64) -> u64 {
        match self {
            ObjectSizes::Fixed(s) => s,
            ObjectSizes::Log2 { min, max } => log2_size(u, min, max),
        }
    }
}

/// warp's `GetExpRandSize(rng, minSize, maxSize)` with the random float given.
pub fn log2_size(u: f64, min: u64, max: u64) -> u64 {
    let (min_i, max_i) = (min as i64, max as i64);
    if max_i - min_i < 10 {
        if max_i - min_i <= 0 {
            return 0;
        }
        return (1 + min_i + ((u * (max_i - min_i) as f64) as i64)) as u64;
    }
    let log_max = ((max - 1) as f64).log2();
    let mut log_min = (log_max - 8.0).max(7.0);
    if min > 0 {
        log_min = ((min - 1) as f64).log2();
    }
    let delta = log_max - log_min;
    let log_size = u * delta;
    if log_size > 1.0 {
        return 1 + 2f64.powf(log_size + log_min) as u64;
    }
    1 + min + (u * 2f64.powf(log_min + 1.0)) as u64
}

impl S3Spec {
    /// A short name for the workload: "s3-put,get,delete-10MiB".
    pub fn name(&self) -> String {
        let ops: Vec<&str> = self.ops.iter().map(|o| o.name()).collect();
        format!("s3-{}-{}", ops.join(","), self.size_label())
    }

    /// "10MiB", or "log2 128B-10MiB" for random sizes.
    pub fn size_label(&self) -> String {
        match self.sizes() {
            ObjectSizes::Fixed(s) => ByteCount(s).to_string(),
            ObjectSizes::Log2 { min, max } => {
                format!("log2 {}-{}", ByteCount(min), ByteCount(max))
            }
        }
    }

    pub fn has(&self, op: S3Op) -> bool {
        self.ops.contains(&op)
    }

    pub fn sizes(&self) -> ObjectSizes {
        let max = self.object_size.get();
        if !self.random_size {
            return ObjectSizes::Fixed(max);
        }
        // warp: without a minimum, the lowest power is max/256 and at least 2^7.
        let min = self.min_object_size.map(|m| m.get()).unwrap_or(0);
        ObjectSizes::Log2 { min, max }
    }

    pub fn shares(&self) -> MixShares {
        MixShares {
            get: self.get_distrib,
            stat: self.stat_distrib,
            put: self.put_distrib,
            delete: self.delete_distrib,
        }
    }

    /// Whether an object of `size` is uploaded in parts.
    pub fn multipart(&self, size: u64) -> bool {
        self.part_size.is_some_and(|p| size > p.get())
    }

    /// Checks what can be checked without a server.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.validate_work()?;
        self.validate_object_sizes()?;
        self.validate_parts()?;
        self.validate_requests()?;
        if self.has(S3Op::Mixed) {
            self.validate_mix()?;
        }
        if let Some(r) = self.range_size
            && r.get() == 0
        {
            return Err(SpecError::new("--range-size", "must be larger than 0"));
        }
        if self.duration.is_some_and(|d| d.nanos().0 == 0) {
            return Err(SpecError::new("--duration", "must be longer than 0s"));
        }
        for e in &self.endpoints {
            S3Endpoint::parse(e)?;
        }
        Ok(())
    }

    /// The bucket, the operations, the concurrency and the object count.
    fn validate_work(&self) -> Result<(), SpecError> {
        if self.bucket.is_empty() {
            return Err(SpecError::new("--bucket", "name the bucket to work in"));
        }
        validate_bucket_name(&self.bucket)?;
        if self.ops.is_empty() {
            return Err(SpecError::new("--ops", "name at least one operation"));
        }
        if self.concurrency == 0 || self.concurrency > 4096 {
            return Err(SpecError::new(
                "--concurrency",
                "must be between 1 and 4096 per rank; use more ranks for more",
            ));
        }
        if self.objects == 0 && self.ops.iter().any(|o| *o != S3Op::List) {
            return Err(SpecError::new("--objects", "must be at least 1"));
        }
        Ok(())
    }

    /// The objects' sizes: a range of something, a log2 span, random sizes' largest.
    fn validate_object_sizes(&self) -> Result<(), SpecError> {
        if self.object_size.get() == 0 && !self.random_size && self.range_size.is_some() {
            return Err(SpecError::new(
                "--range-size",
                "an empty object has no range to read",
            ));
        }
        if let ObjectSizes::Log2 { min, max } = self.sizes()
            && min >= max
        {
            return Err(SpecError::new(
                "--min-object-size",
                format!("must be smaller than --object-size ({})", ByteCount(max)),
            ));
        }
        if self.random_size && self.object_size.get() < 256 {
            return Err(SpecError::new(
                "--object-size",
                "random sizes need a largest size of at least 256B (as warp's)",
            ));
        }
        Ok(())
    }

    /// Multipart uploads: S3's part sizes and counts, the parts sent at once.
    fn validate_parts(&self) -> Result<(), SpecError> {
        if let Some(p) = self.part_size {
            if p.get() < MIN_PART_SIZE {
                return Err(SpecError::new(
                    "--part-size",
                    format!("must be at least 5MiB (S3's smallest part), not {p}"),
                ));
            }
            if self.object_size.get().div_ceil(p.get()) > MAX_PARTS {
                return Err(SpecError::new(
                    "--part-size",
                    format!(
                        "{} objects in parts of {p} make more than S3's {MAX_PARTS} parts; use larger parts",
                        self.object_size
                    ),
                ));
            }
        } else if self.object_size.get() > MAX_SINGLE_PUT {
            return Err(SpecError::new(
                "--object-size",
                "objects over 5GiB need a multipart upload: give --part-size",
            ));
        }
        if self.part_concurrency == 0 || self.part_concurrency > MAX_PART_CONCURRENCY {
            return Err(SpecError::new(
                "--part-concurrency",
                format!("must be between 1 and {MAX_PART_CONCURRENCY}"),
            ));
        }
        if self.part_concurrency > 1 && self.part_size.is_none() {
            return Err(SpecError::new(
                "--part-concurrency",
                "needs --part-size (parts are what it sends at once)",
            ));
        }
        Ok(())
    }

    /// Attempts, list pages and delete batches within S3's limits.
    fn validate_requests(&self) -> Result<(), SpecError> {
        if self.attempts == 0 {
            return Err(SpecError::new("--attempts", "must be at least 1"));
        }
        if self.list_page == 0 || self.list_page > 1000 {
            return Err(SpecError::new(
                "--list-page",
                "must be between 1 and 1000 (S3's max-keys)",
            ));
        }
        if self.batch == 0 || self.batch > MAX_BATCH {
            return Err(SpecError::new(
                "--batch",
                "must be between 1 and 1000 (S3's multi-object delete)",
            ));
        }
        Ok(())
    }

    fn validate_mix(&self) -> Result<(), SpecError> {
        let s = self.shares();
        for (name, v) in [
            ("--get-distrib", s.get),
            ("--stat-distrib", s.stat),
            ("--put-distrib", s.put),
            ("--delete-distrib", s.delete),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(SpecError::new(name, "must be a share of 0 or more"));
            }
        }
        if s.get + s.stat + s.put + s.delete <= 0.0 {
            return Err(SpecError::new(
                "--get-distrib",
                "the mixed shares add up to 0; give at least one a share",
            ));
        }
        if s.delete > s.put {
            return Err(SpecError::new(
                "--delete-distrib",
                "cannot be larger than --put-distrib (as warp's): the pool would run dry",
            ));
        }
        if self.duration.is_none() {
            return Err(SpecError::new(
                "--duration",
                "a mixed phase runs for a time; give --duration",
            ));
        }
        if self.objects < u64::from(self.concurrency) {
            return Err(SpecError::new(
                "--objects",
                "a mixed phase needs at least as many objects as --concurrency (as warp's)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "s3_tests.rs"]
mod tests;
