//! The find walk (IO500's find phase): [`run_find`] walks a tree with every thread of
//! every rank and counts the entries scanned (OpKind::Scan, the rate) and those matching
//! the [`FindSpec`] predicates (`extra["matched"]`). Under MPI the entries of the top
//! directory are dealt out to the ranks by name; within a rank, threads share a
//! [`WalkQueue`] of directories; a walker listing a large directory (IO500's mdtest-hard
//! directory holds every file of the phase) hands chunks of its entries to walkers that
//! are idle, so one directory is examined by every thread. An entry is stat'ed only when
//! a predicate or an unknown entry type needs it. The walk never writes or removes
//! anything.

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use iolab_backend::meta::{
    DirBuffer, EntryKind, EntryStat, MTime, MetaBackend, MetaDir, PosixMeta, ctime_secs_of,
    lstat_whole_path, mtime_of,
};
use iolab_comm::Comm;
use iolab_core::result::{ErrorRecord, OpKind, PhaseKind, PhaseResult};
use iolab_core::spec::{EntryType, FindSpec, FindWalk, Glob, MetaPaths, NewerBy, SizeTest};

use crate::assemble::{PhaseMeta, assemble};
use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::data::check_ranks_agree;
use crate::error::EngineError;
use crate::meta_error::MetaError;
use crate::phase::{Env, WorkerReport, run_phase};
use crate::recorder::Recorder;
use crate::target::{agree, resolve_placeholders};
use crate::worker::INTERVAL;

/// The predicates of a find, resolved (the reference time read, the pattern compiled).
pub struct Matcher {
    newer: Option<Newer>,
    size: Option<SizeTest>,
    name: Option<Glob>,
    entry_type: EntryType,
}

/// The reference of --newer, by what it compares.
#[derive(Clone, Copy, Debug)]
enum Newer {
    Mtime(MTime),
    CtimeSeconds(i64),
}

impl Matcher {
    pub fn new(spec: &FindSpec) -> Result<Matcher, MetaError> {
        let newer = match &spec.newer {
            Some(path) => Some(
                match spec.newer_by {
                    NewerBy::Mtime => mtime_of(path).map(Newer::Mtime),
                    NewerBy::CtimeSeconds => ctime_secs_of(path).map(Newer::CtimeSeconds),
                }
                .map_err(|e| MetaError::NewerUnreadable {
                    path: path.clone(),
                    reason: e
                        .to_string()
                        .split(" failed: ")
                        .nth(1)
                        .unwrap_or("unreadable")
                        .split(';')
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                })?,
            ),
            None => None,
        };
        Ok(Matcher {
            newer,
            size: spec.size,
            name: spec.name.as_deref().map(Glob::new),
            entry_type: spec.entry_type,
        })
    }

    pub(super) fn needs_stat(&self) -> bool {
        self.newer.is_some() || self.size.is_some()
    }

    /// What can be decided without the inode: the name and (known) type.
    pub(super) fn may_match(&self, name: &CStr, kind: EntryKind) -> bool {
        let type_ok = match self.entry_type {
            EntryType::Any => true,
            EntryType::F => matches!(kind, EntryKind::File | EntryKind::Unknown),
            EntryType::D => matches!(kind, EntryKind::Dir | EntryKind::Unknown),
        };
        type_ok
            && self
                .name
                .as_ref()
                .is_none_or(|g| g.matches(name.to_bytes()))
    }

    /// The rest, once the inode is known (if needed).
    pub(super) fn matches(&self, kind: EntryKind, stat: Option<&EntryStat>) -> bool {
        let type_ok = match self.entry_type {
            EntryType::Any => true,
            EntryType::F => kind == EntryKind::File,
            EntryType::D => kind == EntryKind::Dir,
        };
        let Some(st) = stat else {
            return type_ok && !self.needs_stat();
        };
        type_ok
            && self.newer.is_none_or(|t| match t {
                Newer::Mtime(t) => st.mtime > t,
                Newer::CtimeSeconds(t) => st.ctime_secs >= t,
            })
            && self.size.is_none_or(|s| s.matches(st.size))
    }
}

