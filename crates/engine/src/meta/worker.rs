//! One metadata worker in one phase. [`run_worker`] does its share of a phase's
//! operations: files (create, stat, read, remove) item by item in its owner's leaf
//! directories, or its directories (mkdir, rmdir) group by group, timing each operation
//! into the [`Recorder`]. Everything is decided before the start; the loop sees the
//! backend, an open leaf directory, a reused name buffer and the recorder. A create phase
//! stops at its deadline (and with wear-out catches up with the busiest worker).

use std::sync::atomic::{AtomicU32, Ordering};

use iolab_backend::meta::{EntryKind, MetaBackend, MetaDir};
use iolab_core::result::ErrorRecord;
use iolab_core::spec::{MetaItems, MetaOp};
use iolab_core::units::Nanos;

use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::meta::content::Content;
use crate::meta::plan::{DirGroup, MetaPlan, NameBuf};
use crate::phase::WorkerReport;
use crate::recorder::Recorder;
use crate::worker::INTERVAL;

// Which operation a loop over files is built for (`Files::run_as`); ANY decides per
// operation, from the phase's.
const ANY: u8 = 0;
const CREATE: u8 = 1;
const STAT: u8 = 2;
const READ: u8 = 3;
const REMOVE: u8 = 4;

/// The operation a loop built for `OP` does: `OP`'s, a constant, or the phase's (ANY).
#[inline(always)]
fn op_of<const OP: u8>(phase: MetaOp) -> MetaOp {
    match OP {
        CREATE => MetaOp::Create,
        STAT => MetaOp::Stat,
        READ => MetaOp::Read,
        REMOVE => MetaOp::Remove,
        _ => phase,
    }
}

/// What every worker of a phase shares.
pub struct PhaseSetup<'a, C: Clock> {
    pub plan: &'a MetaPlan,
    pub op: MetaOp,
    pub backend: &'a dyn MetaBackend,
    pub control: &'a PhaseControl,
    pub clock: &'a C,
    pub host: &'a str,
    /// Files each worker (by global index) has; the files a phase works on.
    pub counts: &'a [u64],
    /// This rank's workers still creating: the last one done syncs (mdtest -Y).
    pub workers_left: &'a AtomicU32,
}

impl<C: Clock> PhaseSetup<'_, C> {
    fn error(&self, path: String, errno: Option<i32>, message: String) -> ErrorRecord {
        ErrorRecord {
            rank: self.plan.rank,
            host: self.host.to_string(),
            op: self.op.op_kind(),
            path,
            offset: None,
            errno,
            message,
        }
    }

    fn fail(&self, rec: &mut Recorder, path: String, e: iolab_backend::BackendError) {
        rec.error(self.error(path, e.errno(), e.to_string()));
        // One failure stops the phase everywhere, as mdtest does: later operations
        // would fail the same way.
        self.control.stop_all();
    }
}

/// Runs worker `thread` of this rank through one phase.
pub fn run_worker<C: Clock>(s: &PhaseSetup<'_, C>, thread: usize) -> Result<WorkerReport, String> {
    if let Some(cpus) = &s.plan.spec.cpus {
        // Best effort: a failure changes placement, not correctness.
        let _ = iolab_backend::process::pin_current_thread(cpus.0[thread % cpus.0.len()]);
    }
    let groups = match s.op {
        MetaOp::Mkdir => s.plan.dirs_to_make(s.plan.global(thread as u32)),
        MetaOp::Rmdir => s.plan.dirs_to_remove(s.plan.global(thread as u32)),
        _ => Vec::new(),
    };
    // Best effort, like pinning: the worker's opens and closes then no longer contend with
    // other threads' in one descriptor table.
    let _ = iolab_backend::process::private_fd_table();
    let mut files = s.op.on_files().then(|| Files::new(s, thread));
    let Some(start) = s.control.ready_and_wait(true) else {
        return Ok(WorkerReport::idle());
    };
    let mut rec = Recorder::new(start, INTERVAL);
    let completed = match files.as_mut() {
        Some(f) => {
            f.run(&mut rec, start);
            f.done
        }
        None => dirs(s, thread, &groups, &mut rec),
    };
    let spec = &s.plan.spec;
    if ((s.op == MetaOp::Create && spec.sync_after_create) || spec.sync_after_every_phase)
        && s.workers_left.fetch_sub(1, Ordering::AcqRel) == 1
    {
        // mdtest -Y: once per rank, after its last worker's operations, inside the
        // phase's time.
        s.backend.sync();
    }
    let finished_at = s.clock.now().saturating_sub(start);
    rec.publish(&s.control.workers[thread], true);
    s.control.finished(thread);
    Ok(WorkerReport {
        measure: rec.finish(),
        completed,
        finished_at,
    })
}

