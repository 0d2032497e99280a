//! [`Loop`]: one worker's I/O loop, from the start gate to its last completion: keeps
//! the queue full, stamps issue and completion times, checks verify blocks, fsyncs when
//! asked, ends a ramp and leaves snapshots of its figures when asked for them.

use std::sync::atomic::Ordering;

use iolab_backend::{Completion, DataFile, IoBackend, IoDir, IoRequest};
use iolab_core::spec::DataPattern;
use iolab_core::units::Nanos;

use super::flow::FlowTurn;
use super::latency_target::{DepthSearch, Step};
use super::pace::{MinRate, Pace, Think};
use super::priority::PrioDraw;
use super::reduction::{DataSampler, Reduction};
use super::{WorkerSetup, op_of};
use crate::clock::Clock;
use crate::offsets::{Offsets, OpMix};
use crate::plan::FilePlan;
use crate::recorder::Recorder;
use crate::sizes::SizeDraw;

mod data;
mod events;
mod failures;
mod holds;
mod setup;

/// The longest a paced or thinking worker sleeps before it looks at its stop flag, its
/// deadline and snapshot requests again.
const WAIT_SLICE: Nanos = Nanos(20_000_000);

/// What one slot's I/O is: its direction, priority, length, file (of this worker's),
/// offset and when it was issued.
#[derive(Clone, Copy)]
struct SlotIo {
    dir: IoDir,
    prio: u16,
    len: u32,
    file: u32,
    offset: u64,
    issued: Nanos,
}

/// The state of the I/O loop of one worker.
///
/// Generic over the backend: io_uring's loop is built for `UringBackend` (its push, submit
/// and reap in line), every other backend's for `dyn IoBackend`.
pub(super) struct Loop<'s, 'b, C: Clock, B: IoBackend + ?Sized> {
    s: &'s WorkerSetup<'s, C>,
    backend: &'b mut B,
    files: &'b [DataFile],
    /// This worker's files in the plan (their ids and paths), by the worker's own file
    /// number: a verify block's file id is one slice index per I/O, set up once here.
    my_files: &'s [FilePlan],
    start: Nanos,
    /// Each direction's I/O lengths (`IoDir` order; trims take the reads'), in units of
    /// `unit` bytes.
    sizes: [SizeDraw; 3],
    unit: u64,
    free: Vec<u32>,
    /// What each slot's I/O is (one bounds check per I/O, not one per field).
    slots: Vec<SlotIo>,
    /// Slots pushed since the last submit, stamped together just before it.
    fresh: Vec<u32>,
    /// The backend may hand an I/O to the kernel inside push: stamp each one there.
    stamp_on_push: bool,
    /// I/Os per pass over the files when each new pass drops their cached pages first
    /// (fio's time-based invalidate=1); None: never.
    pub(super) pass_length: Option<u64>,
    completions: Vec<Completion>,
    issued: u64,
    /// I/Os it may still issue (fio's number_ios; None: no such limit).
    ios_left: Option<u64>,
    pub(super) completed: u64,
    bytes: u64,
    writes_since_fsync: u64,
    /// The file of the latest write (what `fsync_every` syncs).
    last_write_file: usize,
    /// The ramp ends then (never: no ramp); from then on the recorder counts.
    ramp_end: Nanos,
    /// When the recorder started counting: the start, or the end of the ramp.
    pub(super) counted_from: Nanos,
    /// The last snapshot request answered.
    snapshot_seen: u64,
    /// When issuing stops (the runtime or stonewall), if ever.
    deadline: Option<Nanos>,
    /// When the next I/O may go (--rate, --rate-iops), pauses (--think-time) and the
    /// minimum rate kept (--rate-min).
    pace: Option<Pace>,
    think: Option<Think>,
    /// This worker's turns in its flow group (fio's `flow`).
    flow: Option<FlowTurn<'s>>,
    /// The depth searched for a latency target (fio's latency_target).
    pub(super) depth_search: Option<DepthSearch>,
    /// Each I/O's priority and the latencies per priority (fio's cmdprio_*).
    pub(super) prio: Option<PrioDraw>,
    /// What the latest completions asked of the depth search.
    lat_step: Step,
    min_rate: Option<MinRate>,
    /// Bytes and I/Os completed per direction (`IoDir` order).
    dir_bytes: [u64; 3],
    dir_ops: [u64; 3],
    pub(super) failed: bool,
    /// What writes carry (iolab's unique data, laid out and copied as asked, or zeros).
    reduction: Reduction,
    /// Measures the written data when a ratio was asked.
    pub(super) sampler: Option<DataSampler>,
    /// The backend itself failed: nothing more can complete through it.
    broken: bool,
    now: Nanos,
}

