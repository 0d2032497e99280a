//! The storage tier on an S3 bucket: an entry is one object keyed as its file would be
//! named (`<prefix>rank_<N>/<key>.npy`) holding the bytes its file would (data.rs): a new
//! entry made a piece at a time as the client sends it, an entry demoted from the CPU
//! tier sent from the buffer it held there. PUT whole (one request, or the client's
//! multipart upload above its part size: one write either way), read back in
//! transfer-size ranged GETs as the file tier reads its pieces, deleted on eviction. Each
//! request is timed by the `Clock` into the worker's `Recorder` as the file tier's I/Os
//! are.

use std::path::Path;
use std::sync::Arc;

use iolab_backend::object::{
    BodySource, ObjectBackend, ObjectCompletion, ObjectError, ObjectOp, ObjectRequest,
};
use iolab_core::result::{ErrorRecord, OpKind};

use super::{EntryIo, Spans, path_hash};
use crate::error::EngineError;

fn object_error(op: &'static str, key: &str, e: ObjectError) -> EngineError {
    EngineError::Object {
        op,
        key: key.to_string(),
        source: Box::new(e),
    }
}

impl EntryIo<'_> {
    /// Puts this worker's storage tier on the block device the cache names (entries at
    /// their offsets in it).
    pub fn use_device(&mut self) {
        self.on_device = true;
    }

    /// Puts this worker's storage tier in a bucket, reached through `backend`.
    pub fn use_objects(&mut self, backend: Box<dyn ObjectBackend>) {
        self.objects = Some(backend);
    }

    /// One request, timed and recorded as `kind` (none: not recorded); its completion.
    fn object_request(
        &mut self,
        op: ObjectOp<'_>,
        key: &str,
        kind: Option<OpKind>,
    ) -> Result<ObjectCompletion, EngineError> {
        let backend = self.objects.as_mut().expect("the storage tier is a bucket");
        let t0 = self.clock.now();
        let mut c = backend.run(ObjectRequest { op, key, tag: 0 });
        let at = self.clock.now();
        if let Some(e) = c.error.take() {
            if let Some(kind) = kind {
                self.rec.error(ErrorRecord {
                    rank: 0,
                    host: String::new(),
                    op: kind,
                    path: key.to_string(),
                    offset: None,
                    errno: None,
                    message: e.to_string(),
                });
            }
            return Err(object_error(op.name(), key, *e));
        }
        if let Some(kind) = kind {
            self.rec.record(kind, at.saturating_sub(t0), c.bytes, at);
        }
        Ok(c)
    }

    /// PUTs an entry of `header` + `payload` bytes as the object `key` (made as its file
    /// would be, a piece at a time as the client sends it); a demoted entry (`from`) as
    /// the bytes it holds.
    pub(super) fn put_object(
        &mut self,
        key: &Path,
        header: &[u8],
        payload: u64,
        from: Option<&Arc<Vec<u8>>>,
    ) -> Result<Spans, EngineError> {
        let name = key.to_string_lossy();
        if (self.over)() {
            return Err(EngineError::Interrupted);
        }
        let backend = self.objects.as_mut().expect("the storage tier is a bucket");
        let size = match from {
            Some(data) => {
                let body: Arc<dyn BodySource> = data.clone();
                backend.set_body(Some(body));
                data.len() as u64
            }
            None => {
                let body = self.data.body(key, header, payload);
                let size = body.len();
                backend.set_body(Some(Arc::new(body)));
                size
            }
        };
        let t0 = self.clock.now();
        let put = ObjectOp::Put {
            size,
            data_offset: path_hash(key),
        };
        let r = self.object_request(put, &name, Some(OpKind::Write));
        // A PUT that failed before it took the body leaves it with the client: a demoted
        // entry's buffer is the CPU tier's until every holder lets go (cache/cpu.rs).
        if let Some(backend) = self.objects.as_mut() {
            backend.set_body(None);
        }
        r?;
        let took = self.clock.now().saturating_sub(t0);
        Ok(Spans {
            total: took,
            device: took,
        })
    }

    /// GETs `size` bytes of the object `key`: whole when one transfer holds it, else in
    /// transfer-size ranges; the bytes read.
    pub(super) fn get_object(
        &mut self,
        key: &Path,
        size: u64,
    ) -> Result<(u64, Spans), EngineError> {
        let name = key.to_string_lossy();
        let t = self.transfer() as u64;
        let t0 = self.clock.now();
        let mut at = 0u64;
        while at < size {
            if (self.over)() {
                return Err(EngineError::Interrupted);
            }
            let n = (size - at).min(t);
            let range = (size > t).then_some((at, n));
            let c = self.object_request(ObjectOp::Get { range }, &name, Some(OpKind::Read))?;
            if c.bytes == 0 {
                let why = format!("the object ended at {at} of its {size} bytes");
                return Err(object_error("GET", &name, ObjectError::Setup(why)));
            }
            at += c.bytes.min(n);
        }
        let took = self.clock.now().saturating_sub(t0);
        Ok((
            at,
            Spans {
                total: took,
                device: took,
            },
        ))
    }

    /// Removes an entry from the storage tier: its file, its object DELETEd (after
    /// the client's retries, a failure is the run's: iolab leaves none of its objects).
    pub fn remove_entry(&mut self, key: &Path) -> Result<(), EngineError> {
        if self.on_device {
            // A run of blocks: the cache's extents free it; the device stays.
            return Ok(());
        }
        if self.objects.is_none() {
            let _ = std::fs::remove_file(key);
            return Ok(());
        }
        let name = key.to_string_lossy();
        self.object_request(ObjectOp::Delete, &name, None)
            .map(|_| ())
    }
}
