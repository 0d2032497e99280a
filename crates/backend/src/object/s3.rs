//! [`S3Client`]: S3 over HTTP/1.1 for one worker. One kept-alive connection per endpoint,
//! requests sent to the endpoints round robin; each request signed with SigV4 (header
//! form), its body's SHA-256 signed over plain http unless told not to (warp's
//! default), UNSIGNED-PAYLOAD over https. Retryable answers (503 SlowDown and the other
//! statuses and codes minio-go retries) and lost connections are tried again up to
//! `attempts` times with minio-go's backoff; a kept-alive connection the server closed
//! while idle is reopened at once. Multipart uploads (initiate, parts, complete, abort on
//! failure) are in `multipart.rs`; building, signing, sending and retrying one request in
//! `request.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use iolab_core::rng::Rng;
use iolab_core::spec::{Addressing, S3Endpoint};

use crate::object::http::{Conn, Head};
use crate::object::payload::Payload;
use crate::object::sigv4::{self, Signer};
use crate::object::{
    BodySource, ObjectBackend, ObjectCompletion, ObjectError, ObjectOp, ObjectRequest,
    StatusCounts, tls, xml,
};

mod multipart;
mod request;

/// The most of an answer's body kept for parsing (a listing of 1000 keys is ~300 KiB).
const MAX_XML: usize = 16 << 20;

/// Trusted certificate authorities for https:// endpoints, made once and shared.
#[derive(Clone)]
pub struct TlsConfig(Arc<rustls::ClientConfig>);

impl TlsConfig {
    /// Trusts the certificates of `ca_file`, or the system's.
    pub fn new(ca_file: Option<&std::path::Path>) -> Result<TlsConfig, ObjectError> {
        tls::tls_config(ca_file)
            .map(TlsConfig)
            .map_err(ObjectError::Setup)
    }
}

/// How a client reaches its bucket.
#[derive(Clone)]
pub struct S3Options {
    pub endpoints: Vec<S3Endpoint>,
    pub bucket: String,
    pub addressing: Addressing,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
    pub session_token: Option<String>,
    /// Needed when an endpoint is https://.
    pub tls: Option<TlsConfig>,
    /// Hash every upload's body into its signature over plain http (warp's default).
    pub sign_payload: bool,
    /// Upload objects larger than this in parts of this size.
    pub part_size: Option<u64>,
    /// Parts of one upload in flight at once, each on a connection of its own.
    pub part_concurrency: u32,
    /// Tries of a retryable request, the first included.
    pub attempts: u32,
    /// How long a connect, send or receive may block.
    pub io_timeout: Duration,
    /// Seeds the upload data and the retry jitter.
    pub seed: u64,
    /// The endpoint this client's first request goes to (workers start spread out).
    pub first_endpoint: usize,
}

/// What a request sends as its body.
#[derive(Clone, Copy)]
enum Body {
    Empty,
    /// The client's small body buffer (XML), with its MD5 when the request needs one.
    Small {
        md5: bool,
    },
    /// `len` bytes of the payload for object `data_offset`; with `head`, the client's
    /// body head ([`ObjectBackend::set_body_head`]) stands for its first bytes.
    Payload {
        data_offset: u64,
        len: u64,
        head: bool,
    },
    /// `len` bytes from `offset` of the body the caller gave ([`ObjectBackend::set_body`]).
    Given {
        offset: u64,
        len: u64,
    },
}

/// One request as the client sends it: its name in errors, its method and body, the
/// byte range it reads (a GET's) and what to do with the answer's body.
#[derive(Clone, Copy)]
struct Call {
    op: &'static str,
    method: &'static str,
    body: Body,
    range: Option<(u64, u64)>,
    keep: Keep,
}

impl Call {
    /// A request of the whole object (or bucket).
    fn new(op: &'static str, method: &'static str, body: Body, keep: Keep) -> Call {
        Call {
            op,
            method,
            body,
            range: None,
            keep,
        }
    }
}

/// What to do with an answer's body.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Count and drop it (a GET).
    Drop,
    /// Keep it for parsing (XML answers).
    Xml,
    /// There is none (HEAD).
    None,
}

/// One answer of one try.
struct Answer {
    head: Head,
    bytes: u64,
}

/// The most bytes a body head may hold (headers of file formats are far smaller).
const MAX_BODY_HEAD: usize = 64 << 10;

