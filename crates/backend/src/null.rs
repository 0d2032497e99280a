//! [`NullBackend`]: completes every request at once without touching storage, so a run
//! on it measures iolab's own per-I/O cost.

use iolab_core::spec::BackendKind;

use crate::buffer::BufferPool;
use crate::error::BackendError;
use crate::{BackendOptions, Capabilities, Completion, IoBackend, IoRequest};

pub struct NullBackend {
    pool: BufferPool,
    depth: u32,
    done: Vec<Completion>,
}

impl NullBackend {
    pub fn new(opts: BackendOptions) -> Result<Self, BackendError> {
        Ok(NullBackend {
            // Buffers exist so writes can be filled and reads checked as on any backend:
            // as large as the workload's (a 2 MiB write fills 2 MiB), though the null
            // backend moves no data.
            pool: BufferPool::new(opts.queue_depth, opts.block_size, opts.alignment)?,
            depth: opts.queue_depth,
            done: Vec::with_capacity(opts.queue_depth as usize),
        })
    }
}

impl IoBackend for NullBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Null
    }

    fn capabilities(&self) -> Capabilities {
        crate::capabilities_of(BackendKind::Null, self.depth)
    }

    fn buffers(&mut self) -> &mut BufferPool {
        &mut self.pool
    }

    #[inline]
    fn push(&mut self, req: IoRequest) -> Result<(), BackendError> {
        if self.done.len() as u32 >= self.depth {
            return Err(BackendError::QueueFull { depth: self.depth });
        }
        self.done.push(Completion {
            slot: req.slot,
            result: req.len as i32,
        });
        Ok(())
    }

    #[inline]
    fn submit(&mut self, _wait_for: u32) -> Result<(), BackendError> {
        Ok(())
    }

    #[inline]
    fn reap(&mut self, out: &mut Vec<Completion>) {
        // The engine reaps into an empty vector of the same capacity: trading the two
        // copies nothing (append would call memcpy for a few bytes per I/O).
        if out.is_empty() {
            std::mem::swap(out, &mut self.done);
        } else {
            out.append(&mut self.done);
        }
    }

    fn in_flight(&self) -> u32 {
        self.done.len() as u32
    }
}
