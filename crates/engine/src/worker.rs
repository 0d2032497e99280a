//! The data worker: sets up its files and backend, waits at the start gate, then keeps
//! `queue_depth` I/Os in flight until its share is done, the runtime or stonewall is
//! reached, or it is told to stop. Everything is decided before the loop; the loop sees
//! only `&mut dyn IoBackend`, `&mut dyn OffsetGen` and the [`Recorder`].

use std::sync::atomic::Ordering;

use iolab_backend::{
    BackendError, BackendOptions, Completion, DataFile, IoBackend, IoDir, IoRequest, OpenSpec,
    open_backend,
};
use iolab_core::pattern::{
    check_verify, fill_ior_timestamp, fill_verify, ior_timestamp_mismatch, stamp_unique,
};
use iolab_core::result::{ErrorRecord, OpKind};
use iolab_core::spec::DataPattern;
use iolab_core::units::Nanos;

use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::offsets::{OffsetGen, OpMix, generator};
use crate::phase::WorkerReport;
use crate::plan::{DataPlan, WorkerPlan};
use crate::recorder::Recorder;

/// Timeline resolution.
pub const INTERVAL: Nanos = Nanos::SECOND;

/// Everything a data worker needs, decided before it starts.
pub struct WorkerSetup<'a, C: Clock> {
    pub plan: &'a DataPlan,
    pub worker: &'a WorkerPlan,
    /// Index of this worker on its rank.
    pub index: usize,
    pub control: &'a PhaseControl,
    pub clock: &'a C,
    pub rank: u32,
    pub host: &'a str,
    pub alignment: u64,
    /// I/Os to do when size-based.
    pub count: u64,
    /// An error ends this worker only, not every worker of the phase: the targets of
    /// `iolab targets` are independent, as fio's jobs are, and a full disk on one must not
    /// cut the others' measurement short.
    pub isolated: bool,
}

fn op_of(dir: IoDir) -> OpKind {
    match dir {
        IoDir::Read => OpKind::Read,
        IoDir::Write => OpKind::Write,
    }
}

/// Runs one data worker. Setup errors are reported through the start gate and
/// returned; errors during the run are recorded and end the worker early.
pub fn run_data_worker<C: Clock>(s: &WorkerSetup<'_, C>) -> Result<WorkerReport, BackendError> {
    let spec = &s.plan.spec;
    if let Some(cpu) = s.worker.cpu {
        // Pinning is best effort: a CPU outside this process's mask is reported by the
        // plan's validation, and a failure here changes placement, not correctness.
        let _ = iolab_backend::process::pin_current_thread(cpu);
    }
    let touches_storage =
        iolab_backend::capabilities_of(spec.backend, spec.queue_depth).touches_storage;
    let files: Vec<DataFile> = if touches_storage {
        let fp = &s.plan.files[s.worker.file];
        match DataFile::open(
            &fp.path,
            OpenSpec {
                write: spec.rw.writes(),
                create: false,
                truncate: false,
                direct: spec.direct,
                sync: spec.sync,
            },
        ) {
            Ok(f) => vec![f],
            Err(e) => {
                s.control.ready_and_wait(false);
                return Err(e);
            }
        }
    } else {
        Vec::new()
    };
    let write_window = write_window(spec, s.alignment);
    let opts = BackendOptions {
        queue_depth: spec.queue_depth,
        block_size: s.plan.block_size,
        alignment: s.alignment,
        submit_batch: spec.submit_batch,
        write_window,
    };
    let mut backend = match open_backend(spec.backend, &files, opts) {
        Ok(b) => b,
        Err(e) => {
            s.control.ready_and_wait(false);
            return Err(e);
        }
    };
    backend.buffers().fill_random(s.worker.seed ^ 0xDA7A);
    if spec.pattern == DataPattern::IorTimestamp {
        // IOR fills its one transfer buffer once, with the writer's rank, and writes it
        // unchanged every time.
        let pool = backend.buffers();
        for slot in 0..pool.slots() {
            fill_ior_timestamp(pool.get_mut(slot), spec.seed as u32, s.worker.global.into());
        }
    }
    let random = spec.rw.is_random().then_some(spec.random);
    let mut offsets = generator(
        random,
        s.worker.blocks,
        s.count,
        s.plan.looping,
        s.worker.seed,
    );
    let mut mix = OpMix::new(spec.read_percent(), s.worker.seed);

    let Some(start) = s.control.ready_and_wait(true) else {
        return Ok(WorkerReport::idle());
    };
    let mut rec = Recorder::new(start, INTERVAL);
    let mut lp = Loop::new(s, backend.as_mut(), &files, start);
    lp.window_positions = write_window / s.alignment.max(1) + 1;
    lp.run(offsets.as_mut(), &mut mix, &mut rec);
    let finished_at = s.clock.now().saturating_sub(start);
    let completed = lp.completed;
    drop(lp);
    rec.publish(&s.control.workers[s.index].latency, true);
    s.control.finished(s.index);
    Ok(WorkerReport {
        measure: rec.finish(),
        completed,
        finished_at,
    })
}

