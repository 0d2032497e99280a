//! A multipart upload as one PUT of the workload: initiate (POST ?uploads), the parts in
//! order (PUT ?partNumber&uploadId, each body from the payload, the first opening with
//! the body head as a single PUT's does), complete (POST
//! ?uploadId with the parts' ETags); any failure aborts the upload (DELETE ?uploadId) so
//! no invisible parts are left on the server. Each request has its own retries. With
//! `part_concurrency` over 1 the parts go out at once from that many helper clients,
//! each on its own connections and thread, taking the next part number as they finish
//! one (as minio-go's NumThreads); the first failure stops them all.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::object::s3::{Body, Call, Keep, S3Client};
use crate::object::{ObjectCompletion, ObjectError, sigv4, xml};

impl S3Client {
    /// Part `n`'s (from 1) body: its range of the given body, else its length of the
    /// payload at a number of its own (the first opening with the body head).
    fn part_body(&self, n: u64, size: u64, part: u64, data_offset: u64) -> Body {
        let offset = (n - 1) * part;
        let len = part.min(size - offset);
        if self.given.is_some() {
            return Body::Given { offset, len };
        }
        Body::Payload {
            data_offset: iolab_core::rng::mix(&[data_offset, n]),
            len,
            // The first part opens with the body head, as a single PUT's body does.
            head: n == 1 && !self.body_head.is_empty() && self.body_head.len() as u64 <= len,
        }
    }

    pub(super) fn multipart_put(
        &mut self,
        size: u64,
        data_offset: u64,
        c: &mut ObjectCompletion,
    ) -> Result<(), ObjectError> {
        let part = self.opts.part_size.unwrap_or(size).max(1);
        self.set_path(true);
        self.query.clear();
        self.query.push_str("uploads=");
        self.request(
            Call::new("PUT (initiate multipart)", "POST", Body::Empty, Keep::Xml),
            c,
        )?;
        let Some(id) = xml::first(&self.xml, "UploadId").map(|s| s.into_owned()) else {
            return Err(ObjectError::Status {
                op: "PUT (initiate multipart)",
                target: self.target(),
                endpoint: self.endpoint_name(0),
                status: c.status,
                code: "NoUploadId".into(),
                message: "the answer names no UploadId".into(),
            });
        };
        let mut encoded_id = String::new();
        sigv4::push_encoded(&mut encoded_id, &id, false);
        let r = self.parts(size, part, data_offset, &encoded_id, c);
        if r.is_err() {
            // Best effort: the error that ended the upload is what the user needs.
            self.query.clear();
            self.query.push_str("uploadId=");
            self.query.push_str(&encoded_id);
            let mut ignored = ObjectCompletion::default();
            let _ = self.request(
                Call::new("PUT (abort multipart)", "DELETE", Body::Empty, Keep::Xml),
                &mut ignored,
            );
        }
        r
    }

    fn parts(
        &mut self,
        size: u64,
        part: u64,
        data_offset: u64,
        id: &str,
        c: &mut ObjectCompletion,
    ) -> Result<(), ObjectError> {
        let parts = size.div_ceil(part);
        let etags = if self.opts.part_concurrency > 1 && parts > 1 {
            self.parts_at_once(size, part, data_offset, id, c)?
        } else {
            let mut etags = Vec::with_capacity(parts as usize);
            for n in 1..=parts {
                let body = self.part_body(n, size, part, data_offset);
                let a = self.send_part(n, id, body, c)?;
                etags.push(a);
            }
            etags
        };
        self.small.clear();
        self.small.extend_from_slice(b"<CompleteMultipartUpload>");
        for (i, etag) in etags.iter().enumerate() {
            self.small.extend_from_slice(
                format!("<Part><PartNumber>{}</PartNumber><ETag>", i + 1).as_bytes(),
            );
            xml::push_escaped(&mut self.small, etag);
            self.small.extend_from_slice(b"</ETag></Part>");
        }
        self.small.extend_from_slice(b"</CompleteMultipartUpload>");
        self.query.clear();
        self.query.push_str("uploadId=");
        self.query.push_str(id);
        self.request(
            Call::new(
                "PUT (complete multipart)",
                "POST",
                Body::Small { md5: false },
                Keep::Xml,
            ),
            c,
        )?;
        // S3 may answer 200 and say in the body that completing failed.
        if xml::first(&self.xml, "Error").is_some() || xml::first(&self.xml, "Code").is_some() {
            let (code, message) = self.error_words(c.status);
            return Err(ObjectError::Status {
                op: "PUT (complete multipart)",
                target: self.target(),
                endpoint: self.endpoint_name(0),
                status: c.status,
                code,
                message,
            });
        }
        Ok(())
    }

