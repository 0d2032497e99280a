//! Exact figures for scripted schedules, on a FakeClock and a temporary directory.

use iolab_core::kvcache::KvModel;
use iolab_core::spec::{GenerationMode, KvCacheSettings, KvCacheSpec};
use iolab_core::units::Nanos;
use iolab_engine::{Clock, FakeClock};

use super::cache::KvCache;
use super::conversation::ConversationCounts;
use super::entry::{EntryIo, EntrySetup};
use super::serve::{Serving, serve};
use super::tally::{Tally, TrialTally};
use super::users::{Qos, Request};

fn request(key: &str, previous: &[&str], context: u64, generate: u64) -> Request {
    Request {
        user: 0,
        qos: Qos::Batch,
        context_tokens: context,
        generate_tokens: generate,
        key: key.into(),
        conversation: None,
        previous: previous.iter().map(|s| s.to_string()).collect(),
        prefix: None,
        issued: Nanos::ZERO,
        seq: 0,
    }
}

#[test]
fn a_second_turn_reads_exactly_its_first_turns_entry() {
    let rig = rig(GenerationMode::Fast, 65536, 0);
    let (cache, clock) = (&rig.cache, &rig.clock);
    let mut io = rig.io();
    let trial = TrialTally::default();
    let mut tally = trial.worker();
    // Turn 1: 1000 tokens written, read once and again for every 32 of 100 generated
    // tokens (4): 5 reads of the entry.
    let t1 = request("conv_1_turn_1", &[], 1000, 100);
    let at = rig.unbounded();
    assert!(serve(&at, &mut io, &t1, &mut tally).unwrap());
    let e1 = cache.entry_bytes(1000);
    assert_eq!(e1, 128 + 1000 * 24_576);
    assert_eq!(trial.lock().storage.bytes_written, e1);
    assert_eq!(trial.lock().storage.bytes_read, 5 * e1);
    // Turn 2: turn 1's entry read back whole, then its own prefill and 1 + 1 decodes.
    let before = trial.lock().storage.bytes_read;
    let t2 = request("conv_1_turn_2", &["conv_1_turn_1"], 2000, 10);
    serve(&at, &mut io, &t2, &mut tally).unwrap();
    let e2 = cache.entry_bytes(2000);
    assert_eq!(trial.lock().storage.bytes_read - before, e1 + 2 * e2);
    assert_eq!(trial.lock().storage.writes, 2);
    let t = trial.lock();
    assert_eq!((t.requests, t.tokens), (2, 110));
    drop(t);
    // Fast generation: 2 ms a token, slept on the fake clock.
    assert!(trial.lock().end_to_end.max() >= Nanos(100 * 2_000_000));
    // A long context is prefill only: written, not read.
    let t3 = request("conv_2_turn_1", &[], 12_000, 10);
    let before = trial.lock().storage.bytes_read;
    serve(&at, &mut io, &t3, &mut tally).unwrap();
    // A request still being served when the run ends stops before its next operation.
    let over = || true;
    let cut = Serving { over: &over, ..at };
    let counted = |t: &Tally| (t.requests, t.storage.writes, t.storage.bytes_read);
    let before_cut = counted(&trial.lock());
    let t4 = request("conv_3_turn_1", &[], 100, 10);
    assert!(!serve(&cut, &mut io, &t4, &mut tally).unwrap());
    assert_eq!(counted(&trial.lock()), before_cut);
    assert_eq!(trial.lock().storage.bytes_read, before);
    assert_eq!(trial.lock().storage.writes, 3);
    // A request whose generation (10 tokens of 2 ms) outlasts the run's end sleeps to the
    // deadline only and is not counted: the run does not stretch past its duration.
    let deadline = clock.now() + Nanos(5_000_000);
    let short = Serving { deadline, ..at };
    let requests = trial.lock().requests;
    let t5 = request("conv_4_turn_1", &[], 100, 10);
    assert!(!serve(&short, &mut io, &t5, &mut tally).unwrap());
    assert_eq!(trial.lock().requests, requests);
    // (The fake clock steps 1 µs a reading; the whole generation would end 15 ms later.)
    let after = clock.now();
    assert!(
        after >= deadline && after < deadline + Nanos(1_000_000),
        "{after:?} against {deadline:?}"
    );
    // The files are numpy's: header then payload.
    let f = std::fs::read(cache.path_of("conv_1_turn_1")).unwrap();
    assert_eq!(f.len() as u64, e1);
    assert_eq!(&f[..6], b"\x93NUMPY");
}

