//! A data worker's steps before its loop, in order: its files opened, its backend, its
//! buffers' data, its draws (sizes, offsets, the op mix), the wait for its start, and
//! its passes. All run once per worker, none per I/O.

use iolab_backend::{BackendError, BackendOptions, DataFile, IoBackend, OpenSpec, Opened};
use iolab_core::pattern::{fill_fio_random, fill_ior_timestamp, fio_buffer_seed};
use iolab_core::spec::DataPattern;
use iolab_core::units::Nanos;

use super::reduction::{self, Reduction};
use super::{WorkerSetup, memory_alignment, path_key};
use crate::clock::Clock;
use crate::control::PhaseControl;
use crate::offsets::{MixPasses, Offsets, OpMix, Order, SeqModifier, offsets_over_files};
use crate::sizes::SizeDraw;

/// Opens this worker's files (none when the backend touches no storage), with fio's
/// advice at open.
pub(super) fn open_files<C: Clock>(
    s: &WorkerSetup<'_, C>,
    touches_storage: bool,
) -> Result<Vec<DataFile>, BackendError> {
    let spec = &s.plan.spec;
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
        let f = DataFile::open(&fp.path, open)?;
        if s.plan.fio.invalidate_at_open {
            // As fio's: a failure only leaves pages cached.
            let _ = f.advise_dont_need();
        }
        if s.plan.fio.access_hint {
            // Advice only: a file system that ignores it changes nothing.
            let _ = f.advise_access(spec.rw.is_random());
        }
        files.push(f);
    }
    Ok(files)
}

/// The worker's backend over `files`, its buffers as large as its largest I/O.
pub(super) fn open_backend<'f, C: Clock>(
    s: &WorkerSetup<'_, C>,
    files: &'f [DataFile],
) -> Result<Opened<'f>, BackendError> {
    let spec = &s.plan.spec;
    let opts = BackendOptions {
        queue_depth: spec.queue_depth,
        block_size: spec.largest_io(),
        alignment: memory_alignment(s.alignment),
        submit_batch: spec.submit_batch,
        write_window: 0,
    };
    Opened::open(spec.backend, files, opts)
}

/// What the worker's writes carry, and its buffers filled as the pattern asks (fio's
/// and IOR's fill each buffer once).
pub(super) fn prepare_data<C: Clock>(
    s: &WorkerSetup<'_, C>,
    backend: &mut dyn IoBackend,
) -> Reduction {
    let spec = &s.plan.spec;
    backend.buffers().fill_random(s.worker.seed ^ 0xDA7A);
    // The worker's data: its own base, drawn from its seed and its first file's name (so
    // no two workers, and no two phases writing other files, share one), and its ids.
    let first = s.plan.files.get(s.worker.file);
    let data_seed = iolab_core::rng::mix(&[s.worker.seed, path_key(first)]);
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
    let pool = backend.buffers();
    if reduction.fixed.is_some() {
        for slot in 0..pool.slots() {
            reduction.prepare_slot(pool.get_mut(slot));
        }
    }
    if spec.pattern.is_fio() {
        // fio fills each I/O unit's buffer once (init_io_u), each from its own seed.
        let mut rng = iolab_core::rng::Rng::new(s.worker.seed ^ 0xF10_DA7A);
        for slot in 0..pool.slots() {
            fill_fio_random(pool.get_mut(slot), fio_buffer_seed(&mut rng));
        }
    }
    if spec.pattern == DataPattern::IorTimestamp {
        // IOR fills its one transfer buffer once, with the writer's rank, and writes it
        // unchanged every time.
        for slot in 0..pool.slots() {
            fill_ior_timestamp(pool.get_mut(slot), spec.seed as u32, s.worker.global.into());
        }
    }
    reduction
}

/// What the worker draws from: each direction's sizes, the order and where offsets go
/// (the writes' own when each direction has its sequence), and the op mix.
pub(super) struct Draws {
    pub(super) sizes: [SizeDraw; 2],
    pub(super) order: Order,
    pub(super) own_sequences: bool,
    pub(super) offsets: Offsets,
    pub(super) write_offsets: Option<Offsets>,
    pub(super) mix: OpMix,
}

