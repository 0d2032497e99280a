//! The tiers on a FakeClock and a temporary directory: LRU order down the tiers, a full
//! tier, the storage tier's I/O through each backend into the recorder.

use std::sync::atomic::Ordering::Relaxed;

use iolab_core::kvcache::{KvModel, TierKind};
use iolab_core::result::OpKind;
use iolab_core::spec::BackendKind;
use iolab_core::units::Nanos;

use iolab_backend::object::{NullObjects, NullStore};

use super::{EntryIo, EntrySetup, KvCache};
use crate::{Clock, FakeClock};

pub(super) fn setup(backend: BackendKind) -> EntrySetup {
    EntrySetup {
        backend,
        transfer: 65536,
        direct: false,
        seed: 1,
    }
}

#[test]
fn lru_entries_fall_down_the_tiers_and_then_out() {
    let dir = tempfile::tempdir().unwrap();
    let shape = KvModel::Tiny1b.shape();
    let clock = FakeClock::new(Nanos(1000));
    let mut io = EntryIo::new(setup(BackendKind::Psync), &clock, clock.now()).unwrap();
    let probe = KvCache::new(shape, 0, 0, dir.path(), 0);
    let s = probe.entry_bytes(100);
    // The CPU tier holds two entries (2.5 of them before its 80 % target), the
    // storage tier two.
    let cache = KvCache::new(shape, s * 5 / 2, s * 2, dir.path(), 0);
    for k in ["a", "b"] {
        let w = cache.allocate(&mut io, k, 100).unwrap();
        assert_eq!(w.op.unwrap().tier, TierKind::Cpu);
    }
    assert!(cache.access(&mut io, "a").unwrap().is_some());
    // c: b is the least recently used, demoted to storage.
    let w = cache.allocate(&mut io, "c", 100).unwrap();
    assert_eq!(w.demoted.len(), 1);
    assert_eq!(cache.tier_of("b"), Some((TierKind::Storage, s)));
    assert_eq!(std::fs::metadata(cache.path_of("b")).unwrap().len(), s);
    // d demotes a, e demotes c: storage then holds b and a, and must delete b (its
    // least recently used) to take c.
    cache.allocate(&mut io, "d", 100).unwrap();
    assert_eq!(cache.tier_of("a").unwrap().0, TierKind::Storage);
    cache.allocate(&mut io, "e", 100).unwrap();
    assert_eq!(cache.tier_of("b"), None);
    assert!(!cache.path_of("b").exists());
    assert_eq!(cache.tier_of("c").unwrap().0, TierKind::Storage);
    assert_eq!(cache.tier_of("d").unwrap().0, TierKind::Cpu);
    assert_eq!(cache.used(), (2 * s, 2 * s));
    assert_eq!(cache.evictions.cpu.load(Relaxed), 3);
    assert_eq!(cache.evictions.storage.load(Relaxed), 1);
    // A miss is counted and reads nothing.
    assert!(cache.access(&mut io, "b").unwrap().is_none());
    assert_eq!(cache.misses.load(Relaxed), 1);
    // The storage tier's I/Os went through the backend into the recorder: three
    // demotions of one 64 KiB piece or less each, written and fsynced, no read.
    let m = io.finish();
    assert_eq!(m.ops[&OpKind::Write].count.bytes, 3 * s);
    assert_eq!(m.ops[&OpKind::Write].count.ops, 3 * s.div_ceil(65536));
    assert_eq!(m.ops[&OpKind::Fsync].count.ops, 3);
    assert!(!m.ops.contains_key(&OpKind::Read));
    assert_eq!(
        m.timeline
            .series(OpKind::Write)
            .unwrap()
            .bytes
            .iter()
            .sum::<u64>(),
        3 * s
    );
}

#[test]
fn a_full_storage_tier_refuses_a_write_rather_than_grow() {
    let dir = tempfile::tempdir().unwrap();
    let shape = KvModel::Tiny1b.shape();
    let clock = FakeClock::new(Nanos(1000));
    let mut io = EntryIo::new(setup(BackendKind::Psync), &clock, clock.now()).unwrap();
    let probe = KvCache::new(shape, 0, 0, dir.path(), 0);
    let s = probe.entry_bytes(100);
    let cache = KvCache::new(shape, 0, s + s / 2, dir.path(), 0);
    assert!(!cache.allocate(&mut io, "a", 100).unwrap().refused);
    // Bigger than the whole tier: refused, nothing written, a left as it was.
    let w = cache.allocate(&mut io, "big", 200).unwrap();
    assert!(w.refused && w.op.is_none());
    assert!(!cache.path_of("big").exists());
    assert_eq!(cache.used(), (0, s));
    assert_eq!(cache.tier_of("a"), Some((TierKind::Storage, s)));
}

