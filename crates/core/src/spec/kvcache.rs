//! `iolab kvcache`'s spec: MLPerf Storage v3.0's KV cache workload (the reference is
//! kv-cache.py, mlcommons/storage `kv_cache_benchmark/`). [`KvCacheSpec`] is what the
//! user asked for (flags, TOML); [`KvCacheSpec::resolve`] applies an `--option` preset and
//! the defaults and gives the [`KvCacheSettings`] a run uses and stores.

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::error::SpecError;
use crate::kvcache::KvModel;
use crate::spec::BackendKind;
use crate::units::{ByteCount, TimeSpan};

/// Simulated token generation after a request's storage work (kv-cache.py's
/// GENERATION_TIMING): none 0, fast 2 ms and realistic 30 ms per generated token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum GenerationMode {
    None,
    Fast,
    Realistic,
}

impl GenerationMode {
    /// Nanoseconds slept per generated token.
    pub fn per_token_ns(self) -> u64 {
        match self {
            GenerationMode::None => 0,
            GenerationMode::Fast => 2_000_000,
            GenerationMode::Realistic => 30_000_000,
        }
    }
}

/// kv-cache.py's autoscaler modes (`--autoscale`): steps of users, each one trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum AutoscaleMode {
    /// The most users whose step passes the QoS criteria at the target saturation.
    Qos,
    /// The users at which wall-clock tokens/s stops rising (the storage's peak).
    Capacity,
}

/// `iolab kvcache`: LLM inference's KV cache offload, as MLPerf Storage v3.0 runs it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct KvCacheSpec {
    /// One of the closed options' settings (1: llama3.1-8b, 200 users, no CPU tier, 16
    /// allocations at once; 2: llama3.1-8b, 100 users, a 4 GiB CPU tier, 16; 3:
    /// llama3.1-70b-instruct, 70 users, 4); 300 s, seed 42, no generation. Flags given
    /// beside it override it, and the run is then not the closed option.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=3))]
    pub option: Option<u8>,

    /// The model whose KV cache is simulated [default: llama3.1-8b].
    #[arg(long, value_enum)]
    pub model: Option<KvModel>,

    /// Simulated users per rank [default: 100].
    #[arg(long)]
    pub users: Option<u32>,

    /// How long requests are issued [default: 60s].
    #[arg(long)]
    pub duration: Option<TimeSpan>,

    /// The CPU-memory tier's budget, held in this process (0: no CPU tier) [default: 0].
    #[arg(long)]
    pub cpu_memory: Option<ByteCount>,

    /// Cache entries being written at once (0: no limit) [default: 0].
    #[arg(long)]
    pub max_concurrent_allocs: Option<u32>,

    /// Simulated generation time per token [default: realistic].
    #[arg(long, value_enum)]
    pub generation_mode: Option<GenerationMode>,

    /// The storage tier's capacity [default: 95% of the free space of --dir].
    #[arg(long)]
    pub storage_capacity: Option<ByteCount>,

    /// Seed of the users' profiles and requests (each rank adds its rank, as MLPerf's
    /// wrapper does).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// Runs of the whole workload; the report gives each figure's median and spread.
    #[arg(long, default_value_t = 1)]
    pub trials: u32,

    /// Bytes per read and write system call on the storage tier (entries are streamed
    /// through one buffer of this size per worker, not held whole). 1 MiB keeps the
    /// kernel's copies into it in the CPU's cache: a fifth less CPU per byte than 8 MiB.
    #[arg(long, default_value = "1MiB")]
    pub transfer_size: ByteCount,

    /// Opens the storage tier's files with O_DIRECT (kv-cache.py never does).
    #[arg(long)]
    pub direct: bool,

    /// How the storage tier is read and written: psync (pread/pwrite, as numpy),
    /// sync (lseek + read/write), uring (io_uring), null (no storage: iolab's own
    /// ceiling, not a storage figure).
    #[arg(long, value_enum, default_value_t = BackendKind::Psync)]
    pub backend: BackendKind,

    /// Every request is a new conversation (kv-cache.py's --disable-multi-turn).
    #[arg(long)]
    pub disable_multi_turn: bool,

    /// No system-prompt prefix lookups (kv-cache.py's --disable-prefix-caching).
    #[arg(long)]
    pub disable_prefix_caching: bool,

    /// Steps of users from --users, each a trial of --duration (kv-cache.py's
    /// --autoscaler-mode): qos grows users x1.2 while the criteria pass below the target
    /// saturation; capacity grows them until tokens/s stops rising.
    #[arg(long, value_enum)]
    pub autoscale: Option<AutoscaleMode>,

    /// The storage saturation (0-1) --autoscale qos aims at (kv-cache.py's
    /// --target-saturation).
    #[arg(long, default_value_t = 0.8)]
    pub target_saturation: f64,

    /// The most steps --autoscale runs (the run lasts at most this many durations).
    #[arg(long, default_value_t = 10)]
    pub autoscale_steps: u32,

    /// After --duration, requests being served may finish within this window and are
    /// counted, the rates still over --duration: kv-cache.py's way (its 2 s join of
    /// each worker), so `--join-window 2s` compares with it; 0s counts only what
    /// finished within --duration.
    #[arg(long, default_value = "0s")]
    pub join_window: TimeSpan,
}

