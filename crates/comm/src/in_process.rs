//! [`InProcess`]: N ranks as threads of one process, for tests of multi-rank behaviour.
//! Each thread gets its own `RankHandle` (seen as `&dyn Comm`); the handles meet in one
//! `Meeting`, a Mutex + Condvar where every collective is one generation. A rank that
//! panics, returns early or calls a different collective fails the meeting, so its peers
//! panic instead of waiting forever, and [`InProcess::run`] re-raises the first panic.
//! Point-to-point [`Messages`] go through one mailbox per rank.

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;

use crate::{Comm, Messages};

/// Runs N ranks as threads of this process (see [`InProcess::run`]).
#[derive(Debug, Clone, Copy)]
pub struct InProcess;

impl InProcess {
    /// Runs `f` once per rank, each on its own scoped thread named `rank-<r>` with its own
    /// [`Comm`] of rank `r` on host `hosts(r)`, and returns the results indexed by rank.
    ///
    /// Collectives behave as under MPI: they block until every rank has made the same
    /// call, and consecutive collectives never mix. Beyond MPI, mistakes end the run
    /// instead of hanging it: if a rank's `f` panics (also through [`Comm::abort`]),
    /// returns while its peers wait in a collective, or enters a different collective
    /// (kind or root) than its peers, every rank in or later entering a collective panics
    /// with a message naming the cause. Once every thread has ended, `run` resumes the
    /// first failing rank's panic with its original payload, so
    /// `#[should_panic(expected = "...")]` and `catch_unwind` see the original message.
    ///
    /// # Panics
    /// If `n` is 0, if a rank's thread cannot be spawned, and as described above.
    pub fn run<T, F>(n: u32, hosts: impl Fn(u32) -> String, f: F) -> Vec<T>
    where
        T: Send,
        F: Fn(&dyn Comm) -> T + Sync,
    {
        Self::run_counted(n, hosts, f).0
    }

    /// [`InProcess::run`], also returning the bytes each rank received from collectives
    /// as MPI would deliver them (an all-gather delivers every rank's part to every rank,
    /// a gather only to its root, a reduction one record): what tests assert to show that
    /// a rank's traffic does not grow with the number of ranks.
    pub fn run_counted<T, F>(n: u32, hosts: impl Fn(u32) -> String, f: F) -> (Vec<T>, Vec<u64>)
    where
        T: Send,
        F: Fn(&dyn Comm) -> T + Sync,
    {
        assert!(n > 0, "InProcess::run needs at least one rank");
        let meeting = Meeting::new(n);
        let ranks: Vec<RankHandle<'_>> = (0..n)
            .map(|rank| RankHandle {
                rank,
                host: hosts(rank),
                meeting: &meeting,
            })
            .collect();

        let outcomes: Vec<thread::Result<T>> = thread::scope(|scope| {
            let f = &f;
            let threads: Vec<_> = ranks
                .iter()
                .map(|handle| {
                    let spawned = thread::Builder::new()
                        .name(format!("rank-{}", handle.rank))
                        .spawn_scoped(scope, move || run_rank(handle, f));
                    if let Err(e) = &spawned {
                        // The ranks already running must not wait for this one.
                        let what = format!("its thread could not be spawned: {e}");
                        meeting.finish(handle.rank, Some(what));
                    }
                    spawned
                })
                .collect();
            threads
                .into_iter()
                .map(|spawned| match spawned {
                    // `run_rank` catches the closure's panic, so join fails only if
                    // `finish` itself panicked; keep that panic as the rank's outcome.
                    Ok(thread) => thread.join().unwrap_or_else(Err),
                    Err(e) => Err(
                        Box::new(format!("InProcess could not spawn a rank thread: {e}"))
                            as Box<dyn Any + Send>,
                    ),
                })
                .collect()
        });

        let first_failure = meeting.first_failed_rank();
        let mut results = Vec::with_capacity(outcomes.len());
        let mut panics: Vec<(usize, Box<dyn Any + Send>)> = Vec::new();
        for (rank, outcome) in outcomes.into_iter().enumerate() {
            match outcome {
                Ok(value) => results.push(value),
                Err(payload) => panics.push((rank, payload)),
            }
        }
        if !panics.is_empty() {
            let first = panics
                .iter()
                .position(|(rank, _)| Some(*rank as u32) == first_failure)
                .unwrap_or(0);
            let (_, payload) = panics.swap_remove(first);
            panic::resume_unwind(payload);
        }
        let received = meeting
            .received
            .iter()
            .map(|r| r.load(Ordering::Relaxed))
            .collect();
        (results, received)
    }
}