/// A write that waits for room (the entry that would leave is being read) counts the
/// wait as its allocation wait, not in the storage tier's write latency.
#[test]
fn waiting_for_room_is_allocation_wait_not_write_latency() {
    use std::sync::atomic::AtomicBool;
    let dir = tempfile::tempdir().unwrap();
    let shape = KvModel::Tiny1b.shape();
    let clock = FakeClock::new(Nanos(1000));
    let probe = KvCache::new(shape, 0, 0, dir.path(), 0);
    let s = probe.entry_bytes(100);
    let cache = KvCache::new(shape, 0, s + s / 2, dir.path(), 0);
    let waiting = AtomicBool::new(false);
    // The write checks whether the run is over while it waits: that says it waits.
    let over = || {
        waiting.store(true, Relaxed);
        false
    };
    let mut io = EntryIo::new(setup(BackendKind::Psync), &clock, clock.now()).unwrap();
    assert_eq!(
        cache.allocate(&mut io, "a", 100).unwrap().waited,
        Nanos::ZERO
    );
    cache.hold("a", true);
    io.over = &over;
    let w = std::thread::scope(|scope| {
        // The reader of a lets go 5 s after the write began waiting for its room.
        scope.spawn(|| {
            while !waiting.load(Relaxed) {
                std::thread::yield_now();
            }
            clock.sleep(Nanos::from_secs(5));
            cache.hold("a", false);
        });
        cache.allocate(&mut io, "b", 100).unwrap()
    });
    assert!(w.waited >= Nanos::from_secs(5) && w.waited < Nanos::from_secs(5) + Nanos(1_000_000));
    let op = w.op.unwrap();
    assert_eq!((op.tier, op.bytes), (TierKind::Storage, s));
    assert!(op.spans.total < Nanos(1_000_000), "{:?}", op.spans);
    assert_eq!(cache.tier_of("a"), None);
    assert_eq!(cache.evictions.storage.load(Relaxed), 1);
}

