//! [`NullObjects`]: an object backend that completes every request at once without
//! reaching anything, remembering only which keys exist and their sizes (in a
//! [`NullStore`] its clients share, as a server's objects are) and a digest of each
//! body a caller gave ([`ObjectBackend::set_body`]), so the engine's
//! workloads can be tested, and requests counted, without a server.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use std::hash::Hasher;

use crate::object::{
    BodySource, ObjectBackend, ObjectCompletion, ObjectError, ObjectOp, ObjectRequest, StatusCounts,
};

/// The objects and the count of requests of every [`NullObjects`] made over it.
#[derive(Default)]
pub struct NullStore {
    pub objects: Mutex<BTreeMap<String, u64>>,
    /// Requests run, by operation name.
    pub requests: Mutex<BTreeMap<&'static str, u64>>,
    /// Keys last PUT with a given body: that body's [`NullStore::digest`].
    pub given: Mutex<BTreeMap<String, u64>>,
}

impl NullStore {
    /// A digest of `bytes` (SipHash over them in order, however they come in pieces).
    pub fn digest(bytes: &[u8]) -> u64 {
        let mut h = std::hash::DefaultHasher::new();
        h.write(bytes);
        h.finish()
    }

    /// Requests of `op` ("PUT", "GET", ...) so far.
    pub fn count(&self, op: &str) -> u64 {
        self.requests
            .lock()
            .expect("null store")
            .get(op)
            .copied()
            .unwrap_or(0)
    }

    /// Keys that exist now.
    pub fn keys(&self) -> Vec<String> {
        self.objects
            .lock()
            .expect("null store")
            .keys()
            .cloned()
            .collect()
    }
}

pub struct NullObjects {
    store: Arc<NullStore>,
    done: Option<ObjectCompletion>,
    token: Option<String>,
    given: Option<Arc<dyn BodySource>>,
}

impl NullObjects {
    pub fn new(store: Arc<NullStore>) -> Self {
        NullObjects {
            store,
            done: None,
            token: None,
            given: None,
        }
    }
}

impl NullObjects {
    /// A PUT with a given body: its digest kept for the key (read in its pieces).
    fn take_given(&mut self, req: &ObjectRequest<'_>) -> Result<(), ObjectError> {
        let (ObjectOp::Put { size, .. }, Some(body)) = (req.op, self.given.take()) else {
            return Ok(());
        };
        let mut h = std::hash::DefaultHasher::new();
        body.pieces(0, size, &mut |p| {
            h.write(p);
            Ok(())
        })
        .map_err(|e| ObjectError::Setup(e.to_string()))?;
        let mut given = self.store.given.lock().expect("null store");
        given.insert(req.key.to_string(), h.finish());
        Ok(())
    }
}

impl ObjectBackend for NullObjects {
    fn touches_storage(&self) -> bool {
        false
    }

    fn push(&mut self, req: ObjectRequest<'_>) -> Result<(), ObjectError> {
        if self.done.is_some() {
            return Err(ObjectError::Setup(
                "a request is already in flight on this connection".into(),
            ));
        }
        self.take_given(&req)?;
        *self
            .store
            .requests
            .lock()
            .expect("null store")
            .entry(req.op.name())
            .or_default() += 1;
        let mut objects = self.store.objects.lock().expect("null store");
        let mut c = ObjectCompletion {
            tag: req.tag,
            status: 200,
            ..ObjectCompletion::default()
        };
        let missing = |key: &str| {
            Box::new(ObjectError::Status {
                op: req.op.name(),
                target: key.to_string(),
                endpoint: "null".into(),
                status: 404,
                code: "NoSuchKey".into(),
                message: String::new(),
            })
        };
        match req.op {
            ObjectOp::Put { size, .. } => {
                objects.insert(req.key.to_string(), size);
                c.bytes = size;
            }
            ObjectOp::Get { range } => match objects.get(req.key) {
                Some(&len) => {
                    c.bytes = range.map_or(len, |(o, l)| l.min(len.saturating_sub(o)));
                    c.length = Some(len);
                    c.first_byte = Some(std::time::Duration::ZERO);
                }
                None => c.error = Some(missing(req.key)),
            },
            ObjectOp::Head => match objects.get(req.key) {
                Some(&len) => c.length = Some(len),
                None => c.error = Some(missing(req.key)),
            },
            ObjectOp::Delete => {
                objects.remove(req.key);
                c.status = 204;
            }
            ObjectOp::DeleteMany { keys } => {
                for k in keys {
                    objects.remove(k);
                }
                c.items = keys.len() as u64;
            }
            ObjectOp::List {
                prefix,
                token,
                max_keys,
            } => {
                let after = token.unwrap_or("");
                let keys: Vec<&String> = objects
                    .keys()
                    .filter(|k| k.starts_with(prefix) && k.as_str() > after)
                    .take(max_keys as usize + 1)
                    .collect();
                c.truncated = keys.len() > max_keys as usize;
                c.items = keys.len().min(max_keys as usize) as u64;
                self.token = c.truncated.then(|| keys[max_keys as usize - 1].to_string());
            }
            ObjectOp::HeadBucket | ObjectOp::CreateBucket | ObjectOp::DeleteBucket => {}
        }
        drop(objects);
        self.done = Some(c);
        Ok(())
    }

    fn submit(&mut self) -> Result<(), ObjectError> {
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<ObjectCompletion>) {
        out.extend(self.done.take());
    }

    fn in_flight(&self) -> u32 {
        u32::from(self.done.is_some())
    }

    fn next_token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    fn status_counts(&self) -> StatusCounts {
        Vec::new()
    }

    fn set_body(&mut self, body: Option<Arc<dyn BodySource>>) {
        self.given = body;
    }
}
