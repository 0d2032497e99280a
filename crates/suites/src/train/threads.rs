//! The reader and writer threads a job uses, sized as MLPerf Storage v3.0's DLIO sizes
//! them (mlcommons/DLIO_local_changes cbe20010, dlio_benchmark/utils/config.py): a
//! `read_threads` of exactly 1 becomes min(max(1, CPUs / ranks on the node), max(1,
//! DLIO_MAX_AUTO_THREADS or 8)) ("PR-5", lines 789-811), for every loader and format;
//! a `write_threads` of exactly 1 the same with 32 for 8 ("PR-14", lines 813-857, its
//! local file system formula). [`HostCpus`] holds a host's figures, [`agree_host`]
//! gives the job one host's, [`sized`] and [`sized_writes`] apply the rule. The figures
//! are stored as iolab_core's [`ThreadsSizing`].

use std::ffi::OsString;

use iolab_comm::Comm;
use iolab_core::SpecError;
use iolab_core::spec::{ThreadsKind, ThreadsSizing, TrainConfig};
use iolab_core::units::CpuList;

/// The environment variable v3.0 DLIO caps its sized threads with.
pub const CAP_VARIABLE: &str = "DLIO_MAX_AUTO_THREADS";

/// What DLIO sizes from on a host: its CPUs, the ranks on it and the cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostCpus {
    pub cpus: u32,
    /// iolab's ranks on the host (each runs --accelerators accelerators).
    pub ranks: u32,
    pub cap: u32,
}

impl HostCpus {
    /// This host's online CPUs, its `ranks` and `DLIO_MAX_AUTO_THREADS` as the cap of
    /// `kind`, or the variable's error.
    pub fn read(ranks: u32, kind: ThreadsKind) -> Result<HostCpus, SpecError> {
        Ok(HostCpus {
            cpus: online_cpus(),
            ranks: ranks.max(1),
            cap: cap_of(std::env::var_os(CAP_VARIABLE), kind)?,
        })
    }
}

/// The CPUs Python's `os.cpu_count()` gives DLIO: sysconf(_SC_NPROCESSORS_ONLN), which
/// glibc reads from /sys/devices/system/cpu/online, so neither the process's affinity
/// mask nor a cgroup's quota counts (`taskset -c 0 python3.12 -c 'import os;
/// print(os.cpu_count())'` prints 2 on a host of 2). Where sysfs lacks the file: the
/// CPUs this process may use.
pub fn online_cpus() -> u32 {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| s.trim().parse::<CpuList>().ok())
        .map(|l| l.0.len() as u32)
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32))
}

/// DLIO's `max(1, int(os.environ.get('DLIO_MAX_AUTO_THREADS', '8')))` (`'32'` for
/// `kind` Write); a value that is not a whole number (where DLIO stops with Python's
/// ValueError, whichever threads it sizes: it reads the variable for both), or one
/// above the threads iolab runs, is refused naming the variable.
pub fn cap_of(value: Option<OsString>, kind: ThreadsKind) -> Result<u32, SpecError> {
    let Some(value) = value else {
        return Ok(kind.default_cap());
    };
    let text = value.to_string_lossy();
    let n: i64 = text.trim().parse().map_err(|_| {
        SpecError::new(
            CAP_VARIABLE,
            format!(
                "'{text}' is not a whole number (v3.0 DLIO's cap on the {} threads it sizes a {} of 1 to): unset it or give one, e.g. {}",
                kind.role(),
                kind.setting(),
                kind.default_cap()
            ),
        )
    })?;
    if n > i64::from(kind.most()) {
        return Err(SpecError::new(
            CAP_VARIABLE,
            format!(
                "{n} is more than the {} {} threads iolab runs per accelerator: lower it",
                kind.most(),
                kind.role()
            ),
        ));
    }
    Ok(n.max(1) as u32)
}

/// DLIO's sizing of an `asked` count on `host` for `accelerators` per rank: None when
/// it is kept (not 1, or `exact`).
fn sizing(asked: u32, exact: bool, accelerators: u32, host: HostCpus) -> Option<ThreadsSizing> {
    (!exact && asked == 1).then(|| ThreadsSizing {
        asked,
        cpus: host.cpus,
        accelerators_on_host: accelerators.max(1).saturating_mul(host.ranks.max(1)),
        cap: host.cap,
    })
}

