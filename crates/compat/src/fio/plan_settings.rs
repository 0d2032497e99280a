//! The workload settings a fio job's options become ([`FioSettings`], core's one type
//! for them): [`settings_of`] makes them when the job is planned, with the seeds of
//! fio's first thread; [`FioPlan::resolved`] gives them for the target the job runs on
//! and the clones' thread numbers (fio's offset, offset_increment, loops and io_size in
//! bytes and passes; every seed moved on to the job's clones, as fio's
//! `setup_random_seeds` numbers them over all jobs).

use iolab_core::spec::{
    DataSpec, DedupeWorkingSet, FileChoice, FileService, FioSettings, FioSizeSeeds, Flow,
    IoPriorities, LatencyTarget, RandomShare, RwMix, SeqModifier, Zones,
};
use iolab_core::units::{ByteCount, Nanos, TimeSpan};

use super::error::FioError;
use super::job::{Engine, FioJob};
use super::job_files::FileServiceKind;
use super::plan::{FioPlan, Refusal};
use super::plan_access::{
    FIO_RAND_BS_OFF, FIO_RAND_FILE_OFF, FIO_RAND_MIX_OFF, FIO_RAND_SEQ_RAND_READ_OFF, fio_seed_step,
};

/// What the planner chose before the spec was made, for [`settings_of`].
pub(super) struct Chosen {
    /// The size fio's `rw=...:N` step is counted in.
    pub block: u64,
    pub verify_only: bool,
    /// fio's zonemode=strided: (zonerange, zonesize, zoneskip) in bytes.
    pub zones: Option<(u64, u64, u64)>,
    pub dedupe_working_set: Option<DedupeWorkingSet>,
    pub io_priorities: Option<IoPriorities>,
}

/// Seed `index` of fio's first thread (thread number 1) of a job whose seeds are
/// `step` apart.
fn first_seed(step: u64, index: u32) -> u64 {
    step.wrapping_add(u64::from(index))
}

/// The settings `job`'s options become, `spec` its planned spec: seeds of fio's first
/// thread, offsets 0 and the job's own loops until [`FioPlan::resolved`].
pub(super) fn settings_of(
    job: &FioJob,
    spec: &DataSpec,
    seed: u64,
    chosen: Chosen,
    notes: &mut Vec<String>,
) -> Result<FioSettings, Refusal> {
    let a = &job.access;
    let zero = TimeSpan(Nanos::ZERO);
    Ok(FioSettings {
        files_per_worker: job.nrfiles,
        loops: job.loops,
        start_delay: job.startdelay,
        ramp: job.ramp_time.filter(|r| r.nanos().0 > 0),
        modifier: modifier_of(job, spec, seed, &chosen, notes)?,
        invalidate_each_pass: true,
        invalidate_at_open: spec.cache == iolab_core::spec::CacheMode::Cold,
        access_hint: job.fadvise_hint,
        flow: (a.flow > 0).then(|| Flow {
            id: a.flow_id,
            weight: a.flow,
            sleep: a.flow_sleep.unwrap_or(zero).nanos(),
        }),
        dedupe_working_set: chosen.dedupe_working_set,
        latency_target: a.latency_target.map(|t| LatencyTarget {
            target: t.nanos(),
            window: a.latency_window.unwrap_or(zero).nanos(),
            percentile: a.latency_percentile.unwrap_or(100.0),
            keep_running: a.latency_run,
        }),
        io_priorities: chosen.io_priorities,
        number_ios: job.number_ios,
        // fio's overwrite=1: a writing job's files are laid out first.
        lay_out_writes: job.files.overwrite && spec.rw.writes(),
        hist_log_msec: job
            .logs
            .hist
            .as_ref()
            .map(|_| job.logs.hist_msec)
            .filter(|m| *m > 0),
        verify_existing: chosen.verify_only,
        ..FioSettings::default()
    })
}

