//! Errors of coordination: a peer's message that does not decode, or MPI failing to
//! start.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CommError {
    #[error("could not encode a message for the other ranks: {0}")]
    Encode(String),
    #[error("the message from rank {rank} does not decode: {reason} (are all ranks running the same iolab version?)")]
    Decode { rank: u32, reason: String },
    #[error("MPI could not start: {0}")]
    Init(String),
}

impl CommError {
    pub(crate) fn encode(e: serde_json::Error) -> Self {
        CommError::Encode(e.to_string())
    }
    pub(crate) fn decode(rank: u32, e: serde_json::Error) -> Self {
        CommError::Decode {
            rank,
            reason: e.to_string(),
        }
    }
}
