//! A trial: the users issue requests into a priority queue (open loop, as kv-cache.py's
//! user threads: a user does not wait for its previous request), the workers
//! (`min(users, 500)` threads) take the highest QoS class first, FIFO within a class,
//! and serve them until the duration is over; requests still queued then are dropped,
//! as the reference drops them.

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use iolab_core::result::Silences;
use iolab_core::spec::KvCacheSettings;
use iolab_core::units::Nanos;
use iolab_engine::Clock;

use iolab_backend::object::{ObjectOp, ObjectRequest};

use super::cache::KvCache;
use super::conversation::{ConversationCounts, Conversations};
use super::entry::{EntryIo, EntrySetup};
use super::join::Cutoff;
use super::serve::{Serving, serve};
use super::tally::{Tally, TrialTally, WorkerTally};
use super::users::{Request, UserState, users};
use super::{ObjectTier, Tier};
use crate::AiError;

/// A queued request: higher QoS first, then the earlier issued.
struct Queued(Request);

impl PartialEq for Queued {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == CmpOrdering::Equal
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Queued {
    fn cmp(&self, o: &Self) -> CmpOrdering {
        (self.0.qos, Reverse(self.0.seq)).cmp(&(o.0.qos, Reverse(o.0.seq)))
    }
}

#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Queued>,
    closed: bool,
    issued: u64,
}

/// The queue between the users and the workers, the condition its takers wait on, and
/// the conversations both sides share (the users add turns, a worker reads a turn's
/// conversation when it takes it).
#[derive(Default)]
struct Requests {
    queue: Mutex<Queue>,
    ready: Condvar,
    conversations: Conversations,
}

impl Requests {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues an issued request and wakes a worker.
    fn push(&self, req: Request) {
        {
            let mut q = self.lock();
            q.heap.push(Queued(req));
            q.issued += 1;
        }
        self.ready.notify_one();
    }

