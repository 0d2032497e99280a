//! Where a worker holds back: waiting for a paced I/O's turn or a pause's end (seeing
//! stops, the deadline and snapshot requests meanwhile), fio's think time and latency
//! target, and the failure of --rate-min.

use std::sync::atomic::Ordering;

use iolab_backend::{IoBackend, IoDir};
use iolab_core::result::OpKind;
use iolab_core::units::{ByteCount, Nanos};

use super::{Loop, WAIT_SLICE};
use crate::clock::Clock;
use crate::recorder::Recorder;
use crate::worker::latency_target::Step;
use crate::worker::op_of;
use crate::worker::pace::Shortfall;

impl<C: Clock, B: IoBackend + ?Sized> Loop<'_, '_, C, B> {
    /// Waits until `until` (a paced I/O's turn, the end of a pause) in slices, so a stop,
    /// the deadline, the end of the ramp and a snapshot request are each seen within
    /// [`WAIT_SLICE`]; the worker counts as holding, not stalled, meanwhile.
    #[cold]
    pub(super) fn wait_until(&mut self, until: Nanos, rec: &mut Recorder) {
        let control = self.s.control;
        let progress = &control.workers[self.s.index];
        progress.holding.store(true, Ordering::Release);
        loop {
            let end = self.deadline.map_or(until, |d| d.min(until));
            if self.now >= end
                || control.stop.load(Ordering::Relaxed)
                || progress.halt.load(Ordering::Relaxed)
            {
                break;
            }
            self.s.clock.sleep((end - self.now).min(WAIT_SLICE));
            self.now = self.s.clock.now();
            if self.now >= self.ramp_end {
                self.end_ramp(rec);
            }
            let wanted = control.snapshot_request.load(Ordering::Relaxed);
            if wanted != self.snapshot_seen {
                self.leave_snapshot(wanted, rec);
            }
        }
        progress.holding.store(false, Ordering::Release);
    }

    /// fio's latency target after completions: the window's verdict, then what it asks
    /// (complete what is in flight, start the figures afresh, end, or fail). False when
    /// the worker stops issuing.
    #[cold]
    pub(super) fn latency_step(&mut self, rec: &mut Recorder, verify: bool, seed: u64) -> bool {
        let Some(d) = &mut self.depth_search else {
            return true;
        };
        let mut step = std::mem::replace(&mut self.lat_step, Step::Go);
        if step == Step::Go {
            step = d.check(self.now, self.completed);
        }
        let target = d.target();
        match step {
            Step::Go => true,
            Step::Quiesce => {
                self.drain(rec, verify, seed);
                true
            }
            Step::FinalRun => {
                self.drain(rec, verify, seed);
                self.end_ramp(rec);
                true
            }
            Step::Done => false,
            Step::Fatal => {
                let message = format!(
                    "latency exceeds the latency_target of {} at a depth of 1 (fio: ETIMEDOUT, max latency exceeded)",
                    target.human()
                );
                rec.error(self.error(0, OpKind::Read, None, Some(110), message));
                self.failed = true;
                false
            }
        }
    }

    /// fio's thinktime: what is in flight completes, then the CPU spins for the spin
    /// part and the worker sleeps the rest.
    #[cold]
    pub(super) fn think(&mut self, rec: &mut Recorder, verify: bool, seed: u64) {
        self.drain(rec, verify, seed);
        let Some(t) = &self.think else { return };
        let (pause, spin) = (t.pause, t.spin);
        let began = self.s.clock.now();
        self.now = began;
        let stop = &self.s.control.stop;
        let halt = &self.s.control.workers[self.s.index].halt;
        while self.now.saturating_sub(began) < spin
            && !stop.load(Ordering::Relaxed)
            && !halt.load(Ordering::Relaxed)
        {
            std::hint::spin_loop();
            self.now = self.s.clock.now();
        }
        self.wait_until(began + pause, rec);
    }

    /// A direction fell below this worker's part of --rate-min: the phase fails, as
    /// fio's job does.
    #[cold]
    pub(super) fn rate_failed(&mut self, rec: &mut Recorder, short: Shortfall) {
        let spec = &self.s.plan.spec;
        let (got, part, asked) = if short.bytes {
            let human = |v: f64| format!("{}/s", ByteCount(v as u64).human());
            let min = spec.rate_min.map_or(0, ByteCount::get) as f64;
            (
                human(short.got),
                human(short.part),
                format!("--rate-min {}", human(min)),
            )
        } else {
            let min = spec.rate_iops_min.unwrap_or(0);
            (
                format!("{:.1} I/Os per second", short.got),
                format!("{:.1}", short.part),
                format!("--rate-iops-min {min}"),
            )
        };
        let what = match short.dir {
            IoDir::Read => "reads",
            IoDir::Write => "writes",
            IoDir::Trim => "trims",
        };
        let message = format!(
            "{what} ran at {got} over the last {}, below this worker's part ({part}) of {asked}",
            short.over.human()
        );
        rec.error(self.error(0, op_of(short.dir), None, None, message));
        self.failed = true;
        if !self.s.isolated {
            self.s.control.stop_all();
        }
    }
}
