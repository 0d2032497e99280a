//! Room on the CPU tier, as kv-cache.py's `_ensure_space_in_tier` makes it on a tier with
//! one below it, and its demotions (`_demote_entry`). The tier's count (`cpu_used`) is
//! every byte it holds: its entries, those being demoted until their write has ended
//! and no reader copies from them, and those being filled. A writer takes room only while
//! the count stays within 80 % of the budget (or the tier is nearly empty), so the tier
//! never holds more than its budget.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use iolab_core::kvcache::TierKind;
use iolab_core::units::Nanos;

use super::{CPU_FEW, CPU_MAX_ENTRY, CPU_NEAR_EMPTY, CPU_TARGET, Index, KvCache, Op, Place};
use crate::error::EngineError;
use crate::kvcache::entry::{EntryIo, Spans};

/// What a writer that needs room on the CPU tier does next.
enum Step {
    /// The room is taken (counted in `cpu_used`).
    Taken,
    /// Demote this entry (marked moving), then look again.
    Demote(String, Arc<Vec<u8>>),
    /// Only reads and demotions under way would make room: wait for them.
    Wait,
    /// The entry goes to the storage tier.
    Storage,
}

/// A demotion's operations: the CPU read, the storage write.
pub(super) type Demotion = (Op, Op);

impl KvCache {
    /// Takes `size` bytes of the CPU tier for a new entry, demoting its least recently
    /// used entries one at a time, each counted in the tier until its write has ended
    /// (`demoted` gets their operations). While only moves and reads under way would make
    /// room, waits for them (as kv-cache.py waits on an entry's lock), until the run is
    /// over (Interrupted), the waits added to `waited`. False: the entry goes to the
    /// storage tier (no CPU tier, too big, or nothing that may leave makes room).
    pub(super) fn make_room_cpu(
        &self,
        size: u64,
        io: &mut EntryIo<'_>,
        waited: &mut Nanos,
        demoted: &mut Vec<Demotion>,
    ) -> Result<bool, EngineError> {
        if self.cpu_limit == 0 || size as f64 > CPU_MAX_ENTRY * self.cpu_limit as f64 {
            return Ok(false);
        }
        // kv-cache.py judges how little its tier holds on each fresh look at its entries.
        let mut fresh = true;
        loop {
            let mut ix = self.lock();
            match self.cpu_step(&mut ix, size, fresh) {
                Step::Taken => return Ok(true),
                Step::Storage => return Ok(false),
                Step::Demote(key, data) => {
                    drop(ix);
                    fresh = false;
                    if let Some(d) = self.demote(io, key, data, waited)? {
                        demoted.push(d);
                    }
                }
                Step::Wait => {
                    if (io.over)() {
                        return Err(EngineError::Interrupted);
                    }
                    let t0 = io.clock.now();
                    drop(self.wait_room(ix));
                    *waited = *waited + io.clock.now().saturating_sub(t0);
                    fresh = true;
                }
            }
        }
    }

    /// One look at the CPU tier for a writer of `size` bytes (kv-cache.py's rules for a
    /// tier with one below it).
    fn cpu_step(&self, ix: &mut Index, size: u64, fresh: bool) -> Step {
        let limit = self.cpu_limit as f64;
        let target = (CPU_TARGET * limit) as u64;
        // Within the target, or a nearly empty tier (whose count may have drifted in
        // kv-cache.py; iolab's does not, and the entry is under 95 % of the budget).
        if ix.cpu_used + size <= target || (ix.cpu_used as f64) < CPU_NEAR_EMPTY * limit {
            ix.cpu_used += size;
            return Step::Taken;
        }
        let (mut held, mut busy) = (0u64, false);
        for e in ix.entries.values() {
            // Moving: until its buffer is let go, after it is found on storage.
            busy |= e.moving || (e.on_cpu() && e.readers > 0);
            held += if e.on_cpu() { e.size } else { 0 };
        }
        // Little to demote for a large entry: it goes down at once.
        if fresh && (held as f64) < CPU_FEW * limit && size as f64 > 0.5 * target as f64 {
            return Step::Storage;
        }
        let oldest = ix
            .entries
            .iter_mut()
            .filter(|(_, e)| e.on_cpu() && e.readers == 0 && !e.moving)
            .min_by_key(|(_, e)| (e.last_access, e.access_count));
        match oldest {
            Some((k, e)) => {
                e.moving = true;
                let Place::Cpu(data) = &e.place else {
                    unreachable!("filtered on the CPU tier")
                };
                Step::Demote(k.clone(), data.clone())
            }
            None if busy => Step::Wait,
            // The room is held by entries being filled: kv-cache.py's writer, finding no
            // entry in the tier, goes to the next.
            None => Step::Storage,
        }
    }

