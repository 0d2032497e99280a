//! The data worker: sets up its files and backend, waits at the start gate (and for its
//! plan's [`StartRule`](crate::plan::StartRule)), then keeps `queue_depth` I/Os in
//! flight until its share is done, the runtime or stonewall is reached, or it is told to
//! stop; what completes during a ramp is not recorded. Everything is decided before the
//! loop; the loop sees only `&mut dyn IoBackend`, the [`Offsets`](crate::offsets::Offsets) and the
//! [`Recorder`].

use iolab_backend::{BackendError, DataFile, IoBackend, IoDir, Opened};
use iolab_core::result::OpKind;
use iolab_core::units::Nanos;

use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::offsets::{Offsets, OpMix};
use crate::phase::WorkerReport;
use crate::plan::{DataPlan, WorkerPlan};
use crate::recorder::Recorder;
use crate::sizes::SizeDraw;

/// Timeline resolution.
pub use crate::plan::INTERVAL;

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
    /// The phase's flow groups (fio's `flow`), which the plan's `flow` joins.
    pub flows: &'a flow::Flows,
}

fn op_of(dir: IoDir) -> OpKind {
    match dir {
        IoDir::Read => OpKind::Read,
        IoDir::Write => OpKind::Write,
        IoDir::Trim => OpKind::Trim,
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
    // Best effort, like pinning: with a table of its own, the worker's system calls on its
    // descriptors skip the reference count a shared table makes every call take and drop
    // (fdget), as a process's would. run_phase closes what the table inherited.
    let _ = iolab_backend::process::private_fd_table();
    let touches_storage =
        iolab_backend::capabilities_of(spec.backend, spec.queue_depth).touches_storage;
    let files = prepare::open_files(s, touches_storage).inspect_err(|_| {
        s.control.ready_and_wait(false);
    })?;
    let mut opened = prepare::open_backend(s, &files).inspect_err(|_| {
        s.control.ready_and_wait(false);
    })?;
    let reduction = prepare::prepare_data(s, opened.as_dyn());
    let mut draws = prepare::draws(s);
    let Some(start) = prepare::wait_for_start(s) else {
        return Ok(WorkerReport::idle());
    };
    s.control.workers[s.index]
        .started
        .store(true, std::sync::atomic::Ordering::Release);
    let mut rec = Recorder::new(start, s.plan.interval).with_hist_log(s.plan.fio.hist_log_msec);
    if s.plan.start.ramp > Nanos::ZERO {
        rec.set_ramping();
    }
    let pass_length = prepare::pass_length(s, touches_storage, &draws);
    let setup = LoopSetup {
        files: &files,
        start,
        reduction,
        sizes: draws.sizes,
        pass_length,
        offsets: &mut draws.offsets,
        write_offsets: draws.write_offsets.as_mut(),
        mix: &mut draws.mix,
        rec: &mut rec,
    };
    let end = match &mut opened {
        Opened::Uring(b) => run_loop(s, b.as_mut(), setup),
        Opened::Psync(b) => run_loop(s, b.as_mut(), setup),
        Opened::Other(b) => run_loop(s, b.as_mut(), setup),
    };
    Ok(wind_down(s, rec, end))
}

/// After the loop: the worker's last figures published, fio's exitall, its end said to
/// the phase, and its report.
fn wind_down<C: Clock>(s: &WorkerSetup<'_, C>, mut rec: Recorder, end: LoopEnd) -> WorkerReport {
    let LoopEnd {
        finished_at,
        completed,
        sample,
        latency_depth,
        prio_histograms,
        failed,
    } = end;
    let failed = failed || rec.error_count() > 0;
    rec.publish(&s.control.workers[s.index], true);
    // fio's exitall: the others stop before this one counts as finished (fio's
    // terminate comes before its thread exits, so a job waiting for it never starts).
    if let Some(exit) = &s.plan.exit {
        s.control.exit(exit, failed);
    }
    s.control.finished(s.index);
    let mut measure = rec.finish();
    measure.data = sample;
    measure.latency_depth = latency_depth;
    measure
        .histograms
        .extend(prio_histograms.into_iter().flatten());
    WorkerReport {
        measure,
        completed,
        finished_at,
    }
}

/// What the I/O loop starts from and works with, besides the worker's setup.
struct LoopSetup<'f> {
    files: &'f [DataFile],
    start: Nanos,
    reduction: Reduction,
    sizes: [SizeDraw; 2],
    /// I/Os per pass over the files when each pass drops their cached pages first.
    pass_length: Option<u64>,
    offsets: &'f mut Offsets,
    write_offsets: Option<&'f mut Offsets>,
    mix: &'f mut OpMix,
    rec: &'f mut Recorder,
}

