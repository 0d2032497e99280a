//! iolab-backend: how bytes reach storage, and the only crate with `unsafe`.
//! [`IoBackend`] is the submit/reap interface every backend implements (psync, io_uring,
//! null, nbd, nfs); [`ReusedBackend`] keeps one across many short-lived files;
//! [`BufferPool`] lends aligned buffers to in-flight requests; [`files`] opens and
//! manages data files; [`device`] guards block devices; [`process`] reads CPU time and
//! pins threads; [`alloc_count`] counts a thread's allocations for tests.

pub mod alloc_count;
pub mod buffer;
pub mod device;
pub mod error;
pub mod files;
mod libnbd;
pub mod meta;
pub mod nbd;
pub mod nfs;
mod nfs_backend;
mod null;
pub mod object;
pub mod process;
mod psync;
pub mod reused;
pub mod time;
mod uring;
pub mod vfs;

pub use buffer::BufferPool;
pub use error::BackendError;
pub use files::{DataFile, OpenSpec};
pub use psync::PsyncBackend;
pub use reused::ReusedBackend;
pub use uring::{UringBackend, uring_available};

use iolab_core::spec::BackendKind;

/// Direction of a data transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoDir {
    Read,
    Write,
    /// Discard the range (no buffer): BLKDISCARD on a device, a punched hole in a file.
    Trim,
}

/// One I/O: `len` bytes at `offset` of file number `file` (an index into the files the
/// backend was opened with), into or out of buffer slot `slot`, starting `buf_offset`
/// bytes into the slot (a write can take its data from anywhere in a slot that has a
/// write window, see [`BackendOptions::write_window`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoRequest {
    pub file: u32,
    pub dir: IoDir,
    pub offset: u64,
    pub len: u32,
    pub slot: u32,
    pub buf_offset: u32,
    /// The I/O's priority (Linux ioprio: class << 13 | level) in its io_uring SQE; 0:
    /// none (the thread's). Other backends ignore it.
    pub ioprio: u16,
}

/// A finished I/O: the slot it used and the bytes transferred, or -errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub slot: u32,
    pub result: i32,
}

/// What a backend can do; the engine adapts to it rather than to its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// The most I/Os it keeps in flight per worker (psync: 1).
    pub max_queue_depth: u32,
    /// False for the null backend: no files are needed and none are touched.
    pub touches_storage: bool,
    /// True when `push` may hand the request to the kernel at once (io_uring with a
    /// submit batch of 1): the engine then stamps each I/O's issue time just before its
    /// push, not once before `submit`.
    pub submits_on_push: bool,
    /// Trims are synchronous calls made one at a time, whatever the queue depth (io_uring
    /// has no discard for files, and fio's io_uring engine does its trims this way too).
    pub trims_inline: bool,
    /// Works on an NBD export (`--nbd-uri`), not on local files or devices.
    pub reaches_export: bool,
    /// Reaches files on an NFS export (--nfs-url) through a user-space client, and only
    /// those.
    pub reaches_nfs: bool,
}

/// Submit/reap for every backend. A worker queues requests with [`IoBackend::push`]
/// (the slot is then in flight), hands them to the kernel with [`IoBackend::submit`]
/// (waiting until at least `wait_for` have completed), and collects completions with
/// [`IoBackend::reap`], which returns their slots. psync is a queue of depth 1 that
/// completes inside `submit`.
pub trait IoBackend {
    fn kind(&self) -> BackendKind;
    fn capabilities(&self) -> Capabilities;
    /// The buffers requests refer to by slot.
    fn buffers(&mut self) -> &mut BufferPool;
    /// Queues one request. Fails if `max_queue_depth` requests are already queued or in
    /// flight.
    fn push(&mut self, req: IoRequest) -> Result<(), BackendError>;
    /// Submits queued requests and blocks until at least `wait_for` completions are
    /// ready to reap.
    fn submit(&mut self, wait_for: u32) -> Result<(), BackendError>;
    /// Appends every ready completion to `out` and frees their slots.
    fn reap(&mut self, out: &mut Vec<Completion>);
    /// Requests pushed but not yet reaped.
    fn in_flight(&self) -> u32;
}