impl Default for KvCacheSpec {
    fn default() -> Self {
        crate::spec::command_line_defaults()
    }
}

/// The settings a run uses: the spec with its preset and defaults applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KvCacheSettings {
    pub model: KvModel,
    pub users: u32,
    pub duration: TimeSpan,
    pub cpu_memory: ByteCount,
    pub max_concurrent_allocs: u32,
    pub generation_mode: GenerationMode,
    pub storage_capacity: Option<ByteCount>,
    pub seed: u64,
    pub trials: u32,
    pub transfer_size: ByteCount,
    pub direct: bool,
    /// How the storage tier is reached (psync before this setting existed).
    #[serde(default = "psync")]
    pub backend: BackendKind,
    pub multi_turn: bool,
    pub prefix_caching: bool,
    /// The closed option these settings are exactly (None: an open run).
    pub closed_option: Option<u8>,
    pub autoscale: Option<AutoscaleMode>,
    pub target_saturation: f64,
    pub autoscale_steps: u32,
    /// See [`KvCacheSpec::join_window`].
    #[serde(default)]
    pub join_window: TimeSpan,
}

fn psync() -> BackendKind {
    BackendKind::Psync
}

/// A closed option's settings (MLPerf Storage v3.0 Rules §6.3, mlperf_wrapper.py).
struct Preset {
    model: KvModel,
    users: u32,
    cpu_gib: u64,
    allocs: u32,
}

fn preset(option: u8) -> Preset {
    match option {
        1 => Preset {
            model: KvModel::Llama31_8b,
            users: 200,
            cpu_gib: 0,
            allocs: 16,
        },
        2 => Preset {
            model: KvModel::Llama31_8b,
            users: 100,
            cpu_gib: 4,
            allocs: 16,
        },
        _ => Preset {
            model: KvModel::Llama31_70bInstruct,
            users: 70,
            cpu_gib: 0,
            allocs: 4,
        },
    }
}

/// The most users --autoscale grows to (kv-cache.py clamps its autoscaler at 500).
pub const MAX_AUTOSCALE_USERS: u32 = 500;

/// The most users a rank simulates (kv-cache.py caps its workers at 500 too).
pub const MAX_KV_USERS: u32 = 10_000;

impl KvCacheSpec {
    /// Applies `--option` and the defaults; checks the values.
    pub fn resolve(&self) -> Result<KvCacheSettings, SpecError> {
        let p = self.option.map(preset);
        let closed_secs = p.as_ref().map(|_| TimeSpan::from_secs(300));
        let s = KvCacheSettings {
            model: self
                .model
                .or(p.as_ref().map(|p| p.model))
                .unwrap_or(KvModel::Llama31_8b),
            users: self.users.or(p.as_ref().map(|p| p.users)).unwrap_or(100),
            duration: self
                .duration
                .or(closed_secs)
                .unwrap_or(TimeSpan::from_secs(60)),
            cpu_memory: self
                .cpu_memory
                .or(p.as_ref().map(|p| ByteCount(p.cpu_gib << 30)))
                .unwrap_or(ByteCount(0)),
            max_concurrent_allocs: self
                .max_concurrent_allocs
                .or(p.as_ref().map(|p| p.allocs))
                .unwrap_or(0),
            generation_mode: self
                .generation_mode
                .or(p.as_ref().map(|_| GenerationMode::None))
                .unwrap_or(GenerationMode::Realistic),
            storage_capacity: self.storage_capacity,
            seed: self.seed,
            trials: self.trials,
            transfer_size: self.transfer_size,
            direct: self.direct,
            backend: self.backend,
            multi_turn: !self.disable_multi_turn,
            prefix_caching: !self.disable_prefix_caching,
            closed_option: None,
            autoscale: self.autoscale,
            target_saturation: self.target_saturation,
            autoscale_steps: self.autoscale_steps,
            join_window: self.join_window,
        };
        s.check()?;
        let closed = self.option.filter(|_| {
            self.model.is_none()
                && self.users.is_none()
                && self.duration.is_none()
                && self.cpu_memory.is_none()
                && self.max_concurrent_allocs.is_none()
                && self.generation_mode.is_none()
                && self.seed == 42
                && !self.disable_multi_turn
                && !self.disable_prefix_caching
                && self.autoscale.is_none()
                && self.join_window.nanos().0 == 0
                // kv-cache.py's closed I/O is np.save/np.load through the page cache
                // on the storage under test: O_DIRECT or no storage at all is not it.
                && !self.direct
                && self.backend != BackendKind::Null
        });
        Ok(KvCacheSettings {
            closed_option: closed,
            ..s
        })
    }
}

