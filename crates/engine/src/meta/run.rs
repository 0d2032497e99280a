//! A metadata workload from start to end on every rank: [`run_meta`] checks that ranks
//! agree, plans, finds or builds the tree (untimed unless mkdir is a phase), and runs each
//! phase of `--ops` through the shared phase runner, carrying the files each worker
//! created into the later phases (stonewall: exactly what exists). [`finish_meta`] then
//! keeps the tree (with its record) or removes it.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU32;

use iolab_backend::meta::{MetaBackend, meta_backend};
use iolab_comm::{Comm, CommExt};
use iolab_core::result::{PhaseKind, PhaseResult};
use iolab_core::spec::{MetaBackendKind, MetaOp, MetaPaths, MetaSpec};

use crate::assemble::{PhaseMeta, assemble};
use crate::clock::Clock;
use crate::data::{check_cpus, check_ranks_agree, memory_total};
use crate::error::EngineError;
use crate::meta::plan::{MetaPlan, TreeShape};
use crate::meta::tree::{TreeState, keep_tree, make_tree, remove_tree, tree_state};
use crate::meta::worker::{PhaseSetup, run_worker};
use crate::meta_error::MetaError;
use crate::phase::{Env, PhaseRun, run_phase};
use crate::target::{PreparedTarget, agree};

/// The directory of the tree in the work directory when none is given.
pub const DEFAULT_TREE: &str = "meta";

/// How a metadata workload fits into a larger run.
#[derive(Clone, Debug, Default)]
pub struct MetaOptions {
    /// The tree's directory in the work directory (default "meta"); IO500 keeps
    /// "mdtest-easy" and "mdtest-hard" side by side.
    pub tree: Option<String>,
    /// Phases are named `<prefix>-<op>` (default: the operation, "create", "stat", ...).
    pub name_prefix: Option<String>,
    pub repetition: u32,
    /// Extra coordinates (a study's sweep values).
    pub params: BTreeMap<String, String>,
    /// Files each worker (global index) has in the tree from an earlier `run_meta` of this
    /// process with the same spec: IO500 creates, and later stats and removes, one tree.
    pub created: Option<Vec<u64>>,
    /// The work directory is the tree's root and holds the trees directly: the mdtest
    /// front-end's, which is mdtest's `<-d>/test-dir.<iteration>-0` (`tree` unused).
    pub in_workdir: bool,
}

/// The phases a metadata workload produced and the state it left the tree in.
#[derive(Debug)]
pub struct MetaOutcome {
    pub phases: Vec<PhaseResult>,
    /// Files of each worker (global index) in the tree at the end.
    pub created: Vec<u64>,
    /// This run made the tree (create or mkdir), so by default it removes it too.
    pub made_tree: bool,
    /// The tree's directories are still there (false after an rmdir phase).
    pub tree_exists: bool,
}

/// The stat, read and remove shift a spec asks for, resolved against the topology: by
/// default the next host's ranks when there are several hosts working in one tree (a
/// shared file system), else each rank's own files.
pub fn resolve_shift(spec: &MetaSpec, comm: &dyn Comm, one_tree: bool) -> u32 {
    spec.shift.unwrap_or_else(|| {
        let topo = comm.topology();
        if topo.hosts().len() > 1 && one_tree {
            topo.ranks_per_host()
        } else {
            0
        }
    })
}

/// The metadata backend on `target` naming files as `paths` says: the timed phases use
/// the spec's, the untimed tree setup and cleanup directory-relative calls (they list
/// directories and open each once).
fn backend_for(spec: &MetaSpec, target: &PreparedTarget, paths: MetaPaths) -> Box<dyn MetaBackend> {
    match target {
        PreparedTarget::Dir { .. } => meta_backend(spec.backend, paths),
        _ => meta_backend(MetaBackendKind::Null, paths),
    }
}