/// The worker's draws. Reads and writes of a sequential mix, or coverages of blocks of
/// two sizes, each have their own sequence (fio's: each direction goes on from its own
/// last offset).
pub(super) fn draws<C: Clock>(s: &WorkerSetup<'_, C>) -> Draws {
    let spec = &s.plan.spec;
    let (sizes, order) = sizes_and_order(s);
    let own_sequences = order.per_direction(&sizes, spec.rw.is_mixed());
    let units = s.worker.blocks;
    let modifier = seq_modifier(s);
    let n = s.worker.files;
    let offsets = if own_sequences {
        offsets_over_files(&order, units, n, &[&sizes[0]], s.worker.seed, modifier)
    } else {
        let both = [&sizes[0], &sizes[1]];
        offsets_over_files(&order, units, n, &both, s.worker.seed, modifier)
    };
    let write_offsets = own_sequences.then(|| {
        let seed = iolab_core::rng::mix(&[s.worker.seed, 0x3217E]);
        offsets_over_files(&order, units, n, &[&sizes[1]], seed, modifier)
    });
    let mix = op_mix(s, &order, own_sequences, &modifier);
    Draws {
        sizes,
        order,
        own_sequences,
        offsets,
        write_offsets,
        mix,
    }
}

/// Each direction's sizes (drawn per I/O from a mix, or one) and the order of offsets.
fn sizes_and_order<C: Clock>(s: &WorkerSetup<'_, C>) -> ([SizeDraw; 2], Order) {
    let spec = &s.plan.spec;
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
    (sizes, order)
}

/// fio's rw=...:N, its skip counted in blocks of the block size, here in units; zones
/// (fio's zonemode=strided) in bytes, here in units.
fn seq_modifier<C: Clock>(s: &WorkerSetup<'_, C>) -> SeqModifier {
    let spec = &s.plan.spec;
    let unit = spec.unit();
    let (asked, global) = (s.plan.fio.modifier, u64::from(s.worker.global));
    SeqModifier {
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
    }
}

/// The op mix; fio's rwmix counts its passes when they are known.
fn op_mix<C: Clock>(
    s: &WorkerSetup<'_, C>,
    order: &Order,
    own_sequences: bool,
    modifier: &SeqModifier,
) -> OpMix {
    let spec = &s.plan.spec;
    let unit = spec.unit();
    let mix = OpMix::of(spec.rw, spec.read_percent(), s.worker.seed);
    let Some(rwmix) = s.plan.fio.modifier.rwmix else {
        return mix;
    };
    // fio's passes end where its map is used up: one order of one size over the files in
    // turn (each other order's passes end elsewhere, or never).
    let passes = (matches!(order, Order::Permutation | Order::SamePermutation)
        && !s.plan.looping
        && !own_sequences
        && !spec.has_size_mix()
        && modifier.is_plain()
        && modifier.files.is_default())
    .then(|| MixPasses {
        ios: s.worker.blocks / (spec.block_size.get() / unit.max(1)).max(1),
        spent: if rwmix.ends_on_bytes {
            0
        } else {
            s.worker.files.max(1)
        },
        repeat: s.plan.fio.modifier.same_passes,
    });
    let worker = rwmix.for_worker(u64::from(s.worker.global));
    mix.fio(worker, passes)
}

/// Waits at the start gate and for the plan's start rule: when the worker starts, or
/// None when the phase ends before it does (it has then said so).
pub(super) fn wait_for_start<C: Clock>(s: &WorkerSetup<'_, C>) -> Option<Nanos> {
    let gate = s.control.ready_and_wait(true)?;
    let rule = &s.plan.start;
    if rule.at_once() && !rule.never {
        return Some(gate);
    }
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
        return None;
    }
    PhaseControl::restart_cpu_clock();
    Some(s.clock.now())
}

/// fio's loop_cache_invalidate: a new pass over the files (a random map used up, a
/// single file's sequence wrapped) drops their cached pages first: its I/Os per pass.
/// One sequence of one size only; uniform or skewed draws (norandommap) have no pass,
/// nor has a mixed order (percentage_random: its sequential I/Os leave the map as it is).
pub(super) fn pass_length<C: Clock>(
    s: &WorkerSetup<'_, C>,
    touches_storage: bool,
    draws: &Draws,
) -> Option<u64> {
    let spec = &s.plan.spec;
    let passes = s.plan.invalidate_each_pass()
        && touches_storage
        && !draws.own_sequences
        && !spec.has_size_mix()
        && s.plan.fio.modifier.random_share.is_none()
        && match draws.order {
            Order::Permutation | Order::SamePermutation => true,
            Order::Sequential => s.worker.files <= 1,
            _ => false,
        };
    let unit = spec.unit();
    passes.then(|| s.worker.blocks / (spec.block_size.get() / unit.max(1)).max(1))
}
