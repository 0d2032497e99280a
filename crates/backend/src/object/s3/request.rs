//! The wire under [`S3Client`]: a kept-alive connection per endpoint, one request built,
//! signed, sent and its answer read, and the answers and lost connections minio-go
//! retries tried again with its backoff.

use std::time::{Duration, Instant};

use iolab_core::spec::Addressing;
use sha2::{Digest, Sha256};

use super::{Answer, Body, Call, Keep, MAX_XML, S3Client, base64_std};
use crate::object::http::{BodySink, Conn, Stream};
use crate::object::payload::Payload;
use crate::object::sigv4::{self, EMPTY_SHA256, SignInput, UNSIGNED_PAYLOAD};
use crate::object::{BodySource, ObjectCompletion, ObjectError, tls, xml};

/// Statuses and S3 error codes minio-go (and so warp) retries.
const RETRY_STATUS: [u16; 8] = [408, 429, 499, 500, 502, 503, 504, 520];
const RETRY_CODES: [&str; 12] = [
    "RequestError",
    "RequestTimeout",
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "RequestThrottled",
    "InternalError",
    "ExpiredToken",
    "ExpiredTokenException",
    "SlowDown",
    "SlowDownWrite",
    "SlowDownRead",
];
/// minio-go's DefaultRetryUnit and DefaultRetryCap.
const RETRY_UNIT: Duration = Duration::from_millis(200);
const RETRY_CAP: Duration = Duration::from_secs(1);

impl S3Client {
    /// Opens a connection to endpoint `ep` (TLS for https://, with the name the
    /// addressing sends as Host).
    fn open(&self, ep: usize) -> std::io::Result<Conn> {
        let e = &self.opts.endpoints[ep];
        let tcp = Conn::connect_plain(&e.host, e.port, self.opts.io_timeout)?;
        let stream = match (&self.opts.tls, e.tls) {
            (Some(t), true) => {
                let host = match self.opts.addressing {
                    Addressing::Virtual => format!("{}.{}", self.opts.bucket, e.host),
                    Addressing::Path => e.host.clone(),
                };
                Stream::Tls(Box::new(tls::connect(&t.0, &host, tcp)?))
            }
            _ => Stream::Plain(tcp),
        };
        Ok(Conn::new(stream))
    }

    /// One try of the request whose path and query are set: send it to endpoint `ep`,
    /// read the answer. A connection that served before and fails without an answer is
    /// reopened and the request sent again once (the server closed it while idle).
    fn exchange(
        &mut self,
        ep: usize,
        call: Call,
        first_byte: &mut Option<Instant>,
    ) -> std::io::Result<Answer> {
        match self.exchange_once(ep, call, first_byte) {
            Err((_, true)) => self.exchange_once(ep, call, first_byte).map_err(|(e, _)| e),
            r => r.map_err(|(e, _)| e),
        }
    }

    /// One send and receive; on failure also whether it was a stale kept-alive connection.
    fn exchange_once(
        &mut self,
        ep: usize,
        call: Call,
        first_byte: &mut Option<Instant>,
    ) -> Result<Answer, (std::io::Error, bool)> {
        let facts = self.body_facts(call.body);
        self.build_head(ep, call, &facts);
        let mut head = std::mem::take(&mut self.head);
        if let Body::Small { .. } = call.body {
            head.extend_from_slice(&self.small);
        }
        let result = self.send_and_receive(ep, &head, call, first_byte);
        self.head = head;
        match result {
            Ok(a) => {
                let conn = self.conns[ep].as_ref();
                if conn.is_some_and(|c| c.closing) {
                    self.conns[ep] = None;
                }
                Ok(a)
            }
            Err((e, answered)) => {
                let stale = !answered
                    && self.conns[ep].as_ref().is_some_and(|c| c.served > 0)
                    && matches!(
                        e.kind(),
                        std::io::ErrorKind::UnexpectedEof
                            | std::io::ErrorKind::ConnectionReset
                            | std::io::ErrorKind::BrokenPipe
                            | std::io::ErrorKind::ConnectionAborted
                    );
                self.conns[ep] = None;
                Err((e, stale))
            }
        }
    }

