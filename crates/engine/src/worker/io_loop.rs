//! [`Loop`]: one worker's I/O loop, from the start gate to its last completion: keeps
//! the queue full, stamps issue and completion times, checks verify blocks, fsyncs when
//! asked, ends a ramp and leaves snapshots of its figures when asked for them.

use std::sync::atomic::Ordering;

use iolab_backend::{Completion, DataFile, IoBackend, IoDir};
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
use issue::RunState;

mod data;
mod events;
mod failures;
mod holds;
mod issue;
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

/// An I/O about to be issued: its direction, and `len` bytes at `offset` of file `file`.
#[derive(Clone, Copy)]
struct IoAt {
    dir: IoDir,
    file: u32,
    offset: u64,
    len: u32,
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
    /// with `WRITES`, else of reads. Each variant is a function of its own: inlined
    /// together into their caller, they share its registers and spill more per I/O.
    #[inline(never)]
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
        let mut st = self.run_state();
        loop {
            self.fill::<PLAIN, WRITES>(&mut st, offsets, write_offsets.as_deref_mut(), mix, rec);
            if self.broken {
                break;
            }
            if self.backend.in_flight() == 0 {
                if st.issuing || self.catch_up(&mut st) {
                    continue;
                }
                break;
            }
            self.submit_and_reap::<PLAIN>(rec, st.verify, st.seed);
            if self.broken {
                break;
            }
            self.after_batch(&mut st, rec);
        }
        self.wind_down(rec);
    }

    /// Wear-out: stopped by the stonewall with work left, the worker catches up with the
    /// busiest one before finishing (true: it issues again). A worker whose share ran out
    /// first has nothing to catch up with: it finishes (and its count sets the bar).
    fn catch_up(&mut self, st: &mut RunState<'_>) -> bool {
        if st.wear_out
            && st.at_deadline
            && st.limit == u64::MAX
            && !self.failed
            && !st.stop.load(Ordering::Relaxed)
        {
            let target = self.s.control.wear_out_wait(self.s.index, self.issued);
            if target > self.issued && !st.stop.load(Ordering::Relaxed) {
                st.limit = target;
                st.issuing = true;
                return true;
            }
        }
        false
    }

    /// The end of the ramp and a snapshot asked for, seen after each batch and while a
    /// flow holds the worker.
    #[inline(always)]
    fn keep_up(&mut self, rec: &mut Recorder) {
        if self.now >= self.ramp_end {
            self.end_ramp(rec);
        }
        let wanted = self.s.control.snapshot_request.load(Ordering::Relaxed);
        if wanted != self.snapshot_seen {
            self.leave_snapshot(wanted, rec);
        }
    }

    /// After a batch completed: progress for the coordinator, the first-done mark, and
    /// what is due (an fsync, a think time, the minimum rate's check, the latency
    /// target's next step).
    #[inline(always)]
    fn after_batch(&mut self, st: &mut RunState<'_>, rec: &mut Recorder) {
        self.keep_up(rec);
        if self.failed {
            st.issuing = false;
        }
        let progress = st.progress;
        progress.ops.store(self.completed, Ordering::Relaxed);
        progress.bytes.store(self.bytes, Ordering::Relaxed);
        rec.publish(progress, false);
        if !rec.first_done_marked() && st.first_done.load(Ordering::Relaxed) {
            rec.mark_first_done();
        }
        let (verify, seed) = (st.verify, st.seed);
        if self.writes_since_fsync >= st.fsync_every {
            self.drain(rec, verify, seed);
            self.fsync(rec, self.last_write_file);
        }
        if let Some(t) = &mut self.think
            && (st.think_now
                || (!t.counts_issues() && t.due(self.issued, self.completed, self.now)))
        {
            st.think_now = false;
            self.think(rec, verify, seed);
        }
        if let Some(m) = &mut self.min_rate
            && self.ramp_end == Nanos(u64::MAX)
            && let Some(short) = m.check(self.now, self.dir_bytes, self.dir_ops)
        {
            self.rate_failed(rec, short);
            st.issuing = false;
        }
        if self.depth_search.is_some() && self.ramp_end == Nanos(u64::MAX) && st.issuing {
            st.issuing = self.latency_step(rec, verify, seed);
        }
    }

    /// After the loop: the worker leaves its flow group, a ramp the work outlived ends
    /// without latencies, and --end-fsync syncs every file.
    fn wind_down(&mut self, rec: &mut Recorder) {
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
        let spec = &self.s.plan.spec;
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
                    self.completed_more(rec, c.slot, io, verify, seed);
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
    /// slot `slot`, reaped at `self.now` (the counters include it already).
    fn completed_more(
        &mut self,
        rec: &mut Recorder,
        slot: u32,
        io: SlotIo,
        verify: bool,
        seed: u64,
    ) {
        let dir = io.dir;
        let latency = self.now - io.issued;
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
