//! [`Mpi`]: the [`Comm`] of a run started by mpirun or srun, over rsmpi (Open MPI).
//! Collectives are made only by the thread that called [`Mpi::init`]; worker threads make
//! no MPI call but point-to-point [`Messages`] (pfind's work stealing), which need
//! MPI_THREAD_MULTIPLE: iolab asks for it and, where the library gives only Funneled,
//! offers no messages (the walk that needs them says so). `Mpi` holds the rsmpi `Universe` (dropping it
//! finalizes MPI) and no communicator handle: rsmpi's communicators wrap a raw pointer
//! and are neither Send nor Sync, while `Universe` is both, so `Mpi` is Send + Sync
//! without `unsafe` and builds the world communicator (a constant handle) per call.

use std::fmt;
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::{Count, Rank, Threading};

use crate::launch::{detect_launch, size_variable};
use crate::{Comm, CommError, Messages, RankInfo, Silence};

/// The tag of the roll call after a reduction timed out (see [`Comm::reduce`]).
const ROLL_CALL_TAG: i32 = 0x10ab;
/// How long rank 0 collects the roll call's answers.
const ROLL_CALL: Duration = Duration::from_secs(3);
/// How long the other ranks then wait for rank 0 to end the job before they do.
const ROLL_CALL_END: Duration = Duration::from_secs(10);

/// The exit code of a job that a panicking rank ends (Rust's own code for a panic).
const PANIC_EXIT_CODE: i32 = 101;

/// One rank of an MPI job. Create it once, on the main thread, before any other thread
/// starts, and keep it alive until the end of `main`.
pub struct Mpi {
    universe: Universe,
    rank: u32,
    size: u32,
    host: String,
    /// Every rank's host, by rank (to name a silent rank).
    hosts: Vec<String>,
    /// The thread that initialized MPI, the only one that makes collectives.
    main_thread: ThreadId,
    /// MPI_THREAD_MULTIPLE was granted: any thread may send and receive [`Messages`].
    multiple: bool,
}

impl Mpi {
    /// Initializes MPI at thread level Multiple, or Funneled where the library offers no
    /// more (then there are no [`Messages`]).
    ///
    /// Fails if MPI was already initialized in this process, if the library cannot offer
    /// Funneled, or if a launcher started several ranks but this process came up alone as
    /// an MPI singleton (launched by another MPI's mpirun, or srun without PMI), which
    /// would otherwise give N independent runs that all believe they are rank 0.
    pub fn init() -> Result<Mpi, CommError> {
        let (universe, provided) = mpi::initialize_with_threading(Threading::Multiple)
            .ok_or(CommError::AlreadyInitialized)?;
        if provided == Threading::Single {
            return Err(CommError::ThreadLevel {
                provided: format!("{provided:?}"),
            });
        }
        let world = universe.world();
        // MPI ranks and sizes are non-negative `int`s, so they fit a u32.
        let rank = u32::try_from(world.rank()).expect("an MPI rank is not negative");
        let size = u32::try_from(world.size()).expect("an MPI world size is positive");
        if size == 1
            && let Some(launch) = detect_launch()
            && let Some(expected) = launch.size.filter(|&n| n > 1)
        {
            return Err(CommError::Singleton {
                variable: size_variable(launch.kind),
                expected,
            });
        }
        let mut mpi = Mpi {
            universe,
            rank,
            size,
            host: crate::hostname(),
            hosts: Vec::new(),
            main_thread: thread::current().id(),
            multiple: provided == Threading::Multiple,
        };
        mpi.hosts = mpi
            .all_gather_bytes(mpi.host.as_bytes())
            .into_iter()
            .map(|h| String::from_utf8_lossy(&h).into_owned())
            .collect();
        Ok(mpi)
    }

    /// The world communicator, for a call on the thread that initialized MPI.
    fn world(&self) -> SimpleCommunicator {
        let here = thread::current();
        assert!(
            here.id() == self.main_thread,
            "an MPI collective was called on thread {:?}, but only the thread that called Mpi::init makes collectives",
            here.name().unwrap_or("unnamed")
        );
        self.universe.world()
    }
}