/// One rank's thread: runs `f`, then tells the meeting the rank has ended (and how), so
/// peers still waiting for it stop instead of hanging.
fn run_rank<T>(handle: &RankHandle<'_>, f: &impl Fn(&dyn Comm) -> T) -> thread::Result<T> {
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| f(handle)));
    let failure = outcome.as_ref().err().map(|p| panic_message(p.as_ref()));
    handle.meeting.finish(handle.rank, failure);
    outcome
}

/// Which collective a rank entered; peers in one generation must agree on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Collective {
    Barrier,
    AllGather,
    Broadcast { root: u32 },
    Gather { root: u32 },
    Reduce,
    AllOk,
    AllMax,
    AllSum,
}

/// Why the meeting can no longer complete collectives.
#[derive(Clone, Debug)]
struct Failure {
    rank: u32,
    what: String,
}

/// State shared by all ranks, guarded by `Meeting::state`.
struct State {
    /// Collectives completed so far: a waiting rank is done when this moves on.
    generation: u64,
    /// The collective the ranks that arrived so far are in.
    current: Option<Collective>,
    arrived: u32,
    /// Contributions to the current collective, indexed by rank.
    slots: Vec<Vec<u8>>,
    /// Contributions to the last completed collective. Safe to read after waking: the
    /// next collective cannot complete (and replace this) until the reader joins it.
    completed: Vec<Vec<u8>>,
    /// Ranks whose closure has ended (returned or panicked).
    finished: Vec<bool>,
    failure: Option<Failure>,
}

impl State {
    /// Fails the meeting unless it already failed; the first failure is the one reported.
    fn fail(&mut self, rank: u32, what: String) {
        if self.failure.is_none() {
            self.failure = Some(Failure { rank, what });
        }
    }

    /// Err if the collective `rank` is in (or entering) can never complete.
    fn check(&mut self, rank: u32, collective: Collective) -> Result<(), String> {
        if let Some(failure) = &self.failure {
            return Err(format!(
                "stopping in {collective:?} because rank {} failed: {}",
                failure.rank, failure.what
            ));
        }
        if let Some(gone) = self.finished.iter().position(|&f| f) {
            let what = format!(
                "rank {gone} returned while rank {rank} waits in {collective:?}: every rank must call the same collectives the same number of times"
            );
            self.fail(rank, what.clone());
            return Err(what);
        }
        Ok(())
    }
}

/// A point-to-point message waiting: sender, tag, bytes.
type Letter = (u32, u16, Vec<u8>);

/// Where the ranks of one [`InProcess::run`] meet.
struct Meeting {
    size: u32,
    state: Mutex<State>,
    changed: Condvar,
    /// Bytes each rank has received from collectives, as MPI would deliver them: all of
    /// an all-gather, the root's part of a broadcast, a gather's parts at its root only,
    /// one record of a reduction (see [`InProcess::run_counted`]).
    received: Vec<AtomicU64>,
    /// Point-to-point messages waiting for each rank, oldest first.
    mailboxes: Vec<Mutex<VecDeque<Letter>>>,
}

impl Meeting {
    fn new(size: u32) -> Self {
        Meeting {
            size,
            state: Mutex::new(State {
                generation: 0,
                current: None,
                arrived: 0,
                slots: vec![Vec::new(); size as usize],
                completed: Vec::new(),
                finished: vec![false; size as usize],
                failure: None,
            }),
            changed: Condvar::new(),
            received: (0..size).map(|_| AtomicU64::new(0)).collect(),
            mailboxes: (0..size).map(|_| Mutex::new(VecDeque::new())).collect(),
        }
    }

