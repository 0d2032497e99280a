//! The tiered cache: [`KvCache`] holds the index of entries (which tier, how big, when
//! last used), a CPU-memory tier whose entries are buffers really held, and a storage
//! tier of `.npy` files in one directory. Writes go to the first tier with room;
//! room is made by waterfall LRU eviction as kv-cache.py's `_ensure_space_in_tier`:
//! the CPU tier demotes its least recently used entries to storage (down to 80 % of
//! its budget), the storage tier deletes its own (evict.rs). Entries are never promoted
//! on a read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use iolab_core::kvcache::{ModelShape, TierKind};
use iolab_core::units::Nanos;

use super::entry::{EntryIo, Spans, npy_header};
use super::extents::Extents;
use crate::error::EngineError;

mod evict;

/// Where an entry is.
enum Place {
    Cpu(Arc<Vec<u8>>),
    Storage,
}

struct Entry {
    place: Place,
    /// Header and payload bytes.
    size: u64,
    last_access: u64,
    access_count: u64,
    /// Reads under way: the entry is not evicted while any is.
    readers: u32,
    /// Being demoted: it stays readable where it was until the move is done.
    moving: bool,
    /// Where it starts on the block device (0 for files and objects).
    offset: u64,
}

#[derive(Default)]
struct Index {
    entries: HashMap<String, Entry>,
    cpu_used: u64,
    storage_used: u64,
    tick: u64,
    /// The storage tier on a block device: its free runs.
    extents: Option<Extents>,
}

/// One cache operation, as the caller records it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Op {
    pub tier: TierKind,
    pub bytes: u64,
    pub spans: Spans,
}

/// What a write did: the operation on the new entry, and the demotions it caused.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Written {
    pub op: Option<Op>,
    /// Demotions of CPU entries: each a CPU read and a storage write.
    pub demoted: Vec<(Op, Op)>,
    /// No tier had room (every entry that could leave was in use): nothing written.
    pub refused: bool,
    /// Time the write waited before its I/O: for a writer's turn
    /// (`--max-concurrent-allocs`) and for room the entries in use held, its own and its
    /// demotions' (in no tier's latency: the allocation wait).
    pub waited: Nanos,
}

/// Entries that left a tier (the reference's offloads and deletions).
#[derive(Default, Debug)]
pub struct Evictions {
    pub cpu: AtomicU64,
    pub storage: AtomicU64,
}