/// Entries a walker hands to an idle one at a time; it looks for an idle walker after
/// every `CHUNK` entries it examined itself.
const CHUNK: usize = 1024;

/// Work for a walker: this rank's share of the top directory, a whole directory, or a
/// chunk of the entries of a directory another walker is listing.
enum Task {
    Top,
    Dir(PathBuf),
    Entries(Arc<MetaDir>, Vec<(CString, EntryKind)>),
}

/// Work waiting, shared by a rank's threads. The walk is over when nothing waits and no
/// thread is busy.
pub struct WalkQueue {
    state: Mutex<(Vec<Task>, usize)>,
    wake: Condvar,
    threads: usize,
}

impl WalkQueue {
    fn new(threads: usize) -> Self {
        WalkQueue {
            state: Mutex::new((vec![Task::Top], 0)),
            wake: Condvar::new(),
            threads,
        }
    }

    /// True when a walker waits with nothing to do.
    fn has_idle(&self) -> bool {
        if self.threads < 2 {
            return false;
        }
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.0.is_empty() && s.1 < self.threads
    }

    /// Hands `task` to a waiting walker.
    fn give(&self, task: Task) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.0.push(task);
        self.wake.notify_one();
    }

    fn pop(&self, stop: &AtomicBool) -> Option<Task> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(t) = s.0.pop() {
                s.1 += 1;
                return Some(t);
            }
            if s.1 == 0 {
                return None;
            }
            s = self
                .wake
                .wait_timeout(s, Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Adds the directories a finished task found and marks the task done.
    fn finish(&self, found: &mut Vec<PathBuf>) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.0.extend(found.drain(..).map(Task::Dir));
        s.1 -= 1;
        self.wake.notify_all();
    }
}

/// What every walker of a rank shares.
struct Walk<'a, C: Clock> {
    top: &'a Path,
    matcher: &'a Matcher,
    queue: &'a WalkQueue,
    backend: &'a dyn MetaBackend,
    /// lstat by whole path (pfind's call) rather than fstatat from the open directory.
    whole_paths: bool,
    clock: &'a C,
    control: &'a PhaseControl,
    rank: u32,
    ranks: u32,
    host: &'a str,
}

/// A walker's hand-over state within one directory.
#[derive(Default)]
struct Share {
    /// Entries this walker examined itself.
    examined: usize,
    /// Entries being collected for an idle walker.
    chunk: Option<Vec<(CString, EntryKind)>>,
}

/// One walker's counters and buffers.
struct Walker {
    rec: Recorder,
    buf: DirBuffer,
    found: Vec<PathBuf>,
    scanned: u64,
    matched: u64,
}

/// Walks `dir` (its `{host}`/`{rank}` resolved per rank) as `spec.walk` says: with
/// every rank's threads, or as pfind does ([`super::pfind::run_pfind`]).
pub fn run_find<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    spec: &FindSpec,
    dir: &Path,
) -> Result<PhaseResult, EngineError> {
    match spec.walk {
        FindWalk::Pfind => super::pfind::run_pfind(env, clock, spec, dir),
        FindWalk::Threads => walk_with_threads(env, clock, spec, dir),
    }
}

/// iolab's walk: the top directory dealt out to the ranks, each rank's threads sharing
/// the rest.
pub(super) fn walk_with_threads<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    spec: &FindSpec,
    dir: &Path,
) -> Result<PhaseResult, EngineError> {
    let comm = env.comm;
    let (top, matcher) = prepare_walk(comm, spec, dir)?;
    let queue = WalkQueue::new(spec.threads as usize);
    let host = comm.host().to_string();
    let backend = PosixMeta;
    let run = run_phase(
        env,
        clock,
        "find",
        spec.threads as usize,
        false,
        |i, control| {
            let walk = Walk {
                top: &top,
                matcher: &matcher,
                queue: &queue,
                backend: &backend,
                whole_paths: spec.paths == MetaPaths::Whole,
                clock,
                control,
                rank: comm.rank(),
                ranks: comm.size(),
                host: &host,
            };
            Ok(walk.run(i))
        },
    )?;
    let matched: u64 = run.completed_by_worker().iter().sum();
    let mut phase = assemble(find_meta(spec, &top, comm.size()), &run);
    phase.extra.insert("matched".into(), matched as f64);
    Ok(phase)
}

