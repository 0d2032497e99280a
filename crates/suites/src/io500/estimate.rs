//! [`estimate`]: the capacity, files and time an IO500 run needs before it starts
//! ([`Io500Estimate`], one [`PhaseEstimate`] per phase). Write and create phases run for
//! the stonewall (or until their per-rank limit, if that comes first); read, stat and
//! delete phases handle what was written at the rates the user assumes ([`Assumptions`]).

use iolab_core::units::Nanos;
use serde::{Deserialize, Serialize};

use iolab_compat::io500::phases::{IorLayout, MdtestTree, PHASES, PhaseDef, Workload};
use iolab_core::spec::io500::{IOR_HARD_TRANSFER, Io500Spec, MDTEST_HARD_FILE_SIZE};

/// Rates assumed for the estimate, for all ranks together.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Assumptions {
    /// ior-easy write and read bandwidth, bytes per second.
    pub easy_bandwidth: f64,
    /// ior-hard write and read bandwidth, bytes per second.
    pub hard_bandwidth: f64,
    /// Files created, stat'ed, read or deleted per second.
    pub file_rate: f64,
    /// Directory entries find examines per second.
    pub find_rate: f64,
}

impl Default for Assumptions {
    /// What `iolab io500 plan` assumes unless told otherwise.
    fn default() -> Assumptions {
        Assumptions {
            easy_bandwidth: 1024.0 * 1024.0 * 1024.0,
            hard_bandwidth: 100.0 * 1024.0 * 1024.0,
            file_rate: 10_000.0,
            find_rate: 100_000.0,
        }
    }
}

/// What one phase is expected to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseEstimate {
    pub name: String,
    pub time: Nanos,
    /// The stonewall sets the time; wear-out adds what the slowest rank lags behind.
    pub stonewalled: bool,
    /// Bytes written or read (0 when the phase moves no data or it is not known).
    pub bytes: u64,
    /// Files created, stat'ed, read, deleted or examined.
    pub files: u64,
}

/// A whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Io500Estimate {
    pub phases: Vec<PhaseEstimate>,
    /// Bytes on the file system when the most is there (before the deletes), counting
    /// each mdtest-hard file as one 4 KiB block.
    pub capacity: u64,
    /// Files and directories on the file system at the most.
    pub inodes: u64,
    pub time: Nanos,
}

impl Io500Estimate {
    /// The phases a run times, with their estimated seconds: what the live page plans
    /// (IO500's timestamp step is no phase of its own).
    pub fn timed_phases(&self) -> Vec<(String, f64)> {
        self.phases
            .iter()
            .filter(|p| {
                iolab_compat::io500::phases::phase(&p.name)
                    .is_some_and(|d| d.workload != iolab_compat::io500::phases::Workload::Timestamp)
            })
            .map(|p| (p.name.clone(), p.time.as_secs_f64()))
            .collect()
    }
}

/// How much a write phase writes and for how long, given its limit and rate.
fn bounded(rate: f64, stonewall: f64, limit: u64) -> (u64, f64, bool) {
    let rate = rate.max(1e-9);
    let by_time = rate * stonewall;
    if by_time >= limit as f64 {
        (limit, limit as f64 / rate, false)
    } else {
        (by_time as u64, stonewall, true)
    }
}

fn secs(s: f64) -> Nanos {
    Nanos((s.max(0.0) * 1e9).round() as u64)
}

/// What the write phases leave behind, by write phase name.
struct Written {
    name: &'static str,
    bytes: u64,
    files: u64,
}

/// The estimate of a run of `spec` on `ranks` ranks.
pub fn estimate(spec: &Io500Spec, ranks: u32, a: &Assumptions) -> Io500Estimate {
    let ranks = u64::from(ranks.max(1));
    let stonewall = spec.stonewall.as_secs_f64();
    let mut written: Vec<Written> = Vec::new();
    let mut phases = Vec::new();
    for def in &PHASES {
        let e = phase_estimate(def, spec, ranks, stonewall, a, &written);
        if def.is_write() {
            written.push(Written {
                name: def.name,
                bytes: e.bytes,
                files: e.files,
            });
        }
        phases.push(e);
    }
    let (mut capacity, mut inodes) = (0u64, 0u64);
    for w in &written {
        let hard_files = w.name == "mdtest-hard-write";
        capacity += if hard_files {
            w.files * MDTEST_HARD_FILE_SIZE.next_multiple_of(4096)
        } else {
            w.bytes
        };
        inodes += w.files;
    }
    // ior-easy's file per rank, ior-hard's shared file, mdtest-easy's directory per rank.
    inodes += ranks + 1 + ranks;
    let time = Nanos(phases.iter().map(|p| p.time.0).sum());
    Io500Estimate {
        phases,
        capacity,
        inodes,
        time,
    }
}

