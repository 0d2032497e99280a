//! Filling the queue, the loop's per-I/O half: [`RunState`] (what `Loop::run` reads
//! once and keeps between its steps) and [`Loop::fill`], which issues I/Os until the
//! queue is full or the worker must stop, wait or think. Every step here is inlined into
//! `fill` and `fill` into `run`: the split costs no call per I/O.

use std::sync::atomic::{AtomicBool, Ordering};

use iolab_backend::{IoBackend, IoDir, IoRequest};
use iolab_core::spec::{DataPattern, RwKind};
use iolab_core::units::Nanos;

use super::{IoAt, Loop, SlotIo};
use crate::clock::Clock;
use crate::control::WorkerProgress;
use crate::offsets::{Offsets, OpMix};
use crate::recorder::Recorder;

/// What `Loop::run` reads once before its loop (settings and the phase's shared flags)
/// and the state its steps share.
pub(super) struct RunState<'s> {
    pub(super) fsync_every: u64,
    /// This worker's files take turns (unit u is unit u / n of file u % n).
    nfiles: u64,
    base: u64,
    stride: u64,
    pub(super) wear_out: bool,
    pub(super) verify: bool,
    pub(super) ior: bool,
    pub(super) seed: u64,
    /// trimwrite: the place just trimmed, which the next write writes (its units are
    /// counted once, by the trim).
    trimwrite: bool,
    trimmed: Option<(u64, u64)>,
    /// Size-based: the share's units left, whichever direction uses them (fio's job
    /// ends once its size is moved).
    units_left: Option<u64>,
    /// What an I/O limit, pacing, passes that drop the cache and think time note of each
    /// issued I/O: one check per I/O tells whether any is on (none is set up or dropped
    /// while the loop runs).
    issued_more: bool,
    /// The most I/Os it issues (wear-out's catch-up sets it).
    pub(super) limit: u64,
    pub(super) issuing: bool,
    /// A think time is due once what was just issued is submitted.
    pub(super) think_now: bool,
    /// The stonewall, not the end of its share, stopped this worker.
    pub(super) at_deadline: bool,
    pub(super) stop: &'s AtomicBool,
    pub(super) first_done: &'s AtomicBool,
    pub(super) progress: &'s WorkerProgress,
}

/// What the next step of filling is: issue in a direction, look again, or stop filling.
enum Next {
    Issue(IoDir),
    Again,
    Stop,
}