/// This rank's plan. Collective: every rank calls it.
pub fn plan_meta(
    comm: &dyn Comm,
    spec: &MetaSpec,
    target: &PreparedTarget,
    opts: &MetaOptions,
) -> Result<MetaPlan, EngineError> {
    let tree = opts.tree.as_deref().unwrap_or(DEFAULT_TREE);
    let (root, touches_storage) = match target {
        PreparedTarget::Dir { workdir, .. } => (
            if opts.in_workdir {
                workdir.path().to_path_buf()
            } else {
                workdir.join(tree)
            },
            meta_backend(spec.backend, spec.paths)
                .capabilities()
                .touches_storage,
        ),
        PreparedTarget::Device { .. } => return Err(MetaError::NeedsDir.into()),
        PreparedTarget::Null => (
            std::path::PathBuf::from("/nonexistent-null").join(tree),
            false,
        ),
    };
    // The lowest rank with this host and root makes and removes the shared parts.
    let mine = root.to_string_lossy().into_owned();
    let roots: Vec<String> = comm
        .all_gather(&mine)
        .map_err(|e| EngineError::Setup(e.to_string()))?;
    let topo = comm.topology();
    let me = comm.rank() as usize;
    let leader = (0..roots.len())
        .find(|&r| roots[r] == mine && topo.ranks[r].host == topo.ranks[me].host)
        == Some(me);
    let ranks = comm.size();
    // Checked in u64 first: the tree's limit keeps the product inside u32.
    let leaves = spec.dirs_per_thread_for(u64::from(ranks) * u64::from(spec.threads))?;
    let workers = ranks * spec.threads;
    let one_tree = roots.iter().all(|r| *r == roots[0]);
    let shift = resolve_shift(spec, comm, one_tree);
    Ok(MetaPlan {
        spec: spec.clone(),
        rank: comm.rank(),
        ranks,
        threads: spec.threads,
        workers,
        files_per_dir: spec.files_per_dir,
        shape: TreeShape {
            leaves,
            depth: spec.depth,
            branching: spec.branching,
        },
        root,
        trees_in_root: opts.in_workdir,
        shift,
        leader,
        touches_storage,
    })
}

/// Runs a metadata workload on every rank. Rank 0's `phases` are the results to report;
/// the other ranks get the same. A tree this run made is removed again if it fails.
pub fn run_meta<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    spec: &MetaSpec,
    target: &PreparedTarget,
    opts: &MetaOptions,
) -> Result<MetaOutcome, EngineError> {
    let comm = env.comm;
    spec.validate()?;
    check_ranks_agree(comm, "the workload", spec)?;
    agree(comm, check_cpus(spec.cpus.as_ref()))?;
    let backend = backend_for(spec, target, spec.paths);
    let tree_backend = backend_for(spec, target, MetaPaths::Relative);
    let plan = plan_meta(comm, spec, target, opts)?;
    let (created, made_tree) = starting_files(comm, &plan, opts)?;
    if made_tree
        && let Err(e) = make_tree(comm, &plan, tree_backend.as_ref(), !spec.has(MetaOp::Mkdir))
    {
        let _ = remove_tree(comm, &plan, tree_backend.as_ref());
        return Err(e);
    }
    let mut tree = TreeNow {
        created,
        exists: true,
    };
    match run_phases(env, clock, &plan, backend.as_ref(), opts, &mut tree) {
        Ok(phases) => Ok(MetaOutcome {
            phases,
            created: tree.created,
            made_tree,
            tree_exists: tree.exists,
        }),
        Err(e) => {
            if made_tree {
                let _ = remove_tree(comm, &plan, tree_backend.as_ref());
            }
            Err(e)
        }
    }
}

/// The files each worker has before the first phase, and whether this run makes the tree.
fn starting_files(
    comm: &dyn Comm,
    plan: &MetaPlan,
    opts: &MetaOptions,
) -> Result<(Vec<u64>, bool), EngineError> {
    if let Some(c) = &opts.created {
        if c.len() != plan.workers as usize {
            return Err(MetaError::WorkerCount {
                expected: plan.workers as usize,
                given: c.len(),
            }
            .into());
        }
        return Ok((c.clone(), false));
    }
    let state = agree(comm, tree_state(plan))?;
    // Every rank sees the same tree; rank 0's record speaks for all.
    let state = match state {
        TreeState::New => None,
        TreeState::Kept(c) => Some(c),
    };
    let state: Option<Vec<u64>> = comm
        .broadcast(0, &state)
        .map_err(|e| EngineError::Setup(e.to_string()))?;
    Ok(match state {
        None => (vec![0; plan.workers as usize], true),
        Some(c) => (c, false),
    })
}

