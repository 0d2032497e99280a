//! Object storage. [`ObjectBackend`] is submit/reap for object requests, as
//! [`IoBackend`](crate::IoBackend) is for file I/O: a worker pushes an
//! [`ObjectRequest`], submits it and reaps an [`ObjectCompletion`] with the status, the
//! bytes moved, the time to the first byte of a GET's body and the retries it took.
//! [`S3Client`] speaks S3 over HTTP/1.1 (SigV4, path or virtual-host addressing, TLS,
//! warp's retries); [`NullObjects`] completes everything at once and touches nothing
//! (iolab's own ceiling, and the engine's tests). [`ObjectError`] says what failed,
//! where, and what to try.

mod error;
mod http;
mod null;
mod payload;
mod s3;
pub mod sigv4;
mod tls;
mod xml;

use std::sync::Arc;
use std::time::Duration;

pub use error::ObjectError;
pub use null::{NullObjects, NullStore};
pub use payload::Payload;
pub use s3::{S3Client, S3Options, TlsConfig};

/// Bytes a PUT sends as the caller gives them (an entry demoted from the tier above)
/// instead of the client's payload: handed out in pieces as the body goes on the wire
/// (and to the signature's hash), a multipart upload's parts each from its own range, at
/// once with several part senders. The client copies none of it.
pub trait BodySource: Send + Sync {
    /// Its length in bytes: the size of the PUT that sends it.
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Hands `f` the `len` bytes from `offset`, in pieces.
    fn pieces(
        &self,
        offset: u64,
        len: u64,
        f: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()>;
}

/// Bytes held in memory (a CPU-tier entry), sent as they are, a megabyte a piece.
impl BodySource for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    fn pieces(
        &self,
        offset: u64,
        len: u64,
        f: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let end = offset.saturating_add(len);
        let Some(bytes) = usize::try_from(end)
            .ok()
            .and_then(|end| self.get(offset as usize..end))
        else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "{len} bytes from {offset} of a body of {}",
                    self.as_slice().len()
                ),
            ));
        };
        bytes.chunks(payload::PIECE).try_for_each(f)
    }
}

/// What a request does. Keys and prefixes are relative to the client's bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectOp<'a> {
    /// Upload `size` bytes (in parts when the client's part size is smaller), the body
    /// taken from the payload at `data_offset`.
    Put {
        size: u64,
        data_offset: u64,
    },
    /// Download the object, or `len` bytes from `offset`.
    Get {
        range: Option<(u64, u64)>,
    },
    /// HEAD the object.
    Head,
    Delete,
    /// One multi-object DELETE of `keys` (S3 allows up to 1000).
    DeleteMany {
        keys: &'a [String],
    },
    /// One page of ListObjectsV2 under `prefix`, after `token` when given.
    List {
        prefix: &'a str,
        token: Option<&'a str>,
        max_keys: u32,
    },
    /// HEAD, create or delete the bucket itself.
    HeadBucket,
    CreateBucket,
    DeleteBucket,
}

impl ObjectOp<'_> {
    /// The HTTP-level name, for messages ("PUT", "GET", "HEAD", ...).
    pub fn name(&self) -> &'static str {
        match self {
            ObjectOp::Put { .. } => "PUT",
            ObjectOp::Get { .. } => "GET",
            ObjectOp::Head => "HEAD",
            ObjectOp::Delete => "DELETE",
            ObjectOp::DeleteMany { .. } => "DELETE (multi-object)",
            ObjectOp::List { .. } => "LIST",
            ObjectOp::HeadBucket => "HEAD bucket",
            ObjectOp::CreateBucket => "CREATE bucket",
            ObjectOp::DeleteBucket => "DELETE bucket",
        }
    }
}

/// One request: what to do, on which key, and a tag returned with its completion.
#[derive(Clone, Copy, Debug)]
pub struct ObjectRequest<'a> {
    pub op: ObjectOp<'a>,
    pub key: &'a str,
    pub tag: u64,
}

/// A finished request.
#[derive(Debug, Default)]
pub struct ObjectCompletion {
    pub tag: u64,
    /// The final answer's HTTP status (0: none came).
    pub status: u16,
    /// Body bytes moved: sent by a PUT, received by a GET.
    pub bytes: u64,
    /// From the request's start to the first byte of a GET's body.
    pub first_byte: Option<Duration>,
    /// Tries beyond the first, after retryable answers or lost connections.
    pub retries: u32,
    /// A LIST's keys, a multi-object DELETE's deleted keys, a multipart upload's parts.
    pub items: u64,
    /// A LIST has more pages: [`ObjectBackend::next_token`] continues it.
    pub truncated: bool,
    /// A HEAD's or GET's object length (Content-Length of the whole object).
    pub length: Option<u64>,
    /// A HEAD's ETag as the server gave it (a multipart object's ends in `-<parts>`).
    pub etag: Option<String>,
    pub error: Option<Box<ObjectError>>,
}

/// Counts of answers that were not a success, by HTTP status (0: no answer), including
/// those retried: what "errors by HTTP status" shows.
pub type StatusCounts = Vec<(u16, u64)>;

/// Submit/reap for object requests. A worker pushes one request (the client keeps one
/// in flight per worker, as warp's goroutines do), submits it (the request runs,
/// retries included) and reaps its completion.
pub trait ObjectBackend: Send {
    /// False for [`NullObjects`]: nothing is reached.
    fn touches_storage(&self) -> bool;
    /// Queues one request; fails when one is already queued or not reaped.
    fn push(&mut self, req: ObjectRequest<'_>) -> Result<(), ObjectError>;
    /// Runs what is queued; its completion is then ready to reap.
    fn submit(&mut self) -> Result<(), ObjectError>;
    fn reap(&mut self, out: &mut Vec<ObjectCompletion>);
    fn in_flight(&self) -> u32;
    /// The continuation token of the last LIST that was truncated.
    fn next_token(&self) -> Option<&str>;
    /// Answers that were not a success so far, by status.
    fn status_counts(&self) -> StatusCounts;
    /// The first bytes of each following single PUT's body (the rest is the client's
    /// payload): a file format's header, so an object is laid out as its file would be.
    /// Clients that send no bytes ignore it.
    fn set_body_head(&mut self, _head: &[u8]) -> Result<(), ObjectError> {
        Ok(())
    }
    /// The body of the next PUT (single or multipart): its bytes, the PUT's size its
    /// length (the body head is not used: the bytes carry their own). The client lets
    /// go of it when that PUT ends. Clients that send no bytes ignore it.
    fn set_body(&mut self, _body: Option<Arc<dyn BodySource>>) {}
    /// Tries a retryable request at least `attempts` times from now on (the cleanup's
    /// own, whatever the run's --attempts).
    fn at_least_attempts(&mut self, _attempts: u32) {}

    /// Push, submit and reap one request.
    fn run(&mut self, req: ObjectRequest<'_>) -> ObjectCompletion {
        let mut out = Vec::with_capacity(1);
        if let Err(e) = self.push(req).and_then(|()| self.submit()) {
            return ObjectCompletion {
                tag: req.tag,
                error: Some(Box::new(e)),
                ..ObjectCompletion::default()
            };
        }
        self.reap(&mut out);
        out.pop().unwrap_or_default()
    }
}