impl<'s, C: Clock, B: IoBackend + ?Sized> Loop<'s, '_, C, B> {
    /// The run's settings and shared flags, and its deadline set (a runtime counts from
    /// the end of the ramp, and is set again when the ramp ends).
    pub(super) fn run_state(&mut self) -> RunState<'s> {
        let s = self.s;
        let spec = &s.plan.spec;
        self.deadline = spec
            .runtime
            .or(spec.stonewall)
            .map(|d| self.start + s.plan.start.ramp + d.nanos());
        RunState {
            fsync_every: spec.fsync_every.unwrap_or(u64::MAX),
            nfiles: u64::from(s.worker.files.max(1)),
            base: s.worker.base,
            stride: s.worker.stride,
            wear_out: spec.wear_out && spec.stonewall.is_some(),
            verify: spec.verify,
            ior: spec.pattern == DataPattern::IorTimestamp,
            seed: spec.seed,
            trimwrite: matches!(spec.rw, RwKind::Trimwrite | RwKind::Randtrimwrite),
            trimmed: None,
            units_left: (!s.plan.looping).then_some(s.count),
            issued_more: self.ios_left.is_some()
                || self.pace.is_some()
                || self.pass_length.is_some()
                || self.think.is_some(),
            limit: u64::MAX,
            issuing: true,
            think_now: false,
            at_deadline: false,
            stop: &s.control.stop,
            first_done: &s.control.first_done,
            progress: &s.control.workers[s.index],
        }
    }

    /// Fills the queue; with --fsync-every, no further than the next fsync (which waits
    /// for what is in flight first), whatever the queue depth.
    #[inline(always)]
    pub(super) fn fill<const PLAIN: bool, const WRITES: bool>(
        &mut self,
        st: &mut RunState<'_>,
        offsets: &mut Offsets,
        mut write_offsets: Option<&mut Offsets>,
        mix: &mut OpMix,
        rec: &mut Recorder,
    ) {
        while st.issuing
            && !self.free.is_empty()
            && self.writes_since_fsync < st.fsync_every
            && (PLAIN
                || self
                    .depth_search
                    .as_ref()
                    .is_none_or(|d| self.backend.in_flight() < d.depth))
        {
            if !self.may_issue::<PLAIN>(st) {
                break;
            }
            let dir = match self.choose_dir::<PLAIN, WRITES>(mix, rec) {
                Next::Issue(dir) => dir,
                Next::Again => continue,
                Next::Stop => break,
            };
            let Some(place) = self.place::<PLAIN>(st, dir, offsets, write_offsets.as_deref_mut())
            else {
                st.issuing = false;
                break;
            };
            if !self.issue::<PLAIN, WRITES>(st, dir, place, rec) {
                break;
            }
        }
    }

    /// Whether the worker may issue another I/O: not once it is stopped, halted, at its
    /// limit, its deadline or the end of its share (each ends its issuing).
    #[inline(always)]
    fn may_issue<const PLAIN: bool>(&mut self, st: &mut RunState<'_>) -> bool {
        if st.stop.load(Ordering::Relaxed)
            || self.issued >= st.limit
            || (!PLAIN && self.ios_left == Some(0))
        {
            st.issuing = false;
            return false;
        }
        if st.progress.halt.load(Ordering::Relaxed) {
            // Its job is steady: it ends as at its runtime.
            st.issuing = false;
            st.first_done.store(true, Ordering::Relaxed);
            return false;
        }
        if let Some(d) = self.deadline
            && self.now >= d
            && st.limit == u64::MAX
        {
            st.issuing = false;
            st.at_deadline = true;
            st.first_done.store(true, Ordering::Relaxed);
            return false;
        }
        if st.units_left == Some(0) && st.trimmed.is_none() {
            st.issuing = false;
            return false;
        }
        true
    }

    /// The next I/O's direction (a plain loop's own; else the mix's, or pacing's), once
    /// the flow group and pacing let it go.
    #[inline(always)]
    fn choose_dir<const PLAIN: bool, const WRITES: bool>(
        &mut self,
        mix: &mut OpMix,
        rec: &mut Recorder,
    ) -> Next {
        if PLAIN {
            return Next::Issue(if WRITES { IoDir::Write } else { IoDir::Read });
        }
        if let Some(f) = &mut self.flow
            && f.held()
        {
            return self.held_by_flow(rec);
        }
        let dir = mix.draw();
        let Some(p) = &self.pace else {
            return Next::Issue(dir);
        };
        let (paced, due) = p.choose(dir, self.now);
        if self.now < due {
            // fio's: what is in flight completes, then the wait.
            if self.backend.in_flight() > 0 {
                return Next::Stop;
            }
            self.wait_until(due, rec);
            return Next::Again;
        }
        Next::Issue(paced)
    }

    /// fio's flow: held back, it sleeps flow_sleep once what is in flight has completed,
    /// or tries again at once.
    #[cold]
    fn held_by_flow(&mut self, rec: &mut Recorder) -> Next {
        let sleep = self.flow.as_ref().map_or(Nanos::ZERO, |f| f.sleep);
        if self.backend.in_flight() > 0 {
            return Next::Stop;
        }
        if sleep > Nanos::ZERO {
            self.wait_until(self.now + sleep, rec);
        } else {
            // fio's loop tries again at once; the thread yields so that the workers it
            // waits for run, on a busy machine too.
            std::thread::yield_now();
            self.now = self.s.clock.now();
            self.keep_up(rec);
        }
        Next::Again
    }

    /// Where the next I/O of `dir` goes: its file, its unit in that file and its length
    /// in units (None: the offsets are used up). Counts the units off the share.
    #[inline(always)]
    fn place<const PLAIN: bool>(
        &mut self,
        st: &mut RunState<'_>,
        dir: IoDir,
        offsets: &mut Offsets,
        write_offsets: Option<&mut Offsets>,
    ) -> Option<(u32, u64, u64)> {
        let sizes = &mut self.sizes[dir as usize];
        let next = match (dir, write_offsets) {
            _ if PLAIN => offsets.next(sizes),
            (IoDir::Write, _) if st.trimwrite => st.trimmed.take(),
            (IoDir::Write, Some(w)) => w.next(sizes),
            (IoDir::Trim, _) if st.trimwrite => {
                st.trimmed = offsets.next(sizes);
                st.trimmed
            }
            _ => offsets.next(sizes),
        };
        let (at, units) = next?;
        // Several files take turns: unit u is unit u / n of file u % n.
        let (file, at) = if st.nfiles == 1 {
            (0, at)
        } else {
            ((at % st.nfiles) as u32, at / st.nfiles)
        };
        if let Some(u) = &mut st.units_left
            && (PLAIN || !(st.trimwrite && dir == IoDir::Write))
        {
            *u = u.saturating_sub(units);
        }
        Some((file, at, units))
    }

    /// Prepares and pushes one I/O; false when filling stops (the push failed, or a
    /// think time is due).
    #[inline(always)]
    fn issue<const PLAIN: bool, const WRITES: bool>(
        &mut self,
        st: &mut RunState<'_>,
        dir: IoDir,
        (file, at, units): (u32, u64, u64),
        rec: &mut Recorder,
    ) -> bool {
        let offset = st.base + at * st.stride;
        let len = (units * self.unit) as u32;
        let slot = self.free.pop().expect("checked non-empty");
        // A read (of iolab's data or zeros) needs nothing in its buffer; a plain write its
        // stamp; any other write's data, and IOR's read check, are prepared out of the
        // loop's way.
        let buf_offset = if PLAIN && WRITES {
            self.fill_unique_write(slot, file, len)
        } else if PLAIN || (dir != IoDir::Write && !(st.ior && st.verify)) {
            0
        } else {
            let io = IoAt {
                dir,
                file,
                offset,
                len,
            };
            self.prepare_buffer(slot, io, st)
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
            return false;
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
        if !PLAIN && st.issued_more && self.issued_more(dir, len) {
            st.think_now = true;
            return false;
        }
        true
    }
}