/// The tree between phases: the files each worker has in it, and whether it is there.
struct TreeNow {
    created: Vec<u64>,
    exists: bool,
}

fn run_phases<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    plan: &MetaPlan,
    backend: &dyn MetaBackend,
    opts: &MetaOptions,
    tree: &mut TreeNow,
) -> Result<Vec<PhaseResult>, EngineError> {
    let comm = env.comm;
    let host = comm.host().to_string();
    let mut phases = Vec::new();
    for &op in &plan.spec.ops {
        let name = match &opts.name_prefix {
            Some(p) => format!("{p}-{}", op.name()),
            None => op.name().to_string(),
        };
        let counts = tree.created.clone();
        let workers_left = AtomicU32::new(plan.threads);
        let wear_out = op == MetaOp::Create && plan.spec.wear_out;
        let run = run_phase(
            env,
            clock,
            &name,
            plan.threads as usize,
            wear_out,
            |i, control| {
                let setup = PhaseSetup {
                    plan,
                    op,
                    backend,
                    control,
                    clock,
                    host: &host,
                    counts: &counts,
                    workers_left: &workers_left,
                };
                run_worker(&setup, i)
            },
        )?;
        let completed = run.completed_by_worker();
        let items = planned_items(plan, op, &counts);
        let mut phase = assemble(phase_meta(plan, op, &name, items, opts), &run);
        after_phase(plan, op, &completed, tree, &run);
        // Every rank decides alike: on the errors of all ranks, not its own.
        let stop = run.interrupted || run.errors > 0;
        phase
            .params
            .insert("done".into(), completed.iter().sum::<u64>().to_string());
        phases.push(phase);
        if stop {
            break;
        }
    }
    Ok(phases)
}

/// Files (or directories) the phase was to work on, over all workers.
fn planned_items(plan: &MetaPlan, op: MetaOp, counts: &[u64]) -> u64 {
    match op {
        MetaOp::Create => plan.items_per_worker() * plan.workers as u64,
        MetaOp::Stat | MetaOp::Read | MetaOp::Remove => counts.iter().sum(),
        MetaOp::Mkdir | MetaOp::Rmdir => (0..plan.workers)
            .map(|g| {
                plan.dirs_to_make(g)
                    .iter()
                    .map(|d| d.names.len() as u64)
                    .sum::<u64>()
            })
            .sum(),
    }
}

/// Carries what a phase did into the state the next phase starts from.
fn after_phase(plan: &MetaPlan, op: MetaOp, completed: &[u64], tree: &mut TreeNow, run: &PhaseRun) {
    let created = &mut tree.created;
    match op {
        MetaOp::Create => {
            let n = created.len();
            created.copy_from_slice(&completed[..n]);
        }
        MetaOp::Remove => {
            for (g, done) in completed.iter().enumerate() {
                let owner = plan.owner_of(g as u32, MetaOp::Remove);
                let have = &mut created[owner as usize];
                if *done >= *have {
                    *have = 0;
                }
            }
        }
        MetaOp::Rmdir => tree.exists = run.errors > 0 || run.interrupted,
        _ => {}
    }
}

/// A metadata phase's name, parameters and warnings, as stored.
fn phase_meta(
    plan: &MetaPlan,
    op: MetaOp,
    name: &str,
    items: u64,
    opts: &MetaOptions,
) -> PhaseMeta {
    let mut params = meta_params(plan, op, items);
    params.extend(opts.params.clone());
    PhaseMeta {
        name: name.to_string(),
        kind: Some(PhaseKind::Meta),
        params,
        repetition: opts.repetition,
        spec: serde_json::to_value(&plan.spec).unwrap_or_default(),
        warnings: meta_warnings(plan, op, items),
    }
}

