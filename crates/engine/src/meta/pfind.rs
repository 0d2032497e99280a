//! pfind's walk, as io500 (isc26) links and runs pfind for its find phase: one walker per
//! rank ([`run_pfind`]), each with a LIFO queue of work (a directory to read, an entry to
//! lstat) of at most 10,000 items (IO500's `-q 10000`), reading at most 1,000 entries of
//! a directory before it looks at its messages, and idle ranks stealing half of the
//! queue of a rank drawn with glibc's `rand()`, a directory never split; a token passed
//! round the ranks ends the walk. Only an entry whose name matches is looked at, with
//! lstat of its whole path; entries that are not directories are what the figure counts
//! (pfind's `total_files`). The phase's rate is those entries over the slowest rank's
//! time, as io500 reports it. Where ranks cannot trade messages from a worker thread
//! (an MPI library without MPI_THREAD_MULTIPLE), the walk falls back to iolab's own split
//! and says so on the phase.

use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::Ordering;

use iolab_backend::meta::{DirStream, EntryKind, EntryStat, lstat_path};
use iolab_comm::Messages;
use iolab_core::result::{ErrorRecord, OpKind, PhaseResult};
use iolab_core::rng::GlibcRand;
use iolab_core::spec::FindSpec;
use std::os::unix::ffi::OsStrExt;

use crate::assemble::assemble;
use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::error::EngineError;
use crate::phase::{Env, WorkerReport, run_phase};
use crate::recorder::Recorder;
use crate::worker::INTERVAL;

use super::find::{Matcher, find_meta, prepare_walk, walk_with_threads};

/// IO500's `-q 10000`: pending work items per rank before entries are handled at once.
const QUEUE_LENGTH: usize = 10_000;
/// pfind's default: entries of a directory read before the walker looks around.
const ENTRIES_PER_TURN: usize = 1_000;

/// pfind's message tags: the completion token, a request for work, its answer.
const TAG_TOKEN: u16 = 777;
const TAG_STEAL: u16 = 800;
const TAG_STEAL_ANSWER: u16 = 820;

/// Walks `dir` as pfind does, one walker per rank (see the module).
pub fn run_pfind<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    spec: &FindSpec,
    dir: &Path,
) -> Result<PhaseResult, EngineError> {
    let comm = env.comm;
    if comm.size() > 1 && !comm.all_ok(comm.messages().is_some()) {
        let threads = FindSpec {
            walk: iolab_core::spec::FindWalk::Threads,
            ..spec.clone()
        };
        let mut phase = walk_with_threads(env, clock, &threads, dir)?;
        phase.warnings.push(
            "pfind's work stealing needs MPI_THREAD_MULTIPLE, which this MPI library does not give: the ranks split the walk iolab's way, so the figure is not comparable with pfind's"
                .into(),
        );
        return Ok(phase);
    }
    // pfind walks the real path of its directory (whole-path calls, the default).
    let (top, matcher) = prepare_walk(comm, spec, dir)?;
    let host = comm.host().to_string();
    let run = run_phase(env, clock, "find", 1, false, |i, control| {
        let Some(start) = control.ready_and_wait(true) else {
            return Ok(WorkerReport::idle());
        };
        // pfind opens its directory once more than it reads it (an opendir it checks
        // and keeps), on every rank.
        let top_c = CString::new(top.as_os_str().as_bytes()).unwrap_or_default();
        let _kept = DirStream::open(&top_c);
        let mut walker = Walker {
            top: top.as_os_str().as_bytes().to_vec(),
            matcher: &matcher,
            messages: comm.messages(),
            rank: comm.rank(),
            ranks: comm.size(),
            host: &host,
            queue: Vec::with_capacity(QUEUE_LENGTH),
            excess: Vec::new(),
            current: None,
            rand: GlibcRand::new(1),
            rec: Recorder::new(start, INTERVAL),
            counted: 0,
            found: 0,
            path: Vec::with_capacity(512),
            clock,
            control,
        };
        if comm.rank() == 0 {
            walker.queue.push(Item {
                dir: true,
                path: Vec::new(),
            });
        }
        walker.run();
        let finished_at = clock.now().saturating_sub(start);
        control.finished(i);
        Ok(WorkerReport {
            measure: walker.rec.finish(),
            completed: walker.found,
            finished_at,
        })
    })?;
    let matched: u64 = run.completed_by_worker().iter().sum();
    let mut meta = find_meta(spec, &top, comm.size());
    meta.params.insert("walk".into(), "pfind".into());
    let mut phase = assemble(meta, &run);
    phase.extra.insert("matched".into(), matched as f64);
    Ok(phase)
}

/// A unit of pfind's work: a directory to read or an entry to look at, by its path
/// relative to the top ("" for the top itself, "/a/b" below it).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Item {
    dir: bool,
    path: Vec<u8>,
}

