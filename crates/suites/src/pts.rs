//! SNIA PTS 2.0 run on the engine: [`run_pts`] runs a [`PtsPlan`]'s tests (purge,
//! preconditioning, rounds until steady); the figures of a phase and the window's marks
//! are [`figures`]'. The tests' matrices, rounds and results are `iolab_core::pts`'
//! (re-exported here).

pub mod figures;
mod run;

pub use iolab_core::pts::*;
pub use run::{PtsHooks, PtsPlan, PtsResult, PtsStopped, cell_spec, run_pts};
