//! What a study needs before it runs, as `iolab study plan` shows it and a study run
//! checks it: a [`StudyEstimate`] of capacity and time with one [`PhaseEstimate`] per
//! phase (the suite computes them; the report lays them out).

use crate::units::Nanos;

/// What one phase of a study needs.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseEstimate {
    /// Bytes of data files the phase works on (written, or laid out before reading).
    pub data_bytes: u64,
    /// Expected duration: exact for time-based phases, else at the assumed speed.
    pub time: Nanos,
    pub time_based: bool,
    /// Files a metadata phase works on, over all ranks (0 for a data phase).
    pub files: u64,
    /// Leaf directories those files are spread over (0 for a data phase).
    pub dirs: u64,
}

/// What a whole study needs.
#[derive(Clone, Debug, PartialEq)]
pub struct StudyEstimate {
    pub phases: Vec<PhaseEstimate>,
    /// The most data on the target at any one time (one sweep point's files).
    pub capacity: u64,
    pub time: Nanos,
}