    fn body_facts(&self, body: Body) -> BodyFacts {
        let (len, hash, md5) = match body {
            Body::Empty => (0, EMPTY_SHA256.to_string(), None),
            Body::Small { md5 } => {
                let mut h = Vec::with_capacity(64);
                sigv4::push_hex(&mut h, &Sha256::digest(&self.small));
                let md5 = md5.then(|| {
                    use md5::Digest as _;
                    base64_std(&md5::Md5::digest(&self.small))
                });
                (
                    self.small.len() as u64,
                    String::from_utf8(h).unwrap_or_default(),
                    md5,
                )
            }
            Body::Payload { len, .. } | Body::Given { len, .. } => {
                let hash = if self.opts.sign_payload && !self.opts.endpoints.iter().all(|e| e.tls) {
                    let mut s = Sha256::new();
                    let _ = send_payload(self.sources(), body, |p| {
                        s.update(p);
                        Ok(())
                    });
                    let mut h = Vec::with_capacity(64);
                    sigv4::push_hex(&mut h, &s.finalize());
                    String::from_utf8(h).unwrap_or_default()
                } else {
                    UNSIGNED_PAYLOAD.to_string()
                };
                (len, hash, None)
            }
        };
        BodyFacts { len, hash, md5 }
    }

    /// The request's head, signed, in `self.head`.
    fn build_head(&mut self, ep: usize, call: Call, body: &BodyFacts) {
        let Call { method, range, .. } = call;
        let (len, hash, md5) = (body.len, body.hash.as_str(), body.md5.as_deref());
        let e = &self.opts.endpoints[ep];
        let host = match self.opts.addressing {
            Addressing::Path => e.authority(),
            Addressing::Virtual => format!("{}.{}", self.opts.bucket, e.authority()),
        };
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut date = [0u8; 16];
        sigv4::amz_date(secs, &mut date);
        let date = std::str::from_utf8(&date).unwrap_or("");
        let h = &mut self.head;
        h.clear();
        h.extend_from_slice(method.as_bytes());
        h.push(b' ');
        h.extend_from_slice(self.path.as_bytes());
        if !self.query.is_empty() {
            h.push(b'?');
            h.extend_from_slice(self.query.as_bytes());
        }
        h.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        h.extend_from_slice(host.as_bytes());
        h.extend_from_slice(b"\r\nUser-Agent: iolab/");
        h.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
        h.extend_from_slice(b"\r\nx-amz-date: ");
        h.extend_from_slice(date.as_bytes());
        h.extend_from_slice(b"\r\nx-amz-content-sha256: ");
        h.extend_from_slice(hash.as_bytes());
        if let Some(t) = self.signer.session_token() {
            h.extend_from_slice(b"\r\nx-amz-security-token: ");
            h.extend_from_slice(t.as_bytes());
        }
        if let Some(m) = md5 {
            h.extend_from_slice(b"\r\nContent-MD5: ");
            h.extend_from_slice(m.as_bytes());
        }
        if let Some((off, n)) = range {
            h.extend_from_slice(
                format!("\r\nRange: bytes={off}-{}", off + n.max(1) - 1).as_bytes(),
            );
        }
        if len > 0 || matches!(method, "PUT" | "POST") {
            h.extend_from_slice(format!("\r\nContent-Length: {len}").as_bytes());
        }
        h.extend_from_slice(b"\r\nAuthorization: ");
        let input = SignInput {
            method,
            path: &self.path,
            query: &self.query,
            host: &host,
            payload_hash: hash,
            content_md5: md5,
            amz_date: date,
        };
        self.signer.sign(&input, h);
        h.extend_from_slice(b"\r\n\r\n");
    }

    /// Writes `head` (and the body) and reads the answer; on failure, whether any answer
    /// had begun.
    fn send_and_receive(
        &mut self,
        ep: usize,
        head: &[u8],
        call: Call,
        first_byte: &mut Option<Instant>,
    ) -> Result<Answer, (std::io::Error, bool)> {
        let Call { body, keep, .. } = call;
        if self.conns[ep].is_none() {
            self.conns[ep] = Some(self.open(ep).map_err(|e| (e, false))?);
        }
        let sources = Sources {
            payload: &self.payload,
            body_head: &self.body_head,
            given: self.given.as_deref(),
        };
        let conn = self.conns[ep].as_mut().expect("just opened");
        let sent = conn
            .write_all(head)
            .and_then(|()| send_payload(sources, body, |p| conn.write_all(p)));
        sent.and_then(|()| conn.flush()).map_err(|e| (e, false))?;
        let head = conn.read_head().map_err(|e| (e, false))?;
        let xml = &mut self.xml;
        xml.clear();
        let ok = (200..300).contains(&head.status);
        let mut sink = |b: &[u8]| {
            if (keep == Keep::Xml || !ok) && xml.len() + b.len() <= MAX_XML {
                xml.extend_from_slice(b);
            }
        };
        let mut to = BodySink {
            sink: &mut sink,
            first_byte: None,
        };
        let bytes = conn
            .read_body(&head, keep == Keep::None, &mut to)
            .map_err(|e| (e, true))?;
        if ok && first_byte.is_none() {
            *first_byte = to.first_byte;
        }
        Ok(Answer { head, bytes })
    }