impl Mpi {
    /// After a reduction timed out: rank 0 takes a roll call of the ranks still alive
    /// (they each send it their rank), names the silent ones to `on_silence` and ends the
    /// job; the others answer and wait for that end, or end it themselves if rank 0 is
    /// the silent one.
    fn silence(
        &self,
        world: &SimpleCommunicator,
        started: Instant,
        on_silence: &dyn Fn(&Silence),
    ) -> ! {
        let waited = started.elapsed();
        let info = |rank: usize| RankInfo {
            rank: rank as u32,
            host: self.hosts.get(rank).cloned().unwrap_or_default(),
        };
        if self.rank == 0 {
            let mut answered = vec![false; self.size as usize];
            answered[0] = true;
            let until = Instant::now() + ROLL_CALL;
            while Instant::now() < until && answered.contains(&false) {
                match world.any_process().immediate_probe_with_tag(ROLL_CALL_TAG) {
                    Some(status) => {
                        let from = world.process_at_rank(status.source_rank());
                        let (rank, _) = from.receive_with_tag::<u32>(ROLL_CALL_TAG);
                        if let Some(a) = answered.get_mut(rank as usize) {
                            *a = true;
                        }
                    }
                    None => thread::sleep(Duration::from_millis(1)),
                }
            }
            let ranks = (0..answered.len())
                .filter(|&r| !answered[r])
                .map(info)
                .collect();
            on_silence(&Silence { ranks, waited });
            self.abort(1)
        }
        // A small message goes out eagerly, whether rank 0 listens or not.
        world
            .process_at_rank(0)
            .send_with_tag(&self.rank, ROLL_CALL_TAG);
        thread::sleep(ROLL_CALL_END);
        on_silence(&Silence {
            ranks: vec![info(0)],
            waited,
        });
        self.abort(1)
    }
}

/// An MPI element count for a message of `len` bytes.
fn count(len: usize) -> Count {
    Count::try_from(len).unwrap_or_else(|_| {
        panic!(
            "a collective of {len} bytes exceeds MPI's count limit of {} bytes; iolab's messages are small, so this is a bug",
            Count::MAX
        )
    })
}

/// Splits a gathered buffer into each rank's bytes, dropping the padding byte each rank
/// added so that no buffer is empty.
fn unpad(buffer: &[u8], counts: &[Count]) -> Vec<Vec<u8>> {
    let mut rest = buffer;
    counts
        .iter()
        .map(|&c| {
            let (head, tail) = rest.split_at(length(c));
            rest = tail;
            head.split_last()
                .map(|(_, body)| body.to_vec())
                .unwrap_or_default()
        })
        .collect()
}

/// Where each rank's bytes start in a gathered buffer, and its total length.
fn offsets(counts: &[Count]) -> (Vec<Count>, usize) {
    let mut displacements: Vec<Count> = Vec::with_capacity(counts.len());
    let mut total = 0usize;
    for &c in counts {
        displacements.push(count(total));
        total += length(c);
    }
    (displacements, total)
}

/// The length in bytes of an MPI count received from a peer (which made it with `count`).
fn length(count: Count) -> usize {
    usize::try_from(count).expect("an MPI count made from a length is not negative")
}

impl Comm for Mpi {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn host(&self) -> &str {
        &self.host
    }
    fn barrier(&self) {
        self.world().barrier();
    }

    /// Two collectives: the lengths (MPI_Allgather), then the bytes at their
    /// displacements (MPI_Allgatherv). Every contribution carries one padding byte so no
    /// buffer is ever empty: an empty `&[u8]` usually points at the dangling address 1,
    /// which is exactly Open MPI's `MPI_IN_PLACE`, and MPI then fails with MPI_ERR_ARG.
    fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let world = self.world();
        let mut padded = Vec::with_capacity(mine.len() + 1);
        padded.extend_from_slice(mine);
        padded.push(0);
        let mut counts: Vec<Count> = vec![0; self.size as usize];
        world.all_gather_into(&count(padded.len()), &mut counts[..]);