/// Random data a write can start anywhere in, per buffer slot, beyond the block itself:
/// consecutive writes take their data from different places of a slot filled with
/// random bytes once, so no two blocks of a file repeat each other (a compressing or
/// deduplicating file system such as ZFS gains nothing) at no cost per I/O. 1 MiB per
/// slot, less at deep queues (at least 256 KiB); none for --verify (each block encodes
/// its own position) or when nothing reaches storage.
fn write_window(spec: &iolab_core::spec::DataSpec, alignment: u64) -> u64 {
    let touches = iolab_backend::capabilities_of(spec.backend, spec.queue_depth).touches_storage;
    if !touches || !spec.rw.writes() || spec.verify || spec.pattern != DataPattern::Iolab {
        return 0;
    }
    let per_slot = (32u64 << 20) / u64::from(spec.queue_depth.max(1));
    let window = per_slot.clamp(256 << 10, 1 << 20);
    window / alignment.max(1) * alignment.max(1)
}

/// Steps through the write window: a prime above any number of positions (at most
/// 1 MiB / 512 + 1), so consecutive writes start at different places.
const WINDOW_STRIDE: u64 = 7919;

/// The state of the I/O loop of one worker.
struct Loop<'s, 'b, C: Clock> {
    s: &'s WorkerSetup<'s, C>,
    backend: &'b mut dyn IoBackend,
    files: &'b [DataFile],
    start: Nanos,
    block: u32,
    free: Vec<u32>,
    slot_dir: Vec<IoDir>,
    slot_offset: Vec<u64>,
    slot_issued: Vec<Nanos>,
    /// Slots pushed since the last submit, stamped together just before it.
    fresh: Vec<u32>,
    /// The backend may hand an I/O to the kernel inside push: stamp each one there.
    stamp_on_push: bool,
    /// Places (in alignment units) a write's data may start in its slot; 1: the start.
    window_positions: u64,
    completions: Vec<Completion>,
    issued: u64,
    completed: u64,
    bytes: u64,
    writes_since_fsync: u64,
    failed: bool,
    /// The backend itself failed: nothing more can complete through it.
    broken: bool,
    now: Nanos,
}

impl<'s, 'b, C: Clock> Loop<'s, 'b, C> {
    fn new(
        s: &'s WorkerSetup<'s, C>,
        backend: &'b mut dyn IoBackend,
        files: &'b [DataFile],
        start: Nanos,
    ) -> Self {
        let caps = backend.capabilities();
        let depth = s.plan.spec.queue_depth.min(caps.max_queue_depth).max(1) as usize;
        Loop {
            s,
            backend,
            files,
            start,
            block: s.plan.block_size as u32,
            free: (0..depth as u32).rev().collect(),
            // A slot's buffer holds IOR's words from the start under its pattern.
            slot_dir: vec![
                if s.plan.spec.pattern == DataPattern::IorTimestamp {
                    IoDir::Write
                } else {
                    IoDir::Read
                };
                depth
            ],
            slot_offset: vec![0; depth],
            slot_issued: vec![Nanos::ZERO; depth],
            fresh: Vec::with_capacity(depth),
            stamp_on_push: caps.submits_on_push,
            window_positions: 1,
            completions: Vec::with_capacity(depth),
            issued: 0,
            completed: 0,
            bytes: 0,
            writes_since_fsync: 0,
            failed: false,
            broken: false,
            now: start,
        }
    }

