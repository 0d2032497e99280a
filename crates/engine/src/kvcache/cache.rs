//! The tiered cache: [`KvCache`] holds the index of entries (which tier, how big, when
//! last used), a CPU-memory tier whose entries are buffers really held, and a storage
//! tier of `.npy` files in one directory. Writes go to the first tier with room;
//! room is made by waterfall LRU eviction as kv-cache.py's `_ensure_space_in_tier`:
//! the CPU tier demotes its least recently used entries to storage (down to 80 % of
//! its budget), the storage tier deletes its own. Entries are never promoted on a read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use iolab_core::kvcache::{ModelShape, TierKind};
use iolab_core::units::Nanos;

use super::entry::{EntryIo, Spans, npy_header};
use super::extents::Extents;
use crate::error::EngineError;

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
        let r = self.allocate_inner(io, key, tokens, &mut waited);
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

    /// Least recently used first (then least often), among entries that may leave.
    fn lru(ix: &Index, cpu: bool) -> Vec<(String, u64)> {
        let mut v: Vec<(&String, &Entry)> = ix
            .entries
            .iter()
            .filter(|(_, e)| e.readers == 0 && !e.moving && matches!(e.place, Place::Cpu(_)) == cpu)
            .collect();
        v.sort_by_key(|(_, e)| (e.last_access, e.access_count));
        v.into_iter().map(|(k, e)| (k.clone(), e.size)).collect()
    }

    /// Reserves `size` bytes on the CPU tier, choosing the entries to demote; None if
    /// the tier cannot take the entry (none, too big, or not enough to evict).
    fn make_room_cpu(&self, size: u64) -> Option<Vec<(String, Arc<Vec<u8>>)>> {
        if self.cpu_limit == 0 || size as f64 > CPU_MAX_ENTRY * self.cpu_limit as f64 {
            return None;
        }
        let mut ix = self.lock();
        if ix.cpu_used + size <= self.cpu_limit {
            ix.cpu_used += size;
            return Some(Vec::new());
        }
        let target = (CPU_TARGET * self.cpu_limit as f64) as u64;
        let mut chosen = Vec::new();
        let mut used = ix.cpu_used;
        for (k, s) in Self::lru(&ix, true) {
            if used + size <= target {
                break;
            }
            used -= s;
            chosen.push(k);
        }
        if used + size > self.cpu_limit {
            return None;
        }
        ix.cpu_used = used + size;
        let victims = chosen
            .into_iter()
            .filter_map(|k| {
                let e = ix.entries.get_mut(&k)?;
                e.moving = true;
                match &e.place {
                    Place::Cpu(d) => Some((k, d.clone())),
                    Place::Storage => None,
                }
            })
            .collect();
        Some(victims)
    }

    /// Reserves `size` bytes on the storage tier, deleting its least recently used
    /// entries; the offset reserved (0 but on a block device). While entries being
    /// written or read hold the room, waits for them (until the run is over:
    /// Interrupted, the wait added to `waited`); None if the entry is larger than the
    /// tier (nothing reserved: the tier never grows past its capacity, where
    /// kv-cache.py writes regardless).
    fn make_room_storage(
        &self,
        size: u64,
        io: &mut EntryIo<'_>,
        waited: &mut Nanos,
    ) -> Result<Option<u64>, EngineError> {
        if size > self.storage_limit {
            return Ok(None);
        }
        let mut ix = self.lock();
        let mut since = None;
        loop {
            if let Some((offset, gone)) = Self::evict_storage(&mut ix, size, self.storage_limit) {
                drop(ix);
                if let Some(t0) = since {
                    *waited = *waited + io.clock.now().saturating_sub(t0);
                }
                let mut first = Ok(Some(offset));
                for k in gone {
                    self.evictions.storage.fetch_add(1, Ordering::Relaxed);
                    if let Err(e) = io.remove_entry(&self.path_of(&k))
                        && first.is_ok()
                    {
                        first = Err(e);
                    }
                }
                if first.is_err() {
                    self.unreserve(size, offset);
                }
                return first;
            }
            since.get_or_insert_with(|| io.clock.now());
            if (io.over)() {
                return Err(EngineError::Interrupted);
            }
            ix = self
                .room
                .wait_timeout(ix, std::time::Duration::from_millis(100))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// The least recently used entries whose deletion makes room, taken out of the
    /// index with `size` reserved (on a device: a run of blocks, first fit, at the
    /// offset returned); None (nothing changed) when even all that may leave now would
    /// not make room.
    fn evict_storage(ix: &mut Index, size: u64, limit: u64) -> Option<(u64, Vec<String>)> {
        let need = Self::taken(ix, size);
        let mut used = ix.storage_used;
        let mut extents = ix.extents.clone();
        let mut gone = Vec::new();
        let fits = |used: u64, x: &mut Option<Extents>| {
            if used + need > limit {
                return None;
            }
            match x {
                Some(x) => x.alloc(size),
                None => Some(0),
            }
        };
        let mut offset = fits(used, &mut extents);
        for (k, s) in Self::lru(ix, false) {
            if offset.is_some() {
                break;
            }
            let at = ix.entries[&k].offset;
            used -= Self::taken(ix, s);
            if let Some(x) = &mut extents {
                x.release(at, s);
            }
            gone.push(k);
            offset = fits(used, &mut extents);
        }
        let offset = offset?;
        for k in &gone {
            ix.entries.remove(k);
        }
        ix.storage_used = used + need;
        ix.extents = extents;
        Some((offset, gone))
    }

    /// Storage an entry held, given back to the tier.
    fn free_storage(ix: &mut Index, size: u64, offset: u64) {
        ix.storage_used -= Self::taken(ix, size);
        if let Some(x) = &mut ix.extents {
            x.release(offset, size);
        }
    }

    /// A storage reservation given back (its write failed or was cut).
    fn unreserve(&self, size: u64, offset: u64) {
        Self::free_storage(&mut self.lock(), size, offset);
        self.room.notify_all();
    }

    /// Moves CPU entries down to the storage tier: each read from memory, written as
    /// its file, then found there.
    fn demote(
        &self,
        io: &mut EntryIo<'_>,
        victims: Vec<(String, Arc<Vec<u8>>)>,
        waited: &mut Nanos,
    ) -> Result<Vec<(Op, Op)>, EngineError> {
        let mut ops = Vec::with_capacity(victims.len());
        for (key, data) in victims {
            let size = data.len() as u64;
            let room = self.make_room_storage(size, io, waited);
            let Ok(Some(offset)) = room else {
                // Nowhere to go (or the run is over): the entry leaves the cache.
                self.lock().entries.remove(&key);
                self.evictions.cpu.fetch_add(1, Ordering::Relaxed);
                room?;
                continue;
            };
            let t0 = io.clock.now();
            io.read_memory(&data);
            let took = io.clock.now().saturating_sub(t0);
            let path = self.path_of(&key);
            let spans = match io.write_file(&path, offset, &[], size, Some(&data)) {
                Ok(s) => s,
                Err(e) => {
                    self.lock().entries.remove(&key);
                    self.unreserve(size, offset);
                    return Err(e);
                }
            };
            if let Some(e) = self.lock().entries.get_mut(&key) {
                e.place = Place::Storage;
                e.moving = false;
                e.offset = offset;
            }
            self.evictions.cpu.fetch_add(1, Ordering::Relaxed);
            let read = Op {
                tier: TierKind::Cpu,
                bytes: size,
                spans: Spans {
                    total: took,
                    device: took,
                },
            };
            let write = Op {
                tier: TierKind::Storage,
                bytes: size,
                spans,
            };
            ops.push((read, write));
        }
        Ok(ops)
    }

    /// Holds an entry as a reader would (or lets it go): it cannot leave meanwhile.
    #[cfg(test)]
    pub(crate) fn hold(&self, key: &str, held: bool) {
        if let Some(e) = self.lock().entries.get_mut(key) {
            e.readers = if held { e.readers + 1 } else { e.readers - 1 };
        }
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