/// Makes or removes this worker's directories, one timed operation each.
fn dirs<C: Clock>(
    s: &PhaseSetup<'_, C>,
    thread: usize,
    groups: &[DirGroup],
    rec: &mut Recorder,
) -> u64 {
    let progress = &s.control.workers[thread];
    let mut done = 0;
    for g in groups {
        let parent = match s.backend.open_dir(&g.parent) {
            Ok(d) => d,
            Err(e) => {
                s.fail(rec, g.parent.display().to_string(), e);
                return done;
            }
        };
        for name in &g.names {
            if s.control.stop.load(Ordering::Relaxed) {
                return done;
            }
            let t0 = s.clock.now();
            let r = if s.op == MetaOp::Mkdir {
                s.backend.mkdir(&parent, name)
            } else {
                s.backend.rmdir(&parent, name)
            };
            let t1 = s.clock.now();
            if let Err(e) = r {
                s.fail(rec, parent.entry(name).display().to_string(), e);
                return done;
            }
            rec.record(s.op.op_kind(), t1 - t0, 0, t1);
            done += 1;
            progress.ops.store(done, Ordering::Relaxed);
            if !rec.first_done_marked() && s.control.first_done.load(Ordering::Relaxed) {
                rec.mark_first_done();
            }
        }
    }
    done
}

/// A worker's state in a phase on files.
struct Files<'s, 'a, C: Clock> {
    s: &'s PhaseSetup<'a, C>,
    thread: usize,
    owner: u32,
    /// Files of the owner to work on (create: all planned).
    total: u64,
    content: Content,
    read_buf: Vec<u8>,
    name: NameBuf,
    check: bool,
    dir: Option<MetaDir>,
    leaf: u32,
    done: u64,
}

impl<'s, 'a, C: Clock> Files<'s, 'a, C> {
    fn new(s: &'s PhaseSetup<'a, C>, thread: usize) -> Self {
        let plan = s.plan;
        let owner = plan.owner(thread as u32, s.op);
        let size = plan.spec.file_size.get() as usize;
        let total = match s.op {
            MetaOp::Create => plan.items_per_worker(),
            _ => s.counts.get(owner as usize).copied().unwrap_or(0),
        };
        Files {
            s,
            thread,
            owner,
            total,
            content: Content::new(size, plan.spec.seed),
            read_buf: vec![0u8; size + 1],
            name: NameBuf::new(owner, plan.spec.items),
            check: plan.touches_storage,
            dir: None,
            leaf: u32::MAX,
            done: 0,
        }
    }

    /// Runs the phase's operations through a loop built for its operation
    /// ([`Files::run_as`]); directory items take the loop that decides per operation.
    fn run(&mut self, rec: &mut Recorder, start: Nanos) {
        if self.s.plan.spec.items == MetaItems::Dirs {
            return self.run_as::<ANY>(rec, start);
        }
        match self.s.op {
            MetaOp::Create => self.run_as::<CREATE>(rec, start),
            MetaOp::Stat => self.run_as::<STAT>(rec, start),
            MetaOp::Read => self.run_as::<READ>(rec, start),
            MetaOp::Remove => self.run_as::<REMOVE>(rec, start),
            _ => self.run_as::<ANY>(rec, start),
        }
    }