    /// Closes the queue: every worker waiting wakes and ends.
    fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }

    /// The next request to serve, with the keys it reads back as its conversation
    /// holds them now; None once the queue is closed or the duration has `ended`
    /// (kv-cache.py's workers check its stop event before each request: what is queued
    /// then is dropped, not taken and cut, even while the issuing thread has yet to
    /// close the queue or the joins wait).
    fn take(&self, ended: &dyn Fn() -> bool) -> Option<Request> {
        let mut q = self.lock();
        loop {
            if q.closed || ended() {
                return None;
            }
            if let Some(Queued(mut r)) = q.heap.pop() {
                drop(q);
                if let Some((id, turn)) = r.conversation {
                    r.previous = self.conversations.read_back(id, turn, &r.key);
                }
                return Some(r);
            }
            q = self
                .ready
                .wait_timeout(q, Duration::from_millis(100))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    fn into_inner(self) -> Queue {
        self.queue.into_inner().unwrap_or_else(|p| p.into_inner())
    }
}

/// What one trial on one rank measured.
pub struct Trial {
    pub tally: Tally,
    pub duration: Nanos,
    /// Requests issued, and still queued at the end (dropped; those being served then
    /// are the tally's `cut`).
    pub issued: u64,
    pub dropped: u64,
    /// (hits, misses, cpu evictions, storage evictions).
    pub counts: [u64; 4],
    pub conversations: ConversationCounts,
}

/// Runs one trial with its storage tier in `dir` (which must exist); removes the
/// files it wrote before returning.
pub fn run_trial(
    settings: &KvCacheSettings,
    tier: &Tier<'_>,
    seed: u64,
    clock: &dyn Clock,
    stop: &AtomicBool,
) -> Result<Trial, AiError> {
    let cache = cache_on(settings, tier);
    let objects = tier.objects;
    let requests = Requests::default();
    let failed = AtomicBool::new(false);
    let first_error = Mutex::new(None);
    let start = clock.now();
    let deadline = start + settings.duration.nanos();
    let cutoff = Cutoff::new(deadline, settings.join_window.nanos(), settings.workers());
    let tally = TrialTally::default();
    let shared = Shared {
        settings,
        cache: &cache,
        requests: &requests,
        tally: &tally,
        clock,
        stop,
        failed: &failed,
        first_error: &first_error,
        start,
        // Requests being served may finish within the joins (kv-cache.py's way).
        deadline: cutoff.latest(deadline),
        cutoff: &cutoff,
        objects,
        device: tier.device.is_some(),
        live: tier.live,
    };
    let quiet = run_threads(&shared, seed, deadline);
    // The duration asked for, as kv-cache.py takes it (the time until its stop event),
    // not the wind-down after it; shorter if the run stopped early.
    let duration = clock.now().min(deadline).saturating_sub(start);
    let left = remove_left(&cache.files(), objects);
    if let Some(e) = first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    left?;
    if stop.load(Ordering::Relaxed) {
        return Err(AiError::Interrupted);
    }
    let conversations = requests.conversations.counts();
    let tally = tally.finish(&quiet);
    let mut trial = trial_of(&cache, tally, duration, requests.into_inner());
    trial.conversations = conversations;
    Ok(trial)
}

/// The trial's cache: its memory tier and its storage tier (a directory or a device).
fn cache_on(settings: &KvCacheSettings, tier: &Tier<'_>) -> KvCache {
    let cache = KvCache::new(
        settings.model.shape(),
        settings.cpu_memory.0,
        tier.limit,
        &tier.dir,
        settings.max_concurrent_allocs,
    );
    match tier.device {
        Some((start, bytes)) => cache.on_device(start, bytes, super::DEVICE_BLOCK),
        None => cache,
    }
}

/// What the trial measured, from its tally, the queue left and the cache.
fn trial_of(cache: &KvCache, tally: Tally, duration: Nanos, q: Queue) -> Trial {
    use std::sync::atomic::Ordering::Relaxed;
    Trial {
        tally,
        duration,
        issued: q.issued,
        dropped: q.heap.len() as u64,
        counts: [
            cache.hits.load(Relaxed),
            cache.misses.load(Relaxed),
            cache.evictions.cpu.load(Relaxed),
            cache.evictions.storage.load(Relaxed),
        ],
        conversations: ConversationCounts::default(),
    }
}

/// The trial's threads: the users' side issuing requests until `deadline`, the workers
/// serving them, and kv-cache.py's joins at the end ([`Cutoff::join_in_turn`]); each
/// worker's quiet stretches, in worker order.
fn run_threads(sh: &Shared<'_>, seed: u64, deadline: Nanos) -> Vec<Silences> {
    let halt = || sh.stop.load(Ordering::Relaxed) || sh.failed.load(Ordering::Relaxed);
    std::thread::scope(|s| {
        s.spawn(|| issue(sh.settings, seed, sh.clock, deadline, sh.requests, &halt));
        let workers: Vec<_> = (0..sh.settings.workers())
            .map(|w| s.spawn(move || worker(sh, w, worker_seed(seed, w))))
            .collect();
        sh.cutoff.join_in_turn(sh.clock, deadline, &halt);
        workers
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// What a trial's workers share.
struct Shared<'a> {
    settings: &'a KvCacheSettings,
    cache: &'a KvCache,
    requests: &'a Requests,
    tally: &'a TrialTally,
    clock: &'a dyn Clock,
    stop: &'a AtomicBool,
    failed: &'a AtomicBool,
    first_error: &'a Mutex<Option<AiError>>,
    start: Nanos,
    /// The latest a request being served may end and count.
    deadline: Nanos,
    cutoff: &'a Cutoff,
    objects: Option<&'a ObjectTier<'a>>,
    device: bool,
    live: Option<&'a super::live::KvLive>,
}

/// Removes the storage tier's entries left at a trial's end: files, or objects through
/// a client of their own (with the cleanup's retries).
fn remove_left(
    keys: &[std::path::PathBuf],
    objects: Option<&ObjectTier<'_>>,
) -> Result<(), AiError> {
    let Some(o) = objects else {
        for f in keys {
            let _ = std::fs::remove_file(f);
        }
        return Ok(());
    };
    if keys.is_empty() || o.keep {
        return Ok(());
    }
    let mut b = (o.factory)(0).map_err(|e| AiError::Setup(e.to_string()))?;
    b.at_least_attempts(iolab_engine::CLEANUP_ATTEMPTS);
    let mut failed = None;
    for k in keys {
        let key = k.to_string_lossy();
        let c = b.run(ObjectRequest {
            op: ObjectOp::Delete,
            key: &key,
            tag: 0,
        });
        if let Some(e) = c.error {
            failed.get_or_insert(format!("could not remove s3 object {key}: {e}"));
        }
    }
    failed.map_or(Ok(()), |why| Err(AiError::Io(why)))
}

/// Worker `w`'s stream of a rank whose seed is `seed` (the run's seed plus the rank):
/// mixed, so that no two (rank, worker) pairs share one (`seed ^ w` made rank 1's
/// worker 0 rank 0's worker 1).
fn worker_seed(seed: u64, w: u32) -> u64 {
    iolab_core::rng::mix(&[seed, u64::from(w)])
}

/// A worker thread: serves until the end, recording into the trial's tally; its error
/// stops every worker. Its quiet stretches, for the trial's.
fn worker(sh: &Shared<'_>, w: u32, seed: u64) -> Silences {
    let mut tally = sh.tally.worker();
    let over = || {
        sh.stop.load(Ordering::Relaxed)
            || sh.failed.load(Ordering::Relaxed)
            || sh.cutoff.passed(sh.clock.now())
    };
    let at = Serving {
        cache: sh.cache,
        settings: sh.settings,
        start: sh.start,
        deadline: sh.deadline,
        over: &over,
        live: sh.live,
    };
    let objects = sh.objects.map(|o| (o.factory, w));
    if let Err(e) = work(
        &at,
        (objects, sh.device),
        sh.requests,
        sh.clock,
        seed,
        &mut tally,
    ) {
        sh.failed.store(true, Ordering::Relaxed);
        sh.requests.ready.notify_all();
        sh.first_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
    }
    sh.cutoff.exit(w);
    tally.finish()
}

/// The users' side: each user's requests at its think times, until the deadline.
fn issue(
    settings: &KvCacheSettings,
    seed: u64,
    clock: &dyn Clock,
    deadline: Nanos,
    requests: &Requests,
    halt: &dyn Fn() -> bool,
) {
    let mut states: Vec<UserState> = users(settings.users, seed)
        .into_iter()
        .map(|u| UserState::new(u, seed, settings.multi_turn, settings.prefix_caching))
        .collect();
    let now = clock.now();
    let mut due: BinaryHeap<Reverse<(Nanos, usize)>> = states
        .iter_mut()
        .enumerate()
        .map(|(i, s)| Reverse((now + s.next_wait(), i)))
        .collect();
    let mut seq = 0u64;
    while let Some(Reverse((at, i))) = due.pop() {
        if at >= deadline {
            break;
        }
        if !sleep_until(clock, at, halt) {
            break;
        }
        let req = states[i].next_request(at, seq, &requests.conversations);
        seq += 1;
        requests.push(req);
        due.push(Reverse((at + states[i].next_wait(), i)));
    }
    // The queue stays open until the deadline: the next request due after it must not
    // end the serving of those queued before it (up to a think time early).
    sleep_until(clock, deadline, halt);
    requests.close();
}

/// Sleeps until `at` in steps of at most 100 ms, so a stop is seen soon; false if
/// halted first.
fn sleep_until(clock: &dyn Clock, at: Nanos, halt: &dyn Fn() -> bool) -> bool {
    loop {
        if halt() {
            return false;
        }
        let now = clock.now();
        if now >= at {
            return true;
        }
        clock.nap(at.saturating_sub(now).min(Nanos(100_000_000)));
    }
}

/// A worker: takes requests until the queue is closed (or the run fails).
fn work(
    at: &Serving<'_>,
    (objects, device): (Option<(iolab_engine::ObjectFactory<'_>, u32)>, bool),
    requests: &Requests,
    clock: &dyn Clock,
    seed: u64,
    tally: &mut WorkerTally<'_>,
) -> Result<(), AiError> {
    let s = at.settings;
    let setup = EntrySetup {
        backend: s.backend,
        transfer: s.transfer_size.0,
        direct: s.direct,
        seed,
    };
    let mut io = EntryIo::new(setup, clock, at.start)?;
    io.over = at.over;
    if device {
        io.use_device();
    }
    if let Some((factory, w)) = objects {
        io.use_objects(factory(w).map_err(|e| AiError::Setup(e.to_string()))?);
    }
    let r = serve_queue(at, &mut io, requests, tally);
    tally.add_io(io.take_measure());
    r
}

/// Serves requests until the queue is closed.
fn serve_queue(
    at: &Serving<'_>,
    io: &mut EntryIo<'_>,
    requests: &Requests,
    tally: &mut WorkerTally<'_>,
) -> Result<(), AiError> {
    let end = at.start + at.settings.duration.nanos();
    let clock = io.clock;
    let ended = || clock.now() >= end;
    while let Some(req) = requests.take(&ended) {
        if !serve(at, io, &req, tally)? {
            tally.lock().cut += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::kvcache::KvModel;
    use iolab_core::spec::KvCacheSpec;
    use iolab_core::units::TimeSpan;
    use iolab_engine::FakeClock;

    /// Three users' requests of seed 42 issued for 10 s on a fake clock, which `issue()`
    /// leaves at the deadline, the queue closed.
    fn issued_for_10_s() -> (iolab_core::spec::KvCacheSettings, FakeClock, Requests) {
        let settings = KvCacheSpec {
            model: Some(KvModel::Tiny1b),
            users: Some(3),
            duration: Some(TimeSpan::from_secs(10)),
            ..KvCacheSpec::default()
        }
        .resolve()
        .unwrap();
        let clock = FakeClock::new(Nanos(1000));
        let requests = Requests::default();
        issue(
            &settings,
            42,
            &clock,
            Nanos::from_secs(10),
            &requests,
            &|| false,
        );
        (settings, clock, requests)
    }

    /// The regression: `issue()` closed the queue as soon as the next request was due
    /// after the deadline, up to a think time (~1.2 s) early, and the workers then
    /// dropped what was queued and issued nothing more.
    #[test]
    fn the_queue_closes_at_the_deadline_not_at_the_last_request() {
        let (_, clock, requests) = issued_for_10_s();
        let deadline = Nanos::from_secs(10);
        let closed_at = clock.now();
        let q = requests.queue.into_inner().unwrap();
        assert!(q.closed);
        assert!(closed_at >= deadline, "closed at {closed_at:?}");
        // Requests were issued until the deadline, none after it.
        let last = q.heap.iter().map(|r| r.0.issued).max().unwrap();
        assert!(last < deadline);
        assert_eq!(q.issued, q.heap.len() as u64);
    }

    /// The regression: after the duration, until the issuing thread closed the queue
    /// (200 busy workers on 2 cores starve it), workers took every queued request,
    /// recorded its queue wait and counted it cut: option 1's 300 s run had 144,544
    /// cut (of 200 workers) and 1 dropped, and a queue-wait p50 of 150 s.
    #[test]
    fn requests_queued_when_the_duration_ends_are_dropped_not_taken() {
        let (settings, clock, requests) = issued_for_10_s();
        // The window before the queue is closed.
        requests.lock().closed = false;
        let queued = requests.lock().heap.len();
        assert!(queued > 3, "{queued}");
        assert!(requests.take(&|| true).is_none());
        assert_eq!(requests.lock().heap.len(), queued);
        // A worker past the duration's end takes none of them (a request it took would
        // be cut at its first operation, which here also closes the queue).
        let dir = tempfile::tempdir().unwrap();
        let cache = KvCache::new(settings.model.shape(), 0, 1 << 30, dir.path(), 0);
        let setup = EntrySetup {
            backend: iolab_core::spec::BackendKind::Psync,
            transfer: 65536,
            direct: false,
            seed: 1,
        };
        let mut io = EntryIo::new(setup, &clock, Nanos::ZERO).unwrap();
        let over = || {
            requests.close();
            true
        };
        let at = Serving {
            cache: &cache,
            settings: &settings,
            start: Nanos::ZERO,
            deadline: Nanos::from_secs(12),
            over: &over,
            live: None,
        };
        assert!(clock.now() >= Nanos::from_secs(10));
        let trial = TrialTally::default();
        serve_queue(&at, &mut io, &requests, &mut trial.worker()).unwrap();
        let tally = trial.lock();
        assert_eq!((tally.cut, tally.queue_wait.count()), (0, 0));
        assert_eq!(requests.lock().heap.len(), queued);
        assert!(requests.take(&|| false).is_some());
    }

    /// kv-cache.py's workers list a turn's conversation when they serve it: with an
    /// open loop, a second turn taken after its user issued a third looks that one up
    /// too (a miss until it is written).
    #[test]
    fn a_turn_taken_late_reads_back_its_conversations_later_turns() {
        let (_, _, requests) = issued_for_10_s();
        requests.lock().closed = false;
        let mut checked = 0;
        while !requests.lock().heap.is_empty() {
            let r = requests.take(&|| false).unwrap();
            let (id, turn) = r.conversation.unwrap();
            let keys = requests.conversations.read_back(id, 2, "");
            if turn == 1 {
                assert!(r.previous.is_empty());
                continue;
            }
            // Every turn issued in its conversation but its own, later ones included.
            let others: Vec<_> = keys.into_iter().filter(|k| *k != r.key).collect();
            assert_eq!(r.previous, others, "{}", r.key);
            checked += usize::from(r.previous.iter().any(|k| {
                let t: u32 = k.rsplit('_').next().unwrap().parse().unwrap();
                t > turn
            }));
        }
        assert!(checked > 0);
    }

    #[test]
    fn no_two_ranks_workers_share_a_seed() {
        let mut seen = std::collections::HashSet::new();
        for rank in 0..64u64 {
            for w in 0..64u32 {
                assert!(
                    seen.insert(super::worker_seed(42 + rank, w)),
                    "rank {rank} worker {w}"
                );
            }
        }
        assert_ne!(super::worker_seed(43, 0), super::worker_seed(42, 1));
    }
}
