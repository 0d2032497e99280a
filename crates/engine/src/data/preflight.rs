//! What is checked, and agreed across ranks, before a data phase runs: the same build and
//! spec everywhere ([`check_ranks_agree`]), the read shift, CPUs the process may use,
//! whole blocks, files every rank can see, and the space the phase needs.

use iolab_comm::{Comm, CommExt};
use iolab_core::spec::{DataSpec, Layout};

use crate::data::DataOptions;
use crate::error::EngineError;
use crate::plan::{DataPlan, DataTarget, PlanContext, plan_data};
use crate::target::{PreparedTarget, agree};

/// [`check_kept`](crate::kept::check_kept) for the files a job of `spec` and `opts`
/// reads on `target`, before anything of the job is prepared: a front-end refuses the
/// job early this way, in one line. Collective.
pub fn check_kept_for(
    comm: &dyn Comm,
    spec: &DataSpec,
    target: &PreparedTarget,
    opts: &DataOptions,
) -> Result<(), EngineError> {
    let ctx = PlanContext {
        rank: comm.rank(),
        ranks: comm.size(),
        names: opts.names.clone(),
        files_per_worker: opts.fio.files_per_worker,
        start_offset: opts.fio.start_offset.get(),
        offset_increment: opts.fio.offset_increment.get(),
        ..PlanContext::default()
    };
    let checked = plan_data(spec, &target.data_target(), &ctx)
        .map_err(EngineError::from)
        .and_then(|plan| crate::kept::check_kept(&plan.files, target.workdir(), spec));
    agree(comm, checked)
}

/// The read shift a spec asks for, resolved against the topology: by default each rank
/// reads what a rank on the next host wrote (IOR -C) when the ranks work in one
/// directory (`one_dir`: the same path on every rank, a shared file system); its own data
/// on one host, on a device, or where `{host}`/`{rank}` gave each its own directory.
pub fn resolve_read_shift(spec: &DataSpec, comm: &dyn Comm, one_dir: bool) -> u32 {
    spec.read_shift.unwrap_or_else(|| {
        let topo = comm.topology();
        if topo.hosts().len() > 1 && one_dir {
            topo.ranks_per_host()
        } else {
            0
        }
    })
}

/// Says so when the size asked for is not a whole number of blocks per worker: the
/// workload moves whole blocks, and what it moves is what it reports.
pub(super) fn rounding_note(spec: &DataSpec) -> Option<String> {
    // Shares are cut to whole I/Os of the larger size when writes have their own.
    let bs = spec.largest_io().max(1);
    let (option, asked) = match (spec.size, spec.total_size) {
        (Some(s), _) => ("--size", s.get()),
        (None, Some(t)) => ("--total-size", t.get()),
        _ => return None,
    };
    let moved = asked / bs * bs;
    (moved != asked).then(|| {
        format!(
            "{option} of {asked} bytes is not a whole number of {bs}-byte blocks: {moved} bytes{} are used",
            if option == "--size" { " per thread" } else { "" }
        )
    })
}

/// Whether every rank works in the same directory (collective).
pub(super) fn one_dir(comm: &dyn Comm, target: &DataTarget) -> Result<bool, EngineError> {
    let DataTarget::Dir(dir) = target else {
        return Ok(false);
    };
    let dirs: Vec<String> = comm
        .all_gather(&dir.to_string_lossy().into_owned())
        .map_err(|e| EngineError::Setup(e.to_string()))?;
    Ok(dirs.iter().all(|d| *d == dirs[0]))
}

static BUILD: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Records the revision this iolab was built from (the CLI knows it), so ranks running
/// different builds of one version are told apart at startup.
pub fn set_build_revision(revision: &str) {
    let _ = BUILD.set(revision.to_string());
}