/// Work items on the wire: a kind byte, a length, the path.
fn encode(items: &[Item]) -> Vec<u8> {
    let mut out = Vec::new();
    for it in items {
        out.push(u8::from(it.dir));
        out.extend_from_slice(&(it.path.len() as u32).to_le_bytes());
        out.extend_from_slice(&it.path);
    }
    out
}

fn decode(mut bytes: &[u8]) -> Vec<Item> {
    let mut items = Vec::new();
    while bytes.len() >= 5 {
        let len = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]) as usize;
        let Some(path) = bytes.get(5..5 + len) else {
            break;
        };
        items.push(Item {
            dir: bytes[0] == 1,
            path: path.to_vec(),
        });
        bytes = &bytes[5 + len..];
    }
    items
}

/// One rank's walker and its counters.
struct Walker<'a, C: Clock> {
    top: Vec<u8>,
    matcher: &'a Matcher,
    messages: Option<&'a dyn Messages>,
    rank: u32,
    ranks: u32,
    host: &'a str,
    queue: Vec<Item>,
    /// Directories met while the queue was full.
    excess: Vec<Vec<u8>>,
    /// The directory being read, and its relative path, when a turn ended within it.
    current: Option<(Vec<u8>, DirStream)>,
    rand: GlibcRand,
    rec: Recorder,
    /// Entries that are not directories (pfind's total_files).
    counted: u64,
    found: u64,
    /// A reused buffer for whole paths.
    path: Vec<u8>,
    clock: &'a C,
    control: &'a PhaseControl,
}

