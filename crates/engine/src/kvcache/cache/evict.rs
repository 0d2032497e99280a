//! Making room on the storage tier, as kv-cache.py's `_ensure_space_in_tier` on its last
//! tier: it deletes its least recently used entries (the CPU tier's room is cpu.rs's);
//! an entry being read or written never leaves.

use std::sync::atomic::Ordering;

use iolab_core::units::Nanos;

use super::{Entry, Index, KvCache, Place};
use crate::error::EngineError;
use crate::kvcache::entry::EntryIo;
use crate::kvcache::extents::Extents;

impl KvCache {
    /// The storage tier's entries that may leave, least recently used first (then least
    /// often).
    fn lru_storage(ix: &Index) -> Vec<(String, u64)> {
        let mut v: Vec<(&String, &Entry)> = ix
            .entries
            .iter()
            .filter(|(_, e)| e.readers == 0 && !e.moving && matches!(e.place, Place::Storage))
            .collect();
        v.sort_by_key(|(_, e)| (e.last_access, e.access_count));
        v.into_iter().map(|(k, e)| (k.clone(), e.size)).collect()
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
            ix = self.wait_room(ix);
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
        for (k, s) in Self::lru_storage(ix) {
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

    /// Holds an entry as a reader would (or lets it go): it cannot leave meanwhile.
    #[cfg(test)]
    pub(crate) fn hold(&self, key: &str, held: bool) {
        if let Some(e) = self.lock().entries.get_mut(key) {
            e.readers = if held { e.readers + 1 } else { e.readers - 1 };
        }
        self.room.notify_all();
    }
}
