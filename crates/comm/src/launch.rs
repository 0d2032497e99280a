//! How this process was started: [`detect_launch`] reads the environment variables that
//! MPI launchers and Slurm set for each rank and returns a [`Launch`] (which
//! [`LauncherKind`], rank and size); [`launched_by_mpi`] is the yes/no the CLI needs to
//! choose between `Mpi` and `SingleProcess`. Works without the `mpi` feature, so a build
//! without MPI can still tell a user that mpirun started several copies of it.

/// Which launcher's variables were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LauncherKind {
    /// Open MPI's mpirun/mpiexec (ORTE in 4.x, PRRTE in 5.x): `OMPI_COMM_WORLD_SIZE`,
    /// `OMPI_COMM_WORLD_RANK`.
    OpenMpi,
    /// A PMI-1/PMI-2 launcher: MPICH's and Intel MPI's Hydra mpiexec, `srun --mpi=pmi2`:
    /// `PMI_SIZE`, `PMI_RANK`.
    Pmi,
    /// A PMIx launcher without Open MPI's variables, such as `srun --mpi=pmix`:
    /// `PMIX_RANK` (PMIx puts no world size in the environment).
    Pmix,
    /// A Slurm job step started by srun without an MPI plugin: `SLURM_STEP_ID` with
    /// `SLURM_PROCID`. A batch script itself has no `SLURM_STEP_ID`, so running iolab
    /// directly in a batch script is not mistaken for an MPI launch.
    Slurm,
}

/// What the launcher told this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub kind: LauncherKind,
    /// This process's rank, if the launcher said.
    pub rank: Option<u32>,
    /// The number of ranks the launcher started, if it said.
    pub size: Option<u32>,
}

/// True if mpirun, mpiexec or srun started this process (see [`detect_launch`]).
pub fn launched_by_mpi() -> bool {
    detect_launch().is_some()
}

/// The launcher that started this process, from its environment variables; `None` for a
/// process started by hand (or by a batch script without srun).
pub fn detect_launch() -> Option<Launch> {
    detect_launch_in(|name| std::env::var(name).ok())
}

/// [`detect_launch`] over any variable lookup, so tests need not touch the process's
/// environment (which other test threads read at the same time).
pub(crate) fn detect_launch_in(var: impl Fn(&str) -> Option<String>) -> Option<Launch> {
    let number = |name: &str| var(name).and_then(|v| v.trim().parse::<u32>().ok());
    let present = |name: &str| var(name).is_some_and(|v| !v.trim().is_empty());

    // Most specific first: Open MPI's mpirun also sets PMIX_RANK, and any launcher running
    // inside a Slurm allocation inherits SLURM_* variables that describe the allocation
    // (or its own daemons), not this run's ranks.
    if present("OMPI_COMM_WORLD_SIZE") || present("OMPI_COMM_WORLD_RANK") {
        return Some(Launch {
            kind: LauncherKind::OpenMpi,
            rank: number("OMPI_COMM_WORLD_RANK"),
            size: number("OMPI_COMM_WORLD_SIZE"),
        });
    }
    if present("PMI_SIZE") || present("PMI_RANK") {
        return Some(Launch {
            kind: LauncherKind::Pmi,
            rank: number("PMI_RANK"),
            size: number("PMI_SIZE"),
        });
    }
    let slurm_step = present("SLURM_STEP_ID") || present("SLURM_STEPID");
    let slurm_size = || {
        if slurm_step {
            number("SLURM_STEP_NUM_TASKS").or_else(|| number("SLURM_NTASKS"))
        } else {
            None
        }
    };
    if present("PMIX_RANK") {
        return Some(Launch {
            kind: LauncherKind::Pmix,
            rank: number("PMIX_RANK"),
            size: slurm_size(),
        });
    }
    if slurm_step && present("SLURM_PROCID") {
        return Some(Launch {
            kind: LauncherKind::Slurm,
            rank: number("SLURM_PROCID"),
            size: slurm_size(),
        });
    }
    None
}

/// The variable that gave [`Launch::size`], for error messages.
#[cfg(feature = "mpi")]
pub(crate) fn size_variable(kind: LauncherKind) -> &'static str {
    match kind {
        LauncherKind::OpenMpi => "OMPI_COMM_WORLD_SIZE",
        LauncherKind::Pmi => "PMI_SIZE",
        LauncherKind::Pmix | LauncherKind::Slurm => "SLURM_STEP_NUM_TASKS",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detect(vars: &[(&str, &str)]) -> Option<Launch> {
        detect_launch_in(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn nothing_set_is_not_a_launch() {
        assert_eq!(detect(&[]), None);
    }

    #[test]
    fn open_mpi_4_mpirun_as_observed() {
        // The variables `mpirun -np 2 env` printed for rank 1 with Open MPI 4.1.4.
        let launch = detect(&[
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("PMIX_RANK", "1"),
            ("PMIX_NAMESPACE", "1100283905"),
        ]);
        assert_eq!(
            launch,
            Some(Launch {
                kind: LauncherKind::OpenMpi,
                rank: Some(1),
                size: Some(2)
            })
        );
    }

    #[test]
    fn mpirun_inside_slurm_uses_open_mpi_numbers_not_the_allocation() {
        let launch = detect(&[
            ("OMPI_COMM_WORLD_SIZE", "64"),
            ("OMPI_COMM_WORLD_RANK", "5"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "0"),
            ("SLURM_STEP_NUM_TASKS", "4"),
        ]);
        assert_eq!(
            launch.map(|l| (l.kind, l.size)),
            Some((LauncherKind::OpenMpi, Some(64)))
        );
    }

    #[test]
    fn hydra_pmi() {
        let launch = detect(&[("PMI_RANK", "3"), ("PMI_SIZE", "8"), ("PMI_FD", "6")]);
        assert_eq!(
            launch,
            Some(Launch {
                kind: LauncherKind::Pmi,
                rank: Some(3),
                size: Some(8)
            })
        );
    }

    #[test]
    fn srun_with_pmix_takes_the_size_from_the_step() {
        let launch = detect(&[
            ("PMIX_RANK", "2"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "2"),
            ("SLURM_NTASKS", "16"),
            ("SLURM_STEP_NUM_TASKS", "16"),
        ]);
        assert_eq!(
            launch,
            Some(Launch {
                kind: LauncherKind::Pmix,
                rank: Some(2),
                size: Some(16)
            })
        );
    }

    #[test]
    fn plain_srun_step() {
        let launch = detect(&[
            ("SLURM_STEP_ID", "1"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
        ]);
        assert_eq!(
            launch,
            Some(Launch {
                kind: LauncherKind::Slurm,
                rank: Some(0),
                size: Some(4)
            })
        );
    }

    #[test]
    fn batch_script_without_srun_is_not_a_launch() {
        // sbatch sets these for the batch script, but no step id: iolab run directly in
        // the script is one process.
        let launch = detect(&[
            ("SLURM_JOB_ID", "200505"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NODEID", "0"),
        ]);
        assert_eq!(launch, None);
    }

    #[test]
    fn empty_values_do_not_count() {
        assert_eq!(
            detect(&[("OMPI_COMM_WORLD_SIZE", ""), ("PMI_RANK", " ")]),
            None
        );
    }
}