/// What every walk checks and agrees on before it starts (collective): the spec, the
/// same on every rank, the top directory (its `{host}`/`{rank}` resolved) and the
/// predicates; the top as walked (its real path for whole-path calls, as pfind walks it)
/// and the matcher.
pub(super) fn prepare_walk(
    comm: &dyn Comm,
    spec: &FindSpec,
    dir: &Path,
) -> Result<(PathBuf, Matcher), EngineError> {
    spec.validate()?;
    check_ranks_agree(comm, "the find", spec)?;
    let top = resolve_placeholders(dir, comm.host(), comm.rank());
    let matcher = agree(
        comm,
        check_top(&top).and_then(|()| Matcher::new(spec).map_err(EngineError::from)),
    )?;
    let top = if spec.paths == MetaPaths::Whole {
        top.canonicalize().unwrap_or(top)
    } else {
        top
    };
    Ok((top, matcher))
}

fn check_top(top: &Path) -> Result<(), EngineError> {
    match std::fs::metadata(top) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(MetaError::FindNotDir {
            path: top.to_path_buf(),
        }
        .into()),
        Err(_) => Err(MetaError::FindDirMissing {
            path: top.to_path_buf(),
        }
        .into()),
    }
}

pub(super) fn find_meta(spec: &FindSpec, top: &Path, ranks: u32) -> PhaseMeta {
    let mut p = std::collections::BTreeMap::new();
    p.insert("threads".into(), spec.threads.to_string());
    p.insert("ranks".into(), ranks.to_string());
    p.insert("dir".into(), top.display().to_string());
    if let Some(n) = &spec.newer {
        p.insert("newer".into(), n.display().to_string());
        if spec.newer_by != NewerBy::Mtime {
            p.insert("newer-by".into(), "ctime-seconds".into());
        }
    }
    p.insert("paths".into(), spec.paths.name().into());
    if let Some(s) = spec.size {
        p.insert("size".into(), s.to_string());
    }
    if let Some(n) = &spec.name {
        p.insert("name".into(), n.clone());
    }
    PhaseMeta {
        name: "find".into(),
        kind: Some(PhaseKind::Find),
        params: p,
        repetition: 0,
        spec: serde_json::to_value(spec).unwrap_or_default(),
        warnings: Vec::new(),
    }
}