impl<C: Clock> Walker<'_, C> {
    fn stopped(&self) -> bool {
        self.control.stop.load(Ordering::Relaxed)
    }

    /// pfind_find's loop: one item per turn, the token, requests for work, stealing.
    fn run(&mut self) {
        let Some(messages) = self.messages.filter(|_| self.ranks > 1) else {
            while !self.completed() && !self.stopped() {
                self.process_one_item();
            }
            return;
        };
        let (rank, ranks) = (self.rank, self.ranks);
        let left = if rank == 0 { ranks - 1 } else { rank - 1 };
        let mut have_token = rank == 0;
        let mut worked_since_token = true;
        let mut phase = 0u32;
        while !self.stopped() {
            let completed = self.completed();
            if !completed {
                self.process_one_item();
            }
            if let Some((_, data)) = messages.try_receive(Some(left), TAG_TOKEN) {
                phase = data.first().copied().map_or(0, u32::from);
                have_token = true;
            }
            if completed && have_token {
                if worked_since_token {
                    phase = 0;
                } else if rank == 0 {
                    phase += 1;
                }
                let mut right = rank + 1;
                if right == ranks {
                    right = 0;
                    if phase == 3 {
                        break;
                    }
                }
                messages.send(right, TAG_TOKEN, &[phase as u8]);
                if phase == 3 {
                    break;
                }
                worked_since_token = false;
                have_token = false;
            }
            while let Some((from, _)) = messages.try_receive(None, TAG_STEAL) {
                self.give_work(messages, from);
            }
            if self.queue.is_empty() && phase < 2 {
                let victim = self.rand.rand() % ranks;
                if victim != rank {
                    let stolen = self.steal(messages, victim);
                    worked_since_token |= !stolen.is_empty();
                    self.queue = stolen;
                }
            }
        }
        self.control.workers[0]
            .holding
            .store(false, Ordering::Relaxed);
    }

    fn completed(&self) -> bool {
        self.queue.is_empty() && self.excess.is_empty() && self.current.is_none()
    }

    /// Half of the queue (its newest items) to `to`, then excess directories into it.
    fn give_work(&mut self, messages: &dyn Messages, to: u32) {
        let give = self.queue.len() / 2;
        let items = self.queue.split_off(self.queue.len() - give);
        messages.send(to, TAG_STEAL_ANSWER, &encode(&items));
        for _ in 0..give.min(self.excess.len()) {
            if let Some(path) = self.excess.pop() {
                self.queue.push(Item { dir: true, path });
            }
        }
    }

    /// Asks `victim` for work and waits for its answer, answering requests meanwhile
    /// with nothing (pfind's loop); ends early if the phase is stopped.
    fn steal(&mut self, messages: &dyn Messages, victim: u32) -> Vec<Item> {
        let waiting = &self.control.workers[0].holding;
        waiting.store(true, Ordering::Relaxed);
        messages.send(victim, TAG_STEAL, &[]);
        let got = loop {
            if let Some((_, data)) = messages.try_receive(Some(victim), TAG_STEAL_ANSWER) {
                break decode(&data);
            }
            if let Some((from, _)) = messages.try_receive(None, TAG_STEAL) {
                messages.send(from, TAG_STEAL_ANSWER, &[]);
            }
            if self.stopped() {
                break Vec::new();
            }
            std::hint::spin_loop();
        };
        waiting.store(false, Ordering::Relaxed);
        got
    }

    /// find_process_one_item: the directory being read first, then excess directories,
    /// then the newest queued item.
    fn process_one_item(&mut self) {
        if let Some((path, stream)) = self.current.take() {
            self.read_dir(path, Some(stream));
        } else if let Some(path) = self.excess.pop() {
            self.read_dir(path, None);
        } else if let Some(item) = self.queue.pop() {
            if item.dir {
                self.read_dir(item.path, None);
            } else {
                self.lstat(&item.path);
            }
        }
        self.control.workers[0]
            .ops
            .store(self.counted, Ordering::Relaxed);
    }

    /// find_do_readdir: at most [`ENTRIES_PER_TURN`] entries of directory `path`, or up to
    /// the entry that found the queue full; the directory stays open for the next turn.
    fn read_dir(&mut self, path: Vec<u8>, open: Option<DirStream>) {
        let mut stream = match open {
            Some(s) => s,
            None => {
                self.path.clear();
                self.path.extend_from_slice(&self.top);
                self.path.extend_from_slice(&path);
                match CString::new(self.path.clone()).map(|p| DirStream::open(&p)) {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => return self.error(&path, e),
                    Err(_) => return,
                }
            }
        };
        let mut processed = 0;
        loop {
            if processed > ENTRIES_PER_TURN {
                self.current = Some((path, stream));
                return;
            }
            let (name, kind) = match stream.next_entry() {
                None => return,
                Some(Err(e)) => return self.error(&path, e),
                Some(Ok((name, kind))) => (name.to_owned(), kind),
            };
            processed += 1;
            let t0 = self.clock.now();
            let mut child = path.clone();
            child.push(b'/');
            child.extend_from_slice(name.to_bytes());
            let mut kind = kind;
            if kind == EntryKind::Unknown {
                // The directory did not say: one stat from it decides (a file is then
                // tested at once, as pfind does).
                match stream.stat(&name) {
                    Ok(st) if st.kind == EntryKind::Dir => kind = EntryKind::Dir,
                    Ok(st) => {
                        if self.matcher.may_match(&name, st.kind) {
                            self.check(&st);
                        }
                        self.count(t0);
                        continue;
                    }
                    Err(e) => {
                        self.error(&child, e);
                        continue;
                    }
                }
            } else if kind != EntryKind::Dir {
                if !self.matcher.may_match(&name, kind) {
                    self.count(t0);
                    continue;
                }
                if !self.matcher.needs_stat() {
                    if self.matcher.matches(kind, None) {
                        self.found += 1;
                    }
                    self.count(t0);
                    continue;
                }
            }
            if self.queue.len() >= QUEUE_LENGTH {
                if kind == EntryKind::Dir {
                    self.excess.push(child);
                } else {
                    self.lstat(&child);
                }
                self.current = Some((path, stream));
                return;
            }
            self.queue.push(Item {
                dir: kind == EntryKind::Dir,
                path: child,
            });
        }
    }

    /// find_do_lstat: lstat of `top + "/" + path` (pfind's spelling, a double slash
    /// included), then the size and time tests.
    fn lstat(&mut self, path: &[u8]) {
        let t0 = self.clock.now();
        self.path.clear();
        self.path.extend_from_slice(&self.top);
        self.path.push(b'/');
        self.path.extend_from_slice(path);
        let looked = CString::new(self.path.clone()).map(|p| lstat_path(&p));
        match looked {
            Ok(Ok(st)) => {
                self.check(&st);
                self.count(t0);
            }
            Ok(Err(e)) => {
                self.counted += 1;
                self.error(path, e);
            }
            Err(_) => {}
        }
    }

    /// check_buf: the tests that need the inode.
    fn check(&mut self, st: &EntryStat) {
        if self.matcher.matches(st.kind, Some(st)) {
            self.found += 1;
        }
    }

    /// One entry counted (pfind's total_files), timed from `t0`.
    fn count(&mut self, t0: iolab_core::units::Nanos) {
        let t1 = self.clock.now();
        self.rec.record(OpKind::Scan, t1 - t0, 0, t1);
        self.counted += 1;
    }

    fn error(&mut self, path: &[u8], e: iolab_backend::BackendError) {
        let mut whole = self.top.clone();
        whole.extend_from_slice(path);
        self.rec.error(ErrorRecord {
            rank: self.rank,
            host: self.host.to_string(),
            op: OpKind::Scan,
            path: String::from_utf8_lossy(&whole).into_owned(),
            offset: None,
            errno: e.errno(),
            message: e.to_string(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_items_cross_whole() {
        let items = vec![
            Item {
                dir: true,
                path: b"/mdtest-easy".to_vec(),
            },
            Item {
                dir: false,
                path: b"/mdtest-hard/file.mdtest.0.101".to_vec(),
            },
            Item {
                dir: true,
                path: Vec::new(),
            },
        ];
        assert_eq!(decode(&encode(&items)), items);
        assert!(decode(&[]).is_empty());
    }
}