impl<'s, 'b, C: Clock, B: IoBackend + ?Sized> Loop<'s, 'b, C, B> {
    /// Runs the loop; with `write_offsets` the writes take their places from it and the
    /// reads from `offsets` (each direction keeps its own sequence, as fio's do).
    /// `PLAIN`: a [plain](Loop::plain) loop, built without the per-I/O work of what is
    /// off (the same steps otherwise, so the same I/Os, bytes and figures); of writes
    /// with `WRITES`, else of reads.
    pub(super) fn run<const PLAIN: bool, const WRITES: bool>(
        &mut self,
        offsets: &mut Offsets,
        mut write_offsets: Option<&mut Offsets>,
        mix: &mut OpMix,
        rec: &mut Recorder,
    ) {
        debug_assert!(
            !PLAIN
                || self.plain(mix, write_offsets.is_some())
                    == Some(if WRITES { IoDir::Write } else { IoDir::Read })
        );
        let spec = &self.s.plan.spec;
        // A runtime counts from the end of the ramp (set again when the ramp ends).
        self.deadline = spec
            .runtime
            .or(spec.stonewall)
            .map(|d| self.start + self.s.plan.start.ramp + d.nanos());
        let wear_out = spec.wear_out && spec.stonewall.is_some();
        let verify = spec.verify;
        let ior = spec.pattern == DataPattern::IorTimestamp;
        let seed = spec.seed;
        let (base, stride) = (self.s.worker.base, self.s.worker.stride);
        let nfiles = u64::from(self.s.worker.files.max(1));
        let fsync_every = spec.fsync_every.unwrap_or(u64::MAX);
        // Size-based: the share's units left, whichever direction uses them (fio's job
        // ends once its size is moved).
        let mut units_left = (!self.s.plan.looping).then_some(self.s.count);
        // trimwrite: the place just trimmed, which the next write writes (its units are
        // counted once, by the trim).
        let trimwrite = matches!(
            spec.rw,
            iolab_core::spec::RwKind::Trimwrite | iolab_core::spec::RwKind::Randtrimwrite
        );
        let mut trimmed: Option<(u64, u64)> = None;
        let mut limit = u64::MAX;
        let mut issuing = true;
        // A think time is due once what was just issued is submitted.
        let mut think_now = false;
        // The stonewall, not the end of its share, stopped this worker.
        let mut at_deadline = false;
        let stop = &self.s.control.stop;
        let first_done = &self.s.control.first_done;
        let progress = &self.s.control.workers[self.s.index];
        let snapshot_request = &self.s.control.snapshot_request;
        // What an I/O limit, pacing, passes that drop the cache and think time note of
        // each issued I/O: one check per I/O tells whether any is on (none is set up or
        // dropped while the loop runs).
        let issued_more = self.ios_left.is_some()
            || self.pace.is_some()
            || self.pass_length.is_some()
            || self.think.is_some();

        loop {
            // Fill the queue; with --fsync-every, no further than the next fsync (which
            // waits for what is in flight first), whatever the queue depth.
            while issuing
                && !self.free.is_empty()
                && self.writes_since_fsync < fsync_every
                && (PLAIN
                    || self
                        .depth_search
                        .as_ref()
                        .is_none_or(|d| self.backend.in_flight() < d.depth))
            {
                if stop.load(Ordering::Relaxed)
                    || self.issued >= limit
                    || (!PLAIN && self.ios_left == Some(0))
                {
                    issuing = false;
                    break;
                }
                if progress.halt.load(Ordering::Relaxed) {
                    // Its job is steady: it ends as at its runtime.
                    issuing = false;
                    first_done.store(true, Ordering::Relaxed);
                    break;
                }
                if let Some(d) = self.deadline
                    && self.now >= d
                    && limit == u64::MAX
                {
                    issuing = false;
                    at_deadline = true;
                    first_done.store(true, Ordering::Relaxed);
                    break;
                }
                if units_left == Some(0) && trimmed.is_none() {
                    issuing = false;
                    break;
                }
                if !PLAIN
                    && let Some(f) = &mut self.flow
                    && f.held()
                {
                    // fio's: held back, it sleeps flow_sleep once what is in flight
                    // has completed, or tries again at once.
                    let sleep = f.sleep;
                    if self.backend.in_flight() > 0 {
                        break;
                    }
                    if sleep > Nanos::ZERO {
                        self.wait_until(self.now + sleep, rec);
                    } else {
                        // fio's loop tries again at once; the thread yields so that
                        // the workers it waits for run, on a busy machine too.
                        std::thread::yield_now();
                        self.now = self.s.clock.now();
                        if self.now >= self.ramp_end {
                            self.end_ramp(rec);
                        }
                        let wanted = snapshot_request.load(Ordering::Relaxed);
                        if wanted != self.snapshot_seen {
                            self.leave_snapshot(wanted, rec);
                        }
                    }
                    continue;
                }
                let mut dir = match (PLAIN, WRITES) {
                    (true, true) => IoDir::Write,
                    (true, false) => IoDir::Read,
                    _ => mix.draw(),
                };
                if !PLAIN && let Some(p) = &self.pace {
                    let (paced, due) = p.choose(dir, self.now);
                    if self.now < due {
                        // fio's: what is in flight completes, then the wait.
                        if self.backend.in_flight() > 0 {
                            break;
                        }
                        self.wait_until(due, rec);
                        continue;
                    }
                    dir = paced;
                }
                let sizes = &mut self.sizes[dir as usize];
                let next = match (dir, write_offsets.as_deref_mut()) {
                    _ if PLAIN => offsets.next(sizes),
                    (IoDir::Write, _) if trimwrite => trimmed.take(),
                    (IoDir::Write, Some(w)) => w.next(sizes),
                    (IoDir::Trim, _) if trimwrite => {
                        trimmed = offsets.next(sizes);
                        trimmed
                    }
                    _ => offsets.next(sizes),
                };
                let Some((at, units)) = next else {
                    issuing = false;
                    break;
                };
                // Several files take turns: unit u is unit u / n of file u % n.
                let (file, at) = if nfiles == 1 {
                    (0, at)
                } else {
                    ((at % nfiles) as u32, at / nfiles)
                };
                if let Some(u) = &mut units_left
                    && (PLAIN || !(trimwrite && dir == IoDir::Write))
                {
                    *u = u.saturating_sub(units);
                }
                let offset = base + at * stride;
                let len = (units * self.unit) as u32;
                let slot = self.free.pop().expect("checked non-empty");
                // A read (of iolab's data or zeros) needs nothing in its buffer; a plain
                // write its stamp; any other write's data, and IOR's read check, are
                // prepared out of the loop's way.
                let buf_offset = if PLAIN && WRITES {
                    self.fill_unique_write(slot, file, len)
                } else if PLAIN || (dir != IoDir::Write && !(ior && verify)) {
                    0
                } else {
                    self.prepare_buffer(dir, slot, file, offset, len, verify, ior)
                };
                let issued_at = if self.stamp_on_push {
                    self.s.clock.now()
                } else {
                    Nanos::ZERO
                };
                let ioprio = match &mut self.prio {
                    Some(p) if !PLAIN && dir != IoDir::Trim => p.draw(dir == IoDir::Write, len),
                    _ => 0,
                };
                let pushed = self.backend.push(IoRequest {
                    file,
                    dir,
                    offset,
                    len,
                    slot,
                    buf_offset: buf_offset as u32,
                    ioprio,
                });
                if let Err(e) = pushed {
                    self.fail_all(rec, e.to_string());
                    break;
                }
                self.slots[slot as usize] = SlotIo {
                    dir,
                    prio: ioprio,
                    len,
                    file,
                    offset,
                    issued: issued_at,
                };
                if !self.stamp_on_push {
                    self.fresh.push(slot);
                }
                self.issued += 1;
                if !PLAIN && issued_more && self.issued_more(dir, len) {
                    think_now = true;
                    break;
                }
            }
            if self.broken {
                break;
            }

            if self.backend.in_flight() == 0 {
                if issuing {
                    continue;
                }
                // Wear-out: stopped by the stonewall with work left; catch up with the
                // busiest worker before finishing. A worker whose share ran out first has
                // nothing to catch up with: it finishes (and its count sets the bar).
                if wear_out
                    && at_deadline
                    && limit == u64::MAX
                    && !self.failed
                    && !stop.load(Ordering::Relaxed)
                {
                    let target = self.s.control.wear_out_wait(self.s.index, self.issued);
                    if target > self.issued && !stop.load(Ordering::Relaxed) {
                        limit = target;
                        issuing = true;
                        continue;
                    }
                }
                break;
            }

            self.submit_and_reap::<PLAIN>(rec, verify, seed);
            if self.broken {
                break;
            }
            if self.now >= self.ramp_end {
                self.end_ramp(rec);
            }
            let wanted = snapshot_request.load(Ordering::Relaxed);
            if wanted != self.snapshot_seen {
                self.leave_snapshot(wanted, rec);
            }
            if self.failed {
                issuing = false;
            }
            progress.ops.store(self.completed, Ordering::Relaxed);
            progress.bytes.store(self.bytes, Ordering::Relaxed);
            rec.publish(progress, false);
            if !rec.first_done_marked() && first_done.load(Ordering::Relaxed) {
                rec.mark_first_done();
            }
            if self.writes_since_fsync >= fsync_every {
                self.drain(rec, verify, seed);
                self.fsync(rec, self.last_write_file);
            }
            if let Some(t) = &mut self.think
                && (think_now
                    || (!t.counts_issues() && t.due(self.issued, self.completed, self.now)))
            {
                think_now = false;
                self.think(rec, verify, seed);
            }
            if let Some(m) = &mut self.min_rate
                && self.ramp_end == Nanos(u64::MAX)
                && let Some(short) = m.check(self.now, self.dir_bytes, self.dir_ops)
            {
                self.rate_failed(rec, short);
                issuing = false;
            }
            if self.depth_search.is_some() && self.ramp_end == Nanos(u64::MAX) && issuing {
                issuing = self.latency_step(rec, verify, seed);
            }
        }
        // Its I/Os and weight leave the flow group: the others go on without it.
        self.flow = None;
        if self.ramp_end != Nanos(u64::MAX) {
            // The work ended before the ramp did. fio (3.33's ramp_time_over) resets its
            // counters only when a ramp ends, so it reports the whole job's bytes and
            // time, without latencies or bandwidth samples (those are only taken once
            // the ramp is over): so does iolab.
            self.ramp_end = Nanos(u64::MAX);
            rec.drop_latencies();
        }
        if spec.fsync_at_end && spec.rw.writes() && !self.failed {
            for file in 0..self.files.len() {
                self.fsync(rec, file);
            }
        }
    }