/// fio's `rw=...:N`, zones, percentage_random, file_service_type, read-or-write and
/// size draws, with the seeds of fio's first thread.
fn modifier_of(
    job: &FioJob,
    spec: &DataSpec,
    seed: u64,
    chosen: &Chosen,
    notes: &mut Vec<String>,
) -> Result<SeqModifier, Refusal> {
    let random_share = super::plan_access::random_share_of(job, spec, seed, notes)?;
    let file_service = super::job_files::file_service_of(job, spec, seed, notes)?;
    // fio reseeds at each loop with randrepeat (libfio.c `clear_io_state`), which a
    // randseed turns off (init.c: "randseed overrides randrepeat").
    let same_passes = job.randrepeat && job.randseed.is_none();
    // Drawn sizes (bsrange, bssplit) as fio draws them, but with fio's 64-bit generator
    // (tausworthe64: iolab's own draw). With verify the writes draw from the reads'
    // seed (init.c `td_fill_rand_seeds_internal`).
    let size_seeds = (spec.has_size_mix()
        && job.access.random_generator != Some(super::access::RandomGenerator::Tausworthe64))
    .then(|| {
        let read = fio_seed_step(job, seed, FIO_RAND_BS_OFF);
        let write = fio_seed_step(job, seed, FIO_RAND_BS_OFF + 1);
        let steps = if spec.verify {
            [read, read]
        } else {
            [read, write]
        };
        FioSizeSeeds {
            seeds: [
                first_seed(steps[0], 0),
                first_seed(steps[1], 1 - u32::from(spec.verify)),
            ],
            seed_steps: steps,
        }
    });
    // fio's asynchronous engines end a loop on the bytes queued (null is one only
    // deeper than one I/O: engines/null.c sets FIO_SYNCIO at iodepth=1).
    let ends_on_bytes = match job.engine {
        Engine::IoUring | Engine::Libaio => true,
        Engine::Null => spec.queue_depth > 1,
        Engine::Psync | Engine::Sync => false,
    };
    Ok(SeqModifier {
        skip: job.seq_add / chosen.block as i64,
        run: job.seq_nr,
        zones: chosen
            .zones
            .map(|(range, size, skip)| Zones { range, size, skip }),
        random_share: random_share.map(|(percent, step)| RandomShare {
            percent,
            seed: first_seed(step, FIO_RAND_SEQ_RAND_READ_OFF),
            seed_step: step,
            looping: false,
            ends_in_file: false,
        }),
        files: file_service.map_or_else(FileService::default, |(kind, per_turn, step)| {
            FileService {
                choice: match kind {
                    FileServiceKind::RoundRobin => FileChoice::RoundRobin,
                    FileServiceKind::Sequential => FileChoice::Sequential,
                    FileServiceKind::Random => FileChoice::Random {
                        seed: first_seed(step, FIO_RAND_FILE_OFF),
                        seed_step: step,
                    },
                },
                per_turn,
                repeat: same_passes,
                ..FileService::default()
            }
        }),
        same_passes,
        rwmix: spec.rw.is_mixed().then(|| {
            let step = fio_seed_step(job, seed, FIO_RAND_MIX_OFF);
            RwMix {
                seed: first_seed(step, FIO_RAND_MIX_OFF),
                seed_step: step,
                ends_on_bytes,
            }
        }),
        size_seeds,
    })
}

impl FioPlan {
    /// The spec and settings once the target is known: `device_size` is the size of the
    /// file or device `filename` names (None: new files in a directory), `first` fio's
    /// thread number of the job's first clone, less one (clones are numbered over all
    /// jobs in order, every rank's clones of a job together). The offsets and passes
    /// are the target's, every seed the clones'.
    pub fn resolved(
        &self,
        device_size: Option<u64>,
        first: u32,
    ) -> Result<(DataSpec, FioSettings), FioError> {
        let (spec, offset, increment) = self.at_target(device_size)?;
        // Each clone's passes over its region and I/Os in all (fio's loops, io_size).
        let clones = u64::from(spec.threads.max(1));
        let region = match (spec.size, spec.total_size, device_size) {
            (Some(s), _, _) => s.get(),
            (None, Some(t), _) => t.get() / clones,
            (None, None, d) => d.unwrap_or(0).saturating_sub(offset) / clones,
        };
        let (loops, io_limit) = self.passes(&spec, region)?;
        let ends = ends_in_file(self, device_size, (offset, increment, region), loops)?;
        let mut settings = self.settings.clone().numbered_from(first);
        settings.start_offset = ByteCount(offset);
        settings.offset_increment = ByteCount(increment);
        settings.loops = loops;
        settings.io_limit = io_limit;
        if let Some(r) = &mut settings.modifier.random_share {
            r.ends_in_file = ends;
        }
        Ok((spec, settings))
    }
}

/// Whether job `p`'s percentage_random ends each clone's work where a sequential I/O
/// reaches the end of its region: fio's `get_next_offset` fails there (the file is
/// done) when the `filename` goes on past the region, where at the file's own end the
/// I/O is random instead. `file` is the file's size (None: files made for the job, as
/// long as their region); the clones' regions of `region` bytes start at `offset`,
/// `increment` apart (0: one after another, iolab's segments), each in `passes` passes.
/// Refused where iolab would end elsewhere than fio: over several passes (fio ends each
/// loop there and goes on with the next), or when only some clones' regions end before
/// the file does.
fn ends_in_file(
    p: &FioPlan,
    file: Option<u64>,
    (offset, increment, region): (u64, u64, u64),
    passes: u32,
) -> Result<bool, FioError> {
    let (Some(file), Some(_)) = (file, p.settings.modifier.random_share) else {
        return Ok(false);
    };
    let clones = u64::from(p.spec.threads.max(1));
    let last_end = if increment > 0 {
        offset + increment * (clones - 1) + region
    } else {
        offset + region * clones
    };
    let first_end = offset + region;
    let name = p.job.filename.as_deref().unwrap_or_default();
    let refuse = |m: String| {
        let key = "percentage_random";
        Err(p.job.refusal(key, m))
    };
    if increment > 0 && first_end < file && last_end >= file {
        return refuse(format!(
            "with offset_increment on {name} ({file} bytes): the first clones' regions end before the file does and the last one's does not; fio ends the work of those where a sequential I/O reaches their region's end, which iolab does not run per clone"
        ));
    }
    let ends = last_end < file;
    if ends && passes > 1 {
        return refuse(format!(
            "with several passes (loops, or an io_size over the region) on {name} ({file} bytes), which goes on past the job's region ({region} bytes from {offset}): fio ends each pass where a sequential I/O reaches the region's end, which iolab does not run; use loops=1, or a size up to the file's end"
        ));
    }
    Ok(ends)
}