    /// Waits up to 100 ms for `room` to be signalled.
    pub(super) fn wait_room<'a>(
        &self,
        ix: std::sync::MutexGuard<'a, Index>,
    ) -> std::sync::MutexGuard<'a, Index> {
        self.room
            .wait_timeout(ix, Duration::from_millis(100))
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0)
    }

    /// Moves a CPU entry (marked moving) down to the storage tier: read from memory,
    /// written as its file, then found there; its bytes stay the CPU tier's until then.
    /// None when the storage tier has no room for it: it leaves the cache.
    fn demote(
        &self,
        io: &mut EntryIo<'_>,
        key: String,
        data: Arc<Vec<u8>>,
        waited: &mut Nanos,
    ) -> Result<Option<Demotion>, EngineError> {
        let size = data.len() as u64;
        let room = self.make_room_storage(size, io, waited);
        let Ok(Some(offset)) = room else {
            // Nowhere to go (or the run is over): the entry leaves the cache.
            self.lock().entries.remove(&key);
            self.let_go(data, None, io.over);
            self.evictions.cpu.fetch_add(1, Ordering::Relaxed);
            room?;
            return Ok(None);
        };
        let t0 = io.clock.now();
        io.read_memory(&data);
        let took = io.clock.now().saturating_sub(t0);
        let spans = match io.write_file(&self.path_of(&key), offset, &[], size, Some(&data)) {
            Ok(s) => s,
            Err(e) => {
                self.lock().entries.remove(&key);
                self.let_go(data, None, io.over);
                self.unreserve(size, offset);
                return Err(e);
            }
        };
        if let Some(e) = self.lock().entries.get_mut(&key) {
            e.place = Place::Storage;
            e.offset = offset;
        }
        self.let_go(data, Some(key.as_str()), io.over);
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
        Ok(Some((read, write)))
    }

    /// Gives a demoted entry's bytes back to the CPU tier (the index no longer holds its
    /// buffer) once no reader that found it there before it moved still copies from it (a
    /// copy from memory always ends, so this wait does); the entry `moved` (if it is on
    /// the storage tier now) is then no longer moving. Once the run is `over` it waits no
    /// more: a holder left then lets go when it ends.
    fn let_go(&self, data: Arc<Vec<u8>>, moved: Option<&str>, over: &dyn Fn() -> bool) {
        let mut ix = self.lock();
        while Arc::strong_count(&data) > 1 && !over() {
            ix = self.wait_room(ix);
        }
        ix.cpu_used -= data.len() as u64;
        if let Some(e) = moved.and_then(|k| ix.entries.get_mut(k)) {
            e.moving = false;
        }
        drop(data);
        drop(ix);
        self.room.notify_all();
    }

    /// A CPU-tier entry's buffer, held as a reader holds it while it copies.
    #[cfg(test)]
    pub(crate) fn cpu_buffer(&self, key: &str) -> Option<Arc<Vec<u8>>> {
        match &self.lock().entries.get(key)?.place {
            super::Place::Cpu(d) => Some(d.clone()),
            super::Place::Storage => None,
        }
    }

    /// Bytes the CPU tier really holds now: its buffers still alive (in the tier, being
    /// demoted, being read) and those being filled. Independent of `cpu_used`.
    #[cfg(test)]
    pub(crate) fn cpu_held(&self) -> u64 {
        let probe = self.probe.lock().unwrap();
        let alive: u64 = probe
            .buffers
            .iter()
            .filter(|(w, _)| w.strong_count() > 0)
            .map(|(_, n)| n)
            .sum();
        alive + probe.filling
    }
}