impl<C: Clock> Walk<'_, C> {
    fn run(&self, thread: usize) -> WorkerReport {
        let Some(start) = self.control.ready_and_wait(true) else {
            return WorkerReport::idle();
        };
        let mut w = Walker {
            rec: Recorder::new(start, INTERVAL),
            buf: DirBuffer::new(),
            found: Vec::new(),
            scanned: 0,
            matched: 0,
        };
        let progress = &self.control.workers[thread];
        while let Some(task) = self.queue.pop(&self.control.stop) {
            match task {
                Task::Top => self.walk_top(&mut w),
                Task::Dir(path) => self.walk_dir(&path, &mut w),
                Task::Entries(dir, entries) => {
                    for (name, kind) in entries {
                        self.entry(&dir, &name, kind, &mut w);
                    }
                }
            }
            self.queue.finish(&mut w.found);
            progress.ops.store(w.scanned, Ordering::Relaxed);
            if !w.rec.first_done_marked() && self.control.first_done.load(Ordering::Relaxed) {
                w.rec.mark_first_done();
            }
        }
        let finished_at = self.clock.now().saturating_sub(start);
        self.control.finished(thread);
        WorkerReport {
            measure: w.rec.finish(),
            completed: w.matched,
            finished_at,
        }
    }

    /// This rank's share of the top directory: its entries sorted by name, dealt round
    /// robin to the ranks.
    fn walk_top(&self, w: &mut Walker) {
        let Some(dir) = self.open(self.top, w) else {
            return;
        };
        let dir = Arc::new(dir);
        let mut entries = Vec::new();
        let listed = self.backend.read_dir(&dir, &mut w.buf, &mut |name, kind| {
            entries.push((name.to_owned(), kind))
        });
        if let Err(e) = listed {
            self.error(w, self.top, e);
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut share = Share::default();
        for (i, (name, kind)) in entries.iter().enumerate() {
            if i as u32 % self.ranks == self.rank {
                self.share_or_examine(&dir, name, *kind, &mut share, w);
            }
        }
        self.examine_rest(&dir, share, w);
    }

    fn walk_dir(&self, path: &Path, w: &mut Walker) {
        let Some(dir) = self.open(path, w) else {
            return;
        };
        let dir = Arc::new(dir);
        let mut buf = std::mem::take(&mut w.buf);
        let mut share = Share::default();
        let listed = self.backend.read_dir(&dir, &mut buf, &mut |name, kind| {
            self.share_or_examine(&dir, name, kind, &mut share, w)
        });
        w.buf = buf;
        if let Err(e) = listed {
            self.error(w, path, e);
        }
        self.examine_rest(&dir, share, w);
    }

    /// Examines the entry, or collects it for a walker that was idle when this one last
    /// looked (every [`CHUNK`] entries), handing the chunk over when it is full.
    #[inline]
    fn share_or_examine(
        &self,
        dir: &Arc<MetaDir>,
        name: &CStr,
        kind: EntryKind,
        share: &mut Share,
        w: &mut Walker,
    ) {
        if let Some(chunk) = &mut share.chunk {
            chunk.push((name.to_owned(), kind));
            if chunk.len() == CHUNK {
                let entries = std::mem::take(chunk);
                share.chunk = None;
                self.queue.give(Task::Entries(Arc::clone(dir), entries));
            }
            return;
        }
        self.entry(dir, name, kind, w);
        share.examined += 1;
        if share.examined.is_multiple_of(CHUNK) && self.queue.has_idle() {
            share.chunk = Some(Vec::with_capacity(CHUNK));
        }
    }

    /// Examines what was collected but not handed over when the listing ended.
    fn examine_rest(&self, dir: &MetaDir, share: Share, w: &mut Walker) {
        for (name, kind) in share.chunk.unwrap_or_default() {
            self.entry(dir, &name, kind, w);
        }
    }

    fn open(&self, path: &Path, w: &mut Walker) -> Option<MetaDir> {
        match self.backend.open_dir(path) {
            Ok(d) => Some(d),
            Err(e) => {
                self.error(w, path, e);
                None
            }
        }
    }

    /// Examines one entry: queue it if it is a directory, count it if it matches.
    #[inline]
    fn entry(&self, dir: &MetaDir, name: &CStr, kind: EntryKind, w: &mut Walker) {
        let t0 = self.clock.now();
        let mut kind = kind;
        let may = self.matcher.may_match(name, kind);
        let mut stat = None;
        if kind == EntryKind::Unknown || (may && self.matcher.needs_stat()) {
            let looked = if self.whole_paths {
                lstat_whole_path(dir, name)
            } else {
                self.backend.stat(dir, name)
            };
            match looked {
                Ok(st) => {
                    kind = st.kind;
                    stat = Some(st);
                }
                Err(e) => {
                    self.error(w, &dir.entry(name), e);
                    return;
                }
            }
        }
        if kind == EntryKind::Dir {
            w.found.push(dir.entry(name));
        }
        if may && self.matcher.matches(kind, stat.as_ref()) {
            w.matched += 1;
        }
        let t1 = self.clock.now();
        w.rec.record(OpKind::Scan, t1 - t0, 0, t1);
        w.scanned += 1;
    }

    fn error(&self, w: &mut Walker, path: &Path, e: iolab_backend::BackendError) {
        w.rec.error(ErrorRecord {
            rank: self.rank,
            host: self.host.to_string(),
            op: OpKind::Scan,
            path: path.display().to_string(),
            offset: None,
            errno: e.errno(),
            message: e.to_string(),
        });
    }
}