/// What a worker serves tiny-1b's requests with, for [`serve`]: the settings, a
/// FakeClock (1 µs a reading), psync entry I/O and a cache whose storage tier (1 TiB) is
/// a temporary directory.
struct Rig {
    settings: KvCacheSettings,
    clock: FakeClock,
    setup: EntrySetup,
    cache: KvCache,
    /// The storage tier's directory, there as long as the cache.
    _dir: tempfile::TempDir,
}

/// A [`Rig`] generating tokens as `mode` says, moving entries `transfer` bytes at a time,
/// with `cpu` bytes of CPU tier (0: none).
fn rig(mode: GenerationMode, transfer: u64, cpu: u64) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let settings = KvCacheSpec {
        model: Some(KvModel::Tiny1b),
        generation_mode: Some(mode),
        ..KvCacheSpec::default()
    }
    .resolve()
    .unwrap();
    let setup = EntrySetup {
        backend: iolab_core::spec::BackendKind::Psync,
        transfer,
        direct: false,
        seed: 1,
    };
    Rig {
        settings,
        clock: FakeClock::new(Nanos(1000)),
        setup,
        cache: KvCache::new(KvModel::Tiny1b.shape(), cpu, 1 << 40, dir.path(), 0),
        _dir: dir,
    }
}

impl Rig {
    /// A worker's entry I/O on the rig's clock, its timeline from time 0.
    fn io(&self) -> EntryIo<'_> {
        EntryIo::new(self.setup, &self.clock, Nanos::ZERO).unwrap()
    }

    /// A worker's serving of the cache from time 0 with no deadline, never over, no live
    /// page.
    fn unbounded(&self) -> Serving<'_> {
        fn never() -> bool {
            false
        }
        Serving {
            cache: &self.cache,
            settings: &self.settings,
            start: Nanos::ZERO,
            deadline: Nanos(u64::MAX),
            over: &never,
            live: None,
        }
    }
}

/// "Decode bytes read" is kv-cache.py's `decode_bytes_read`: every read it makes in
/// its DECODE phase (earlier turns read back and the decode steps), whole entries;
/// with no CPU tier, the storage tier's whole-entry bytes read. The system prompt's
/// lookup is made in the request's own phase: read, but not a decode read. The
/// decode steps' figure is the decode steps' reads alone.
#[test]
fn decode_bytes_are_every_decode_phase_read_and_decode_steps_their_own() {
    let rig = rig(GenerationMode::None, 1 << 20, 0);
    let (cache, mut io) = (&rig.cache, rig.io());
    let at = rig.unbounded();
    // A system prompt's entry on the storage tier (kv-cache.py never writes one: its
    // lookups all miss; written here to show where such a read would count).
    cache.allocate(&mut io, "kv_system_helpful", 5).unwrap();
    let trial = TrialTally::default();
    let mut tally = trial.worker();
    // Turn 1, 200 tokens, 40 generated: written, then read 1 + ceil(40 / 32) = 3 times.
    serve(&at, &mut io, &request("c_turn_1", &[], 200, 40), &mut tally).unwrap();
    // Turn 2, 300 tokens with the system prompt: the prompt (5 tokens) looked up, turn 1
    // read back, 295 tokens written, read 1 + 1 times; then an earlier turn that was
    // never written (a miss: nothing read).
    let mut t2 = request("c_turn_2", &["c_turn_1", "c_turn_9"], 300, 10);
    t2.prefix = Some(("kv_system_helpful", 5));
    serve(&at, &mut io, &t2, &mut tally).unwrap();
    let (e1, e2, sys) = (
        cache.entry_bytes(200),
        cache.entry_bytes(295),
        cache.entry_bytes(5),
    );
    assert_eq!((e1, e2, sys), (4_915_328, 7_250_048, 123_008));
    assert_eq!(trial.lock().storage.bytes_read, sys + 4 * e1 + 2 * e2);
    assert_eq!(trial.lock().storage.reads, 7);
    assert_eq!(trial.lock().decode_bytes_read, 4 * e1 + 2 * e2);
    assert_eq!(trial.lock().decode_bytes_read, 34_161_408);
    assert_eq!(trial.lock().decode_step_bytes_read, 3 * e1 + 2 * e2);
    assert_eq!(trial.lock().cpu.bytes_read, 0);
    // The stored figures carry both.
    let f = trial.lock().figures(Nanos::from_secs(1), [0; 4]);
    assert_eq!(f.decode_bytes().map(|b| b.0), Some(34_161_408));
    assert_eq!(f.decode_step_bytes().0, 3 * e1 + 2 * e2);
}