/// The same entry written and read back on each backend: the same bytes on psync and
/// io_uring (every piece, timed on the fake clock), none touched on null.
#[test]
fn every_backend_streams_an_entry_in_transfer_size_pieces() {
    let shape = KvModel::Tiny1b.shape();
    for kind in [BackendKind::Psync, BackendKind::Uring, BackendKind::Null] {
        if kind == BackendKind::Uring && iolab_backend::uring_available().is_err() {
            eprintln!("skipped io_uring: the kernel does not offer it here");
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let clock = FakeClock::new(Nanos(1000));
        let mut io = EntryIo::new(setup(kind), &clock, clock.now()).unwrap();
        let cache = KvCache::new(shape, 0, 1 << 30, dir.path(), 0);
        let s = cache.entry_bytes(10);
        cache.allocate(&mut io, "k", 10).unwrap();
        let op = cache.access(&mut io, "k").unwrap().unwrap();
        assert_eq!((op.tier, op.bytes), (TierKind::Storage, s), "{kind:?}");
        let on_disk = std::fs::metadata(cache.path_of("k")).map(|m| m.len()).ok();
        let m = io.finish();
        let pieces = s.div_ceil(65536);
        assert_eq!(m.ops[&OpKind::Read].count.ops, pieces, "{kind:?}");
        assert_eq!(m.ops[&OpKind::Read].count.bytes, s, "{kind:?}");
        assert_eq!(m.ops[&OpKind::Write].count.bytes, s, "{kind:?}");
        // Every I/O took exactly two fake-clock readings (its issue and completion).
        assert_eq!(
            m.ops[&OpKind::Read].histogram.max(),
            Nanos(1000),
            "{kind:?}"
        );
        if kind == BackendKind::Null {
            assert_eq!(on_disk, None);
            assert!(!m.ops.contains_key(&OpKind::Fsync));
        } else {
            assert_eq!(on_disk, Some(s), "{kind:?}");
            let f = std::fs::read(cache.path_of("k")).unwrap();
            assert_eq!(&f[..6], b"\x93NUMPY");
        }
    }
}

/// A write that fails part way (here: the run ends after its first piece) leaves no
/// partial file behind and gives its room back: a new entry's and a demotion's.
#[test]
fn a_write_cut_part_way_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let shape = KvModel::Tiny1b.shape();
    let clock = FakeClock::new(Nanos(1000));
    // Once armed, the run ends after one more piece.
    let armed = std::cell::Cell::new(false);
    let pieces = std::cell::Cell::new(0u32);
    let over = || {
        if armed.get() {
            pieces.set(pieces.get() + 1);
        }
        pieces.get() > 1
    };
    let mut io = EntryIo::new(setup(BackendKind::Psync), &clock, clock.now()).unwrap();
    io.over = &over;
    let cache = KvCache::new(shape, 0, 1 << 30, dir.path(), 0);
    armed.set(true);
    let e = cache.allocate(&mut io, "k", 100).unwrap_err();
    assert!(matches!(e, crate::EngineError::Interrupted), "{e}");
    assert!(!cache.path_of("k").exists());
    assert_eq!(cache.used(), (0, 0));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // A demotion cut part way: the entry leaves the cache, its file with it.
    let (armed2, pieces2) = (std::cell::Cell::new(false), std::cell::Cell::new(0u32));
    let over2 = || {
        if armed2.get() {
            pieces2.set(pieces2.get() + 1);
        }
        pieces2.get() > 1
    };
    io.over = &over2;
    let s = cache.entry_bytes(100);
    let cache = KvCache::new(shape, s * 3 / 2, 1 << 30, dir.path(), 0);
    cache.allocate(&mut io, "a", 100).unwrap();
    armed2.set(true);
    // b demotes a (cut after its first piece): a is gone, no file of it is left.
    let e = cache.allocate(&mut io, "b", 100).unwrap_err();
    assert!(matches!(e, crate::EngineError::Interrupted), "{e}");
    assert_eq!(cache.tier_of("a"), None);
    assert!(!cache.path_of("a").exists());
    assert_eq!(cache.used(), (0, 0));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// The regression: a CPU-tier entry was filled whole whatever the run's end, and a
/// writer whose turn came after it made one: option 2's 300 s run (100 users, 16
/// allocations at once, shared machine) grew from 4.1 to 6.5 GiB resident in the 15 s
/// after its duration. Now the fill stops at its next piece, and a writer's turn that
/// comes after the end makes nothing.
#[test]
fn a_cpu_tier_entry_stops_filling_when_the_run_is_over() {
    let dir = tempfile::tempdir().unwrap();
    let shape = KvModel::Tiny1b.shape();
    let clock = FakeClock::new(Nanos(1000));
    let pieces = std::cell::Cell::new(0u32);
    let over = || {
        pieces.set(pieces.get() + 1);
        pieces.get() > 2
    };
    let mut io = EntryIo::new(setup(BackendKind::Psync), &clock, clock.now()).unwrap();
    io.over = &over;
    // 1,000 tokens: 24.6 MB, hundreds of 64 KiB pieces.
    let cache = KvCache::new(shape, 1 << 30, 1 << 30, dir.path(), 0);
    let e = cache.allocate(&mut io, "k", 1000).unwrap_err();
    assert!(matches!(e, crate::EngineError::Interrupted), "{e}");
    assert_eq!(pieces.get(), 3);
    assert_eq!(cache.tier_of("k"), None);
    assert_eq!(cache.used(), (0, 0));
    // Over before its turn: nothing is made and nothing demoted for it (a demotion
    // cut part way would have taken a out of the cache).
    let never = || false;
    io.over = &never;
    let s = cache.entry_bytes(1000);
    let cache = KvCache::new(shape, s * 3 / 2, 1 << 30, dir.path(), 0);
    cache.allocate(&mut io, "a", 1000).unwrap();
    let done = || true;
    io.over = &done;
    let e = cache.allocate(&mut io, "b", 1000).unwrap_err();
    assert!(matches!(e, crate::EngineError::Interrupted), "{e}");
    assert_eq!(cache.tier_of("b"), None);
    assert_eq!(cache.tier_of("a"), Some((TierKind::Cpu, s)));
    assert_eq!(cache.used(), (s, 0));
}

#[test]
fn on_a_device_entries_take_first_fit_block_runs_and_evictions_free_them() {
    let dir = tempfile::tempdir().unwrap();
    // A file stands for the device (the target's guard is the CLI's, tested there).
    let dev = dir.path().join("dev");
    std::fs::File::create(&dev)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let shape = KvModel::Tiny1b.shape();
    let clock = FakeClock::new(Nanos(1000));
    let mut io = EntryIo::new(setup(BackendKind::Psync), &clock, clock.now()).unwrap();
    io.use_device();
    let probe = KvCache::new(shape, 0, 0, dir.path(), 0);
    let s = probe.entry_bytes(100);
    let run = s.div_ceil(4096) * 4096;
    // Room for two entries' block runs from 1 MiB (this rank's share), not three.
    let cache = KvCache::new(shape, 0, u64::MAX, &dev, 0).on_device(1 << 20, 2 * run + 100, 4096);
    for k in ["a", "b"] {
        cache.allocate(&mut io, k, 100).unwrap();
    }
    assert_eq!(cache.used(), (0, 2 * run));
    let bytes = std::fs::read(&dev).unwrap();
    assert_eq!(
        &bytes[1 << 20..(1 << 20) + 6],
        b"\x93NUMPY",
        "a at the share's start"
    );
    let b_at = (1 << 20) + run as usize;
    assert_eq!(
        &bytes[b_at..b_at + 6],
        b"\x93NUMPY",
        "b right after a's blocks"
    );
    // c takes a's run (a, the least recently used, is evicted); the device stays.
    assert!(cache.access(&mut io, "b").unwrap().is_some());
    cache.allocate(&mut io, "c", 100).unwrap();
    assert_eq!(cache.tier_of("a"), None);
    assert_eq!(cache.evictions.storage.load(Relaxed), 1);
    assert_eq!(cache.used(), (0, 2 * run));
    assert!(dev.exists());
    assert!(cache.files().is_empty(), "nothing to remove on a device");
    // Reads find each entry at its offset: whole entries read back.
    let op = cache.access(&mut io, "c").unwrap().unwrap();
    assert_eq!(op.bytes, s);
    assert_eq!(std::fs::metadata(&dev).unwrap().len(), 8 << 20, "not grown");
}

/// The cache of `lru_entries_fall_down_the_tiers_and_then_out` up to b's demotion, its
/// storage tier objects through `store` (none: files): b's bytes on the storage tier.
fn demote_b(dir: &std::path::Path, store: Option<&std::sync::Arc<NullStore>>) -> KvCache {
    let shape = KvModel::Tiny1b.shape();
    let clock = FakeClock::new(Nanos(1000));
    let mut io = EntryIo::new(setup(BackendKind::Psync), &clock, clock.now()).unwrap();
    if let Some(s) = store {
        io.use_objects(Box::new(NullObjects::new(s.clone())));
    }
    let s = KvCache::new(shape, 0, 0, dir, 0).entry_bytes(100);
    let cache = KvCache::new(shape, s * 5 / 2, s * 4, dir, 0);
    for k in ["a", "b"] {
        cache.allocate(&mut io, k, 100).unwrap();
    }
    cache.access(&mut io, "a").unwrap();
    assert_eq!(cache.allocate(&mut io, "c", 100).unwrap().demoted.len(), 1);
    assert_eq!(cache.tier_of("b"), Some((TierKind::Storage, s)));
    // Written straight to storage (more than the CPU tier takes): the client's payload.
    cache.allocate(&mut io, "big", 250).unwrap();
    assert_eq!(cache.tier_of("big").unwrap().0, TierKind::Storage);
    cache
}

/// An entry in a bucket holds the bytes its file would: demoted from the CPU tier (the
/// bytes it held there, made as the file's) or written there directly (made as the
/// client sends it). iolab's data (data.rs): no 512-byte unit of the two repeats.
#[test]
fn a_demoted_object_holds_the_bytes_the_cpu_tier_held() {
    let dir = tempfile::tempdir().unwrap();
    let files = demote_b(dir.path(), None);
    let store = std::sync::Arc::new(NullStore::default());
    let objects = demote_b(dir.path(), Some(&store));
    let given = store.given.lock().unwrap().clone();
    assert_eq!(given.len(), 2, "{given:?}");
    let mut units = std::collections::HashSet::new();
    for k in ["b", "big"] {
        let held = std::fs::read(files.path_of(k)).unwrap();
        assert_eq!(&held[..6], b"\x93NUMPY");
        let key = objects.path_of(k).to_string_lossy().into_owned();
        assert_eq!(given[&key], NullStore::digest(&held), "{k}");
        for u in held.chunks_exact(512) {
            assert!(units.insert(u.to_vec()), "{k}: a 512-byte unit repeats");
        }
    }
    assert_eq!(store.count("PUT"), 2);
}