impl KvCacheSettings {
    fn check(&self) -> Result<(), SpecError> {
        if self.users == 0 || self.users > MAX_KV_USERS {
            return Err(SpecError::new(
                "--users",
                format!("must be between 1 and {MAX_KV_USERS}"),
            ));
        }
        if self.duration.nanos().0 == 0 || self.duration > TimeSpan::MAX {
            return Err(SpecError::new("--duration", "must be longer than 0s"));
        }
        if self.trials == 0 || self.trials > 100 {
            return Err(SpecError::new("--trials", "must be between 1 and 100"));
        }
        let t = self.transfer_size.0;
        if t < 4096 || !t.is_multiple_of(4096) || t > 1 << 30 {
            return Err(SpecError::new(
                "--transfer-size",
                "must be a multiple of 4KiB between 4KiB and 1GiB",
            ));
        }
        if self.autoscale.is_some() {
            self.check_autoscale()?;
        }
        if !matches!(
            self.backend,
            BackendKind::Psync | BackendKind::Sync | BackendKind::Uring | BackendKind::Null
        ) {
            return Err(SpecError::new(
                "--backend",
                format!(
                    "{} does not reach the storage tier's directory; use psync, sync, uring or null",
                    self.backend.name()
                ),
            ));
        }
        if self.join_window > TimeSpan::from_secs(60) {
            return Err(SpecError::new("--join-window", "must be at most 60s"));
        }
        if self.storage_capacity.is_some_and(|c| c.0 == 0) {
            return Err(SpecError::new(
                "--storage-capacity",
                "must be more than 0 bytes",
            ));
        }
        Ok(())
    }

    fn check_autoscale(&self) -> Result<(), SpecError> {
        if !(self.target_saturation > 0.0 && self.target_saturation <= 1.0) {
            return Err(SpecError::new(
                "--target-saturation",
                "must be more than 0 and at most 1",
            ));
        }
        if !(2..=100).contains(&self.autoscale_steps) {
            return Err(SpecError::new(
                "--autoscale-steps",
                "must be between 2 and 100",
            ));
        }
        if self.trials != 1 {
            return Err(SpecError::new(
                "--trials",
                "is one per step under --autoscale: drop --trials",
            ));
        }
        if self.users > MAX_AUTOSCALE_USERS {
            return Err(SpecError::new(
                "--users",
                format!("starts --autoscale, at most {MAX_AUTOSCALE_USERS}"),
            ));
        }
        Ok(())
    }

    /// Worker threads serving the request queue: one per user, at most 500 (as
    /// kv-cache.py's `min(num_users, 500)`).
    pub fn workers(&self) -> u32 {
        self.users.min(500)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(o: u8) -> KvCacheSpec {
        KvCacheSpec {
            option: Some(o),
            ..KvCacheSpec::default()
        }
    }

    #[test]
    fn an_option_alone_is_its_closed_settings() {
        let s = option(3).resolve().unwrap();
        assert_eq!(s.closed_option, Some(3));
        assert_eq!(s.model, KvModel::Llama31_70bInstruct);
        assert_eq!((s.users, s.max_concurrent_allocs), (70, 4));
        assert_eq!(s.duration, TimeSpan::from_secs(300));
        assert_eq!(s.generation_mode, GenerationMode::None);
        let s = option(2).resolve().unwrap();
        assert_eq!((s.users, s.cpu_memory), (100, ByteCount(4 << 30)));
        assert_eq!(s.closed_option, Some(2));
    }

    /// The storage tier's size is the environment's, not a workload parameter: Rules
    /// §6.6.1 lets --cache-dir vary in CLOSED, and kv-cache.py's storage tier there is
    /// 95 % of that directory's free space (mlpstorage passes no --storage-capacity-gb),
    /// so a closed run on a smaller file system has a smaller tier. Capping it keeps
    /// the option closed; the workload's own settings do not.
    #[test]
    fn a_storage_capacity_keeps_the_option_closed_a_workload_flag_does_not() {
        let capped = KvCacheSpec {
            storage_capacity: Some(ByteCount(24 << 30)),
            ..option(1)
        };
        let s = capped.resolve().unwrap();
        assert_eq!(s.closed_option, Some(1));
        assert_eq!(s.storage_capacity, Some(ByteCount(24 << 30)));
        let open = [
            KvCacheSpec {
                users: Some(1),
                ..option(1)
            },
            KvCacheSpec {
                seed: 39,
                ..option(2)
            },
            KvCacheSpec {
                direct: true,
                ..option(3)
            },
            KvCacheSpec {
                backend: BackendKind::Null,
                ..option(3)
            },
        ];
        for spec in open {
            let s = spec.resolve().unwrap();
            assert_eq!(s.closed_option, None, "{spec:?}");
            // The option's other settings still apply.
            assert_eq!(s.generation_mode, GenerationMode::None, "{spec:?}");
        }
    }
}