/// With a CPU tier, kv-cache.py's decode bytes count the reads of every tier (its
/// `decode_bytes_read` adds each hit's size, wherever the entry is), but not a
/// demotion's read of a CPU entry (its `_demote_entry` counts no read); the decode
/// steps' figure counts the storage tier's only.
#[test]
fn decode_bytes_count_cpu_reads_but_not_demotions() {
    let e = 128 + 100 * 24_576;
    // Room for one 100-token entry: each new one demotes the one before.
    let rig = rig(GenerationMode::None, 1 << 20, e * 3 / 2);
    let (cache, mut io) = (&rig.cache, rig.io());
    assert_eq!(cache.entry_bytes(100), e);
    let at = rig.unbounded();
    let trial = TrialTally::default();
    let mut tally = trial.worker();
    // A: written to the CPU tier, decoded twice there.
    serve(&at, &mut io, &request("a", &[], 100, 10), &mut tally).unwrap();
    // B: reads A back (CPU), A is demoted to storage (a CPU read, a storage write), B
    // written to the CPU tier and decoded twice there.
    serve(&at, &mut io, &request("b", &["a"], 100, 10), &mut tally).unwrap();
    // C: reads A back (now on storage), B demoted, C decoded twice on the CPU tier.
    serve(&at, &mut io, &request("c", &["a"], 100, 10), &mut tally).unwrap();
    assert_eq!(
        cache
            .evictions
            .cpu
            .load(std::sync::atomic::Ordering::Relaxed),
        2
    );
    let t = trial.lock();
    assert_eq!((t.cpu.reads, t.storage.reads), (9, 1));
    assert_eq!(t.storage.writes, 2);
    // 2 + 3 + 3 reads of the requests; the 2 demotions' reads are not among them.
    assert_eq!(t.decode_bytes_read, 8 * e);
    assert_eq!(
        t.decode_bytes_read,
        t.cpu.bytes_read + t.storage.bytes_read - 2 * e
    );
    assert_eq!(t.decode_step_bytes_read, 0);
}

