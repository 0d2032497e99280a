//! The IO500 suite: its phases resolved against an [`Io500Spec`] into engine workloads
//! ([`plan`]), run in IO500's order with stonewall and wear-out ([`run`]), kept in the
//! store ([`record`]), and a run's needs estimated before it starts ([`estimate()`]) and
//! shown ([`PlanView`]).
//! IO500's own definitions (phases, score, result files) are iolab-compat's `io500`,
//! re-exported here so that the suite reads as one module.

pub mod estimate;
pub mod plan;
pub mod record;
pub mod run;
mod view;

pub use estimate::{Assumptions, Io500Estimate, PhaseEstimate, estimate};
pub use iolab_compat::io500::*;
pub use iolab_core::spec::io500 as spec;
pub use iolab_core::spec::io500::{Io500Config, Io500Spec};
pub use plan::{PhasePlan, plan_phases};
pub use record::{figure_of, phase_result, run_from_parsed, score_from_run, score_json};
pub use run::{Io500Outcome, run_io500};
pub use view::PlanView;
