//! Making room, as kv-cache.py's `_ensure_space_in_tier`: the CPU tier demotes its least
//! recently used entries to the storage tier (down to 80 % of its budget), the storage
//! tier deletes its own; an entry being read or written never leaves.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use iolab_core::kvcache::TierKind;
use iolab_core::units::Nanos;

use super::{CPU_MAX_ENTRY, CPU_TARGET, Entry, Index, KvCache, Op, Place};
use crate::error::EngineError;
use crate::kvcache::entry::{EntryIo, Spans};
use crate::kvcache::extents::Extents;

impl KvCache {
    /// Least recently used first (then least often), among entries that may leave.
    pub(super) fn lru(ix: &Index, cpu: bool) -> Vec<(String, u64)> {
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
    pub(super) fn make_room_cpu(&self, size: u64) -> Option<Vec<(String, Arc<Vec<u8>>)>> {
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
    pub(super) fn make_room_storage(
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
    pub(super) fn evict_storage(
        ix: &mut Index,
        size: u64,
        limit: u64,
    ) -> Option<(u64, Vec<String>)> {
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
    pub(super) fn free_storage(ix: &mut Index, size: u64, offset: u64) {
        ix.storage_used -= Self::taken(ix, size);
        if let Some(x) = &mut ix.extents {
            x.release(offset, size);
        }
    }

    /// A storage reservation given back (its write failed or was cut).
    pub(super) fn unreserve(&self, size: u64, offset: u64) {
        Self::free_storage(&mut self.lock(), size, offset);
        self.room.notify_all();
    }

    /// Moves CPU entries down to the storage tier: each read from memory, written as
    /// its file, then found there.
    pub(super) fn demote(
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
}