    /// `PLAIN`: as in [`Loop::run`].
    #[inline(always)]
    fn submit_and_reap<const PLAIN: bool>(&mut self, rec: &mut Recorder, verify: bool, seed: u64) {
        let issued_at = self.s.clock.now();
        for &slot in &self.fresh {
            self.slots[slot as usize].issued = issued_at;
        }
        self.fresh.clear();
        if let Err(e) = self.backend.submit(1) {
            self.fail_all(rec, e.to_string());
            return;
        }
        self.backend.reap(&mut self.completions);
        self.now = self.s.clock.now();
        let now = self.now;
        // Priorities, a latency target and verify each see every completion: one check
        // per batch tells whether any is on.
        let more = !PLAIN && (self.prio.is_some() || self.depth_search.is_some() || verify);
        for i in 0..self.completions.len() {
            let c = self.completions[i];
            let io = self.slots[c.slot as usize];
            let (dir, len) = (io.dir, io.len);
            if c.result == len as i32 {
                let latency = now - io.issued;
                rec.record(op_of(dir), latency, len as u64, now);
                self.completed += 1;
                self.bytes += len as u64;
                self.dir_bytes[dir as usize] += len as u64;
                self.dir_ops[dir as usize] += 1;
                if more {
                    self.completed_more(rec, c.slot, io, latency, verify, seed);
                }
            } else {
                let at = (io.offset, u64::from(len));
                self.io_failed(rec, dir, io.file as usize, at, c.result);
            }
            self.free.push(c.slot);
        }
        self.completions.clear();
    }

