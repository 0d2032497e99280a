//! fio's seeded choices as the engine runs them: `percentage_random`'s
//! random-or-sequential draw, `file_service_type`'s file and a mixed job's read or
//! write, each from fio's own generator with the seed fio 3.33 gives the clone (init.c
//! `setup_random_seeds`: thread number n's seed number i is `step * n + i`, numbered
//! over all jobs); whether fio's loops repeat their random choices (randrepeat), and
//! whether `percentage_random`'s sequence ends the work inside a longer file.

use iolab_compat::fio::job_files::FileServiceKind;
use iolab_compat::fio::{Engine, FioError, FioPlan};
use iolab_engine::offsets::{FileChoice, FileService, RandomShare, RwMix};
use iolab_engine::sizes::FioSizeSeeds;

/// fio's index of `percentage_random`'s seed (FIO_RAND_SEQ_RAND_READ_OFF), of
/// `file_service_type`'s (FIO_RAND_FILE_OFF) and of the read-or-write choice
/// (FIO_RAND_MIX_OFF).
const SEQ_RAND_READ_SEED: u64 = 10;
const FILE_SEED: u64 = 5;
const MIX_SEED: u64 = 4;

/// Seed `index` of the clone whose thread number, less one, is `first` (fio's clones
/// number on from it, `step` apart).
fn seed(step: u64, first: u32, index: u64) -> u64 {
    step.wrapping_mul(u64::from(first) + 1).wrapping_add(index)
}

/// A plan's percentage_random, its first clone's thread number less one `first`;
/// `ends_in_file`: its `filename` goes on past the clones' regions
/// ([`RandomShare::ends_in_file`]).
pub fn random_share(p: &FioPlan, first: u32, ends_in_file: bool) -> Option<RandomShare> {
    p.random_share.map(|(percent, step)| RandomShare {
        percent,
        seed: seed(step, first, SEQ_RAND_READ_SEED),
        seed_step: step,
        looping: false,
        ends_in_file,
    })
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
pub fn ends_in_file(
    p: &FioPlan,
    file: Option<u64>,
    (offset, increment, region): (u64, u64, u64),
    passes: u32,
) -> Result<bool, FioError> {
    let (Some(file), Some(_)) = (file, p.random_share) else {
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
        Err(FioError::option(p.job.at_of(key), &p.job.name, key, m))
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

/// A plan's drawn sizes (bsrange, bssplit) as fio draws them, its first clone's thread
/// number less one `first`: the reads' seed is fio's FIO_RAND_BS_OFF, the writes' the
/// next, or the reads' with verify (init.c `td_fill_rand_seeds_internal`).
pub fn size_seeds(p: &FioPlan, first: u32) -> Option<FioSizeSeeds> {
    p.size_seeds.map(|[read, write]| {
        // With verify the writes draw from the reads' seed.
        let steps = if p.spec.verify {
            [read, read]
        } else {
            [read, write]
        };
        FioSizeSeeds {
            seeds: [
                seed(steps[0], first, 0),
                seed(steps[1], first, 1 - u64::from(p.spec.verify)),
            ],
            seed_steps: steps,
        }
    })
}

/// A mixed plan's read-or-write choice, its first clone's thread number less one
/// `first`.
pub fn rwmix(p: &FioPlan, first: u32) -> Option<RwMix> {
    // fio's asynchronous engines end a loop on the bytes queued (null is one only
    // deeper than one I/O: engines/null.c sets FIO_SYNCIO at iodepth=1).
    let ends_on_bytes = match p.job.engine {
        Engine::IoUring | Engine::Libaio => true,
        Engine::Null => p.spec.queue_depth > 1,
        Engine::Psync | Engine::Sync => false,
    };
    p.rwmix.map(|step| RwMix {
        seed: seed(step, first, MIX_SEED),
        seed_step: step,
        ends_on_bytes,
    })
}

/// A plan's file_service_type (fio's default when it has none).
pub fn file_service(p: &FioPlan, first: u32) -> FileService {
    let Some((kind, per_turn, step)) = p.file_service else {
        return FileService::default();
    };
    FileService {
        choice: match kind {
            FileServiceKind::RoundRobin => FileChoice::RoundRobin,
            FileServiceKind::Sequential => FileChoice::Sequential,
            FileServiceKind::Random => FileChoice::Random {
                seed: seed(step, first, FILE_SEED),
                seed_step: step,
            },
        },
        per_turn,
        repeat: same_passes(p),
        ..FileService::default()
    }
}

/// Whether every loop repeats the first one's random choices: fio reseeds at each loop
/// with randrepeat (libfio.c `clear_io_state`), which a randseed turns off (init.c:
/// "randseed overrides randrepeat").
pub fn same_passes(p: &FioPlan) -> bool {
    p.job.randrepeat && p.job.randseed.is_none()
}