/// What the worker's report takes from the I/O loop.
struct LoopEnd {
    finished_at: Nanos,
    completed: u64,
    sample: Option<reduction::DataSample>,
    latency_depth: Option<u32>,
    prio_histograms: Option<Vec<(String, iolab_core::histogram::LatencyHistogram)>>,
    failed: bool,
}

/// Runs the I/O loop over `backend` to its end: built once for io_uring's backend and once
/// for psync's by their types (their calls in line), and once for every other backend
/// through `dyn`.
fn run_loop<C: Clock, B: IoBackend + ?Sized>(
    s: &WorkerSetup<'_, C>,
    backend: &mut B,
    setup: LoopSetup<'_>,
) -> LoopEnd {
    let LoopSetup {
        files,
        start,
        reduction,
        sizes,
        pass_length,
        offsets,
        write_offsets,
        mix,
        rec,
    } = setup;
    let mut lp = Loop::new(s, backend, files, start, reduction, sizes);
    lp.pass_length = pass_length;
    match lp.plain(mix, write_offsets.is_some()) {
        Some(IoDir::Read) => lp.run::<true, false>(offsets, write_offsets, mix, rec),
        Some(_) => lp.run::<true, true>(offsets, write_offsets, mix, rec),
        None => lp.run::<false, false>(offsets, write_offsets, mix, rec),
    }
    LoopEnd {
        finished_at: s.clock.now().saturating_sub(lp.counted_from),
        completed: lp.completed,
        sample: lp.sampler.take().map(|d| d.sample),
        latency_depth: lp.depth_search.as_ref().map(|d| d.depth),
        prio_histograms: lp.prio.take().map(|p| p.into_histograms()),
        failed: lp.failed,
    }
}

/// Where I/O buffer slots start in memory: on a page at least, as fio's direct-I/O
/// buffers do (init_io_u aligns them to the page), whatever smaller alignment the file
/// takes. A buffer off a page boundary spans one page more: the kernel pins one page
/// more per direct I/O, and the loop driver copies each page in two pieces.
pub(crate) fn memory_alignment(file_alignment: u64) -> u64 {
    file_alignment.max(PAGE)
}

/// The page size of the machines iolab runs on (x86-64, aarch64 with 4 KiB pages).
const PAGE: u64 = 4096;

/// A key of a file's name, which a worker's data seed takes in (0 for none): phases that
/// write other files write other data; the same run in another directory, the same.
fn path_key(file: Option<&crate::plan::FilePlan>) -> u64 {
    file.and_then(|f| f.path.file_name()).map_or(0, |name| {
        iolab_core::pattern::unit_hash(name.as_encoded_bytes())
    })
}

pub mod flow;
mod io_loop;
pub mod latency_target;
mod pace;
mod prepare;
pub mod priority;
pub mod reduction;

use io_loop::Loop;
use reduction::Reduction;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_slots_start_on_a_page_whatever_the_file_takes() {
        // A loop-ext4 reports 512-byte direct I/O; fio's buffers start on a page anyway.
        assert_eq!(memory_alignment(512), 4096);
        assert_eq!(memory_alignment(4096), 4096);
        assert_eq!(memory_alignment(8192), 8192);
        // Every slot of a pool made with it starts on a page, whatever the slot size.
        let mut pool =
            iolab_backend::buffer::BufferPool::new(3, 65536 + 512, memory_alignment(512)).unwrap();
        for slot in 0..3 {
            assert_eq!(
                pool.get_mut(slot).as_ptr() as usize % 4096,
                0,
                "slot {slot}"
            );
        }
    }
}
