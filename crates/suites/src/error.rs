//! [`AiError`]: why an AI workload (training, its dataset generation, checkpointing, the
//! KV cache) did not complete. One type for all of them, so the command layer maps it to
//! an exit code in one place: a failed I/O is a failed benchmark, Ctrl-C an interrupted
//! one, the rest a usage or runtime error.

use iolab_core::SpecError;
use iolab_engine::EngineError;

/// Why an AI workload did not complete.
#[derive(Debug, thiserror::Error)]
pub enum AiError {
    /// Options, a dataset or a shape that cannot run (exit 2).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// What the run needs could not be set up or agreed (exit 2).
    #[error("{0}")]
    Setup(String),
    /// An I/O error while reading or writing: the first one (exit 1).
    #[error("{0}")]
    Io(String),
    /// Ctrl-C or a termination signal (exit 130).
    #[error("interrupted")]
    Interrupted,
}

impl From<EngineError> for AiError {
    fn from(e: EngineError) -> AiError {
        match e {
            EngineError::Interrupted => AiError::Interrupted,
            EngineError::Spec(e) => AiError::Spec(e),
            EngineError::Setup(why) => AiError::Setup(why),
            e => AiError::Io(e.to_string()),
        }
    }
}