/// kv-cache.py counts a read's bytes as the read begins (`access_cache` adds the
/// entry's size, then reads), so a read under way when the run ends counts whole; iolab
/// counted only reads that had ended, and lost up to one entry per busy worker.
#[test]
fn a_read_cut_at_the_end_counts_its_whole_entry_as_it_began() {
    // The run ends (as the worker's I/O sees it) after three more pieces.
    let pieces = std::cell::Cell::new(0u32);
    let ends_after_3 = || {
        pieces.set(pieces.get() + 1);
        pieces.get() > 3
    };
    let rig = rig(GenerationMode::None, 65536, 0);
    let (cache, mut io) = (&rig.cache, rig.io());
    let trial = TrialTally::default();
    let mut tally = trial.worker();
    let at = rig.unbounded();
    // Turn 1 of 12,000 tokens: prefill only, one write, no read.
    let t1 = request("conv_1_turn_1", &[], 12_000, 10);
    assert!(serve(&at, &mut io, &t1, &mut tally).unwrap());
    let e1 = cache.entry_bytes(12_000);
    assert_eq!(e1, 128 + 12_000 * 24_576);
    let t = trial.lock();
    assert_eq!((t.storage.reads, t.storage.bytes_read), (0, 0));
    drop(t);
    // Turn 2 reads turn 1 back: 3 of its 4,501 pieces of 64 KiB, then the run ends.
    io.over = &ends_after_3;
    let t2 = request("conv_1_turn_2", &["conv_1_turn_1"], 13_000, 10);
    assert!(!serve(&at, &mut io, &t2, &mut tally).unwrap());
    assert_eq!(trial.lock().storage.reads, 1);
    assert_eq!(trial.lock().storage.bytes_read, e1);
    // A hit in its kind of lookup as in the cache's count, which the hit rate takes.
    let counted = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(trial.lock().lookups.total(), (1, 0));
    assert_eq!((counted(&cache.hits), counted(&cache.misses)), (1, 0));
    // Its latency is not known: no read ended.
    assert_eq!(trial.lock().storage.read_device.count(), 0);
    assert_eq!(trial.lock().storage.read.count(), 0);
    // Not a completed request, and turn 2's own entry was never begun.
    let t = trial.lock();
    assert_eq!((t.requests, t.storage.writes), (1, 1));
    // The engine read the 3 pieces it began, no more; the worker handed them on to the
    // trial's tally as the read ended, and holds none.
    let reads =
        t.io.timeline
            .series(iolab_core::result::OpKind::Read)
            .unwrap();
    assert!(io.finish().ops.is_empty());
    assert_eq!(reads.bytes.iter().sum::<u64>(), 3 * 65536);
}

/// The hit rate counts every lookup kv-cache.py's `access_cache` counts (a miss: a key
/// not in the cache): the system prompt's (its entry is never written: a miss), each
/// other turn of the conversation held when the request is served (a later turn
/// already issued but not yet written: a miss), the decode's first read and its reads
/// every 32 generated tokens (hits); nothing for a request stopped before its first.
#[test]
fn every_lookup_counts_in_the_hit_rate_as_the_reference_counts_it() {
    use iolab_core::kvcache::{KvLookups, Lookups};
    use std::sync::atomic::Ordering::Relaxed;
    let rig = rig(GenerationMode::None, 1 << 20, 0);
    let (cache, mut io) = (&rig.cache, rig.io());
    let at = rig.unbounded();
    let trial = TrialTally::default();
    let mut tally = trial.worker();
    // Turn 1 with a system prompt: its lookup misses; 40 generated tokens: 1 + 2 reads.
    let mut t1 = request("c_turn_1", &[], 200, 40);
    t1.prefix = Some(("kv_system_coding", 9));
    serve(&at, &mut io, &t1, &mut tally).unwrap();
    // Turn 2, served after turn 3 was issued: turn 1 found, turn 3 (later) not; 1 + 1
    // decode reads.
    let mut t2 = request("c_turn_2", &["c_turn_1", "c_turn_3"], 100, 10);
    t2.conversation = Some(((0, 1), 2));
    serve(&at, &mut io, &t2, &mut tally).unwrap();
    // Turn 3 stopped by the end of the run before its first lookup: nothing counted.
    let over = || true;
    let t3 = request("c_turn_3", &["c_turn_1", "c_turn_2"], 100, 10);
    assert!(!serve(&Serving { over: &over, ..at }, &mut io, &t3, &mut tally).unwrap());
    let want = KvLookups {
        system_prompt: Lookups { hits: 0, misses: 1 },
        earlier_turns: Lookups { hits: 1, misses: 0 },
        later_turns: Lookups { hits: 0, misses: 1 },
        decode: Lookups { hits: 5, misses: 0 },
    };
    assert_eq!(trial.lock().lookups, want);
    assert_eq!(want.total(), (6, 2));
    // The cache's own counts, which the hit rate is made of, are the same lookups.
    assert_eq!(
        (cache.hits.load(Relaxed), cache.misses.load(Relaxed)),
        (6, 2)
    );
    let f = trial.lock().figures(Nanos::from_secs(1), [6, 2, 0, 0]);
    assert_eq!((f.hit_rate(), f.lookups), (0.75, want));
}