    /// The state is consistent whenever the lock is released (nothing panics while
    /// holding it), so a poisoned lock is still usable.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Contributes `mine` to `collective` and returns every rank's contribution, indexed
    /// by rank, once all ranks have contributed. Panics (outside the lock) if the meeting
    /// failed.
    fn meet(&self, rank: u32, collective: Collective, mine: Vec<u8>) -> Vec<Vec<u8>> {
        match self.try_meet(rank, collective, mine) {
            Ok(all) => all,
            Err(why) => panic!("InProcess rank {rank}: {why}"),
        }
    }

    fn try_meet(
        &self,
        rank: u32,
        collective: Collective,
        mine: Vec<u8>,
    ) -> Result<Vec<Vec<u8>>, String> {
        let mut state = self.lock();
        let checked = state.check(rank, collective);
        if let Err(why) = checked {
            self.changed.notify_all();
            return Err(why);
        }
        match state.current {
            None => state.current = Some(collective),
            Some(theirs) if theirs == collective => {}
            Some(theirs) => {
                let what = format!(
                    "rank {rank} entered {collective:?} while other ranks are in {theirs:?}: every rank must call the same collectives in the same order"
                );
                state.fail(rank, what.clone());
                self.changed.notify_all();
                return Err(what);
            }
        }
        state.slots[rank as usize] = mine;
        state.arrived += 1;

        if state.arrived == self.size {
            let fresh = vec![Vec::new(); self.size as usize];
            state.completed = std::mem::replace(&mut state.slots, fresh);
            state.arrived = 0;
            state.current = None;
            state.generation += 1;
            self.changed.notify_all();
            return Ok(state.completed.clone());
        }

        let generation = state.generation;
        loop {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            // Completion first: a peer may finish right after completing this collective.
            if state.generation != generation {
                return Ok(state.completed.clone());
            }
            let checked = state.check(rank, collective);
            if let Err(why) = checked {
                self.changed.notify_all();
                return Err(why);
            }
        }
    }

    /// Marks `rank`'s closure as ended (with its panic message if it panicked) and wakes
    /// the waiting ranks so they notice.
    fn finish(&self, rank: u32, panicked: Option<String>) {
        let mut state = self.lock();
        state.finished[rank as usize] = true;
        if let Some(message) = panicked {
            state.fail(rank, format!("it panicked: {message}"));
        }
        self.changed.notify_all();
    }

    fn first_failed_rank(&self) -> Option<u32> {
        self.lock().failure.as_ref().map(|f| f.rank)
    }
}

/// One rank's view of an [`InProcess`] run.
struct RankHandle<'m> {
    rank: u32,
    host: String,
    meeting: &'m Meeting,
}

impl RankHandle<'_> {
    fn meet(&self, collective: Collective, mine: Vec<u8>) -> Vec<Vec<u8>> {
        let record = mine.len();
        let all = self.meeting.meet(self.rank, collective, mine);
        let parts = || all.iter().map(Vec::len).sum::<usize>();
        let got = match collective {
            Collective::Barrier => 0,
            Collective::AllGather => parts(),
            Collective::Broadcast { root } => all[root as usize].len(),
            Collective::Gather { root } if root == self.rank => parts(),
            Collective::Gather { .. } => 0,
            Collective::Reduce | Collective::AllOk | Collective::AllMax | Collective::AllSum => {
                record
            }
        };
        self.meeting.received[self.rank as usize].fetch_add(got as u64, Ordering::Relaxed);
        all
    }

    fn numbers(&self, collective: Collective, value: u64) -> impl Iterator<Item = u64> {
        self.meet(collective, value.to_le_bytes().to_vec())
            .into_iter()
            .map(|bytes| {
                // Every contribution to this generation came from `numbers` with the same
                // collective (the meeting refuses mixed ones), so it is 8 bytes.
                let array: [u8; 8] = bytes
                    .as_slice()
                    .try_into()
                    .expect("a numeric contribution is 8 bytes");
                u64::from_le_bytes(array)
            })
    }
}

