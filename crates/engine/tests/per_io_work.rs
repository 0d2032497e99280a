//! What a worker does per operation, counted instead of timed (bench/floor.py times it):
//! the clock readings and the heap allocations of the worker thread, on the null backends,
//! asserted exactly. Two runs that differ only in their number of operations must differ
//! in clock readings by exactly the readings per operation the design allows, and not at
//! all in allocations: a reading or an allocation added to the hot loop fails here.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::thread::ThreadId;

use iolab_backend::alloc_count::{CountingAlloc, thread_allocations};
use iolab_comm::SingleProcess;
use iolab_core::spec::{
    BackendKind, DataSpec, MetaBackendKind, MetaOp, MetaSpec, RwKind, TargetSpec,
};
use iolab_core::units::{ByteCount, Nanos};
use iolab_engine::{Clock, Env, FakeClock, prepare_target};
use iolab_engine::{DataOptions, run_data};
use iolab_engine::{MetaOptions, run_meta};

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

/// A fake clock that notes, per thread, when it first read it, how often it did, and how
/// many allocations the thread had made by its latest reading.
struct CountingClock {
    inner: FakeClock,
    seen: Mutex<HashMap<ThreadId, Seen>>,
}

#[derive(Clone, Copy, Default)]
struct Seen {
    first: u64,
    reads: u64,
    allocs: u64,
}

impl CountingClock {
    fn new() -> Self {
        CountingClock {
            // 1 ns a reading: a whole run stays inside the first timeline interval.
            inner: FakeClock::new(Nanos(1)),
            // Room for every thread a run starts: inserting never grows the map.
            seen: Mutex::new(HashMap::with_capacity(256)),
        }
    }

    /// (readings, allocations) of each thread that read the clock at least `min` times
    /// (the workers: one per phase here), in the order they first read it.
    fn workers(&self, min: u64) -> Vec<(u64, u64)> {
        let seen = self.seen.lock().unwrap();
        let mut w: Vec<Seen> = seen.values().filter(|s| s.reads >= min).copied().collect();
        w.sort_by_key(|s| s.first);
        w.iter().map(|s| (s.reads, s.allocs)).collect()
    }
}

impl Clock for CountingClock {
    fn now(&self) -> Nanos {
        let allocs = thread_allocations();
        let mut seen = self.seen.lock().unwrap();
        let order = seen.len() as u64;
        let e = seen.entry(std::thread::current().id()).or_insert(Seen {
            first: order,
            ..Seen::default()
        });
        e.reads += 1;
        e.allocs = allocs;
        drop(seen);
        self.inner.now()
    }
}

/// The worker's (clock readings, allocations) for a size-based run of `ios` I/Os.
fn data_run(ios: u64, queue_depth: u32, rw: RwKind) -> (u64, u64) {
    let spec = DataSpec {
        backend: BackendKind::Null,
        rw,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::kib(4 * ios)),
        queue_depth,
        ..DataSpec::default()
    };
    let comm = SingleProcess::new();
    let target = prepare_target(&comm, &TargetSpec::default(), spec.backend, true).unwrap();
    let stop = AtomicBool::new(false);
    let env = Env::new(&comm, &stop);
    let clock = CountingClock::new();
    let out = run_data(&env, &clock, &spec, &target, &DataOptions::default()).unwrap();
    let done: u64 = out.phases[0].ops.iter().map(|o| o.ops).sum();
    assert_eq!(done, ios);
    let w = clock.workers(ios / queue_depth as u64);
    assert_eq!(w.len(), 1);
    w[0]
}

const META_OPS: [MetaOp; 3] = [MetaOp::Create, MetaOp::Stat, MetaOp::Remove];

/// Each phase worker's (clock readings, allocations) for create, stat and remove of
/// `files` files.
fn meta_run(files: u64) -> Vec<(u64, u64)> {
    let spec = MetaSpec {
        backend: MetaBackendKind::Null,
        ops: META_OPS.to_vec(),
        files_per_dir: files,
        dirs_per_thread: Some(1),
        ..MetaSpec::default()
    };
    let comm = SingleProcess::new();
    let target = prepare_target(&comm, &TargetSpec::default(), BackendKind::Null, true).unwrap();
    let stop = AtomicBool::new(false);
    let env = Env::new(&comm, &stop);
    let clock = CountingClock::new();
    let out = run_meta(&env, &clock, &spec, &target, &MetaOptions::default()).unwrap();
    for (p, op) in out.phases.iter().zip(META_OPS) {
        assert_eq!(p.op(op.op_kind()).unwrap().ops, files);
    }
    let w = clock.workers(files);
    assert_eq!(w.len(), META_OPS.len());
    w
}

const N: u64 = 8192;

#[test]
fn a_psync_like_loop_reads_the_clock_twice_per_io_and_allocates_nothing() {
    for rw in [RwKind::Randread, RwKind::Randwrite, RwKind::Randrw] {
        let (reads_1, allocs_1) = data_run(N, 1, rw);
        let (reads_2, allocs_2) = data_run(2 * N, 1, rw);
        // Issue and completion of every I/O.
        assert_eq!(reads_2 - reads_1, 2 * N, "{rw:?}");
        assert_eq!(allocs_2, allocs_1, "{rw:?}: allocations grow with the I/Os");
    }
}

#[test]
fn a_deep_queue_shares_its_two_readings_per_batch() {
    let (reads_1, allocs_1) = data_run(N, 32, RwKind::Randread);
    let (reads_2, allocs_2) = data_run(2 * N, 32, RwKind::Randread);
    // The null backend completes a whole queue of 32 at once: one issue stamp and one
    // completion stamp per batch.
    assert_eq!(reads_2 - reads_1, 2 * N / 32);
    assert_eq!(allocs_2, allocs_1);
}

#[test]
fn metadata_operations_read_the_clock_twice_and_allocate_nothing() {
    let once = meta_run(N);
    let twice = meta_run(2 * N);
    for ((op, (reads_1, allocs_1)), (reads_2, allocs_2)) in META_OPS.iter().zip(once).zip(twice) {
        assert_eq!(reads_2 - reads_1, 2 * N, "{op:?}");
        assert_eq!(
            allocs_2, allocs_1,
            "{op:?}: allocations grow with the operations"
        );
    }
}

#[test]
fn the_counting_allocator_sees_an_allocation() {
    // The assertions above are worth something only if allocations are counted.
    let before = thread_allocations();
    let v: Vec<u64> = Vec::with_capacity(100);
    assert_eq!(thread_allocations(), before + 1);
    drop(v);
}
