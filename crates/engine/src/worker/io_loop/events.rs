//! What the I/O loop does beside issuing and reaping: the per-I/O notes of the options
//! that need them, snapshots, the passes that drop the cache, the end of the ramp, the
//! check of a verified read, and fsyncs.

use iolab_backend::{IoBackend, IoDir};
use iolab_core::pattern::{check_verify, ior_timestamp_mismatch};
use iolab_core::result::OpKind;
use iolab_core::spec::DataPattern;
use iolab_core::units::Nanos;

use super::Loop;
use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::recorder::Recorder;

impl<C: Clock, B: IoBackend + ?Sized> Loop<'_, '_, C, B> {
    /// Notes an issued I/O (a `dir` of `len` bytes) in the I/O limit, the pacing, the
    /// passes over the files and the think time; true when a think time is due.
    #[inline(never)]
    pub(super) fn issued_more(&mut self, dir: IoDir, len: u32) -> bool {
        if let Some(n) = &mut self.ios_left {
            *n -= 1;
        }
        if let Some(p) = &mut self.pace {
            p.issued(dir, u64::from(len));
        }
        if let Some(n) = self.pass_length
            && n > 0
            && self.issued.is_multiple_of(n)
        {
            self.invalidate_files();
        }
        self.think
            .as_mut()
            .is_some_and(|t| t.counts_issues() && t.due(self.issued, self.completed, self.now))
    }

    /// Leaves what was measured so far in the worker's snapshot slot (asked for by
    /// request `wanted`).
    #[cold]
    pub(super) fn leave_snapshot(&mut self, wanted: u64, rec: &Recorder) {
        self.snapshot_seen = wanted;
        let covered = self.now.saturating_sub(self.counted_from);
        let slot = &self.s.control.workers[self.s.index].snapshot;
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some((rec.snapshot(), covered));
    }

    /// A pass over the files is done: the next one starts from storage, as fio's
    /// loop_cache_invalidate (fadvise DONTNEED; a failure only leaves pages cached).
    #[cold]
    pub(super) fn invalidate_files(&mut self) {
        for f in self.files {
            let _ = f.advise_dont_need();
        }
    }

    /// The ramp is over: from now on the recorder counts, and the worker's CPU time too.
    #[cold]
    pub(super) fn end_ramp(&mut self, rec: &mut Recorder) {
        self.ramp_end = Nanos(u64::MAX);
        let spec = &self.s.plan.spec;
        if let Some(d) = spec.runtime.or(spec.stonewall) {
            self.deadline = Some(self.now + d.nanos());
        }
        self.counted_from = self.now;
        // fio's number_ios counts from here (reset_all_stats), what is in flight too.
        self.ios_left = self
            .s
            .plan
            .io_limit
            .map(|n| n.saturating_sub(self.backend.in_flight() as u64));
        *rec = Recorder::new(self.now, self.s.plan.interval)
            .with_hist_log(self.s.plan.fio.hist_log_msec);
        PhaseControl::restart_cpu_clock();
    }

    /// Checks what the read into `slot` (of `len` bytes) delivered against what its block
    /// must hold. Out of line: it runs only with --verify, and keeps the loop small.
    #[inline(never)]
    pub(super) fn check_read(&mut self, rec: &mut Recorder, slot: u32, len: u32, seed: u64) {
        let io = self.slots[slot as usize];
        let (offset, file) = (io.offset, io.file as usize);
        let file_id = self.my_files[file].id;
        let buf = &self.backend.buffers().get(slot)[..len as usize];
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
            let path = self.my_files[file].path.display().to_string();
            let message = format!("verify failed for the block at offset {offset} in {path}: {m}");
            let e = self.error(file, OpKind::Read, Some(offset), None, message);
            rec.verify_failure(e);
        }
    }

    /// fsyncs file `index` of this worker's files.
    pub(super) fn fsync(&mut self, rec: &mut Recorder, index: usize) {
        self.writes_since_fsync = 0;
        let Some(file) = self.files.get(index) else {
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
                rec.error(self.error(index, OpKind::Fsync, None, errno, e.to_string()));
                self.failed = true;
                self.s.control.stop_all();
            }
        }
    }
}