    fn run(&mut self, offsets: &mut dyn OffsetGen, mix: &mut OpMix, rec: &mut Recorder) {
        let spec = &self.s.plan.spec;
        let deadline = spec
            .runtime
            .or(spec.stonewall)
            .map(|d| self.start + d.nanos());
        let wear_out = spec.wear_out && spec.stonewall.is_some();
        let verify = spec.verify;
        let ior = spec.pattern == DataPattern::IorTimestamp;
        let seed = spec.seed;
        let file_id = self.s.plan.files[self.s.worker.file].id;
        let (base, stride) = (self.s.worker.base, self.s.worker.stride);
        let fsync_every = spec.fsync_every.unwrap_or(u64::MAX);
        let pace = spec
            .rate_iops
            .map(|r| Nanos((self.s.plan.total_workers as u64 * 1_000_000_000) / r.max(1)));
        let mut next_due = self.start;
        let mut limit = u64::MAX;
        let mut issuing = true;
        // The stonewall, not the end of its share, stopped this worker.
        let mut at_deadline = false;
        let stop = &self.s.control.stop;
        let first_done = &self.s.control.first_done;
        let progress = &self.s.control.workers[self.s.index];

        loop {
            // Fill the queue; with --fsync-every, no further than the next fsync (which
            // waits for what is in flight first), whatever the queue depth.
            while issuing && !self.free.is_empty() && self.writes_since_fsync < fsync_every {
                if stop.load(Ordering::Relaxed) || self.issued >= limit {
                    issuing = false;
                    break;
                }
                if let Some(d) = deadline
                    && self.now >= d
                    && limit == u64::MAX
                {
                    issuing = false;
                    at_deadline = true;
                    first_done.store(true, Ordering::Relaxed);
                    break;
                }
                if let Some(p) = pace {
                    if self.now < next_due {
                        if self.backend.in_flight() > 0 {
                            break;
                        }
                        std::thread::sleep((next_due - self.now).to_duration());
                        self.now = self.s.clock.now();
                    }
                    next_due = next_due + p;
                }
                let Some(block) = offsets.next() else {
                    issuing = false;
                    break;
                };
                let offset = base + block * stride;
                let dir = mix.draw();
                let slot = self.free.pop().expect("checked non-empty");
                let buf_offset = if dir == IoDir::Write {
                    (self.issued.wrapping_mul(WINDOW_STRIDE) % self.window_positions)
                        * self.s.alignment
                } else {
                    0
                } as usize;
                if dir == IoDir::Write {
                    let buf = &mut self.backend.buffers().get_mut(slot)
                        [buf_offset..buf_offset + self.block as usize];
                    if ior {
                        // The buffer already holds IOR's words, unless a read used it.
                        if self.slot_dir[slot as usize] == IoDir::Read {
                            fill_ior_timestamp(buf, seed as u32, self.s.worker.global.into());
                        }
                    } else if verify {
                        fill_verify(buf, seed, file_id, offset);
                    } else {
                        stamp_unique(buf, offset, self.issued);
                    }
                    self.writes_since_fsync += 1;
                } else if ior && verify {
                    // IOR's invalidate_buffer_pattern: a read that delivers nothing
                    // cannot pass for the data left in the buffer.
                    let buf = self.backend.buffers().get_mut(slot);
                    buf[0] = !buf[0];
                }
                if self.stamp_on_push {
                    self.slot_issued[slot as usize] = self.s.clock.now();
                }
                let pushed = self.backend.push(IoRequest {
                    file: 0,
                    dir,
                    offset,
                    len: self.block,
                    slot,
                    buf_offset: buf_offset as u32,
                });
                if let Err(e) = pushed {
                    self.fail_all(rec, e.to_string());
                    break;
                }
                self.slot_dir[slot as usize] = dir;
                self.slot_offset[slot as usize] = offset;
                if !self.stamp_on_push {
                    self.fresh.push(slot);
                }
                self.issued += 1;
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

            self.submit_and_reap(rec, verify, seed, file_id);
            if self.broken {
                break;
            }
            if self.failed {
                issuing = false;
            }
            progress.ops.store(self.completed, Ordering::Relaxed);
            progress.bytes.store(self.bytes, Ordering::Relaxed);
            rec.publish(&progress.latency, false);
            if !rec.first_done_marked() && first_done.load(Ordering::Relaxed) {
                rec.mark_first_done();
            }
            if self.writes_since_fsync >= fsync_every {
                self.drain(rec, verify, seed, file_id);
                self.fsync(rec);
            }
        }
        if spec.fsync_at_end && spec.rw.writes() && !self.failed {
            self.fsync(rec);
        }
    }

    #[inline]
    fn submit_and_reap(&mut self, rec: &mut Recorder, verify: bool, seed: u64, file_id: u64) {
        let issued_at = self.s.clock.now();
        for slot in self.fresh.drain(..) {
            self.slot_issued[slot as usize] = issued_at;
        }
        if let Err(e) = self.backend.submit(1) {
            self.fail_all(rec, e.to_string());
            return;
        }
        self.backend.reap(&mut self.completions);
        self.now = self.s.clock.now();
        let now = self.now;
        for i in 0..self.completions.len() {
            let c = self.completions[i];
            let slot = c.slot as usize;
            let dir = self.slot_dir[slot];
            if c.result == self.block as i32 {
                rec.record(
                    op_of(dir),
                    now - self.slot_issued[slot],
                    self.block as u64,
                    now,
                );
                self.completed += 1;
                self.bytes += self.block as u64;
                if verify && dir == IoDir::Read {
                    let offset = self.slot_offset[slot];
                    let buf = &self.backend.buffers().get(c.slot)[..self.block as usize];
                    let wrong = if self.s.plan.spec.pattern == DataPattern::IorTimestamp {
                        let owner = self.s.worker.owner.into();
                        ior_timestamp_mismatch(buf, seed as u32, owner).map(|at| {
                            format!(
                                "byte {at} differs from IOR's timestamp data of rank {owner} (signature {})",
                                seed as u32
                            )
                        })
                    } else {
                        check_verify(buf, seed, file_id, offset)
                            .err()
                            .map(|m| m.to_string())
                    };
                    if let Some(m) = wrong {
                        let path = self.s.plan.files[self.s.worker.file]
                            .path
                            .display()
                            .to_string();
                        let message = format!(
                            "verify failed for the block at offset {offset} in {path}: {m}"
                        );
                        rec.verify_failure(self.error(OpKind::Read, Some(offset), None, message));
                    }
                }
            } else {
                self.io_failed(rec, dir, self.slot_offset[slot], c.result);
            }
            self.free.push(c.slot);
        }
        self.completions.clear();
    }

    /// Waits for every in-flight I/O.
    fn drain(&mut self, rec: &mut Recorder, verify: bool, seed: u64, file_id: u64) {
        while self.backend.in_flight() > 0 && !self.broken {
            self.submit_and_reap(rec, verify, seed, file_id);
        }
    }

    fn fsync(&mut self, rec: &mut Recorder) {
        self.writes_since_fsync = 0;
        let Some(file) = self.files.first() else {
            return;
        };
        let t = self.s.clock.now();
        match file.fsync() {
            Ok(()) => {
                self.now = self.s.clock.now();
                rec.record(OpKind::Fsync, self.now - t, 0, self.now);
            }
            Err(e) => {
                let errno = e.errno();
                rec.error(self.error(OpKind::Fsync, None, errno, e.to_string()));
                self.failed = true;
                self.s.control.stop_all();
            }
        }
    }

    fn error(
        &self,
        op: OpKind,
        offset: Option<u64>,
        errno: Option<i32>,
        message: String,
    ) -> ErrorRecord {
        ErrorRecord {
            rank: self.s.rank,
            host: self.s.host.to_string(),
            op,
            path: self.s.plan.files[self.s.worker.file]
                .path
                .display()
                .to_string(),
            offset,
            errno,
            message,
        }
    }

    fn io_failed(&mut self, rec: &mut Recorder, dir: IoDir, offset: u64, result: i32) {
        let path = self.s.plan.files[self.s.worker.file].path.clone();
        let op = op_of(dir);
        let op_name = op.name();
        let len = self.block as u64;
        let (errno, message) = if result < 0 {
            let errno = -result;
            let e = if errno == libc::EINVAL && self.s.plan.spec.direct {
                BackendError::Unaligned {
                    op: op_name,
                    path,
                    offset,
                    len,
                    align: self.s.alignment,
                }
            } else {
                BackendError::Io {
                    op: op_name,
                    path,
                    offset,
                    len,
                    source: std::io::Error::from_raw_os_error(errno),
                }
            };
            (Some(errno), e.to_string())
        } else {
            (
                None,
                format!(
                    "short {op_name}: {result} of {len} bytes at offset {offset} in {} ({})",
                    path.display(),
                    match dir {
                        IoDir::Read => "the file is shorter than the workload expects",
                        IoDir::Write => "the file system is probably full",
                    }
                ),
            )
        };
        rec.error(self.error(op, Some(offset), errno, message));
        self.failed = true;
        if !self.s.isolated {
            self.s.control.stop_all();
        }
    }

    fn fail_all(&mut self, rec: &mut Recorder, message: String) {
        rec.error(self.error(OpKind::Read, None, None, message));
        self.failed = true;
        self.broken = true;
        self.fresh.clear();
        if !self.s.isolated {
            self.s.control.stop_all();
        }
    }
}