    /// Runs one request (path, query and body set) with retries; returns the final
    /// answer, or the error, and counts the retries into `c`.
    pub(super) fn request(
        &mut self,
        call: Call,
        c: &mut ObjectCompletion,
    ) -> Result<Answer, ObjectError> {
        let op = call.op;
        let mut attempt = 0u32;
        loop {
            let ep = self.next_endpoint;
            self.next_endpoint = (self.next_endpoint + 1) % self.opts.endpoints.len();
            let mut first = None;
            let r = self.exchange(ep, call, &mut first);
            attempt += 1;
            let last = attempt >= self.opts.attempts.max(1);
            match r {
                Ok(a) if (200..300).contains(&a.head.status) => {
                    if let Some(t) = first {
                        c.first_byte = Some(t.saturating_duration_since(self.started));
                    }
                    c.status = a.head.status;
                    return Ok(a);
                }
                Ok(a) => {
                    self.count_status(a.head.status);
                    let (code, message) = self.error_words(a.head.status);
                    let retry = RETRY_STATUS.contains(&a.head.status)
                        || RETRY_CODES.contains(&code.as_str());
                    if retry && !last {
                        c.retries += 1;
                        self.backoff(attempt - 1);
                        continue;
                    }
                    c.status = a.head.status;
                    return Err(ObjectError::Status {
                        op,
                        target: self.target(),
                        endpoint: self.endpoint_name(ep),
                        status: a.head.status,
                        code,
                        message,
                    });
                }
                Err(e) => {
                    self.count_status(0);
                    if !last && !tls::certificate_refused(&e) {
                        c.retries += 1;
                        self.backoff(attempt - 1);
                        continue;
                    }
                    return Err(ObjectError::Connection {
                        op,
                        target: self.target(),
                        endpoint: self.endpoint_name(ep),
                        source: e,
                    });
                }
            }
        }
    }

    /// The S3 error code and message of the answer in `xml`, or the status's reason.
    pub(super) fn error_words(&self, status: u16) -> (String, String) {
        let code = xml::first(&self.xml, "Code").map(|c| c.into_owned());
        let message = xml::first(&self.xml, "Message")
            .map(|m| m.into_owned())
            .unwrap_or_default();
        let code = code.unwrap_or_else(|| {
            match status {
                301 => "PermanentRedirect",
                400 => "BadRequest",
                403 => "Forbidden",
                404 => "NotFound",
                409 => "Conflict",
                500 => "InternalError",
                503 => "ServiceUnavailable",
                _ => "Error",
            }
            .to_string()
        });
        (code, message)
    }

    /// minio-go's wait before try `attempt + 1`: the unit doubled per try, capped, less
    /// a random part of itself (full jitter).
    fn backoff(&mut self, attempt: u32) {
        let sleep = RETRY_UNIT
            .saturating_mul(1u32 << attempt.min(16))
            .min(RETRY_CAP);
        let jitter = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        std::thread::sleep(sleep.mul_f64(1.0 - jitter));
    }
}

/// What the head says of a body: its length, its SHA-256 (or that it is unsigned) and
/// its Content-MD5 when the request needs one.
struct BodyFacts {
    len: u64,
    hash: String,
    md5: Option<String>,
}

/// Where a body's bytes come from: the client's payload and body head, the given body.
#[derive(Clone, Copy)]
struct Sources<'s> {
    payload: &'s Payload,
    body_head: &'s [u8],
    given: Option<&'s dyn BodySource>,
}

impl S3Client {
    fn sources(&self) -> Sources<'_> {
        Sources {
            payload: &self.payload,
            body_head: &self.body_head,
            given: self.given.as_deref(),
        }
    }
}

/// Hands `f` a body's pieces: for a payload body the body head first when it takes it,
/// then the payload for the rest; for a given body its range (nothing for other bodies).
fn send_payload(
    from: Sources<'_>,
    body: Body,
    mut f: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    match body {
        Body::Payload {
            data_offset,
            len,
            head,
        } => {
            let mut rest = len;
            if head {
                f(from.body_head)?;
                rest -= from.body_head.len() as u64;
            }
            from.payload.pieces(data_offset, rest, f)
        }
        Body::Given { offset, len } => match from.given {
            Some(g) => g.pieces(offset, len, &mut f),
            None => Err(std::io::Error::other("a given body was not set")),
        },
        Body::Empty | Body::Small { .. } => Ok(()),
    }
}