/// The workload as it runs on `host` (its --accelerators on each of the host's ranks):
/// a read_threads of 1 (as asked: a workload sized before keeps its asked 1) sized by
/// DLIO's rule, unless --exact-read-threads; any other value as asked.
pub fn sized(cfg: &TrainConfig, host: HostCpus) -> TrainConfig {
    let asked = cfg
        .read_threads_sizing
        .map_or(cfg.read_threads, |s| s.asked);
    match sizing(asked, cfg.exact_read_threads, cfg.accelerators, host) {
        None => cfg.clone(),
        Some(s) => TrainConfig {
            read_threads: s.threads(),
            read_threads_sizing: Some(s),
            ..cfg.clone()
        },
    }
}

/// The workload as `train datagen` writes it on `host`: a write_threads of 1 sized by
/// DLIO's rule for a local file system (`host.cap` read as [`ThreadsKind::Write`]'s),
/// unless --exact-write-threads; any other value as asked.
pub fn sized_writes(cfg: &TrainConfig, host: HostCpus) -> TrainConfig {
    let asked = cfg
        .write_threads_sizing
        .map_or(cfg.write_threads, |s| s.asked);
    match sizing(asked, cfg.exact_write_threads, cfg.accelerators, host) {
        None => cfg.clone(),
        Some(s) => TrainConfig {
            write_threads: s.threads(),
            write_threads_sizing: Some(s),
            ..cfg.clone()
        },
    }
}

/// `cfg` as one process on this host runs it (`train plan`): its reader and writer
/// threads sized as v3.0 DLIO sizes a 1; or a cap DLIO could not read.
pub fn sized_here(cfg: &TrainConfig) -> Result<TrainConfig, SpecError> {
    let cfg = sized(cfg, HostCpus::read(1, ThreadsKind::Read)?);
    Ok(sized_writes(&cfg, HostCpus::read(1, ThreadsKind::Write)?))
}

