//! How a worker's I/O loop is built: its state from the worker's setup, and whether it
//! can run as a plain read or write loop.

use iolab_backend::{DataFile, IoBackend, IoDir};
use iolab_core::spec::DataPattern;
use iolab_core::units::Nanos;

use super::{Loop, SlotIo, seed_of_prio};
use crate::clock::Clock;
use crate::offsets::OpMix;
use crate::sizes::SizeDraw;
use crate::worker::WorkerSetup;
use crate::worker::latency_target::{DepthSearch, Step};
use crate::worker::pace::{MinRate, Pace, Think};
use crate::worker::priority::PrioDraw;
use crate::worker::reduction::{DataSampler, Reduction};

impl<'s, 'b, C: Clock, B: IoBackend + ?Sized> Loop<'s, 'b, C, B> {
    pub(in crate::worker) fn new(
        s: &'s WorkerSetup<'s, C>,
        backend: &'b mut B,
        files: &'b [DataFile],
        start: Nanos,
        reduction: Reduction,
        sizes: [SizeDraw; 2],
    ) -> Self {
        let caps = backend.capabilities();
        let spec = &s.plan.spec;
        let depth = s.plan.spec.queue_depth.min(caps.max_queue_depth).max(1) as usize;
        Loop {
            s,
            backend,
            files,
            // None for a workload without files (the null backend's plans have none).
            my_files: s
                .plan
                .files
                .get(s.worker.file..s.worker.file + s.worker.files as usize)
                .unwrap_or_default(),
            start,
            sizes: {
                let [read, write] = sizes;
                [read.clone(), write, read]
            },
            unit: s.plan.spec.unit(),
            free: (0..depth as u32).rev().collect(),
            slots: vec![
                SlotIo {
                    // A slot's buffer holds IOR's words from the start under its pattern.
                    dir: if s.plan.spec.pattern == DataPattern::IorTimestamp {
                        IoDir::Write
                    } else {
                        IoDir::Read
                    },
                    prio: 0,
                    len: 0,
                    file: 0,
                    offset: 0,
                    issued: Nanos::ZERO,
                };
                depth
            ],
            fresh: Vec::with_capacity(depth),
            stamp_on_push: caps.submits_on_push,
            pass_length: None,
            completions: Vec::with_capacity(depth),
            issued: 0,
            ios_left: s.plan.io_limit,
            completed: 0,
            bytes: 0,
            writes_since_fsync: 0,
            last_write_file: 0,
            ramp_end: if s.plan.start.ramp == Nanos::ZERO {
                Nanos(u64::MAX)
            } else {
                start + s.plan.start.ramp
            },
            counted_from: start,
            snapshot_seen: 0,
            deadline: None,
            pace: Pace::new(
                spec,
                s.plan.total_workers,
                s.worker.global,
                start,
                s.worker.seed,
            ),
            think: Think::new(spec, start),
            flow: s.flows.join(s.plan.fio.flow),
            depth_search: s
                .plan
                .fio
                .latency_target
                .map(|t| DepthSearch::new(t, depth as u32, start, 0)),
            lat_step: Step::Go,
            prio: s
                .plan
                .fio
                .io_priorities
                .clone()
                .map(|p| PrioDraw::new(p, seed_of_prio(s.index))),
            min_rate: MinRate::new(spec, s.plan.total_workers, start),
            dir_bytes: [0; 3],
            dir_ops: [0; 3],
            failed: false,
            reduction,
            sampler: DataSampler::of(&s.plan.spec),
            broken: false,
            now: start,
        }
    }

    /// Whether this loop is a plain loop, and of which direction: reads only, or writes
    /// only of iolab's default data (unique, nothing laid out or sampled),
    /// with none of the options that act per I/O (I/O limit, pacing, passes that drop
    /// the cache, think time, flow, latency target, priorities, verify). [`Loop::run`]
    /// is then built without them.
    pub(in crate::worker) fn plain(&self, mix: &OpMix, write_offsets: bool) -> Option<IoDir> {
        let spec = &self.s.plan.spec;
        let options_off = !write_offsets
            && !spec.verify
            && self.ios_left.is_none()
            && self.pace.is_none()
            && self.pass_length.is_none()
            && self.think.is_none()
            && self.flow.is_none()
            && self.depth_search.is_none()
            && self.prio.is_none();
        if !options_off {
            None
        } else if mix.only_reads() {
            Some(IoDir::Read)
        } else if mix.only_writes()
            && spec.pattern == DataPattern::Iolab
            && self.reduction.all_unique()
            && self.sampler.is_none()
        {
            Some(IoDir::Write)
        } else {
            None
        }
    }
}
