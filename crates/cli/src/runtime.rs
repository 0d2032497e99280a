//! The process a command runs in: the Ctrl-C handler (first press stops the workload and
//! keeps partial results, a second press exits at once), the communicator (MPI when
//! launched by mpirun/srun and built with the `mpi` feature), and provenance.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

#[cfg(feature = "mpi")]
use anyhow::Context;
use anyhow::{Result, bail};
use iolab_comm::{Comm, CommExt, SingleProcess};
use iolab_core::result::Provenance;

static INTERRUPT: AtomicBool = AtomicBool::new(false);
/// This process's rank, once known (errors every rank shares are printed by rank 0 only).
static RANK: AtomicU32 = AtomicU32::new(0);
static PRESSES: AtomicU32 = AtomicU32::new(0);

/// How long a rank that ends with an error waits for the others to end alike before it
/// ends the whole job (see [`Comm::end_within`]).
const END_TOGETHER: std::time::Duration = std::time::Duration::from_secs(10);

pub struct Runtime {
    pub comm: Box<dyn Comm>,
    pub interrupt: &'static AtomicBool,
}

impl Runtime {
    pub fn start() -> Result<Runtime> {
        // Ctrl-C (SIGINT) and SIGTERM (what Slurm sends at a time limit) both stop the
        // workload gracefully; a second one exits without cleanup.
        let _ = ctrlc::set_handler(|| {
            INTERRUPT.store(true, Ordering::SeqCst);
            if PRESSES.fetch_add(1, Ordering::SeqCst) >= 1 {
                eprintln!("\niolab: interrupted twice, exiting without cleanup");
                std::process::exit(130);
            }
        });
        let comm = make_comm()?;
        RANK.store(comm.rank(), Ordering::SeqCst);
        Ok(Runtime {
            comm,
            interrupt: &INTERRUPT,
        })
    }

    /// Runs a command body in a runtime. Its error is reported here, while MPI is still
    /// up: ranks end MPI together afterwards, so the launcher cannot cut rank 0 off
    /// before it has said what went wrong.
    pub fn with(body: impl FnOnce(&Runtime) -> Result<u8>) -> Result<u8> {
        let rt = Runtime::start()?;
        let code = match body(&rt) {
            Ok(code) => code,
            Err(e) => {
                let code = report(&e);
                // Ranks that failed alone must not leave the others waiting for them.
                if rt.comm.size() > 1 {
                    rt.comm.end_within(END_TOGETHER, i32::from(code));
                }
                code
            }
        };
        drop(rt);
        Ok(code)
    }

    /// Agrees on a step every rank takes before its first collective, such as checking
    /// its options: if it failed on any rank, it fails on every rank, said once (by rank
    /// 0) with the first failing rank and host, so no rank goes on to wait for the others.
    pub fn agree<T, E: Into<anyhow::Error>>(&self, step: Result<T, E>) -> Result<T> {
        let step = step.map_err(Into::into);
        if self.comm.size() == 1 {
            return step;
        }
        let step = step.map_err(|e| iolab_engine::EngineError::Setup(crate::exit::one_line(&e)));
        Ok(iolab_engine::agree(self.comm.as_ref(), step)?)
    }

    pub fn is_root(&self) -> bool {
        self.comm.rank() == 0
    }

    pub fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::SeqCst)
    }
}

fn make_comm() -> Result<Box<dyn Comm>> {
    #[cfg(feature = "mpi")]
    if iolab_comm::launched_by_mpi() {
        let mpi = iolab_comm::Mpi::init().context("starting MPI")?;
        return Ok(Box::new(mpi));
    }
    if let Some(n) = mpi_world_size()
        && n > 1
        && !cfg!(feature = "mpi")
    {
        bail!(
            "launched by mpirun/srun as one of {n} ranks, but this iolab was built without MPI support; build it with `cargo build --release --features mpi`"
        );
    }
    Ok(Box::new(SingleProcess::new()))
}

/// The number of ranks a launcher started, from its environment.
fn mpi_world_size() -> Option<u32> {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_SIZE",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// Prints an error the way this rank should (a failure every rank shares is printed by
/// rank 0 alone) and returns its exit code.
pub fn report(e: &anyhow::Error) -> u8 {
    let shared = matches!(
        e.downcast_ref::<iolab_engine::EngineError>(),
        Some(
            iolab_engine::EngineError::Rank { .. } | iolab_engine::EngineError::RankMismatch { .. }
        )
    );
    if rank() == 0 || !shared {
        eprintln!("iolab: error: {}", crate::exit::one_line(e));
    }
    crate::exit::code_of(e)
}

/// This process's rank (0 before MPI started, and without MPI).
pub fn rank() -> u32 {
    RANK.load(Ordering::SeqCst)
}

/// The command line as typed, for provenance and messages: an argument that is not UTF-8
/// (a path in another encoding) is kept with U+FFFD in place of its bad bytes, where
/// `std::env::args` would panic.
pub fn command_line() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// Where a run comes from.
pub fn provenance(comm: &dyn Comm, target: String) -> Provenance {
    let topo = comm.topology();
    let rev = env!("IOLAB_GIT_REVISION");
    Provenance {
        iolab_version: env!("CARGO_PKG_VERSION").to_string(),
        git_revision: (!rev.is_empty()).then(|| rev.to_string()),
        command: command_line(),
        hosts: topo.hosts(),
        ranks: comm.size(),
        target,
        inventory: None,
        process: iolab_host::this_process(&iolab_host::SysRoot::live(), &iolab_comm::hostname()),
    }
}
