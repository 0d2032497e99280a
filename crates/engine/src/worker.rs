//! The data worker: sets up its files and backend, waits at the start gate (and for its
//! plan's [`StartRule`](crate::plan::StartRule)), then keeps `queue_depth` I/Os in
//! flight until its share is done, the runtime or stonewall is reached, or it is told to
//! stop; what completes during a ramp is not recorded. Everything is decided before the
//! loop; the loop sees only `&mut dyn IoBackend`, the [`Offsets`](crate::offsets::Offsets) and the
//! [`Recorder`].

use iolab_backend::{BackendError, BackendOptions, DataFile, IoBackend, IoDir, OpenSpec, Opened};
use iolab_core::pattern::{fill_fio_random, fill_ior_timestamp, fio_buffer_seed};
use iolab_core::result::OpKind;
use iolab_core::spec::DataPattern;
use iolab_core::units::Nanos;

use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::offsets::{MixPasses, Offsets, OpMix, Order, SeqModifier, offsets_over_files};
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
    let first = s.worker.file;
    let mine = &s.plan.files[first..first + s.worker.files.max(1) as usize];
    let mut files: Vec<DataFile> = Vec::with_capacity(mine.len());
    for fp in mine.iter().filter(|_| touches_storage) {
        let open = OpenSpec {
            write: spec.rw.modifies(),
            create: false,
            truncate: false,
            direct: spec.direct,
            sync: spec.sync,
        };
        match DataFile::open(&fp.path, open) {
            Ok(f) => {
                if s.plan.fio.invalidate_at_open {
                    // As fio's: a failure only leaves pages cached.
                    let _ = f.advise_dont_need();
                }
                if s.plan.fio.access_hint {
                    // Advice only: a file system that ignores it changes nothing.
                    let _ = f.advise_access(spec.rw.is_random());
                }
                files.push(f)
            }
            Err(e) => {
                s.control.ready_and_wait(false);
                return Err(e);
            }
        }
    }
    let mem_align = memory_alignment(s.alignment);
    let opts = BackendOptions {
        queue_depth: spec.queue_depth,
        block_size: spec.largest_io(),
        alignment: mem_align,
        submit_batch: spec.submit_batch,
        write_window: 0,
    };
    let mut opened = match Opened::open(spec.backend, &files, opts) {
        Ok(b) => b,
        Err(e) => {
            s.control.ready_and_wait(false);
            return Err(e);
        }
    };
    let backend = opened.as_dyn();
    backend.buffers().fill_random(s.worker.seed ^ 0xDA7A);
    // The worker's data: its own base, drawn from its seed and its first file's name (so
    // no two workers, and no two phases writing other files, share one), and its ids.
    let data_seed = iolab_core::rng::mix(&[s.worker.seed, path_key(mine.first())]);
    let mut reduction = Reduction::new(spec, data_seed, u64::from(s.worker.global));
    if let Some(ws) = s.plan.fio.dedupe_working_set
        && spec.dedupe_ratio.is_some()
    {
        // fio: the share's bytes times the percentage, in pages of the write size.
        let share = s.worker.blocks * spec.unit();
        let pages = share / 100 * u64::from(ws.percent) / spec.grain().max(1);
        let workers = s.control.workers.len() as u64;
        reduction = reduction.with_working_set(reduction::WorkingSet::new(
            pages,
            ws.global,
            s.index as u64,
            workers,
            spec.seed,
        ));
    }
    if reduction.fixed.is_some() {
        let pool = backend.buffers();
        for slot in 0..pool.slots() {
            reduction.prepare_slot(pool.get_mut(slot));
        }
    }
    if spec.pattern.is_fio() {
        // fio fills each I/O unit's buffer once (init_io_u), each from its own seed.
        let mut rng = iolab_core::rng::Rng::new(s.worker.seed ^ 0xF10_DA7A);
        let pool = backend.buffers();
        for slot in 0..pool.slots() {
            fill_fio_random(pool.get_mut(slot), fio_buffer_seed(&mut rng));
        }
    }
    if spec.pattern == DataPattern::IorTimestamp {
        // IOR fills its one transfer buffer once, with the writer's rank, and writes it
        // unchanged every time.
        let pool = backend.buffers();
        for slot in 0..pool.slots() {
            fill_ior_timestamp(pool.get_mut(slot), spec.seed as u32, s.worker.global.into());
        }
    }
    // Each direction's sizes (drawn per I/O from a mix, or one) and where offsets go.
    // Reads and writes of a sequential mix, or coverages of blocks of two sizes, each
    // have their own sequence (fio's: each direction goes on from its own last offset).
    let unit = spec.unit();
    let mut sizes = [0, 1].map(|d| SizeDraw::of_spec(spec, d, unit, s.worker.seed));
    if let Some(f) = s.plan.fio.modifier.size_seeds {
        // fio reseeds them at each loop of a size-based job under randrepeat; iolab's
        // passes are known to one file's sequence.
        let f = f.for_worker(u64::from(s.worker.global));
        let repeat = s.plan.fio.modifier.same_passes && !s.plan.looping && s.worker.files <= 1;
        sizes = sizes.map(|z| {
            let seed = f.seeds[z.dir()];
            z.fio(seed, unit, repeat)
        });
    }
    let order = match Order::of(spec) {
        // fio's randrepeat reseeds at each loop of a size-based job; a time-based one
        // starts its map again without reseeding.
        Order::Permutation if s.plan.fio.modifier.same_passes && !s.plan.looping => {
            Order::SamePermutation
        }
        order => order,
    };
    let own_sequences = order.per_direction(&sizes, spec.rw.is_mixed());
    let units = s.worker.blocks;
    // fio's rw=...:N, its skip counted in blocks of the block size, here in units.
    // Zones (fio's zonemode=strided) in bytes, here in units.
    let (asked, global) = (s.plan.fio.modifier, u64::from(s.worker.global));
    let modifier = SeqModifier {
        skip: asked.skip * (spec.block_size.get() / unit.max(1)) as i64,
        zones: asked.zones.map(|z| crate::offsets::Zones {
            range: (z.range / unit.max(1)).max(1),
            size: (z.size / unit.max(1)).max(1),
            skip: z.skip / unit.max(1),
        }),
        random_share: asked
            .random_share
            .map(|r| r.for_worker(global, s.plan.looping)),
        files: asked.files.for_worker(global, s.plan.looping),
        ..asked
    };
    let n = s.worker.files;
    let mut offsets = if own_sequences {
        offsets_over_files(&order, units, n, &[&sizes[0]], s.worker.seed, modifier)
    } else {
        let both = [&sizes[0], &sizes[1]];
        offsets_over_files(&order, units, n, &both, s.worker.seed, modifier)
    };
    let mut write_offsets = own_sequences.then(|| {
        let seed = iolab_core::rng::mix(&[s.worker.seed, 0x3217E]);
        offsets_over_files(&order, units, n, &[&sizes[1]], seed, modifier)
    });
    let mut mix = OpMix::of(spec.rw, spec.read_percent(), s.worker.seed);
    if let Some(rwmix) = s.plan.fio.modifier.rwmix {
        // fio's passes end where its map is used up: one order of one size over the
        // files in turn (each other order's passes end elsewhere, or never).
        let passes = (matches!(order, Order::Permutation | Order::SamePermutation)
            && !s.plan.looping
            && !own_sequences
            && !spec.has_size_mix()
            && modifier.is_plain()
            && modifier.files.is_default())
        .then(|| MixPasses {
            ios: units / (spec.block_size.get() / unit.max(1)).max(1),
            spent: if rwmix.ends_on_bytes {
                0
            } else {
                s.worker.files.max(1)
            },
            repeat: s.plan.fio.modifier.same_passes,
        });
        let worker = rwmix.for_worker(u64::from(s.worker.global));
        mix = mix.fio(worker, passes);
    }

    let Some(gate) = s.control.ready_and_wait(true) else {
        return Ok(WorkerReport::idle());
    };
    let rule = &s.plan.start;
    let start = if rule.at_once() && !rule.never {
        gate
    } else {
        if rule.never
            || !s
                .control
                .hold(s.index, rule.delay.to_duration(), &rule.after)
        {
            // Stopped before it started: it ends, as a terminated fio job does.
            if let Some(exit) = &s.plan.exit {
                s.control.exit(exit, false);
            }
            s.control.finished(s.index);
            return Ok(WorkerReport::idle());
        }
        PhaseControl::restart_cpu_clock();
        s.clock.now()
    };
    s.control.workers[s.index]
        .started
        .store(true, std::sync::atomic::Ordering::Release);
    let mut rec = Recorder::new(start, s.plan.interval).with_hist_log(s.plan.fio.hist_log_msec);
    if s.plan.start.ramp > Nanos::ZERO {
        rec.set_ramping();
    }
    // fio's loop_cache_invalidate: a new pass over the files (a random map used up, a
    // single file's sequence wrapped) drops their cached pages first. One sequence
    // of one size only; uniform or skewed draws (norandommap) have no pass, nor has a
    // mixed order (percentage_random: its sequential I/Os leave the map as it is).
    let passes = s.plan.invalidate_each_pass()
        && touches_storage
        && !own_sequences
        && !spec.has_size_mix()
        && s.plan.fio.modifier.random_share.is_none()
        && match order {
            Order::Permutation | Order::SamePermutation => true,
            Order::Sequential => s.worker.files <= 1,
            _ => false,
        };
    let pass_length = passes.then(|| units / (spec.block_size.get() / unit.max(1)).max(1));
    let setup = LoopSetup {
        files: &files,
        start,
        reduction,
        sizes,
        pass_length,
        offsets: &mut offsets,
        write_offsets: write_offsets.as_mut(),
        mix: &mut mix,
        rec: &mut rec,
    };
    let end = match &mut opened {
        Opened::Uring(b) => run_loop(s, b.as_mut(), setup),
        Opened::Psync(b) => run_loop(s, b.as_mut(), setup),
        Opened::Other(b) => run_loop(s, b.as_mut(), setup),
    };
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
    Ok(WorkerReport {
        measure,
        completed,
        finished_at,
    })
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