/// The parameters of `op`'s phase over `items` items: the tree's shape and what differs
/// from mdtest's defaults.
fn meta_params(plan: &MetaPlan, op: MetaOp, items: u64) -> BTreeMap<String, String> {
    let spec = &plan.spec;
    let mut p = BTreeMap::new();
    p.insert("op".into(), op.name().into());
    p.insert("threads".into(), spec.threads.to_string());
    p.insert("ranks".into(), plan.ranks.to_string());
    p.insert("files_per_dir".into(), spec.files_per_dir.to_string());
    p.insert("dirs_per_thread".into(), plan.shape.leaves.to_string());
    p.insert("file_size".into(), spec.file_size.get().to_string());
    p.insert(
        "layout".into(),
        if spec.shared_dir {
            "shared-dir"
        } else {
            "private-dirs"
        }
        .into(),
    );
    p.insert("depth".into(), spec.depth.to_string());
    if spec.depth > 0 {
        p.insert("branching".into(), spec.branching.to_string());
    }
    p.insert("items".into(), items.to_string());
    if matches!(op, MetaOp::Stat | MetaOp::Read | MetaOp::Remove) && plan.ranks > 1 {
        p.insert("shift".into(), plan.shift.to_string());
    }
    if op == MetaOp::Create
        && let Some(r) = spec.runtime
    {
        p.insert("stonewall".into(), r.to_string());
    }
    if spec.backend == MetaBackendKind::Null {
        p.insert("backend".into(), "null".into());
    }
    p.insert("paths".into(), spec.paths.name().into());
    if spec.items == iolab_core::spec::MetaItems::Dirs {
        p.insert("items".into(), "dirs".into());
    }
    if op == MetaOp::Create && spec.sync_after_create {
        p.insert("sync_after_create".into(), "true".into());
    }
    if spec.sync_after_every_phase {
        p.insert("sync_after_phase".into(), "true".into());
    }
    p
}

/// The warnings of `op`'s phase: calls mdtest would not make, a note on the files'
/// total, reads the page cache may serve.
fn meta_warnings(plan: &MetaPlan, op: MetaOp, items: u64) -> Vec<String> {
    let spec = &plan.spec;
    let mut warnings = Vec::new();
    if spec.paths == MetaPaths::Relative && spec.backend == MetaBackendKind::Posix {
        warnings.push(
            "--paths relative: calls relative to an open directory (openat, fstatat, unlinkat) walk no path; mdtest passes whole paths, so this figure is not comparable with mdtest's"
                .into(),
        );
    }
    if op == plan.spec.ops[0]
        && let Some(note) = spec.total_files_note(u64::from(plan.workers))
    {
        warnings.push(note);
    }
    let bytes = items.saturating_mul(spec.file_size.get());
    // Only a kernel's file system has a page cache to serve them: libnfs keeps none.
    if op == MetaOp::Read
        && spec.backend == MetaBackendKind::Posix
        && bytes > 0
        && plan.owner_of(0, MetaOp::Read) == 0
        && let Some(mem) = memory_total()
        && bytes < mem
    {
        warnings.push(format!(
            "reads of {} in {items} files on a host with {} of memory: the page cache may be serving them (read files another node wrote, with ranks on several hosts, or more data than memory)",
            iolab_core::units::ByteCount(bytes).human(),
            iolab_core::units::ByteCount(mem).human()
        ));
    }
    warnings
}

/// Ends a workload's use of its tree: keeps it with a record of its files when asked to
/// (or when this run found it kept and left files in it), else removes what iolab made.
/// Returns warnings about anything left behind.
///
/// Collective, like [`run_meta`]: every rank calls it with the same arguments.
pub fn finish_meta(
    comm: &dyn Comm,
    spec: &MetaSpec,
    target: &PreparedTarget,
    opts: &MetaOptions,
    outcome: &MetaOutcome,
    keep: bool,
) -> Result<Vec<String>, EngineError> {
    let plan = plan_meta(comm, spec, target, opts)?;
    let backend = backend_for(spec, target, MetaPaths::Relative);
    let files_left = outcome.created.iter().any(|c| *c > 0);
    // A run that only stats or reads a tree it found leaves it, and its record, as they
    // were: it writes nothing (over NFSv4, where libnfs 4.0 cannot write, it could not).
    let changes = spec.ops.iter().any(|o| {
        matches!(
            o,
            MetaOp::Create | MetaOp::Remove | MetaOp::Mkdir | MetaOp::Rmdir
        )
    });
    if outcome.tree_exists && !outcome.made_tree && !changes && files_left {
        return Ok(Vec::new());
    }
    if outcome.tree_exists && (keep || (files_left && !outcome.made_tree)) {
        keep_tree(comm, &plan, &outcome.created)?;
        return Ok(Vec::new());
    }
    remove_tree(comm, &plan, backend.as_ref())
}
