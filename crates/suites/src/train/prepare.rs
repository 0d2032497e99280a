//! A training job made ready on every rank before anything is read ([`prepare`]): the
//! workload resolved, the dataset listed, the reader threads sized for the job's hosts
//! ([`super::threads`]), the memory pre-flight passed; each step agreed by every rank.

use iolab_comm::Comm;
use iolab_core::spec::{ThreadsKind, TrainConfig, TrainSpec};
use iolab_engine::{EngineError, ranks_on_this_host};

use super::Dataset;
use super::memory::check_memory;
use super::threads::{HostCpus, agree_host, sized};
use crate::AiError;

/// What a command on a dataset works with once prepared.
pub struct Prepared {
    /// The workload, its read_threads sized as v3.0 DLIO sizes them.
    pub cfg: TrainConfig,
    pub dataset: Dataset,
    /// What iolab's readers and DLIO's loader hold on this host ([`check_memory`]).
    pub memory: (u64, u64),
    /// The job's CPU figures the read_threads are sized from (the search sizes each
    /// trial from them).
    pub host: HostCpus,
}

/// `spec`'s workload on its --data-dir, ready on every rank, or the first failing
/// rank's error on each. Collective.
pub fn prepare(comm: &dyn Comm, spec: &TrainSpec) -> Result<Prepared, AiError> {
    let ranks_here = ranks_on_this_host(comm);
    let local = (|| -> Result<_, AiError> {
        let cfg = spec.resolve()?;
        let host = HostCpus::read(ranks_here, ThreadsKind::Read)?;
        let dataset = Dataset::open(spec.data_dir()?, &cfg)?;
        Ok((cfg, host, dataset))
    })();
    let (cfg, host, dataset) = agreed(comm, local)?;
    // Sized before the memory pre-flight, which counts the threads.
    let host = agree_host(comm, host);
    let cfg = sized(&cfg, host);
    let memory = agreed(
        comm,
        check_memory(&cfg, &dataset, ranks_here).map_err(AiError::from),
    )?;
    Ok(Prepared {
        cfg,
        dataset,
        memory,
        host,
    })
}

/// `result` once every rank has it: a lone process's as it is, else the first failing
/// rank's error on every rank.
pub(crate) fn agreed<T>(comm: &dyn Comm, result: Result<T, AiError>) -> Result<T, AiError> {
    if comm.size() == 1 {
        return result;
    }
    let result = result.map_err(|e| match e {
        AiError::Spec(e) => EngineError::Spec(e),
        e => EngineError::Setup(e.to_string()),
    });
    Ok(iolab_engine::agree(comm, result)?)
}
