//! The workload settings fio's options become, in one type: [`FioSettings`] is what
//! `iolab fio` (compat's planner) emits for a job, what the engine's data workload takes
//! as it is, what its plan holds and what its workers read. Its parts: [`Flow`] (fio's
//! flow control), [`LatencyTarget`], [`IoPriorities`] (cmdprio), [`DedupeWorkingSet`]
//! and the sequence's modifiers ([`SeqModifier`], in `fio_sequence`). A plain iolab
//! workload leaves it at its default, which changes nothing.

use serde::{Deserialize, Serialize};

use crate::units::{ByteCount, Nanos, TimeSpan};

pub use super::fio_sequence::{
    FileChoice, FileService, FioSizeSeeds, RandomShare, RwMix, SeqModifier, Zones,
};

/// fio's settings of a data workload, as the engine runs them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FioSettings {
    /// Files each worker spreads its share over, taking turns (fio's nrfiles; 0 or 1:
    /// one file).
    pub files_per_worker: u32,
    /// Bytes before the workers' region in each file (fio's offset), a multiple of the
    /// block size.
    pub start_offset: ByteCount,
    /// Bytes between consecutive workers' regions (fio's offset_increment): worker w's
    /// region starts at `start_offset + w * offset_increment`; 0: the usual placement.
    pub offset_increment: ByteCount,
    /// Passes each worker makes over its share when size-based (fio's loops; 0 or 1:
    /// one).
    pub loops: u32,
    /// The workers start this long after the phase (fio's startdelay).
    pub start_delay: Option<TimeSpan>,
    /// The workers run this long before they are measured (fio's ramp_time).
    pub ramp: Option<TimeSpan>,
    /// fio's `rw=...:N`, zones, percentage_random, file_service_type and its seeded
    /// draws: how each worker's sequence departs from a plain one.
    pub modifier: SeqModifier,
    /// The timeline's resolution when finer than a second is asked for (fio's
    /// log_avg_msec): a divisor of a second.
    pub timeline_interval: Option<Nanos>,
    /// fio's invalidate=1 on a time-based buffered job: each worker drops its files'
    /// cached pages whenever it starts a new pass over them (fio's
    /// loop_cache_invalidate), not only before the phase.
    pub invalidate_each_pass: bool,
    /// fio's invalidate=1: each worker drops its files' cached pages
    /// (`posix_fadvise(DONTNEED)` alone) when it opens them, direct or buffered, reading or
    /// writing, as fio's td_io_open_file does, besides any drop before a read phase.
    pub invalidate_at_open: bool,
    /// Advise the kernel of the access pattern when the files are opened (fio's
    /// fadvise_hint=1: POSIX_FADV_RANDOM for random work, SEQUENTIAL otherwise).
    pub access_hint: bool,
    /// The workers' part in a flow group (fio's `flow`, `flow_id`, `flow_sleep`): the
    /// jobs of one phase in a group keep the ratio of their weights in I/Os issued.
    pub flow: Option<Flow>,
    /// Duplicate writes copy one of a working set of the workers' first unique writes
    /// (fio's dedupe_mode=working_set) instead of any earlier unit of the worker.
    pub dedupe_working_set: Option<DedupeWorkingSet>,
    /// Each worker searches the deepest queue whose latencies meet a target (fio's
    /// latency_target, latency_window, latency_percentile, latency_run).
    pub latency_target: Option<LatencyTarget>,
    /// A priority per I/O in its io_uring SQE (fio's cmdprio_percentage,
    /// cmdprio_bssplit, prioclass/prio).
    pub io_priorities: Option<IoPriorities>,
    /// fio's number_ios: a size-based worker stops once it has issued this many I/Os
    /// per pass times its passes (`loops`), counted from the end of its ramp, or when
    /// its share is done if that comes first.
    pub number_ios: Option<u64>,
    /// I/Os each size-based worker issues in all, over its passes (fio's io_size, in
    /// I/Os of the one block size): it stops there, or when its passes are done.
    pub io_limit: Option<u64>,
    /// A writing phase's files are laid out in full first, so its writes overwrite
    /// data (fio's overwrite=1); reading phases' always are.
    pub lay_out_writes: bool,
    /// fio's write_hist_log with log_hist_msec: each worker keeps its completion
    /// latencies in fio's bins, a sample every this many ms.
    pub hist_log_msec: Option<u64>,
    /// A --verify read of what an earlier --verify write left (fio's verify_only): the
    /// files are never laid out, and one without iolab's record of those blocks is
    /// refused before any I/O.
    pub verify_existing: bool,
}