pub struct S3Client {
    opts: S3Options,
    signer: Signer,
    payload: Arc<Payload>,
    conns: Vec<Option<Conn>>,
    /// Clients that send a multipart upload's parts at once (--part-concurrency), made
    /// at the first such upload and kept, with their connections, for the next.
    helpers: Vec<S3Client>,
    next_endpoint: usize,
    rng: Rng,
    // Reused per request: no allocation in the steady state.
    path: String,
    query: String,
    head: Vec<u8>,
    small: Vec<u8>,
    xml: Vec<u8>,
    key: String,
    prefix: String,
    token_in: Option<String>,
    queued: Option<Queued>,
    done: Option<ObjectCompletion>,
    token: Option<String>,
    statuses: StatusCounts,
    /// The first bytes of each single PUT's body (a file format's header).
    body_head: Vec<u8>,
    /// The bytes of each PUT's body, when the caller gives them.
    given: Option<Arc<dyn BodySource>>,
    /// When the request being run started (for the time to first byte).
    started: Instant,
    pending_tag: u64,
}

/// A pushed request, its borrowed parts copied into the client's buffers.
#[derive(Clone, Copy)]
enum Queued {
    Put { size: u64, data_offset: u64 },
    Get { range: Option<(u64, u64)> },
    Head,
    Delete,
    DeleteMany { keys: u64 },
    List { max_keys: u32 },
    HeadBucket,
    CreateBucket,
    DeleteBucket,
}

impl S3Client {
    pub fn new(opts: S3Options) -> Result<S3Client, ObjectError> {
        let payload = Arc::new(Payload::new(opts.seed));
        S3Client::with_payload(opts, payload)
    }

    fn with_payload(opts: S3Options, payload: Arc<Payload>) -> Result<S3Client, ObjectError> {
        if opts.endpoints.is_empty() {
            return Err(ObjectError::Setup(
                "no S3 endpoint to send requests to".into(),
            ));
        }
        if opts.endpoints.iter().any(|e| e.tls) && opts.tls.is_none() {
            return Err(ObjectError::Setup(
                "an https:// endpoint needs a TLS configuration".into(),
            ));
        }
        let signer = Signer::new(
            &opts.access_key,
            &opts.secret_key,
            opts.session_token.as_deref(),
            &opts.region,
        );
        Ok(S3Client {
            signer,
            payload,
            helpers: Vec::new(),
            conns: (0..opts.endpoints.len()).map(|_| None).collect(),
            next_endpoint: opts.first_endpoint % opts.endpoints.len(),
            rng: Rng::new(opts.seed ^ 0x05EE_D7E7),
            path: String::with_capacity(256),
            query: String::with_capacity(256),
            head: Vec::with_capacity(1024),
            small: Vec::new(),
            xml: Vec::new(),
            key: String::with_capacity(256),
            prefix: String::new(),
            token_in: None,
            queued: None,
            done: None,
            token: None,
            statuses: Vec::new(),
            body_head: Vec::new(),
            given: None,
            started: Instant::now(),
            pending_tag: 0,
            opts,
        })
    }

    /// Memory one client holds: its payload and one receive buffer per endpoint, for
    /// its own connections and, with `part_concurrency` over 1, each part sender's
    /// (parts are streamed from the shared payload: no part is held whole).
    pub fn memory_bytes(endpoints: usize, part_concurrency: u32) -> u64 {
        let senders = if part_concurrency > 1 {
            1 + u64::from(part_concurrency)
        } else {
            1
        };
        Payload::BYTES + senders * endpoints as u64 * (256 << 10)
    }

    fn endpoint_name(&self, ep: usize) -> String {
        self.opts.endpoints[ep].url()
    }

    fn target(&self) -> String {
        if self.key.is_empty() {
            format!("s3://{}", self.opts.bucket)
        } else {
            format!("s3://{}/{}", self.opts.bucket, self.key)
        }
    }

    fn count_status(&mut self, status: u16) {
        self.add_status(status, 1);
    }

    fn add_status(&mut self, status: u16, count: u64) {
        match self.statuses.iter_mut().find(|(s, _)| *s == status) {
            Some((_, n)) => *n += count,
            None => {
                self.statuses.push((status, count));
                self.statuses.sort_unstable();
            }
        }
    }

    /// Sets `path` for the bucket (`key` empty) or an object, as the addressing wants.
    fn set_path(&mut self, with_key: bool) {
        self.path.clear();
        if self.opts.addressing == Addressing::Path {
            self.path.push('/');
            self.path.push_str(&self.opts.bucket);
        }
        if with_key {
            self.path.push('/');
            sigv4::push_encoded(&mut self.path, &self.key, true);
        } else if self.opts.addressing == Addressing::Virtual {
            self.path.push('/');
        }
    }