pub struct KvCache {
    index: Mutex<Index>,
    shape: ModelShape,
    cpu_limit: u64,
    storage_limit: u64,
    dir: PathBuf,
    /// `dir` is a block device (entries at offsets in it).
    device: bool,
    /// `--max-concurrent-allocs` (0: none): writers at once.
    allocs: u32,
    writing: Mutex<u32>,
    writer_done: Condvar,
    /// Signalled when an entry may have become evictable or a reservation ended.
    room: Condvar,
    pub evictions: Evictions,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

/// The CPU tier refuses an entry above this share of its budget, and evicts down to
/// [`CPU_TARGET`] of it (kv-cache.py's eviction settings).
const CPU_MAX_ENTRY: f64 = 0.95;
const CPU_TARGET: f64 = 0.80;

impl KvCache {
    pub fn new(
        shape: ModelShape,
        cpu_limit: u64,
        storage_limit: u64,
        dir: &Path,
        allocs: u32,
    ) -> KvCache {
        KvCache {
            index: Mutex::new(Index::default()),
            shape,
            cpu_limit,
            storage_limit,
            dir: dir.to_path_buf(),
            device: false,
            allocs,
            writing: Mutex::new(0),
            writer_done: Condvar::new(),
            room: Condvar::new(),
            evictions: Evictions::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The storage tier on the block device `dir`: its `capacity` bytes from `start`
    /// (this rank's share), entries at offsets aligned to `block`, instead of files.
    pub fn on_device(mut self, start: u64, capacity: u64, block: u64) -> KvCache {
        self.storage_limit = self.storage_limit.min(capacity);
        self.lock().extents = Some(Extents::new(start, self.storage_limit, block));
        self.device = true;
        self
    }

    /// An entry's file (or object key); the device itself on a block device.
    pub fn path_of(&self, key: &str) -> PathBuf {
        if self.device {
            return self.dir.clone();
        }
        self.dir.join(format!("{key}.npy"))
    }

    /// The bytes an entry of `size` takes on the storage tier (whole blocks on a device).
    fn taken(ix: &Index, size: u64) -> u64 {
        ix.extents.as_ref().map_or(size, |x| x.rounded(size))
    }

    /// Bytes an entry of `tokens` tokens takes (header and payload).
    pub fn entry_bytes(&self, tokens: u64) -> u64 {
        npy_header(&self.shape, tokens).len() as u64 + tokens * self.shape.bytes_per_token()
    }

    /// The entry's tier and size, if cached.
    pub fn tier_of(&self, key: &str) -> Option<(TierKind, u64)> {
        self.lock().entries.get(key).map(|e| {
            let tier = match e.place {
                Place::Cpu(_) => TierKind::Cpu,
                Place::Storage => TierKind::Storage,
            };
            (tier, e.size)
        })
    }

    /// The bytes each tier holds.
    pub fn used(&self) -> (u64, u64) {
        let ix = self.lock();
        (ix.cpu_used, ix.storage_used)
    }

    /// Reads an entry whole (a cache access): None on a miss.
    pub fn access(&self, io: &mut EntryIo<'_>, key: &str) -> Result<Option<Op>, EngineError> {
        self.access_counted(io, key, &mut |_, _| {})
    }

    /// [`KvCache::access`], calling `begins(tier, bytes)` on a hit before the read starts
    /// (kv-cache.py counts a read's bytes then: one cut at the end of a run counts).
    pub fn access_counted(
        &self,
        io: &mut EntryIo<'_>,
        key: &str,
        begins: &mut dyn FnMut(TierKind, u64),
    ) -> Result<Option<Op>, EngineError> {
        let place = {
            let mut ix = self.lock();
            ix.tick += 1;
            let tick = ix.tick;
            match ix.entries.get_mut(key) {
                None => None,
                Some(e) => {
                    e.last_access = tick;
                    e.access_count += 1;
                    e.readers += 1;
                    let data = match &e.place {
                        Place::Cpu(d) => Some(d.clone()),
                        Place::Storage => None,
                    };
                    Some((data, e.size, e.offset))
                }
            }
        };
        let Some((place, size, offset)) = place else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        };
        self.hits.fetch_add(1, Ordering::Relaxed);
        let tier = match place {
            Some(_) => TierKind::Cpu,
            None => TierKind::Storage,
        };
        begins(tier, size);
        let r = match place {
            Some(data) => {
                let t0 = io.clock.now();
                let bytes = io.read_memory(&data);
                let took = io.clock.now().saturating_sub(t0);
                Ok(Op {
                    tier: TierKind::Cpu,
                    bytes,
                    spans: Spans {
                        total: took,
                        device: took,
                    },
                })
            }
            None => io
                .read_file(&self.path_of(key), offset, size)
                .map(|(bytes, spans)| Op {
                    tier: TierKind::Storage,
                    bytes,
                    spans,
                }),
        };
        if let Some(e) = self.lock().entries.get_mut(key) {
            e.readers -= 1;
        }
        self.room.notify_all();
        r.map(Some)
    }

    /// Writes a new entry of `tokens` tokens (a prefill), in the first tier with room.
    pub fn allocate(
        &self,
        io: &mut EntryIo<'_>,
        key: &str,
        tokens: u64,
    ) -> Result<Written, EngineError> {
        let mut waited = self.acquire(io);
        // A writer's turn can come minutes later, after the run's end: then nothing.
        let r = if (io.over)() {
            Err(EngineError::Interrupted)
        } else {
            self.allocate_inner(io, key, tokens, &mut waited)
        };
        self.release();
        r.map(|w| Written { waited, ..w })
    }

    /// Takes a writer's turn; the time waited for it.
    fn acquire(&self, io: &EntryIo<'_>) -> Nanos {
        if self.allocs == 0 {
            return Nanos::ZERO;
        }
        let mut n = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        if *n < self.allocs {
            *n += 1;
            return Nanos::ZERO;
        }
        let t0 = io.clock.now();
        while *n >= self.allocs {
            n = self.writer_done.wait(n).unwrap_or_else(|p| p.into_inner());
        }
        *n += 1;
        io.clock.now().saturating_sub(t0)
    }

    fn release(&self) {
        if self.allocs == 0 {
            return;
        }
        let mut n = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        *n -= 1;
        self.writer_done.notify_one();
    }

    fn allocate_inner(
        &self,
        io: &mut EntryIo<'_>,
        key: &str,
        tokens: u64,
        waited: &mut Nanos,
    ) -> Result<Written, EngineError> {
        let header = npy_header(&self.shape, tokens);
        let payload = tokens * self.shape.bytes_per_token();
        let size = header.len() as u64 + payload;
        if !self.forget(key) {
            // Being read: the entry stays as it is (keys are unique per turn, so only
            // a decode's miss writes a key twice).
            return Ok(Written::default());
        }
        let mut out = Written::default();
        if let Some(victims) = self.make_room_cpu(size) {
            out.demoted = match self.demote(io, victims, waited) {
                Ok(d) => d,
                Err(e) => {
                    self.lock().cpu_used -= size;
                    return Err(e);
                }
            };
            let t0 = io.clock.now();
            let data = match io.fill_memory(&self.dir.join(format!("{key}.npy")), &header, payload)
            {
                Ok(d) => d,
                Err(e) => {
                    self.lock().cpu_used -= size;
                    return Err(e);
                }
            };
            let took = io.clock.now().saturating_sub(t0);
            self.insert(key, Place::Cpu(Arc::new(data)), size, 0);
            out.op = Some(Op {
                tier: TierKind::Cpu,
                bytes: size,
                spans: Spans {
                    total: took,
                    device: took,
                },
            });
            return Ok(out);
        }
        let Some(offset) = self.make_room_storage(size, io, waited)? else {
            out.refused = true;
            return Ok(out);
        };
        let spans = match io.write_file(&self.path_of(key), offset, &header, payload, None) {
            Ok(s) => s,
            Err(e) => {
                self.unreserve(size, offset);
                return Err(e);
            }
        };
        self.insert(key, Place::Storage, size, offset);
        out.op = Some(Op {
            tier: TierKind::Storage,
            bytes: size,
            spans,
        });
        Ok(out)
    }

    /// Drops an earlier entry of `key` (its file is overwritten); false if it is
    /// being read.
    fn forget(&self, key: &str) -> bool {
        let mut ix = self.lock();
        let Some(e) = ix.entries.get(key) else {
            return true;
        };
        if e.readers > 0 || e.moving {
            return false;
        }
        let e = ix.entries.remove(key).expect("looked up above");
        match e.place {
            Place::Cpu(_) => ix.cpu_used -= e.size,
            Place::Storage => Self::free_storage(&mut ix, e.size, e.offset),
        }
        true
    }

    fn insert(&self, key: &str, place: Place, size: u64, offset: u64) {
        let mut ix = self.lock();
        ix.tick += 1;
        let tick = ix.tick;
        ix.entries.insert(
            key.to_string(),
            Entry {
                place,
                size,
                last_access: tick,
                access_count: 0,
                readers: 0,
                moving: false,
                offset,
            },
        );
        drop(ix);
        self.room.notify_all();
    }

    /// The files of the storage tier's entries (what iolab created and still keeps);
    /// none on a block device (its entries are runs of blocks, nothing to remove).
    pub fn files(&self) -> Vec<PathBuf> {
        let ix = self.lock();
        if ix.extents.is_some() {
            return Vec::new();
        }
        ix.entries
            .iter()
            .filter(|(_, e)| matches!(e.place, Place::Storage))
            .map(|(k, _)| self.path_of(k))
            .collect()
    }
}