    /// Sends part `n` of `body`; returns its ETag and counts it into `c`.
    fn send_part(
        &mut self,
        n: u64,
        id: &str,
        body: Body,
        c: &mut ObjectCompletion,
    ) -> Result<String, ObjectError> {
        self.query.clear();
        self.query
            .push_str(&format!("partNumber={n}&uploadId={id}"));
        let len = match body {
            Body::Payload { len, .. } | Body::Given { len, .. } => len,
            Body::Empty | Body::Small { .. } => 0,
        };
        let a = self.request(Call::new("PUT (part)", "PUT", body, Keep::Xml), c)?;
        c.bytes += len;
        c.items += 1;
        Ok(a.head.etag.unwrap_or_default())
    }

    /// The parts sent by `part_concurrency` helpers at once; their ETags in part order.
    fn parts_at_once(
        &mut self,
        size: u64,
        part: u64,
        data_offset: u64,
        id: &str,
        c: &mut ObjectCompletion,
    ) -> Result<Vec<String>, ObjectError> {
        let parts = size.div_ceil(part);
        let senders = (u64::from(self.opts.part_concurrency).min(parts)) as usize;
        self.start_helpers(senders)?;
        let queue = PartQueue {
            next: AtomicU64::new(1),
            failed: AtomicBool::new(false),
            etags: Mutex::new(vec![String::new(); parts as usize]),
            parts,
            size,
            part,
            data_offset,
            id,
        };
        let key = &self.key;
        let path = &self.path;
        let ended: Vec<(ObjectCompletion, Option<ObjectError>)> = std::thread::scope(|s| {
            let running: Vec<_> = self.helpers[..senders]
                .iter_mut()
                .map(|h| {
                    h.key.clone_from(key);
                    h.path.clone_from(path);
                    let queue = &queue;
                    s.spawn(move || queue.send(h))
                })
                .collect();
            running
                .into_iter()
                .map(|t| {
                    t.join().unwrap_or_else(|_| {
                        let e = ObjectError::Setup("a part sender thread panicked".into());
                        (ObjectCompletion::default(), Some(e))
                    })
                })
                .collect()
        });
        match self.fold_helpers(ended, c) {
            Some(e) => Err(e),
            None => Ok(queue.etags.into_inner().unwrap_or_default()),
        }
    }

    /// At least `senders` part senders, each a client of its own (its own connections,
    /// starting at the next endpoints) sharing this one's payload and body head.
    fn start_helpers(&mut self, senders: usize) -> Result<(), ObjectError> {
        while self.helpers.len() < senders {
            let i = self.helpers.len();
            let mut o = self.opts.clone();
            o.part_size = None;
            o.part_concurrency = 1;
            o.first_endpoint = self.next_endpoint + i;
            o.seed = iolab_core::rng::mix(&[self.opts.seed, i as u64 + 1]);
            let h = S3Client::with_payload(o, self.payload.clone())?;
            self.helpers.push(h);
        }
        // A first part a helper sends opens with the body head, as this client's would.
        for h in &mut self.helpers {
            h.body_head.clone_from(&self.body_head);
            h.given.clone_from(&self.given);
        }
        Ok(())
    }

    /// Adds what the first `ended.len()` helpers did to `c`, and their statuses to this
    /// client's; the first error among them.
    fn fold_helpers(
        &mut self,
        ended: Vec<(ObjectCompletion, Option<ObjectError>)>,
        c: &mut ObjectCompletion,
    ) -> Option<ObjectError> {
        let senders = ended.len();
        let mut first_error = None;
        for (hc, e) in ended {
            c.bytes += hc.bytes;
            c.items += hc.items;
            c.retries += hc.retries;
            c.status = c.status.max(hc.status);
            if first_error.is_none() {
                first_error = e;
            }
        }
        for i in 0..senders {
            let counts = std::mem::take(&mut self.helpers[i].statuses);
            for (status, n) in counts {
                self.add_status(status, n);
            }
        }
        first_error
    }
}

/// The parts of one upload, taken in turn by the helpers: the next part number, whether
/// one failed (then all stop), each part's ETag in part order.
struct PartQueue<'a> {
    next: AtomicU64,
    failed: AtomicBool,
    etags: Mutex<Vec<String>>,
    parts: u64,
    size: u64,
    part: u64,
    data_offset: u64,
    id: &'a str,
}

impl PartQueue<'_> {
    /// Sends the next parts on `h` until none is left or one failed anywhere: what it
    /// sent, and its error.
    fn send(&self, h: &mut S3Client) -> (ObjectCompletion, Option<ObjectError>) {
        let mut hc = ObjectCompletion::default();
        while !self.failed.load(Ordering::Relaxed) {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            if n > self.parts {
                break;
            }
            let body = h.part_body(n, self.size, self.part, self.data_offset);
            match h.send_part(n, self.id, body, &mut hc) {
                Ok(etag) => {
                    if let Ok(mut e) = self.etags.lock() {
                        e[n as usize - 1] = etag;
                    }
                }
                Err(e) => {
                    self.failed.store(true, Ordering::Relaxed);
                    return (hc, Some(e));
                }
            }
        }
        (hc, None)
    }
}