    fn run_queued(&mut self, q: Queued) -> ObjectCompletion {
        let mut c = ObjectCompletion::default();
        self.query.clear();
        let r = match q {
            Queued::Put { size, data_offset } => {
                let r = self.put(size, data_offset, &mut c);
                // A given body is the next PUT's only: its bytes are not held after.
                self.given = None;
                for h in &mut self.helpers {
                    h.given = None;
                }
                r
            }
            Queued::Get { range } => {
                self.set_path(true);
                self.request(
                    Call {
                        range,
                        ..Call::new("GET", "GET", Body::Empty, Keep::Drop)
                    },
                    &mut c,
                )
                .map(|a| {
                    c.bytes = a.bytes;
                    c.length = a.head.content_length;
                })
            }
            Queued::Head => {
                self.set_path(true);
                self.request(Call::new("HEAD", "HEAD", Body::Empty, Keep::None), &mut c)
                    .map(|a| {
                        c.length = a.head.content_length;
                        c.etag = a.head.etag;
                    })
            }
            Queued::Delete => {
                self.set_path(true);
                self.request(
                    Call::new("DELETE", "DELETE", Body::Empty, Keep::Xml),
                    &mut c,
                )
                .map(|_| c.items = 1)
            }
            Queued::DeleteMany { keys } => self.delete_many(keys, &mut c),
            Queued::List { max_keys } => self.list(max_keys, &mut c),
            Queued::HeadBucket => {
                self.set_path(false);
                self.request(
                    Call::new("HEAD bucket", "HEAD", Body::Empty, Keep::None),
                    &mut c,
                )
                .map(|_| ())
            }
            Queued::CreateBucket => self.create_bucket(&mut c),
            Queued::DeleteBucket => {
                self.set_path(false);
                self.request(
                    Call::new("DELETE bucket", "DELETE", Body::Empty, Keep::Xml),
                    &mut c,
                )
                .map(|_| ())
            }
        };
        if let Err(e) = r {
            c.error = Some(Box::new(e));
        }
        c
    }

    /// One PUT of `size` bytes of the payload from `data_offset` (or of the given body),
    /// or a multipart upload when it is over the part size.
    fn put(
        &mut self,
        size: u64,
        data_offset: u64,
        c: &mut ObjectCompletion,
    ) -> Result<(), ObjectError> {
        if let Some(given) = self.given.as_ref().map(|g| g.len())
            && given != size
        {
            return Err(ObjectError::Setup(format!(
                "a PUT of {size} bytes of {} was given a body of {given} bytes",
                self.target()
            )));
        }
        if self.opts.part_size.is_some_and(|p| size > p) {
            return self.multipart_put(size, data_offset, c);
        }
        self.set_path(true);
        let body = match self.given {
            Some(_) => Body::Given {
                offset: 0,
                len: size,
            },
            None => Body::Payload {
                data_offset,
                len: size,
                head: !self.body_head.is_empty() && self.body_head.len() as u64 <= size,
            },
        };
        self.request(Call::new("PUT", "PUT", body, Keep::Xml), c)
            .map(|_| c.bytes = size)
    }

    /// Creates the bucket, in the client's region when it is not us-east-1 (S3's default,
    /// which refuses a location constraint naming it).
    fn create_bucket(&mut self, c: &mut ObjectCompletion) -> Result<(), ObjectError> {
        self.set_path(false);
        self.small.clear();
        let body = if self.opts.region != "us-east-1" {
            self.small.extend_from_slice(
                format!(
                    "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>",
                    self.opts.region
                )
                .as_bytes(),
            );
            Body::Small { md5: false }
        } else {
            Body::Empty
        };
        self.request(Call::new("CREATE bucket", "PUT", body, Keep::Xml), c)
            .map(|_| ())
    }

    fn delete_many(&mut self, keys: u64, c: &mut ObjectCompletion) -> Result<(), ObjectError> {
        self.key.clear();
        self.set_path(false);
        self.query.push_str("delete=");
        let r = self.request(
            Call::new(
                "DELETE (multi-object)",
                "POST",
                Body::Small { md5: true },
                Keep::Xml,
            ),
            c,
        )?;
        let _ = r;
        // Quiet mode: the answer names only the keys that failed.
        c.items = keys.saturating_sub(xml::count(&self.xml, "Error"));
        if let Some(code) = xml::first(&self.xml, "Code") {
            let key = xml::first(&self.xml, "Key")
                .unwrap_or_default()
                .into_owned();
            let message = xml::first(&self.xml, "Message")
                .unwrap_or_default()
                .into_owned();
            return Err(ObjectError::Status {
                op: "DELETE (multi-object)",
                target: format!("s3://{}/{key}", self.opts.bucket),
                endpoint: self.endpoint_name(0),
                status: c.status,
                code: code.into_owned(),
                message: format!("{message} ({} of {keys} keys deleted)", c.items),
            });
        }
        Ok(())
    }

