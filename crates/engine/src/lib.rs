//! iolab-engine: what to do and when, used through this facade: each workload's entry
//! point with its options and outcome ([`run_data`], [`run_data_jobs`], [`run_meta`],
//! [`run_find`], [`run_s3`], [`run_targets`], [`train`]), a phase of a suite's own
//! workers split by unit ([`run_unit_phase`]), the world a phase runs in ([`Env`]) and
//! what it reports, the target and work directory a run is given, and the engine's error.
//! Inside, `plan` turns a spec into this rank's work, `worker` runs the I/O loop, `phase`
//! runs workers in step across ranks and `assemble` makes their outcomes a result.

#![forbid(unsafe_code)]

mod assemble;
mod clock;
mod control;
mod data;
mod error;
mod fio_rand;
mod hist_log;
mod image;
mod kept;
pub mod kvcache;
mod layout;
mod memory;
mod meta;
mod meta_error;
mod object;
mod offsets;
mod phase;
mod plan;
mod recorder;
mod sizes;
mod target;
mod targets;
pub mod train;
mod units;
mod workdir;
mod worker;

pub use assemble::PhaseMeta;
pub use clock::{Clock, FakeClock, MonotonicClock};
pub use data::{
    DataJob, JobRun, JobsExit, JobsRun, StatusEvery, WorkerRow, phase_of_rows, run_data_jobs,
};
pub use data::{
    DataOptions, DataOutcome, check_kept_for, check_ranks_agree, resolve_read_shift, run_data,
    set_build_revision,
};
pub use error::EngineError;
pub use hist_log::HistSample;
pub use image::{NewImage, create_image, is_missing, remove_image};
pub use memory::{Available, check_buffers_here, ranks_on_this_host};
pub use meta::{MetaError, MetaOptions, MetaOutcome, finish_meta, run_find, run_meta};
pub use object::{
    CLEANUP_ATTEMPTS, ObjectFactory, ObjectOptions, ObjectPlan, finish_s3, release_bucket, run_s3,
    start_s3,
};
pub use phase::{Env, PhaseProbe, Progress, RankProgress, Stall, UnitProgress};
pub use plan::{DataTarget, FileNames, shares};
pub use recorder::WorkerMeasure;
pub use target::{
    PreparedTarget, agree, finish_target, prepare_target, prepare_target_named,
    resolve_placeholders, shared_run_token,
};
pub use targets::{TargetOnRank, TargetsOptions, TargetsOutcome, run_targets};
pub use units::{UnitMember, UnitPhase, UnitPhaseSpec, UnitResult, UnitWorker, run_unit_phase};
