//! fio's seeded choices as the engine runs them: `percentage_random`'s
//! random-or-sequential draw, `file_service_type`'s file and a mixed job's read or write, each from fio's own
//! generator with the seed fio 3.33 gives the clone (init.c `setup_random_seeds`:
//! thread number n's seed number i is `step * n + i`, numbered over all jobs), and
//! whether fio's loops repeat their random choices (randrepeat).

use iolab_compat::fio::FioPlan;
use iolab_compat::fio::job_files::FileServiceKind;
use iolab_engine::offsets::{FileChoice, FileService, RandomShare, RwMix};

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

/// A plan's percentage_random, its first clone's thread number less one `first`.
pub fn random_share(p: &FioPlan, first: u32) -> Option<RandomShare> {
    p.random_share.map(|(percent, step)| RandomShare {
        percent,
        seed: seed(step, first, SEQ_RAND_READ_SEED),
        seed_step: step,
        looping: false,
    })
}

/// A mixed plan's read-or-write choice, its first clone's thread number less one
/// `first`.
pub fn rwmix(p: &FioPlan, first: u32) -> Option<RwMix> {
    p.rwmix.map(|step| RwMix {
        seed: seed(step, first, MIX_SEED),
        seed_step: step,
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