/// Settings a backend is opened with.
#[derive(Clone, Copy, Debug)]
pub struct BackendOptions {
    pub queue_depth: u32,
    pub block_size: u64,
    /// Buffer alignment (the direct-I/O alignment, or 4096).
    pub alignment: u64,
    /// Requests queued before they are handed to the kernel (io_uring): 1 submits each
    /// at once, as fio does by default (iodepth_batch_submit=1).
    pub submit_batch: u32,
    /// Extra bytes in every buffer slot beyond `block_size`. Writes that start at varying
    /// offsets in a slot of random data (the engine's: their file offset modulo the
    /// window) carry different data at no cost per I/O, so compressing or deduplicating
    /// storage cannot shrink them (0: none).
    pub write_window: u64,
}

impl BackendOptions {
    /// The size of every buffer slot: a block and the write window.
    pub fn slot_size(&self) -> u64 {
        self.block_size.saturating_add(self.write_window)
    }
}

/// Opens a backend of `kind` over `files`, which must outlive it.
pub fn open_backend<'a>(
    kind: BackendKind,
    files: &'a [DataFile],
    opts: BackendOptions,
) -> Result<Box<dyn IoBackend + 'a>, BackendError> {
    Ok(match kind {
        BackendKind::Psync => Box::new(psync::PsyncBackend::new(files, opts, false)?),
        BackendKind::Sync => Box::new(psync::PsyncBackend::new(files, opts, true)?),
        BackendKind::Uring => Box::new(uring::UringBackend::new(files, opts)?),
        BackendKind::Null => Box::new(null::NullBackend::new(opts)?),
        BackendKind::Nbd => Box::new(nbd::NbdBackend::new(files, opts)?),
        BackendKind::Nfs => Box::new(nfs_backend::NfsBackend::new(files, opts)?),
    })
}

/// An opened backend: io_uring's and psync's (sync's too) by their types, so that a
/// loop built for one calls its push, submit and reap in line; any other through `dyn`.
pub enum Opened<'a> {
    Uring(Box<UringBackend<'a>>),
    Psync(Box<PsyncBackend<'a>>),
    Other(Box<dyn IoBackend + 'a>),
}

impl<'a> Opened<'a> {
    /// Opens a backend of `kind` over `files`, as [`open_backend`].
    pub fn open(
        kind: BackendKind,
        files: &'a [DataFile],
        opts: BackendOptions,
    ) -> Result<Opened<'a>, BackendError> {
        Ok(match kind {
            BackendKind::Uring => Opened::Uring(Box::new(UringBackend::new(files, opts)?)),
            BackendKind::Psync | BackendKind::Sync => Opened::Psync(Box::new(PsyncBackend::new(
                files,
                opts,
                kind == BackendKind::Sync,
            )?)),
            _ => Opened::Other(open_backend(kind, files, opts)?),
        })
    }

    pub fn as_dyn(&mut self) -> &mut (dyn IoBackend + 'a) {
        match self {
            Opened::Uring(b) => b.as_mut(),
            Opened::Psync(b) => b.as_mut(),
            Opened::Other(b) => b.as_mut(),
        }
    }
}

/// The capabilities of a backend kind, known before opening one.
pub fn capabilities_of(kind: BackendKind, queue_depth: u32) -> Capabilities {
    match kind {
        BackendKind::Psync | BackendKind::Sync => Capabilities {
            max_queue_depth: 1,
            touches_storage: true,
            submits_on_push: false,
            trims_inline: true,
            reaches_export: false,
            reaches_nfs: false,
        },
        BackendKind::Uring => Capabilities {
            max_queue_depth: queue_depth,
            touches_storage: true,
            submits_on_push: true,
            trims_inline: true,
            reaches_export: false,
            reaches_nfs: false,
        },
        // Queue depth 1: synchronous calls; deeper: libnfs's asynchronous ones. Trims
        // fail (NFSv3 has no discard).
        BackendKind::Nfs => Capabilities {
            max_queue_depth: queue_depth.max(1),
            touches_storage: true,
            submits_on_push: false,
            trims_inline: true,
            reaches_export: false,
            reaches_nfs: true,
        },
        BackendKind::Null => Capabilities {
            max_queue_depth: queue_depth,
            touches_storage: false,
            submits_on_push: false,
            trims_inline: false,
            reaches_export: false,
            reaches_nfs: false,
        },
        BackendKind::Nbd => Capabilities {
            max_queue_depth: queue_depth,
            touches_storage: true,
            submits_on_push: false,
            trims_inline: true,
            reaches_export: true,
            reaches_nfs: false,
        },
    }
}