/// "0.1.0", or "0.1.0 (3f2a9c1d0e4b)" when the revision is known.
fn build() -> String {
    match BUILD.get().filter(|r| !r.is_empty()) {
        Some(rev) => format!("{} ({rev})", env!("CARGO_PKG_VERSION")),
        None => env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// Fails unless every rank runs the same iolab build (version and revision) with the same
/// resolved spec. Ranks compare a SHA-256 of the two with rank 0's (one 32-byte broadcast
/// and one reduction whatever the job size); only when some rank differs do the ranks
/// exchange the settings themselves, to name the rank, its host and the first setting
/// that differs.
pub fn check_ranks_agree<T: serde::Serialize>(
    comm: &dyn Comm,
    what: &'static str,
    value: &T,
) -> Result<(), EngineError> {
    use sha2::{Digest, Sha256};
    if comm.size() == 1 {
        return Ok(());
    }
    let mine = (build(), serde_json::to_value(value).unwrap_or_default());
    let text = serde_json::to_vec(&mine).unwrap_or_default();
    let hash = Sha256::digest(&text);
    let rank0 = comm.broadcast_bytes(0, hash.as_slice());
    if comm.all_ok(rank0.as_slice() == hash.as_slice()) {
        return Ok(());
    }
    // Some rank differs: rank 0's settings and those of the ranks that differ travel.
    let differs = rank0.as_slice() != hash.as_slice() || comm.rank() == 0;
    let all: Vec<Option<(String, serde_json::Value)>> = comm
        .all_gather(&differs.then(|| mine.clone()))
        .map_err(|e| EngineError::Setup(e.to_string()))?;
    let topo = comm.topology();
    let Some(Some((v0, s0))) = all.first() else {
        return Err(EngineError::Setup("rank 0 sent no settings".into()));
    };
    for (rank, theirs) in all.iter().enumerate().skip(1) {
        let Some((version, spec)) = theirs else {
            continue;
        };
        let mismatch =
            |what: &'static str, rank0: String, other: String| EngineError::RankMismatch {
                what,
                rank: rank as u32,
                host: topo.ranks[rank].host.clone(),
                rank0,
                other,
            };
        if version != v0 {
            return Err(mismatch(
                "the iolab version",
                format!("iolab {v0}"),
                format!("iolab {version}"),
            ));
        }
        if spec != s0 {
            let (key, a, b) = first_difference(s0, spec);
            return Err(mismatch(
                what,
                format!("{key} = {a}"),
                format!("{key} = {b}"),
            ));
        }
    }
    Err(EngineError::Setup(format!(
        "ranks disagree on {what}, but none differs from rank 0 when compared in full"
    )))
}

/// The first top-level field where two JSON objects differ: (field, left, right).
fn first_difference(a: &serde_json::Value, b: &serde_json::Value) -> (String, String, String) {
    if let (Some(ma), Some(mb)) = (a.as_object(), b.as_object()) {
        for (k, va) in ma {
            let vb = mb.get(k).cloned().unwrap_or(serde_json::Value::Null);
            if *va != vb {
                return (k.clone(), va.to_string(), vb.to_string());
            }
        }
    }
    ("the spec".to_string(), a.to_string(), b.to_string())
}

/// Every CPU of `--cpus` must be one this process may run on (pinning to another would
/// silently fail and change the placement asked for).
pub fn check_cpus(cpus: Option<&iolab_core::units::CpuList>) -> Result<(), EngineError> {
    let Some(cpus) = cpus else {
        return Ok(());
    };
    let allowed = iolab_backend::process::allowed_cpus();
    if let Some(bad) = cpus.0.iter().find(|c| !allowed.contains(c)) {
        return Err(EngineError::Spec(iolab_core::SpecError::new(
            "--cpus",
            format!(
                "CPU {bad} is not one this process may run on ({} on {})",
                iolab_core::units::CpuList(allowed),
                iolab_comm::hostname()
            ),
        )));
    }
    Ok(())
}

/// Every file this rank works on exists here once its owner laid it out: a directory
/// the ranks do not share (node-local storage, `{host}` or `{rank}` in `--dir`) would
/// otherwise end a shifted read or an N-1 phase on a bare "no such file".
pub(super) fn check_visible(
    plan: &DataPlan,
    target: &DataTarget,
    host: &str,
) -> Result<(), EngineError> {
    if !matches!(target, DataTarget::Dir(_)) {
        return Ok(());
    }
    let threads = plan.spec.threads.max(1) as u64;
    for f in &plan.files {
        if plan.owned_files.contains(f) || iolab_backend::vfs::exists(&f.path) {
            continue;
        }
        let shared = plan.spec.layout == Layout::Shared;
        let owner = if shared {
            0
        } else {
            f.owner_at(0, 1) / threads
        };
        let (option, advice) = if shared {
            ("--dir", "a shared file needs a directory every rank shares")
        } else {
            (
                "--read-shift",
                "use a directory every rank shares, or --read-shift 0 to read what each rank wrote itself",
            )
        };
        return Err(EngineError::Spec(iolab_core::SpecError::new(
            option,
            format!(
                "rank {} on {host} cannot see {}, which rank {owner} laid out: the ranks do not share this directory (node-local storage, or {{host}}/{{rank}} in --dir); {advice}",
                plan.rank,
                f.path.display()
            ),
        )));
    }
    Ok(())
}

pub(super) fn check_space(
    comm: &dyn Comm,
    plan: &DataPlan,
    target: &PreparedTarget,
) -> Result<(), EngineError> {
    let PreparedTarget::Dir { workdir, .. } = target else {
        return Ok(());
    };
    // What a phase writes while it runs is bounded by its time when it is stonewalled,
    // not by its nominal size; the files a reading phase needs are laid out in full
    // before it starts, stonewall or not (a random read of IOR's -s 10000000 4 KiB
    // transfers would otherwise fill the file system untimed).
    let lays_out = plan.spec.rw.needs_data();
    let writes_unbounded = plan.spec.rw.writes() && plan.spec.stonewall.is_none();
    if !lays_out && !writes_unbounded {
        return Ok(());
    }
    let result = if comm.rank() == 0 {
        // Files that already hold enough data need no new space.
        let layout: u64 = plan
            .files
            .iter()
            .filter(|f| workdir.file_info(&f.path).is_none_or(|i| i.size < f.size))
            .map(|f| f.size)
            .sum();
        let need = if lays_out { layout } else { 0 }.max(if writes_unbounded {
            plan.total_bytes
        } else {
            0
        });
        workdir.check_space(need)
    } else {
        Ok(())
    };
    agree(comm, result)
}
