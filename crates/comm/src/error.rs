//! [`CommError`]: errors of coordination, such as a peer's message that does not decode,
//! or MPI failing to start or to reach the ranks its launcher started.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CommError {
    #[error("could not encode a message for the other ranks: {0}")]
    Encode(String),
    #[error(
        "the message from rank {rank} does not decode: {reason} (are all ranks running the same iolab version?)"
    )]
    Decode { rank: u32, reason: String },
    #[error(
        "MPI was already initialized in this process; create one Mpi at start-up and pass it by reference"
    )]
    AlreadyInitialized,
    #[error(
        "the MPI library offers thread level {provided}, but iolab needs at least Funneled (worker threads exist, only the main thread calls MPI); use an MPI built with thread support"
    )]
    ThreadLevel { provided: String },
    #[error(
        "the launcher started {expected} ranks ({variable}={expected}), but MPI sees a world of 1: this iolab's MPI library could not reach the launcher; start iolab with the mpirun of the MPI it was built with (Open MPI), or with `srun --mpi=pmix`"
    )]
    Singleton {
        /// The launcher's environment variable that gave the number of ranks.
        variable: &'static str,
        expected: u32,
    },
}

impl CommError {
    pub(crate) fn encode(e: impl std::fmt::Display) -> Self {
        CommError::Encode(e.to_string())
    }
    pub(crate) fn decode(rank: u32, e: impl std::fmt::Display) -> Self {
        CommError::Decode {
            rank,
            reason: e.to_string(),
        }
    }
}
