//! Memory pre-flight: the I/O buffers a data phase allocates, summed over this host's
//! threads and ranks, against what the host can give (MemAvailable) and what the cgroup
//! the job runs in allows (Slurm, Kubernetes, systemd): refused before any allocation
//! instead of ending in the kernel's OOM killer.

use std::path::Path;

use iolab_core::spec::{BackendKind, DataSpec};
use iolab_core::units::ByteCount;

use crate::error::EngineError;

/// Share of the available memory the buffers may take: the rest is for the page cache,
/// the histograms and everything else on the host.
const USABLE: f64 = 0.8;

/// What this host can give a job: MemAvailable, and the room left under the memory
/// limits of the cgroup it runs in and its parents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Available {
    pub mem_available: Option<u64>,
    /// The tightest cgroup limit minus what the cgroup uses, and the cgroup it is.
    pub cgroup: Option<(u64, String)>,
}

impl Available {
    /// What the buffers may use at most, None when nothing is known.
    pub fn bytes(&self) -> Option<u64> {
        match (self.mem_available, &self.cgroup) {
            (Some(m), Some((c, _))) => Some(m.min(*c)),
            (Some(m), None) => Some(m),
            (None, Some((c, _))) => Some(*c),
            (None, None) => None,
        }
    }

    /// Reads /proc/meminfo and the cgroup files under `root` ("/" on a live system).
    pub fn read(root: &Path) -> Available {
        Available {
            mem_available: iolab_backend::process::mem_available(root),
            cgroup: iolab_backend::process::cgroup_room(root),
        }
    }
}

/// The I/O buffers one rank's workers allocate: a block per I/O in flight per thread.
pub fn buffers_per_rank(spec: &DataSpec) -> u64 {
    let in_flight = match spec.backend {
        BackendKind::Uring => u64::from(spec.queue_depth.max(1)),
        _ => 1,
    };
    u64::from(spec.threads)
        .saturating_mul(in_flight)
        .saturating_mul(spec.largest_io())
}

/// Refuses a phase whose buffers, over the `ranks_on_host` ranks of this host, exceed
/// what the host can give; says which options drive the figure.
pub fn check_buffers(
    spec: &DataSpec,
    ranks_on_host: u32,
    available: &Available,
    host: &str,
) -> Result<(), EngineError> {
    let need = buffers_per_rank(spec).saturating_mul(u64::from(ranks_on_host.max(1)));
    let mut drivers = format!("--threads {}", spec.threads);
    if spec.backend == BackendKind::Uring {
        drivers.push_str(&format!(" x --queue-depth {}", spec.queue_depth));
    }
    let option = if spec.has_size_mix() {
        "the largest of --block-sizes"
    } else {
        "--block-size"
    };
    drivers.push_str(&format!(" x {option} {}", ByteCount(spec.largest_io())));
    refuse_over(
        need,
        "--block-size",
        drivers,
        ranks_on_host,
        available,
        host,
    )
}

/// Refuses `need` bytes of buffers on this host when they exceed what it can give,
/// naming `option` and the options (`drivers`) that make the figure.
pub fn refuse_over(
    need: u64,
    option: &str,
    mut drivers: String,
    ranks_on_host: u32,
    available: &Available,
    host: &str,
) -> Result<(), EngineError> {
    let Some(have) = available.bytes() else {
        return Ok(());
    };
    if (need as f64) <= have as f64 * USABLE {
        return Ok(());
    }
    if ranks_on_host > 1 {
        drivers.push_str(&format!(" x {ranks_on_host} ranks on this host"));
    }
    let cgroup = match &available.cgroup {
        Some((room, name)) => format!("{} left under cgroup {name}", ByteCount(*room).human()),
        None => "no cgroup limit".to_string(),
    };
    let mem = available
        .mem_available
        .map_or("unknown".to_string(), |m| ByteCount(m).human());
    Err(EngineError::Spec(iolab_core::SpecError::new(
        option,
        format!(
            "{drivers} needs {} of I/O buffers on {host}, more than {:.0}% of the {} available (MemAvailable {mem}, {cgroup}): lower one of them",
            ByteCount(need).human(),
            USABLE * 100.0,
            ByteCount(have).human()
        ),
    )))
}

/// The maps of done blocks one rank's workers keep (random full coverage with sizes
/// drawn from a mix, as fio's random map): a bit per block of the smallest size.
pub fn maps_per_rank(plan: &crate::plan::DataPlan) -> u64 {
    let spec = &plan.spec;
    if crate::offsets::Order::of(spec) != crate::offsets::Order::Cover {
        return 0;
    }
    let unit = spec.unit().max(1);
    let [r, w] = spec.sizes();
    let maps: u64 = [r.smallest, w.smallest]
        .iter()
        .take(if r.smallest == w.smallest { 1 } else { 2 })
        .map(|s| {
            plan.workers
                .iter()
                .map(|wp| crate::offsets::map_bytes(wp.blocks / (s / unit).max(1)))
                .sum::<u64>()
        })
        .sum();
    maps
}