fn phase_estimate(
    def: &PhaseDef,
    spec: &Io500Spec,
    ranks: u64,
    stonewall: f64,
    a: &Assumptions,
    written: &[Written],
) -> PhaseEstimate {
    let of = |name: Option<&str>| written.iter().find(|w| Some(w.name) == name);
    let rate = match def.workload {
        Workload::Ior {
            layout: IorLayout::FilePerProcess,
            ..
        } => a.easy_bandwidth,
        Workload::Ior { .. } => a.hard_bandwidth,
        Workload::Mdtest { .. } => a.file_rate,
        Workload::Find => a.find_rate,
        Workload::Timestamp => 1.0,
    }
    .max(1e-9);
    let (bytes, files, time, stonewalled) = match def.workload {
        Workload::Timestamp => (0, 1, 0.0, false),
        Workload::Find => {
            let files: u64 = written.iter().map(|w| w.files).sum();
            (0, files, files as f64 / rate, false)
        }
        Workload::Ior { layout, .. } if def.is_write() => {
            let limit = match layout {
                // Saturating: a plan for many ranks says "16 EiB", it does not overflow.
                IorLayout::FilePerProcess => ranks.saturating_mul(spec.ior_easy_block.get()),
                IorLayout::SharedStrided => ranks
                    .saturating_mul(spec.ior_hard_segments)
                    .saturating_mul(IOR_HARD_TRANSFER),
            };
            let (b, t, sw) = bounded(rate, stonewall, limit);
            (b, 0, t, sw)
        }
        Workload::Mdtest { tree, .. } if def.is_write() => {
            let (f, t, sw) = bounded(rate, stonewall, ranks.saturating_mul(spec.files_per_rank));
            let b = match tree {
                MdtestTree::DirPerRank => 0,
                MdtestTree::SharedDir => f.saturating_mul(MDTEST_HARD_FILE_SIZE),
            };
            (b, f, t, sw)
        }
        // ior-rnd4K-easy-read reads for the stonewall time.
        Workload::Ior { .. } if def.stonewalled => (0, 0, stonewall, true),
        Workload::Ior { .. } => {
            let b = of(def.works_on).map_or(0, |w| w.bytes);
            (b, 0, b as f64 / rate, false)
        }
        Workload::Mdtest { .. } => {
            let f = of(def.works_on).map_or(0, |w| w.files);
            (0, f, f as f64 / rate, false)
        }
    };
    PhaseEstimate {
        name: def.name.to_string(),
        time: secs(time),
        stonewalled,
        bytes,
        files,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::units::{ByteCount, GIB, MIB, TimeSpan};

    const RATES: Assumptions = Assumptions {
        easy_bandwidth: GIB as f64,
        hard_bandwidth: 100.0 * MIB as f64,
        file_rate: 10_000.0,
        find_rate: 100_000.0,
    };

    #[test]
    fn writes_run_for_the_stonewall_and_reads_handle_what_they_wrote() {
        let e = estimate(&Io500Spec::default(), 4, &RATES);
        let get = |n: &str| e.phases.iter().find(|p| p.name == n).unwrap();
        let easy = get("ior-easy-write");
        assert_eq!(easy.bytes, 300 * GIB);
        assert_eq!(easy.time, Nanos::from_secs(300));
        assert!(easy.stonewalled);
        assert_eq!(get("ior-easy-read").bytes, 300 * GIB);
        assert_eq!(get("ior-easy-read").time, Nanos::from_secs(300));
        assert_eq!(get("ior-hard-write").bytes, 30_000 * MIB);
        assert_eq!(get("mdtest-easy-write").files, 3_000_000);
        assert_eq!(get("mdtest-hard-write").bytes, 3_000_000 * 3901);
        assert_eq!(get("find").files, 6_000_000);
        assert_eq!(get("find").time, Nanos::from_secs(60));
        assert_eq!(get("mdtest-hard-delete").time, Nanos::from_secs(300));
        assert_eq!(get("ior-rnd4K-easy-read").time, Nanos::from_secs(300));
        assert_eq!(get("timestamp").time, Nanos::ZERO);
        assert_eq!(e.capacity, 300 * GIB + 30_000 * MIB + 3_000_000 * 4096);
        assert_eq!(e.inodes, 6_000_000 + 4 + 1 + 4);
        // 4 writes, 4 reads/stats of them, rnd4K, 3 more metadata phases, find: 60 s.
        assert_eq!(e.time, Nanos::from_secs(12 * 300 + 60));
    }

    #[test]
    fn per_rank_limits_end_writes_before_the_stonewall() {
        let spec = Io500Spec {
            stonewall: TimeSpan::from_secs(60),
            files_per_rank: 1000,
            ior_easy_block: ByteCount::gib(1),
            ..Io500Spec::default()
        };
        let e = estimate(&spec, 2, &RATES);
        let md = &e.phases[1];
        assert_eq!((md.files, md.stonewalled), (2000, false));
        assert_eq!(md.time, Nanos::from_millis(200));
        let easy = &e.phases[0];
        assert_eq!((easy.bytes, easy.time), (2 * GIB, Nanos::from_secs(2)));
    }
}