        let (displacements, total) = offsets(&counts);
        // Every rank sums the same counts, so every rank panics alike if this overflows.
        count(total);

        let mut buffer = vec![0u8; total];
        {
            let mut partition = PartitionMut::new(&mut buffer[..], &counts[..], &displacements[..]);
            world.all_gather_varcount_into(&padded[..], &mut partition);
        }
        unpad(&buffer, &counts)
    }

    /// Two gathers to `root`: the lengths, then the bytes (MPI_Gatherv); the other ranks
    /// receive nothing.
    fn gather_bytes(&self, root: u32, mine: &[u8]) -> Vec<Vec<u8>> {
        assert!(
            root < self.size,
            "gather to root {root}, but there are only {} ranks",
            self.size
        );
        let world = self.world();
        let root_process =
            world.process_at_rank(Rank::try_from(root).expect("root < size fits an MPI rank"));
        // The padding byte keeps every buffer non-empty (see all_gather_bytes).
        let mut padded = Vec::with_capacity(mine.len() + 1);
        padded.extend_from_slice(mine);
        padded.push(0);
        if self.rank != root {
            root_process.gather_into(&count(padded.len()));
            root_process.gather_varcount_into(&padded[..]);
            return Vec::new();
        }
        let mut counts: Vec<Count> = vec![0; self.size as usize];
        root_process.gather_into_root(&count(padded.len()), &mut counts[..]);
        let (displacements, total) = offsets(&counts);
        count(total);
        let mut buffer = vec![0u8; total];
        {
            let mut partition = PartitionMut::new(&mut buffer[..], &counts[..], &displacements[..]);
            root_process.gather_varcount_into_root(&padded[..], &mut partition);
        }
        unpad(&buffer, &counts)
    }

    /// Two broadcasts: the length, then the bytes.
    fn broadcast_bytes(&self, root: u32, data: &[u8]) -> Vec<u8> {
        assert!(
            root < self.size,
            "broadcast from root {root}, but there are only {} ranks",
            self.size
        );
        let world = self.world();
        let root_process =
            world.process_at_rank(Rank::try_from(root).expect("root < size fits an MPI rank"));
        let is_root = self.rank == root;
        let mut len: Count = if is_root { count(data.len()) } else { 0 };
        root_process.broadcast_into(&mut len);
        if len == 0 {
            // Every rank now knows there is nothing to send; an empty buffer would also
            // have the address of Open MPI's MPI_IN_PLACE (see all_gather_bytes).
            return Vec::new();
        }
        let mut buffer = if is_root {
            data.to_vec()
        } else {
            vec![0u8; length(len)]
        };
        root_process.broadcast_into(&mut buffer[..]);
        buffer
    }

    fn all_ok(&self, ok: bool) -> bool {
        let mut all = false;
        self.world()
            .all_reduce_into(&ok, &mut all, SystemOperation::logical_and());
        all
    }

    fn all_max(&self, value: u64) -> u64 {
        let mut max = 0u64;
        self.world()
            .all_reduce_into(&value, &mut max, SystemOperation::max());
        max
    }

    /// Wraps on overflow (MPI_SUM over MPI_UINT64_T).
    fn all_sum(&self, value: u64) -> u64 {
        let mut sum = 0u64;
        self.world()
            .all_reduce_into(&value, &mut sum, SystemOperation::sum());
        sum
    }

    /// Two MPI_Iallreduce (sum, max) polled until they complete or `deadline` passes,
    /// sleeping an eighth of the wait so far between tests (see [`crate::poll`]).
    fn reduce(
        &self,
        sums: &[u64],
        maxes: &[u64],
        deadline: Option<Duration>,
        on_silence: &dyn Fn(&Silence),
    ) -> (Vec<u64>, Vec<u64>) {
        let world = self.world();
        let mut total = vec![0u64; sums.len()];
        let mut max = vec![0u64; maxes.len()];
        let Some(deadline) = deadline else {
            world.all_reduce_into(sums, &mut total[..], SystemOperation::sum());
            world.all_reduce_into(maxes, &mut max[..], SystemOperation::max());
            return (total, max);
        };
        let started = Instant::now();
        mpi::request::scope(|scope| {
            let mut pending = vec![
                world.immediate_all_reduce_into(
                    scope,
                    sums,
                    &mut total[..],
                    SystemOperation::sum(),
                ),
                world.immediate_all_reduce_into(scope, maxes, &mut max[..], SystemOperation::max()),
            ];
            while !pending.is_empty() {
                let mut still = Vec::new();
                for r in pending {
                    if let Err(r) = r.test() {
                        still.push(r);
                    }
                }
                pending = still;
                if pending.is_empty() {
                    break;
                }
                if started.elapsed() >= deadline {
                    self.silence(&world, started, on_silence);
                }
                thread::sleep(crate::poll::pause_after(started.elapsed()));
            }
        });
        (total, max)
    }

    /// MPI_Ibarrier, polled until `deadline`, then MPI_Abort.
    fn end_within(&self, deadline: Duration, code: i32) {
        let started = Instant::now();
        let mut barrier = self.world().immediate_barrier();
        loop {
            match barrier.test() {
                Ok(_) => return,
                Err(pending) => barrier = pending,
            }
            if started.elapsed() >= deadline {
                // The others will never arrive: the pending barrier dies with the job.
                std::mem::forget(barrier);
                self.abort(code);
            }
            thread::sleep(Duration::from_millis(2));
        }
    }

    /// MPI_Abort on the world communicator: mpirun or srun ends every rank on every host.
    /// Allowed from any thread, as a last resort is no time to insist on Funneled.
    fn abort(&self, code: i32) -> ! {
        self.universe.world().abort(code)
    }

    fn messages(&self) -> Option<&dyn Messages> {
        self.multiple.then_some(self as &dyn Messages)
    }
}

