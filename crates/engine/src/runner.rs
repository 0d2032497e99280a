//! The engine's parts that `suites::targets` (and its `net` test) still reach: it runs
//! one phase over the workers of several targets, laid out and planned one target at a
//! time, with [`run_phase`], and splits the outcome per target. Issue #51 moves that
//! phase into the engine; this module goes with it.

pub use crate::assemble::assemble;
pub use crate::control::PhaseControl;
pub use crate::data::{
    check_cpus, check_ranks_agree, client_cache_warning, client_write_warning, params_of,
};
pub use crate::layout::{create_for_write, lay_out, set_cache_state};
pub use crate::phase::{PhaseRun, RankOutcome, WorkerReport, run_phase};
pub use crate::plan::{DataPlan, INTERVAL, PlanContext, plan_data};
pub use crate::recorder::Recorder;
pub use crate::target::{guard_device, run_token};
pub use crate::workdir::{FileInfo, LockOwner, VerifyInfo, WorkDir};
pub use crate::worker::flow::Flows;
pub use crate::worker::{WorkerSetup, run_data_worker};
