//! The tiered cache: [`KvCache`] holds the index of entries (which tier, how big, when
//! last used), a CPU-memory tier whose entries are buffers really held, and a storage
//! tier of `.npy` files in one directory. Writes go to the first tier with room;
//! room is made by waterfall LRU eviction as kv-cache.py's `_ensure_space_in_tier`:
//! the CPU tier demotes its least recently used entries to storage, holding them until
//! their write has ended, and never more than its budget (cpu.rs), the storage tier
//! deletes its own (evict.rs). Entries are never promoted on a read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use iolab_core::kvcache::{ModelShape, TierKind};
use iolab_core::units::Nanos;

use super::entry::{EntryIo, Spans, npy_header};
use super::extents::Extents;
use crate::error::EngineError;

mod cpu;
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
    /// Being demoted: readable where it was until its write has ended (then on the
    /// storage tier), its bytes the CPU tier's until its buffer is let go (cpu.rs).
    moving: bool,
    /// Where it starts on the block device (0 for files and objects).
    offset: u64,
}

impl Entry {
    fn on_cpu(&self) -> bool {
        matches!(self.place, Place::Cpu(_))
    }
}

#[derive(Default)]
struct Index {
    entries: HashMap<String, Entry>,
    /// Bytes the CPU tier holds: its entries (those being demoted until their buffer is
    /// let go) and the room taken for entries being filled.
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
    /// (`--max-concurrent-allocs`) and for room the entries in use or being demoted held,
    /// its own and its demotions' (in no tier's latency: the allocation wait).
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
    /// What the CPU tier really holds, counted apart from `cpu_used` for the tests.
    #[cfg(test)]
    probe: Mutex<CpuProbe>,
}

/// The CPU tier's buffers (each alive while anything holds it) and the bytes being
/// filled.
#[cfg(test)]
#[derive(Default)]
struct CpuProbe {
    buffers: Vec<(std::sync::Weak<Vec<u8>>, u64)>,
    filling: u64,
}

/// kv-cache.py's eviction settings for the CPU tier (a tier with one below it): an entry
/// above [`CPU_MAX_ENTRY`] of the budget goes to storage; a new entry is taken while the
/// tier's bytes stay within [`CPU_TARGET`] of it, or while the tier holds under
/// [`CPU_NEAR_EMPTY`]; entries are demoted until one fits, unless the tier's entries are
/// under [`CPU_FEW`] of the budget and the new one over half the target (it goes to
/// storage at once).
const CPU_MAX_ENTRY: f64 = 0.95;
const CPU_TARGET: f64 = 0.80;
const CPU_NEAR_EMPTY: f64 = 0.05;
const CPU_FEW: f64 = 0.20;

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
            #[cfg(test)]
            probe: Mutex::default(),
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
        if self.make_room_cpu(size, io, waited, &mut out.demoted)? {
            out.op = Some(self.fill_cpu(io, key, &header, payload)?);
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

    /// Makes a new CPU-tier entry in the room taken for it (given back if the fill
    /// fails or is cut).
    fn fill_cpu(
        &self,
        io: &mut EntryIo<'_>,
        key: &str,
        header: &[u8],
        payload: u64,
    ) -> Result<Op, EngineError> {
        let size = header.len() as u64 + payload;
        #[cfg(test)]
        {
            self.probe.lock().unwrap().filling += size;
        }
        let t0 = io.clock.now();
        let data = io.fill_memory(&self.dir.join(format!("{key}.npy")), header, payload);
        let took = io.clock.now().saturating_sub(t0);
        let data = match data {
            Ok(d) => Arc::new(d),
            Err(e) => {
                #[cfg(test)]
                {
                    self.probe.lock().unwrap().filling -= size;
                }
                self.lock().cpu_used -= size;
                self.room.notify_all();
                return Err(e);
            }
        };
        #[cfg(test)]
        {
            let mut probe = self.probe.lock().unwrap();
            probe.filling -= size;
            probe.buffers.push((Arc::downgrade(&data), size));
        }
        self.insert(key, Place::Cpu(data), size, 0);
        Ok(Op {
            tier: TierKind::Cpu,
            bytes: size,
            spans: Spans {
                total: took,
                device: took,
            },
        })
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