    /// The loop over this worker's files, built for operation `OP` (one of [`CREATE`],
    /// [`STAT`], [`READ`], [`REMOVE`], or [`ANY`]: the phase's, decided per operation):
    /// what the operation does not need (the create deadline, bytes moved, the directory
    /// items' branches, the check of what a stat or read saw) is compiled out, as the data
    /// path's plain loop does (some 50 instructions of a stat's 340, callgrind).
    fn run_as<const OP: u8>(&mut self, rec: &mut Recorder, start: Nanos) {
        let control = self.s.control;
        let spec = &self.s.plan.spec;
        let deadline = spec
            .runtime
            .filter(|_| matches!(OP, CREATE | ANY) && self.s.op == MetaOp::Create)
            .map(|r| start + r.nanos());
        let wear_out = spec.wear_out && deadline.is_some();
        let per_dir = self.s.plan.files_per_dir;
        let bytes_per_file = match op_of::<OP>(self.s.op) {
            MetaOp::Create | MetaOp::Read => self.content.size() as u64,
            _ => 0,
        };
        let progress = &control.workers[self.thread];
        let clock = self.s.clock.hot();
        let mut limit = self.total;
        let mut past_deadline = false;
        let mut now = start;
        // Which leaf and which file of it `done` is, kept by counting (a division per
        // operation costs as much as the rest of the loop's bookkeeping).
        let (mut leaf, mut index) = ((self.done / per_dir) as u32, self.done % per_dir);
        'leaves: while self.done < limit {
            if leaf != self.leaf && !self.open_leaf(leaf, rec) {
                break;
            }
            // This leaf's files, as far as the limit goes.
            let end = per_dir.min(index + (limit - self.done));
            while index < end {
                if control.stop.load(Ordering::Relaxed) {
                    break 'leaves;
                }
                if let Some(d) = deadline
                    && !past_deadline
                    && now >= d
                {
                    past_deadline = true;
                    control.first_done.store(true, Ordering::Relaxed);
                    rec.mark_first_done();
                    if wear_out {
                        let target = control.wear_out_wait(self.thread, self.done);
                        if target > self.done && !control.stop.load(Ordering::Relaxed) {
                            limit = target.min(self.total);
                            continue 'leaves;
                        }
                    }
                    break 'leaves;
                }
                match self.one::<OP>(&clock, index, rec) {
                    Some(t1) => now = t1,
                    None => break 'leaves,
                }
                index += 1;
                progress.ops.store(self.done, Ordering::Relaxed);
                if bytes_per_file > 0 {
                    progress
                        .bytes
                        .store(self.done * bytes_per_file, Ordering::Relaxed);
                }
                rec.publish(progress, false);
                if !rec.first_done_marked() && control.first_done.load(Ordering::Relaxed) {
                    rec.mark_first_done();
                }
            }
            if index == per_dir {
                index = 0;
                leaf += 1;
            }
        }
    }

    fn open_leaf(&mut self, leaf: u32, rec: &mut Recorder) -> bool {
        self.dir = None;
        let path = self.s.plan.leaf(self.owner, leaf);
        match self.s.backend.open_dir(&path) {
            Ok(d) => {
                self.dir = Some(d);
                self.leaf = leaf;
                true
            }
            Err(e) => {
                self.s.fail(rec, path.display().to_string(), e);
                false
            }
        }
    }

    /// One timed operation on file `index` of the open leaf (the operation `OP` is built
    /// for: see [`Files::run_as`]); the completion time, or None when it failed.
    #[inline(always)]
    fn one<const OP: u8>(
        &mut self,
        clock: &impl Clock,
        index: u64,
        rec: &mut Recorder,
    ) -> Option<Nanos> {
        let s = self.s;
        let op = op_of::<OP>(s.op);
        let dir = self.dir.as_ref().expect("the leaf directory is open");
        let name = self.name.file(index);
        let item = self.done;
        let size = self.content.size();
        let dirs = OP == ANY && s.plan.spec.items == MetaItems::Dirs;
        let t0 = clock.now();
        let result = match op {
            MetaOp::Create if dirs => s.backend.mkdir(dir, name).map(|()| 0),
            MetaOp::Create => {
                let data = self.content.item(self.owner, item);
                s.backend.create(dir, name, data).map(|()| size)
            }
            // A directory item is checked by its kind: as large as a file of `size`
            // bytes is what verify compares, so it answers with that when it is one.
            MetaOp::Stat if dirs => s.backend.stat(dir, name).map(|st| {
                if st.kind == EntryKind::Dir {
                    size
                } else {
                    usize::MAX
                }
            }),
            MetaOp::Stat => s.backend.stat_size(dir, name).map(|n| n as usize),
            MetaOp::Read => s.backend.read(dir, name, &mut self.read_buf, size),
            _ if dirs => s.backend.rmdir(dir, name).map(|()| 0),
            _ => s.backend.remove(dir, name).map(|()| 0),
        };
        let t1 = clock.now();
        let n = match result {
            Ok(n) => n,
            Err(e) => {
                let path = dir.entry(name).display().to_string();
                s.fail(rec, path, e);
                return None;
            }
        };
        let moved = if matches!(op, MetaOp::Create | MetaOp::Read) {
            n as u64
        } else {
            0
        };
        rec.record(op.op_kind(), t1 - t0, moved, t1);
        self.done += 1;
        // A stat is wrong by its size alone: compared here, the message made only when
        // it is.
        let suspect = match op {
            MetaOp::Stat => n != size,
            MetaOp::Read => true,
            _ => false,
        };
        if self.check && suspect {
            self.verify(index, item, n, rec);
        }
        Some(t1)
    }

    /// Checks what stat or read saw of file `index` (item `item` of its owner).
    #[inline(never)]
    fn verify(&mut self, index: u64, item: u64, n: usize, rec: &mut Recorder) {
        let size = self.content.size();
        let wrong = if self.s.op == MetaOp::Stat && self.s.plan.spec.items == MetaItems::Dirs {
            (n != size).then(|| "it is not the directory create made".to_string())
        } else if self.s.op == MetaOp::Stat {
            (n != size).then(|| format!("it holds {n} bytes, not the {size} create wrote"))
        } else {
            self.content.check(self.owner, item, &self.read_buf[..n])
        };
        if let Some(why) = wrong {
            let dir = self.dir.as_ref().expect("the leaf directory is open");
            let path = dir.entry(self.name.file(index)).display().to_string();
            let message = format!("{} of {path}: {why}", self.s.op.name());
            rec.verify_failure(self.s.error(path, None, message));
        }
    }
}