    /// What priorities, a latency target and verify do with the completion of `io`, in
    /// slot `slot`, which took `latency` (the counters include it already).
    fn completed_more(
        &mut self,
        rec: &mut Recorder,
        slot: u32,
        io: SlotIo,
        latency: Nanos,
        verify: bool,
        seed: u64,
    ) {
        let dir = io.dir;
        if let Some(p) = &mut self.prio
            && dir != IoDir::Trim
        {
            p.completed(dir == IoDir::Write, io.prio, latency.0);
        }
        if let Some(d) = &mut self.depth_search
            && self.lat_step == Step::Go
        {
            self.lat_step = d.completed(latency, self.now, self.completed);
        }
        if verify && dir == IoDir::Read {
            self.check_read(rec, slot, io.len, seed);
        }
    }

    /// Waits for every in-flight I/O.
    fn drain(&mut self, rec: &mut Recorder, verify: bool, seed: u64) {
        while self.backend.in_flight() > 0 && !self.broken {
            self.submit_and_reap::<false>(rec, verify, seed);
        }
    }
}

/// The seed of a worker's priority draws (fio's prio_state): fixed per clone.
fn seed_of_prio(index: usize) -> u64 {
    0x9e37_79b9_7f4a_7c15u64.wrapping_mul(index as u64 + 1)
}