/// Refuses a phase whose maps of done blocks (see [`maps_per_rank`]), over the
/// `ranks_on_host` ranks of this host, exceed what the host can give.
pub fn check_maps(
    plan: &crate::plan::DataPlan,
    ranks_on_host: u32,
    available: &Available,
    host: &str,
) -> Result<(), EngineError> {
    let need = maps_per_rank(plan).saturating_mul(u64::from(ranks_on_host.max(1)));
    match available.bytes() {
        Some(have) if need as f64 > have as f64 * USABLE => {
            Err(EngineError::Spec(iolab_core::SpecError::new(
                "--random",
                format!(
                    "full-coverage with --block-sizes keeps a map of every block of each share: {} on {host}, more than {:.0}% of the {} available; use --random uniform or a smaller --size",
                    ByteCount(need).human(),
                    USABLE * 100.0,
                    ByteCount(have).human()
                ),
            )))
        }
        _ => Ok(()),
    }
}

/// How many ranks of the job run on this rank's host (collective).
pub fn ranks_on_this_host(comm: &dyn iolab_comm::Comm) -> u32 {
    use iolab_comm::CommExt;
    if comm.size() == 1 {
        return 1;
    }
    let topo = comm.topology();
    topo.ranks.iter().filter(|r| r.host == comm.host()).count() as u32
}

/// [`check_maps`] on this host, as it is now.
pub fn check_maps_here(
    plan: &crate::plan::DataPlan,
    ranks_on_host: u32,
) -> Result<(), EngineError> {
    check_maps(
        plan,
        ranks_on_host,
        &Available::read(Path::new("/")),
        &iolab_comm::hostname(),
    )
}

/// [`check_buffers`] on this host, as it is now.
pub fn check_buffers_here(spec: &DataSpec, ranks_on_host: u32) -> Result<(), EngineError> {
    check_buffers(
        spec,
        ranks_on_host,
        &Available::read(Path::new("/")),
        &iolab_comm::hostname(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(threads: u32, qd: u32, bs: u64, backend: BackendKind) -> DataSpec {
        DataSpec {
            threads,
            queue_depth: qd,
            block_size: ByteCount(bs),
            backend,
            ..DataSpec::default()
        }
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn buffers_are_threads_times_in_flight_times_blocks() {
        let big = spec(16, 4096, 1 << 20, BackendKind::Uring);
        assert_eq!(buffers_per_rank(&big), 64 << 30);
        // psync has one I/O in flight whatever the queue depth.
        assert_eq!(
            buffers_per_rank(&spec(16, 4096, 1 << 20, BackendKind::Psync)),
            16 << 20
        );
    }

    #[test]
    fn the_tightest_of_memavailable_and_the_cgroups_decides() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "proc/meminfo",
            "MemTotal: 25165824 kB\nMemAvailable: 20971520 kB\n",
        );
        write(root, "proc/self/cgroup", "0::/slurm/job42/step0\n");
        write(root, "sys/fs/cgroup/slurm/job42/step0/memory.max", "max\n");
        write(root, "sys/fs/cgroup/slurm/job42/memory.max", "4294967296\n");
        write(
            root,
            "sys/fs/cgroup/slurm/job42/memory.current",
            "1073741824\n",
        );
        let a = Available::read(root);
        assert_eq!(a.mem_available, Some(20 << 30));
        assert_eq!(a.cgroup, Some((3 << 30, "/slurm/job42".to_string())));
        assert_eq!(a.bytes(), Some(3 << 30));

        let big = spec(16, 4096, 1 << 20, BackendKind::Uring);
        let err = check_buffers(&big, 1, &a, "node7").unwrap_err().to_string();
        assert_eq!(
            err,
            "--block-size: --threads 16 x --queue-depth 4096 x --block-size 1MiB needs 64.0 GiB of I/O buffers on node7, more than 80% of the 3.00 GiB available (MemAvailable 20.0 GiB, 3.00 GiB left under cgroup /slurm/job42): lower one of them"
        );
        // 2 GiB of buffers fit in 80% of 3 GiB; two ranks on the host do not.
        let fits = spec(2, 1024, 1 << 20, BackendKind::Uring);
        assert!(check_buffers(&fits, 1, &a, "node7").is_ok());
        let err = check_buffers(&fits, 2, &a, "node7")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(" x 2 ranks on this host needs 4.00 GiB"),
            "{err}"
        );
    }

    #[test]
    fn nothing_known_refuses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let a = Available::read(dir.path());
        assert_eq!(a.bytes(), None);
        let big = spec(16, 4096, 1 << 20, BackendKind::Uring);
        assert!(check_buffers(&big, 1, &a, "n").is_ok());
    }
}