#[test]
fn a_short_trial_issues_and_serves_requests() {
    let dir = tempfile::tempdir().unwrap();
    // The join window lets the requests in flight at the end finish and count, as
    // kv-cache.py's joins do: without it a 1.5 s trial on a loaded machine could end
    // before any write of a debug build had, and the byte count below would be 0.
    let settings = KvCacheSpec {
        model: Some(KvModel::Tiny1b),
        users: Some(3),
        duration: Some(iolab_core::units::TimeSpan(Nanos(1_500_000_000))),
        join_window: iolab_core::units::TimeSpan::from_secs(60),
        generation_mode: Some(GenerationMode::None),
        cpu_memory: Some(iolab_core::units::ByteCount(1 << 20)),
        ..KvCacheSpec::default()
    }
    .resolve()
    .unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let clock = iolab_engine::MonotonicClock;
    let live = super::live::KvLive::default();
    live.begin(settings.users);
    let t = super::run::run_trial(
        &settings,
        &super::Tier {
            dir: dir.path().to_path_buf(),
            objects: None,
            device: None,
            live: Some(&live),
            limit: 1 << 40,
        },
        7,
        &clock,
        &stop,
    )
    .unwrap();
    assert!(t.issued >= 3, "{}", t.issued);
    assert_eq!(t.tally.requests + t.tally.cut + t.dropped, t.issued);
    assert!(
        t.tally.storage.bytes_written > 0,
        "issued {} requests {} cut {} dropped {} writes {}",
        t.issued,
        t.tally.requests,
        t.tally.cut,
        t.dropped,
        t.tally.storage.writes
    );
    // The live counts (--serve) are the tally's: the storage tier's entries and the
    // completed requests' tokens.
    let l = live.snapshot();
    let s = &t.tally.storage;
    assert_eq!(
        (l.reads, l.writes, l.bytes_read, l.bytes_written, l.tokens),
        (
            s.reads,
            s.writes,
            s.bytes_read,
            s.bytes_written,
            t.tally.tokens
        )
    );
    // Reads count as they begin, their device spans as they end (a read cut at the
    // end has none).
    assert_eq!(l.read_device.iter().sum::<u64>(), s.read_device.count());
    // Every file it wrote is gone.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn ranks_run_their_own_users_and_rank_0_adds_them_up() {
    use iolab_comm::InProcess;
    let dir = tempfile::tempdir().unwrap();
    let settings = KvCacheSpec {
        model: Some(KvModel::Tiny1b),
        users: Some(2),
        duration: Some(iolab_core::units::TimeSpan(Nanos(2_000_000_000))),
        generation_mode: Some(GenerationMode::None),
        ..KvCacheSpec::default()
    }
    .resolve()
    .unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let out = InProcess::run(
        2,
        |_| "h".to_string(),
        |comm| {
            super::run_kvcache(
                comm,
                &settings,
                &super::Storage::files(dir.path(), 1 << 40),
                &iolab_engine::MonotonicClock,
                &stop,
            )
            .unwrap()
        },
    );
    assert!(out[1].is_empty(), "only rank 0 holds the figures");
    let t = &out[0][0];
    // Every user of both ranks issued its first request within 1.8 s.
    assert!(t.issued >= 4, "{}", t.issued);
    assert_eq!(t.figures.requests + t.cut + t.dropped, t.issued);
    assert_eq!(t.figures.storage.writes, t.storage.writes);
    // The judged device p95 is the worst rank's, at least the merged histogram's.
    let w = t.figures.worst_rank.expect("two ranks");
    assert_eq!(w.ranks, 2);
    assert!(w.write_device_p95 >= t.figures.storage.write_device.p95);
    assert!(w.read_device_p95 >= t.figures.storage.read_device.p95);
    assert_eq!(t.figures.write_device_p95(), w.write_device_p95);
    // Each rank's directory was its own, and is gone.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn rank_trials_add_up() {
    let tally = |requests, tokens, bytes, latency| {
        let mut t = Tally {
            requests,
            tokens,
            ..Tally::default()
        };
        t.storage.bytes_read = bytes;
        t.storage.read.record(latency);
        t.storage.read_device.record(latency);
        t
    };
    let a = tally(3, 300, 1000, 5_000_000);
    let b = tally(1, 100, 24, 7_000_000);
    let conv = |started, evicted, lost_turns, most_held| ConversationCounts {
        started,
        evicted,
        lost_turns,
        most_held,
    };
    let all = [
        (a, Nanos::from_secs(2), 4, 1, [3, 1, 0, 0], conv(7, 2, 1, 5)),
        (b, Nanos::from_secs(4), 1, 0, [1, 1, 0, 2], conv(3, 0, 0, 3)),
    ];
    let t = super::reduce(&all);
    assert_eq!(t.figures.requests, 4);
    assert_eq!(t.figures.duration, Nanos::from_secs(4));
    assert_eq!(t.figures.wall_tokens_per_sec(), 100.0);
    assert_eq!(t.figures.storage.bytes_read.0, 1024);
    assert_eq!(t.figures.storage.reads, 0);
    assert_eq!((t.figures.hits, t.figures.misses), (4, 2));
    assert_eq!(t.figures.storage.evictions, 2);
    assert_eq!((t.issued, t.dropped), (5, 1));
    assert_eq!(t.conversations, conv(10, 2, 1, 5));
    assert_eq!(t.figures.storage.read_latency.count, 2);
    // Rank 1's one read (7 ms) is the worst p95; the merged p95 is the same read.
    let w = t.figures.worst_rank.unwrap();
    assert_eq!((w.read_rank, w.ranks), (1, 2));
    assert_eq!(w.read_device_p95, t.figures.storage.read_device.p95);
    assert!(w.read_device_p95 > Nanos(6_900_000) && w.read_device_p95 < Nanos(7_100_000));
}

/// The largest entry of each model is kv-cache.py's: 25,000 tokens (its coding users'
/// context_range) of layers x KV heads x head dim x 2 x 2 bytes, and the `.npy` header.
/// llama3.1-70b-instruct's is 7.63 GiB (a trace of the reference at option 3's 70 users,
/// seed 42, 60 s: its users' longest context 22,617 tokens, its largest write 22,457).
#[test]
fn the_largest_entry_is_the_references_at_25000_tokens() {
    use iolab_core::kvcache::KvModel;
    let largest = |m| super::largest_entry(m);
    assert_eq!(
        KvModel::Llama31_70bInstruct.shape().bytes_per_token(),
        327_680
    );
    assert_eq!(largest(KvModel::Llama31_70bInstruct), 8_192_000_128);
    assert_eq!(largest(KvModel::Llama31_8b), 3_276_800_128);
    assert_eq!(largest(KvModel::Tiny1b), 614_400_128);
    // No user asks for more (users.rs draws each user's context in its template).
    let longest = super::users::users(70, 42).iter().map(|u| u.context).max();
    assert!(longest.unwrap() <= 25_000);
}
