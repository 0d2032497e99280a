//! How fio's options change a worker's sequence, as the engine's offset generators and
//! size draws run it: [`SeqModifier`] (fio's `rw=...:N`, zonemode=strided
//! ([`Zones`]), percentage_random ([`RandomShare`]), file_service_type
//! ([`FileService`]), a mixed job's read-or-write draws ([`RwMix`]) and drawn sizes
//! ([`FioSizeSeeds`])). Seeds are the job's first worker's; worker k's move on by k of
//! their steps (fio's clones number on), as each type's `for_worker` says.

use serde::{Deserialize, Serialize};

/// What fio's `rw=...:N` asks of a worker's sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SeqModifier {
    /// Blocks (of the block size) added after the end of each sequential I/O (negative:
    /// backwards).
    pub skip: i64,
    /// A random job: I/Os per random offset, the rest following it in sequence (1: every
    /// I/O random).
    pub run: u32,
    /// fio's zonemode=strided (in bytes in a plan, in units in a worker).
    pub zones: Option<Zones>,
    /// fio's percentage_random (a random job; not with zones): each I/O random or
    /// sequential.
    pub random_share: Option<RandomShare>,
    /// fio's file_service_type: how a worker with several files chooses each I/O's
    /// (no part of [`SeqModifier::is_plain`], which is about one file's sequence).
    pub files: FileService,
    /// Every pass over a file repeats the first's random order (fio's randrepeat, which
    /// reseeds its generators at each loop of a size-based job).
    pub same_passes: bool,
    /// A mixed job's reads and writes in fio's order ([`RwMix`]); None: each I/O's
    /// direction drawn on its own.
    pub rwmix: Option<RwMix>,
    /// Drawn sizes as fio draws them ([`FioSizeSeeds`]); None: iolab's own draw.
    pub size_seeds: Option<FioSizeSeeds>,
}

impl SeqModifier {
    pub fn is_plain(&self) -> bool {
        self.skip == 0 && self.run <= 1 && self.zones.is_none() && self.random_share.is_none()
    }
}

/// fio's zonemode=strided: I/O stays in a zone of `range` until `size` has moved in it
/// (going round the zone again when `size` is larger), then the next zone starts `skip`
/// after the end of this one; past the end of the share it starts again at its start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Zones {
    pub range: u64,
    pub size: u64,
    pub skip: u64,
}

/// What `percentage_random` asks of a worker: the random share of each direction and
/// the seed of fio's choice generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RandomShare {
    /// Percent of reads, writes that are random (fio's perc_rand).
    pub percent: [u8; 2],
    /// The first worker's seed (fio's `rand_seeds[FIO_RAND_SEQ_RAND_READ_OFF]`); worker
    /// k's is `seed + k * seed_step` (fio's clones number on).
    pub seed: u64,
    pub seed_step: u64,
    /// Time-based: a sequential I/O at the end of a single file starts again at 0.
    pub looping: bool,
    /// The file goes on past the share (a `filename` longer than the job's region): a
    /// sequential I/O at the share's end ends the work, as fio's `get_next_offset`
    /// fails there and the file is done; at the file's own end it is random instead.
    pub ends_in_file: bool,
}

impl RandomShare {
    /// This share for worker `k` of the job (its seed).
    pub fn for_worker(self, k: u64, looping: bool) -> RandomShare {
        RandomShare {
            seed: self.seed.wrapping_add(self.seed_step.wrapping_mul(k)),
            seed_step: 0,
            looping,
            ..self
        }
    }
}

/// How the next file is chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileChoice {
    /// In turn (fio's roundrobin, its default).
    #[default]
    RoundRobin,
    /// The same file until it is done (fio's sequential).
    Sequential,
    /// Drawn by fio's generator: the first worker's seed (fio's
    /// `rand_seeds[FIO_RAND_FILE_OFF]`), worker k's `seed + k * seed_step` (fio's clones
    /// number on).
    Random { seed: u64, seed_step: u64 },
}

/// What fio's `file_service_type` asks of a worker with several files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FileService {
    pub choice: FileChoice,
    /// I/Os on a file before the next is chosen (fio's `:N`; round robin and random).
    pub per_turn: u32,
    /// A file is done once its share of a pass is moved. Set by the order: a sequence's
    /// files end (time-based too: fio 3.33 wraps a sequence only in a job of one file),
    /// a random map's in a size-based job (a time-based job's map starts again), no
    /// file without a map (norandommap).
    pub ends: bool,
    /// The worker runs for a time, not a size.
    pub time_based: bool,
    /// Every pass chooses as the first did (fio's randrepeat, which reseeds the
    /// generator at each loop).
    pub repeat: bool,
}

impl Default for FileService {
    fn default() -> Self {
        FileService {
            choice: FileChoice::RoundRobin,
            per_turn: 1,
            ends: true,
            time_based: false,
            repeat: true,
        }
    }
}

impl FileService {
    /// fio's default, one I/O a file in turn.
    pub fn is_default(&self) -> bool {
        self.choice == FileChoice::RoundRobin && self.per_turn <= 1
    }

    /// This service for worker `k` of the job (its seed), time-based or not.
    pub fn for_worker(self, k: u64, time_based: bool) -> FileService {
        let choice = match self.choice {
            FileChoice::Random { seed, seed_step } => FileChoice::Random {
                seed: seed.wrapping_add(seed_step.wrapping_mul(k)),
                seed_step: 0,
            },
            c => c,
        };
        FileService {
            choice,
            time_based,
            ..self
        }
    }
}

/// What fio's read-or-write choice needs: the first worker's seed (fio's
/// `rand_seeds[FIO_RAND_MIX_OFF]`); worker k's is `seed + k * seed_step` (fio's clones
/// number on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RwMix {
    pub seed: u64,
    pub seed_step: u64,
    /// fio's engine ends a loop once its bytes are queued (io_uring, libaio: backend.c
    /// counts `bytes_issued` for queued I/Os only), not when its next I/O finds the
    /// files done (psync, sync), so it spends no draw at a loop's end.
    pub ends_on_bytes: bool,
}

impl RwMix {
    /// The choice of worker `k` of the job (its seed).
    pub fn for_worker(self, k: u64) -> RwMix {
        RwMix {
            seed: self.seed.wrapping_add(self.seed_step.wrapping_mul(k)),
            seed_step: 0,
            ..self
        }
    }
}

/// What fio's size draws need (`iolab fio`): the first worker's seeds of reads and
/// writes (fio's `rand_seeds[FIO_RAND_BS_OFF]` and `[FIO_RAND_BS1_OFF]`, the reads'
/// for both with verify); worker k's are `seeds[d] + k * seed_steps[d]` (fio's clones
/// number on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FioSizeSeeds {
    pub seeds: [u64; 2],
    pub seed_steps: [u64; 2],
}

impl FioSizeSeeds {
    /// The seeds of worker `k` of the job.
    pub fn for_worker(self, k: u64) -> FioSizeSeeds {
        FioSizeSeeds {
            seeds: [0, 1].map(|d| self.seeds[d].wrapping_add(self.seed_steps[d].wrapping_mul(k))),
            seed_steps: [0; 2],
        }
    }
}