/// Messages are tagged above the roll call's tag, so the two never meet.
fn message_tag(tag: u16) -> mpi::Tag {
    0x2_0000 + mpi::Tag::from(tag)
}

/// Point-to-point on the world communicator from any thread (only offered under
/// MPI_THREAD_MULTIPLE; see [`Comm::messages`]).
impl Messages for Mpi {
    /// MPI_Send: returns once the message is buffered or, when large, taken.
    fn send(&self, to: u32, tag: u16, data: &[u8]) {
        let to = Rank::try_from(to).expect("a rank fits an MPI rank");
        self.universe
            .world()
            .process_at_rank(to)
            .send_with_tag(data, message_tag(tag));
    }

    /// MPI_Improbe, then MPI_Mrecv of the matched message.
    fn try_receive(&self, from: Option<u32>, tag: u16) -> Option<(u32, Vec<u8>)> {
        let world = self.universe.world();
        let tag = message_tag(tag);
        let probed = match from {
            None => world.any_process().immediate_matched_probe_with_tag(tag),
            Some(r) => world
                .process_at_rank(Rank::try_from(r).expect("a rank fits an MPI rank"))
                .immediate_matched_probe_with_tag(tag),
        }?;
        let (data, status) = probed.matched_receive_vec::<u8>();
        let sender = u32::try_from(status.source_rank()).expect("an MPI rank is not negative");
        Some((sender, data))
    }
}

impl Drop for Mpi {
    /// A rank unwinding from a panic must not finalize: MPI_Finalize synchronizes with
    /// the other ranks in Open MPI, and they are waiting for this rank in a collective
    /// that will never come, so both sides would hang. It ends the job instead. Otherwise
    /// the universe drops after this and finalizes MPI normally.
    fn drop(&mut self) {
        if thread::panicking() {
            eprintln!(
                "iolab: rank {} on {} panicked; aborting the MPI job so the other ranks do not wait for it",
                self.rank, self.host
            );
            self.universe.world().abort(PANIC_EXIT_CODE);
        }
    }
}

impl fmt::Debug for Mpi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mpi")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}
