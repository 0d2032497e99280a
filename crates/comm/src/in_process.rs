//! [`InProcess`]: N ranks as threads of one process, for tests of multi-rank behaviour.
//! (To be written.)

/// N ranks as threads.
pub struct InProcess;