    fn list(&mut self, max_keys: u32, c: &mut ObjectCompletion) -> Result<(), ObjectError> {
        self.key.clear();
        self.set_path(false);
        let mut q = std::mem::take(&mut self.query);
        if let Some(t) = &self.token_in {
            q.push_str("continuation-token=");
            sigv4::push_encoded(&mut q, t, false);
            q.push('&');
        }
        q.push_str(&format!("list-type=2&max-keys={max_keys}&prefix="));
        sigv4::push_encoded(&mut q, &self.prefix, false);
        self.query = q;
        self.request(Call::new("LIST", "GET", Body::Empty, Keep::Xml), c)?;
        c.items = xml::count(&self.xml, "Contents");
        c.truncated = xml::first(&self.xml, "IsTruncated").as_deref() == Some("true");
        self.token = if c.truncated {
            xml::first(&self.xml, "NextContinuationToken").map(|t| t.into_owned())
        } else {
            None
        };
        Ok(())
    }
}

impl ObjectBackend for S3Client {
    fn touches_storage(&self) -> bool {
        true
    }

    fn push(&mut self, req: ObjectRequest<'_>) -> Result<(), ObjectError> {
        if self.queued.is_some() || self.done.is_some() {
            return Err(ObjectError::Setup(
                "a request is already in flight on this connection".into(),
            ));
        }
        self.key.clear();
        self.key.push_str(req.key);
        self.queued = Some(match req.op {
            ObjectOp::Put { size, data_offset } => Queued::Put { size, data_offset },
            ObjectOp::Get { range } => Queued::Get { range },
            ObjectOp::Head => Queued::Head,
            ObjectOp::Delete => Queued::Delete,
            ObjectOp::DeleteMany { keys } => {
                self.small.clear();
                self.small.extend_from_slice(b"<Delete><Quiet>true</Quiet>");
                for k in keys {
                    self.small.extend_from_slice(b"<Object><Key>");
                    xml::push_escaped(&mut self.small, k);
                    self.small.extend_from_slice(b"</Key></Object>");
                }
                self.small.extend_from_slice(b"</Delete>");
                Queued::DeleteMany {
                    keys: keys.len() as u64,
                }
            }
            ObjectOp::List {
                prefix,
                token,
                max_keys,
            } => {
                self.prefix.clear();
                self.prefix.push_str(prefix);
                self.token_in = token.map(str::to_string);
                Queued::List { max_keys }
            }
            ObjectOp::HeadBucket => Queued::HeadBucket,
            ObjectOp::CreateBucket => Queued::CreateBucket,
            ObjectOp::DeleteBucket => Queued::DeleteBucket,
        });
        self.pending_tag = req.tag;
        Ok(())
    }

    fn submit(&mut self) -> Result<(), ObjectError> {
        if let Some(q) = self.queued.take() {
            self.started = Instant::now();
            let mut c = self.run_queued(q);
            c.tag = self.pending_tag;
            self.done = Some(c);
        }
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<ObjectCompletion>) {
        out.extend(self.done.take());
    }

    fn in_flight(&self) -> u32 {
        u32::from(self.queued.is_some() || self.done.is_some())
    }

    fn next_token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    fn status_counts(&self) -> StatusCounts {
        self.statuses.clone()
    }

    fn set_body_head(&mut self, head: &[u8]) -> Result<(), ObjectError> {
        if head.len() > MAX_BODY_HEAD {
            return Err(ObjectError::Setup(format!(
                "a body head of {} bytes is more than the {MAX_BODY_HEAD} a client keeps",
                head.len()
            )));
        }
        self.body_head.clear();
        self.body_head.extend_from_slice(head);
        Ok(())
    }

    fn set_body(&mut self, body: Option<Arc<dyn BodySource>>) {
        self.given = body;
    }

    fn at_least_attempts(&mut self, attempts: u32) {
        self.opts.attempts = self.opts.attempts.max(attempts);
    }
}

/// Standard base64 with padding (Content-MD5).
fn base64_std(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(T[(n >> 18) as usize & 63] as char);
        out.push(T[(n >> 12) as usize & 63] as char);
        out.push(if chunk.len() > 1 {
            T[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if chunk.len() > 2 {
            T[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}