impl Comm for RankHandle<'_> {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.meeting.size
    }
    fn host(&self) -> &str {
        &self.host
    }
    fn barrier(&self) {
        self.meet(Collective::Barrier, Vec::new());
    }
    fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        self.meet(Collective::AllGather, mine.to_vec())
    }
    fn broadcast_bytes(&self, root: u32, data: &[u8]) -> Vec<u8> {
        assert!(
            root < self.meeting.size,
            "broadcast from root {root}, but there are only {} ranks",
            self.meeting.size
        );
        // Only the root's bytes travel; the others' `data` is ignored as the trait says.
        let mine = if self.rank == root {
            data.to_vec()
        } else {
            Vec::new()
        };
        let mut all = self.meet(Collective::Broadcast { root }, mine);
        std::mem::take(&mut all[root as usize])
    }
    fn gather_bytes(&self, root: u32, mine: &[u8]) -> Vec<Vec<u8>> {
        assert!(
            root < self.meeting.size,
            "gather to root {root}, but there are only {} ranks",
            self.meeting.size
        );
        let all = self.meet(Collective::Gather { root }, mine.to_vec());
        if self.rank == root { all } else { Vec::new() }
    }
    /// Exact sums (wrapping) and maxima, as MPI_Allreduce computes them; counted as one
    /// record received, as a reduction tree delivers.
    fn reduce(
        &self,
        sums: &[u64],
        maxes: &[u64],
        _deadline: Option<std::time::Duration>,
        _on_silence: &dyn Fn(&crate::Silence),
    ) -> (Vec<u64>, Vec<u64>) {
        let mine = crate::record(sums, maxes);
        crate::combine(
            &self.meet(Collective::Reduce, mine),
            sums.len(),
            maxes.len(),
        )
    }
    fn all_ok(&self, ok: bool) -> bool {
        self.meet(Collective::AllOk, vec![u8::from(ok)])
            .iter()
            .all(|flag| flag.as_slice() == [1])
    }
    fn all_max(&self, value: u64) -> u64 {
        self.numbers(Collective::AllMax, value)
            .max()
            .unwrap_or(value)
    }
    /// Wraps on overflow, as MPI_SUM over MPI_UINT64_T does.
    fn all_sum(&self, value: u64) -> u64 {
        self.numbers(Collective::AllSum, value)
            .fold(0, u64::wrapping_add)
    }
    /// Panics (there is no job to end): the panic fails the run as described at
    /// [`InProcess::run`], and tests can catch it.
    fn abort(&self, code: i32) -> ! {
        panic!(
            "InProcess rank {} called abort({code}); under MPI this ends every rank of the job",
            self.rank
        )
    }
    fn messages(&self) -> Option<&dyn Messages> {
        Some(self)
    }
}

impl Messages for RankHandle<'_> {
    fn send(&self, to: u32, tag: u16, data: &[u8]) {
        let Some(mailbox) = self.meeting.mailboxes.get(to as usize) else {
            panic!(
                "a message to rank {to}, but there are only {} ranks",
                self.meeting.size
            );
        };
        mailbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back((self.rank, tag, data.to_vec()));
    }

    fn try_receive(&self, from: Option<u32>, tag: u16) -> Option<(u32, Vec<u8>)> {
        let mut mailbox = self.meeting.mailboxes[self.rank as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let at = mailbox
            .iter()
            .position(|(sender, t, _)| *t == tag && from.is_none_or(|f| f == *sender))?;
        mailbox.remove(at).map(|(sender, _, data)| (sender, data))
    }
}

/// The message of a panic payload (`panic!` gives a `&str` or a `String`).
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_string()
    }
}

#[cfg(test)]
mod tests;