/// One host's figures for the whole job: the host with the fewest CPUs per rank (then
/// the lowest cap), so every rank sizes the same threads whatever its accelerators
/// (floor(floor(cpus / ranks) / accelerators) is the host's share, so that host's is
/// the fewest at every count the search tries). DLIO sizes each rank for its own node;
/// iolab's ranks agree so that no host runs more threads than its CPUs give and
/// parquet's steps per epoch, which follow the threads, are the same on every rank.
/// Collective (one all-reduce of 8 bytes).
pub fn agree_host(comm: &dyn Comm, host: HostCpus) -> HostCpus {
    if comm.size() == 1 {
        return host;
    }
    let field = |v: u32| u64::from(v.min(0xFFFF));
    let key = |h: HostCpus| {
        field(h.cpus / h.ranks.max(1)) << 48
            | field(h.cap) << 32
            | field(h.cpus) << 16
            | field(h.ranks)
    };
    let fewest = !comm.all_max(!key(host));
    let part = |shift: u32| ((fewest >> shift) & 0xFFFF) as u32;
    HostCpus {
        cpus: part(16),
        ranks: part(0),
        cap: part(32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_comm::InProcess;
    use iolab_core::spec::TrainSpec;

    fn asked(read_threads: Option<u32>, exact: bool) -> TrainConfig {
        TrainSpec {
            read_threads,
            exact_read_threads: exact,
            ..TrainSpec::default()
        }
        .resolve()
        .unwrap()
    }

    fn host(cpus: u32, ranks: u32, cap: u32) -> HostCpus {
        HostCpus { cpus, ranks, cap }
    }

    fn writes(write_threads: Option<u32>, exact: bool, accelerators: u32) -> TrainConfig {
        TrainSpec {
            write_threads,
            exact_write_threads: exact,
            accelerators,
            ..TrainSpec::default()
        }
        .resolve()
        .unwrap()
    }

    #[test]
    fn a_write_threads_of_one_is_sized_as_dlio_sizes_it_on_a_local_file_system() {
        // (CPUs, ranks on the host, accelerators per rank, cap) -> writer threads: the
        // read rule with DLIO's write cap, 32 when DLIO_MAX_AUTO_THREADS is unset.
        let unset = cap_of(None, ThreadsKind::Write).unwrap();
        assert_eq!(unset, 32);
        for (cpus, ranks, accs, cap, threads) in [
            (2, 1, 1, unset, 2),
            (64, 1, 1, unset, 32),
            (128, 1, 1, unset, 32),
            (64, 2, 1, unset, 32),
            (64, 4, 1, unset, 16),
            (64, 1, 4, unset, 16),
            (64, 12, 1, unset, 5),
            (64, 2, 6, unset, 5),
            (2, 1, 4, unset, 1),
            (1, 1, 1, unset, 1),
            (64, 1, 1, 3, 3),
            (64, 1, 1, 1, 1),
        ] {
            let what = format!("{cpus} CPUs, {ranks} ranks x {accs} acc, cap {cap}");
            let cfg = sized_writes(&writes(Some(1), false, accs), host(cpus, ranks, cap));
            assert_eq!(cfg.write_threads, threads, "{what}");
            assert_eq!(
                cfg.write_threads_sizing,
                Some(ThreadsSizing {
                    asked: 1,
                    cpus,
                    accelerators_on_host: ranks * accs,
                    cap
                }),
                "{what}"
            );
            // The reader threads are another setting, sized by `sized` alone.
            assert_eq!((cfg.read_threads, cfg.read_threads_sizing), (1, None));
        }
        // No --write-threads is DLIO's default 1, and a preset names none.
        assert_eq!(writes(None, false, 1).write_threads, 1);
        let retinanet = TrainSpec {
            preset: Some(iolab_core::spec::TrainPreset::Retinanet),
            accelerator: iolab_core::spec::AcceleratorKind::B200,
            ..TrainSpec::default()
        }
        .resolve()
        .unwrap();
        let cfg = sized_writes(&retinanet, host(16, 1, unset));
        assert_eq!((cfg.write_threads, cfg.read_threads), (16, 8));
        // Sized again (another accelerator count) from its asked 1.
        let four = TrainConfig {
            accelerators: 4,
            ..cfg
        };
        assert_eq!(sized_writes(&four, host(16, 1, unset)).write_threads, 4);
    }

    #[test]
    fn other_write_counts_and_the_exact_option_stay_as_asked() {
        let cfg = sized_writes(&writes(Some(3), false, 1), host(64, 1, 32));
        assert_eq!((cfg.write_threads, cfg.write_threads_sizing), (3, None));
        let cfg = sized_writes(&writes(Some(1), true, 1), host(64, 1, 32));
        assert_eq!((cfg.write_threads, cfg.write_threads_sizing), (1, None));
        assert!(cfg.exact_write_threads);
        // --exact-read-threads keeps the readers only.
        let cfg = sized_writes(&asked(Some(1), true), host(64, 1, 32));
        assert_eq!(cfg.write_threads, 32);
        // And a sized read count leaves the writers as asked.
        let cfg = sized(&writes(Some(1), false, 1), host(64, 1, 8));
        assert_eq!((cfg.read_threads, cfg.write_threads), (8, 1));
    }

    #[test]
    fn the_write_cap_is_the_same_variable_with_dlios_write_default() {
        let cap = |v: &str| cap_of(Some(OsString::from(v)), ThreadsKind::Write);
        assert_eq!(cap("2").unwrap(), 2);
        assert_eq!(cap("0").unwrap(), 1);
        assert_eq!(cap("256").unwrap(), 256);
        let e = cap("many").unwrap_err().to_string();
        assert_eq!(
            e,
            "DLIO_MAX_AUTO_THREADS: 'many' is not a whole number (v3.0 DLIO's cap on the writer threads it sizes a write_threads of 1 to): unset it or give one, e.g. 32"
        );
        let e = cap("300").unwrap_err().to_string();
        assert!(e.contains("300 is more than the 256 writer threads"), "{e}");
    }

    #[test]
    fn a_one_is_the_hosts_cpus_per_accelerator_capped_as_dlio_sizes_it() {
        // (CPUs, ranks on the host, accelerators per rank, cap) -> threads.
        for (cpus, ranks, accs, cap, threads) in [
            (2, 1, 1, 8, 2),
            (64, 1, 1, 8, 8),
            (64, 1, 4, 8, 8),
            (64, 4, 4, 8, 4),
            (64, 12, 1, 8, 5),
            (64, 2, 6, 8, 5),
            (2, 1, 4, 8, 1),
            (1, 1, 1, 8, 1),
            (64, 1, 1, 2, 2),
            (64, 1, 1, 32, 32),
            (64, 1, 1, 1, 1),
        ] {
            let one = TrainConfig {
                accelerators: accs,
                ..asked(Some(1), false)
            };
            let cfg = sized(&one, host(cpus, ranks, cap));
            let what = format!("{cpus} CPUs, {ranks} ranks x {accs} acc, cap {cap}");
            assert_eq!(cfg.read_threads, threads, "{what}");
            assert_eq!(
                cfg.read_threads_sizing,
                Some(ThreadsSizing {
                    asked: 1,
                    cpus,
                    accelerators_on_host: ranks * accs,
                    cap
                }),
                "{what}"
            );
        }
        // The default (no --read-threads) is DLIO's 1 and is sized the same way.
        assert_eq!(sized(&asked(None, false), host(16, 2, 8)).read_threads, 8);
    }

    #[test]
    fn other_counts_and_the_exact_option_stay_as_asked() {
        let cfg = sized(&asked(Some(2), false), host(64, 1, 8));
        assert_eq!((cfg.read_threads, cfg.read_threads_sizing), (2, None));
        let cfg = sized(&asked(Some(1), true), host(64, 1, 8));
        assert_eq!((cfg.read_threads, cfg.read_threads_sizing), (1, None));
        assert!(cfg.exact_read_threads);
        // A preset's 4 (unet3d) is not DLIO's 1.
        let unet = TrainSpec {
            preset: Some(iolab_core::spec::TrainPreset::Unet3d),
            accelerator: iolab_core::spec::AcceleratorKind::B200,
            ..TrainSpec::default()
        }
        .resolve()
        .unwrap();
        assert_eq!(sized(&unet, host(64, 1, 8)).read_threads, 4);
    }

    #[test]
    fn a_sized_workload_is_sized_again_from_its_asked_one() {
        // The search's trials: the same workload on more accelerators.
        let first = sized(&asked(Some(1), false), host(16, 1, 8));
        assert_eq!(first.read_threads, 8);
        let four = TrainConfig {
            accelerators: 4,
            ..first
        };
        let again = sized(&four, host(16, 1, 8));
        assert_eq!(again.read_threads, 4);
        assert_eq!(again.read_threads_sizing.unwrap().asked, 1);
    }

    #[test]
    fn the_cap_is_dlios_variable_at_least_one() {
        let cap = |v: &str| cap_of(Some(OsString::from(v)), ThreadsKind::Read);
        assert_eq!(cap_of(None, ThreadsKind::Read).unwrap(), 8);
        assert_eq!(cap("2").unwrap(), 2);
        assert_eq!(cap(" 16\n").unwrap(), 16);
        assert_eq!(cap("0").unwrap(), 1);
        assert_eq!(cap("-3").unwrap(), 1);
        assert_eq!(cap("256").unwrap(), 256);
        let e = cap("eight").unwrap_err().to_string();
        assert!(
            e.contains("DLIO_MAX_AUTO_THREADS") && e.contains("'eight' is not a whole number"),
            "{e}"
        );
        let e = cap("257").unwrap_err().to_string();
        assert!(e.contains("257 is more than the 256 reader threads"), "{e}");
    }

    #[test]
    fn the_job_takes_the_host_with_the_fewest_cpus_per_rank() {
        // Rank 0's host: 16 CPUs, 1 rank (16 a rank); ranks 1 and 2 share one of 24 CPUs
        // (12 a rank): every rank sizes from the second host, 12 a rank, capped at 8
        // with 1 accelerator a rank and 6 threads with 2.
        let hosts = |r: u32| if r == 0 { "a" } else { "b" }.to_string();
        let outs = InProcess::run(3, hosts, |comm| {
            let mine = if comm.rank() == 0 {
                host(16, 1, 8)
            } else {
                host(24, 2, 8)
            };
            agree_host(comm, mine)
        });
        assert!(outs.iter().all(|h| *h == host(24, 2, 8)), "{outs:?}");
        let one = asked(Some(1), false);
        assert_eq!(sized(&one, outs[0]).read_threads, 8);
        let two = TrainConfig {
            accelerators: 2,
            ..one
        };
        let cfg = sized(&two, outs[0]);
        assert_eq!(cfg.read_threads, 6);
        assert_eq!(cfg.read_threads_sizing.unwrap().accelerators_on_host, 4);
        // With the caps apart, the lower cap decides among equal shares.
        let outs = InProcess::run(
            2,
            |r| format!("h{r}"),
            |comm| agree_host(comm, host(8, 1, if comm.rank() == 0 { 8 } else { 2 })),
        );
        assert!(outs.iter().all(|h| *h == host(8, 1, 2)), "{outs:?}");
    }
}