/// A job's part in a flow group (fio's `flow_id`, `flow` weight and `flow_sleep`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flow {
    pub id: i32,
    /// 1 to 1000 (fio's FLOW_MAX_WEIGHT).
    pub weight: u32,
    /// How long a held-back worker sleeps before trying again (0: at once).
    pub sleep: Nanos,
}

/// A job's latency target as asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyTarget {
    pub target: Nanos,
    pub window: Nanos,
    /// The share of a window's I/Os (percent) that must complete within the target.
    pub percentile: f64,
    /// Keep adjusting the depth instead of ending once it settles.
    pub keep_running: bool,
}

/// A job's dedupe working set as asked (fio's dedupe_mode=working_set): `percent` of
/// each clone's share, shared among the phase's workers with `global`
/// (dedupe_global).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DedupeWorkingSet {
    pub percent: u8,
    pub global: bool,
}

/// The priorities of one block size (or of every size: `bs` None) of one direction:
/// (percent, ioprio) drawn in order, the rest of 100 % keeps the default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PrioSplit {
    pub bs: Option<u32>,
    pub entries: Vec<(u8, u16)>,
}

/// A job's priorities: the default (0: none, the SQE's field left 0) and reads' and
/// writes' splits.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IoPriorities {
    pub default: u16,
    pub read: Vec<PrioSplit>,
    pub write: Vec<PrioSplit>,
}

impl IoPriorities {
    /// Every priority a direction's I/Os may carry, the default first, each once (fio's
    /// clat_prio index order).
    pub fn all(&self, write: bool) -> Vec<u16> {
        let mut out = vec![self.default];
        for s in if write { &self.write } else { &self.read } {
            for &(_, p) in &s.entries {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }
}

impl FioSettings {
    /// These settings for the job whose first clone is fio's thread `first` (its number
    /// less one, counted over all jobs and ranks): every seeded draw's seed moves on by
    /// `first` of its steps, as fio's clones' seeds number on (init.c
    /// `setup_random_seeds`).
    pub fn numbered_from(mut self, first: u32) -> FioSettings {
        let n = u64::from(first);
        let on = |seed: u64, step: u64| seed.wrapping_add(step.wrapping_mul(n));
        let m = &mut self.modifier;
        if let Some(r) = &mut m.random_share {
            r.seed = on(r.seed, r.seed_step);
        }
        if let Some(r) = &mut m.rwmix {
            r.seed = on(r.seed, r.seed_step);
        }
        if let Some(s) = &mut m.size_seeds {
            s.seeds = [0, 1].map(|d| on(s.seeds[d], s.seed_steps[d]));
        }
        if let FileChoice::Random { seed, seed_step } = &mut m.files.choice {
            *seed = on(*seed, *seed_step);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_moves_every_seed_on_by_its_steps() {
        let mut s = FioSettings::default();
        s.modifier.random_share = Some(RandomShare {
            percent: [50, 50],
            seed: 10,
            seed_step: 100,
            looping: false,
            ends_in_file: false,
        });
        s.modifier.rwmix = Some(RwMix {
            seed: 4,
            seed_step: 7,
            ends_on_bytes: true,
        });
        s.modifier.size_seeds = Some(FioSizeSeeds {
            seeds: [1, 2],
            seed_steps: [3, 5],
        });
        s.modifier.files.choice = FileChoice::Random {
            seed: 5,
            seed_step: 9,
        };
        let m = s.numbered_from(2).modifier;
        assert_eq!(m.random_share.unwrap().seed, 210);
        assert_eq!(m.random_share.unwrap().seed_step, 100);
        assert_eq!(m.rwmix.unwrap().seed, 18);
        assert_eq!(m.size_seeds.unwrap().seeds, [7, 12]);
        assert_eq!(
            m.files.choice,
            FileChoice::Random {
                seed: 23,
                seed_step: 9
            }
        );
    }

    #[test]
    fn settings_round_trip_through_json_and_default_when_absent() {
        let mut s = FioSettings {
            loops: 3,
            start_offset: ByteCount(8192),
            flow: Some(Flow {
                id: 1,
                weight: 8,
                sleep: Nanos(1000),
            }),
            ..FioSettings::default()
        };
        s.modifier.zones = Some(Zones {
            range: 1 << 20,
            size: 4096,
            skip: 0,
        });
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<FioSettings>(&json).unwrap(), s);
        let empty: FioSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, FioSettings::default());
    }
}
