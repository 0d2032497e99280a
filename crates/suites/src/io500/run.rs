//! Running the IO500 suite: [`run_io500`] runs IO500's phases in IO500's order on one
//! prepared target, with the data and metadata engines: write and create phases run for
//! the stonewall time with wear-out, and every read, stat and delete phase works on
//! exactly what its write phase did, shifted to another node's data where there are
//! several nodes. Each phase is handed to the caller as it ends, with its IO500 figure.

use std::collections::BTreeMap;
use std::path::PathBuf;

use iolab_comm::Topology;
use iolab_core::result::PhaseResult;
use iolab_core::spec::{FindSpec, FindWalk, MetaOp, MetaPaths, MetaSpec, NewerBy, SizeTest};

use super::plan::{PhasePlan, ior_file_names, plan_phases};
use super::record::figure_of;
use iolab_comm::CommExt;
use iolab_compat::io500::phases::{IorAccess, MdtestOp, MdtestTree, Workload};
use iolab_compat::io500::score::{PhaseFigure, Score, score};
use iolab_core::spec::io500::{FIND_NAME, FIND_SIZE, Io500Spec};
use iolab_engine::Clock;
use iolab_engine::EngineError;
use iolab_engine::Env;
use iolab_engine::PreparedTarget;
use iolab_engine::{DataOptions, run_data};
use iolab_engine::{MetaOptions, finish_meta, run_find, run_meta};

/// Random reads per rank of ior-rnd4K-easy-read (IO500 passes `-s=10000000`).
const IOR_RND4K_SEGMENTS: u64 = 10_000_000;

/// The file find's `-newer` compares against, in the work directory.
pub const TIMESTAMP_FILE: &str = "io500-timestamp";

/// What a suite run produced.
#[derive(Debug, Default)]
pub struct Io500Outcome {
    pub phases: Vec<PhaseResult>,
    pub figures: Vec<PhaseFigure>,
    pub score: Option<Score>,
    pub interrupted: bool,
    /// Data files this rank wrote (removed at cleanup unless kept).
    pub files: Vec<PathBuf>,
    /// Why the read phases' figures probably come from memory, when they do.
    pub cache_note: Option<String>,
}

impl Io500Outcome {
    /// What follows the phases' `[RESULT]` lines: the `[SCORE ]` line, why the run is
    /// not valid for submission (one line each), and the note on cached reads.
    pub fn score_lines(&self) -> Vec<String> {
        let Some(score) = &self.score else {
            return Vec::new();
        };
        let mut lines = vec![iolab_compat::io500::output::score_line(score)];
        lines.extend(
            score
                .reasons
                .iter()
                .map(|r| format!("invalid for submission: {r}")),
        );
        if let Some(note) = &self.cache_note {
            lines.push(format!("note: IOR read phases: {note}"));
        }
        lines
    }

    /// Whether the run failed (a phase of 0, I/O errors, a find that matched nothing), not
    /// only fell short of a valid submission (a short stonewall makes a test run).
    pub fn failed(&self) -> bool {
        self.score
            .as_ref()
            .is_some_and(|s| s.reasons.iter().any(|r| r.is_failure()))
    }
}

/// IO500's step before every phase: with `--drop-caches`, every node empties its whole
/// page cache (one rank per node does it), then all ranks meet, as IO500 runs its
/// `drop-caches-cmd` and an MPI_Barrier. Sets `note` when reads will probably be served
/// from memory: no drop on a single node (IO500: "needed for single node runs"), or a
/// drop that failed.
fn before_phase(env: &Env<'_>, spec: &Io500Spec, note: &mut Option<String>) {
    let comm = env.comm;
    let topology = comm.topology();
    if spec.drop_caches {
        let leader = topology.host_leader(comm.host()) == Some(comm.rank());
        let failed = leader
            .then(iolab_backend::files::drop_whole_page_cache)
            .and_then(Result::err);
        if !comm.all_ok(failed.is_none()) && note.is_none() {
            *note = Some(format!(
                "the page cache could not be emptied before every phase ({}): reads are probably served from memory",
                failed.unwrap_or_else(|| "on another node".into())
            ));
        }
    } else if topology.hosts().len() == 1 && note.is_none() {
        *note = Some(
            "page cache kept (IO500's default) on a single node: reads are probably served from memory; --drop-caches empties it before every phase, as IO500's drop-caches"
                .into(),
        );
    }
    comm.barrier();
}

/// IO500's `[debug] pause-dir`: rank 0 waits while DIR/<phase> exists (or until Ctrl-C),
/// then every rank goes on together.
fn pause(env: &Env<'_>, spec: &Io500Spec, phase: &str) {
    let Some(dir) = &spec.pause_dir else { return };
    let file = dir.join(phase);
    if env.comm.rank() == 0 && file.exists() {
        eprintln!(
            "iolab io500: paused before {phase} while {} exists",
            file.display()
        );
        while file.exists() && !env.interrupt.load(std::sync::atomic::Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    env.comm.barrier();
}

/// State carried from a write phase to the phases that work on what it did.
#[derive(Default)]
struct Carry {
    /// IOR write phase -> transfers each worker completed.
    written: BTreeMap<&'static str, Vec<u64>>,
    /// mdtest tree -> files each worker has in it.
    created: BTreeMap<&'static str, Vec<u64>>,
}

fn tree_of(tree: MdtestTree) -> &'static str {
    match tree {
        MdtestTree::DirPerRank => "mdtest-easy",
        MdtestTree::SharedDir => "mdtest-hard",
    }
}

/// IOR's `-C -Q q` read shift: readers move q nodes' worth of ranks on (IOR assumes
/// ranks placed node by node: q x the ranks of the first node), which is no move at all on
/// a single node.
fn ior_read_shift(topology: &Topology, q: u32) -> u32 {
    (q * topology.ranks_on_first_host()) % topology.size().max(1)
}

/// mdtest's `-N 1` as IO500 passes it: one rank on a single node, a node's worth of
/// ranks on several.
fn mdtest_shift(topology: &Topology) -> u32 {
    if topology.hosts().len() > 1 {
        topology.ranks_on_first_host()
    } else {
        1
    }
}

/// The metadata workload of an mdtest phase for one rank (one worker, as an mdtest
/// process): mdtest's whole paths, `-N 1` and, for the create phases, `-Y`.
fn mdtest_spec(
    spec: &Io500Spec,
    op: MdtestOp,
    tree: MdtestTree,
    file_size: u64,
    stonewalled: bool,
    shift: u32,
) -> MetaSpec {
    MetaSpec {
        shift: Some(shift),
        paths: MetaPaths::Whole,
        sync_after_create: op == MdtestOp::Create,
        threads: 1,
        files_per_dir: spec.files_per_rank,
        dirs_per_thread: Some(1),
        total_files: None,
        ops: vec![match op {
            MdtestOp::Create => MetaOp::Create,
            MdtestOp::Stat => MetaOp::Stat,
            MdtestOp::Read => MetaOp::Read,
            MdtestOp::Delete => MetaOp::Remove,
        }],
        file_size: iolab_core::units::ByteCount(file_size),
        shared_dir: tree == MdtestTree::SharedDir,
        runtime: stonewalled.then_some(spec.stonewall),
        wear_out: stonewalled,
        ..MetaSpec::default()
    }
}

/// Runs the suite; `on_phase` gets every phase (and its figure) as soon as it ends.
pub fn run_io500<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    spec: &Io500Spec,
    target: &PreparedTarget,
    on_phase: &mut dyn FnMut(&PhaseResult, &PhaseFigure),
) -> Result<Io500Outcome, EngineError> {
    spec.validate()?;
    let workdir = target
        .workdir()
        .ok_or_else(|| EngineError::Setup("IO500 runs in a directory: give --dir".into()))?;
    let plans = plan_phases(spec);
    let suite = Suite {
        env,
        clock,
        spec,
        target,
    };
    let mut carry = Carry::default();
    let mut out = Io500Outcome::default();
    let timestamp = workdir.join(TIMESTAMP_FILE);
    for plan in &plans {
        if env.interrupt.load(std::sync::atomic::Ordering::Relaxed) {
            out.interrupted = true;
            break;
        }
        if plan.def.workload != Workload::Timestamp {
            pause(env, spec, plan.def.name);
            before_phase(env, spec, &mut out.cache_note);
        }
        let mut phase = match plan.def.workload {
            Workload::Timestamp => {
                suite.write_timestamp(&timestamp)?;
                continue;
            }
            Workload::Ior { access, .. } => {
                suite.ior_phase(plan, access, &mut carry, &mut out.files)?
            }
            Workload::Mdtest {
                op,
                tree,
                file_size,
            } => suite.mdtest_phase(plan, (op, tree, file_size), &mut carry)?,
            Workload::Find => suite.find_phase(plan, workdir.path(), &timestamp)?,
        };
        if let Workload::Ior { access, .. } = plan.def.workload
            && access != IorAccess::Write
            && let Some(note) = &out.cache_note
        {
            phase.warnings.push(note.clone());
        }
        let fig = figure_of(&phase);
        on_phase(&phase, &fig);
        let stop = phase.interrupted;
        out.figures.push(fig);
        out.phases.push(phase);
        if stop {
            out.interrupted = true;
            break;
        }
    }
    finish_trees(env, spec, target, &carry)?;
    if !out.interrupted {
        out.score = Some(score(&out.figures, Some(spec.stonewall)));
    }
    Ok(out)
}

/// What every phase of one IO500 run shares.
struct Suite<'a, C> {
    env: &'a Env<'a>,
    clock: &'a C,
    spec: &'a Io500Spec,
    target: &'a PreparedTarget,
}

impl<C: Clock> Suite<'_, C> {
    /// The timestamp file the find phase's -newer compares with, made on rank 0 (in the
    /// work directory, noted as iolab's); every rank waits for it.
    fn write_timestamp(&self, timestamp: &std::path::Path) -> Result<(), EngineError> {
        if self.env.comm.rank() == 0 {
            if let Some(workdir) = self.target.workdir() {
                workdir.note_created(timestamp);
            }
            std::fs::write(timestamp, b"").map_err(|e| EngineError::WorkDirIo {
                op: "cannot write",
                path: timestamp.to_path_buf(),
                source: e,
            })?;
        }
        self.env.comm.barrier();
        Ok(())
    }

    /// The find phase with pfind's calls, test and walk: lstat of each name-matching
    /// entry by its whole path, -newer on the change time in seconds, one walker per rank
    /// stealing work as pfind does.
    fn find_phase(
        &self,
        plan: &PhasePlan,
        root: &std::path::Path,
        timestamp: &std::path::Path,
    ) -> Result<PhaseResult, EngineError> {
        let find = FindSpec {
            newer: Some(timestamp.to_path_buf()),
            size: Some(SizeTest::bytes(FIND_SIZE)),
            name: Some(FIND_NAME.to_string()),
            paths: MetaPaths::Whole,
            newer_by: NewerBy::CtimeSeconds,
            walk: FindWalk::Pfind,
            ..FindSpec::default()
        };
        let mut p = run_find(self.env, self.clock, &find, root)?;
        p.name = plan.def.name.to_string();
        p.params.extend(plan.params.clone());
        Ok(p)
    }

    /// An IOR phase: a read works on what its write completed; the files written are kept
    /// in `files` for the cleanup.
    fn ior_phase(
        &self,
        plan: &PhasePlan,
        access: IorAccess,
        carry: &mut Carry,
        files: &mut Vec<PathBuf>,
    ) -> Result<PhaseResult, EngineError> {
        let Suite {
            env,
            clock,
            spec,
            target,
        } = *self;
        let data = plan.data.as_ref().expect("IOR phases have a data workload");
        // A read works on exactly what its write completed, in its own transfer size.
        let written_blocks = plan
            .def
            .works_on
            .and_then(|w| carry.written.get(w))
            .map(|done| {
                let write_transfer = match plan.def.works_on {
                    Some("ior-easy-write") => spec.ior_easy_transfer.get(),
                    _ => data.block_size.get(),
                };
                done.iter()
                    .map(|d| d * write_transfer / data.block_size.get())
                    .collect()
            });
        // IOR -C -Q 1 on the reads, -C -Q 2 on the random 4 KiB read.
        let mut data = data.clone();
        let q = match access {
            IorAccess::Write => 0,
            IorAccess::Read => 1,
            IorAccess::RandomRead => 2,
        };
        data.read_shift = Some(ior_read_shift(&env.comm.topology(), q));
        let Workload::Ior { layout, .. } = plan.def.workload else {
            unreachable!("an IOR phase")
        };
        let opts = DataOptions {
            name: Some(plan.def.name.to_string()),
            params: plan.params.clone(),
            written_blocks,
            no_verify_pass: true,
            // IO500's cache policy is the suite's (before_phase), and so is its warning.
            own_cache_policy: true,
            names: ior_file_names(layout),
            // IOR -z -z -s 10000000: that many random 4 KiB reads (or the stonewall).
            ops_per_worker: (access == IorAccess::RandomRead).then_some(IOR_RND4K_SEGMENTS),
            ..DataOptions::default()
        };
        let mut outcome = run_data(env, clock, &data, target, &opts)?;
        if access == IorAccess::Write {
            carry
                .written
                .insert(plan.def.name, outcome.completed.clone());
            files.extend(outcome.files.iter().cloned());
        }
        Ok(outcome.phases.remove(0))
    }

    /// An mdtest phase on its tree, with the files an earlier phase created there.
    fn mdtest_phase(
        &self,
        plan: &PhasePlan,
        (op, tree, file_size): (MdtestOp, MdtestTree, u64),
        carry: &mut Carry,
    ) -> Result<PhaseResult, EngineError> {
        let Suite {
            env,
            clock,
            spec,
            target,
        } = *self;
        let tree_name = tree_of(tree);
        let shift = mdtest_shift(&env.comm.topology());
        let meta = mdtest_spec(spec, op, tree, file_size, plan.def.stonewalled, shift);
        let opts = MetaOptions {
            tree: Some(tree_name.to_string()),
            name_prefix: Some(plan.def.name.to_string()),
            params: plan.params.clone(),
            created: carry.created.get(tree_name).cloned(),
            ..MetaOptions::default()
        };
        let outcome = run_meta(env, clock, &meta, target, &opts)?;
        carry.created.insert(tree_name, outcome.created.clone());
        let mut phase = outcome
            .phases
            .into_iter()
            .next()
            .ok_or_else(|| EngineError::Setup(format!("{} ran no phase", plan.def.name)))?;
        phase.name = plan.def.name.to_string();
        Ok(phase)
    }
}

/// Removes the mdtest trees (their files are gone after the delete phases, or left by
/// an interrupted run).
fn finish_trees(
    env: &Env<'_>,
    spec: &Io500Spec,
    target: &PreparedTarget,
    carry: &Carry,
) -> Result<(), EngineError> {
    for (tree_name, created) in &carry.created {
        let tree = if *tree_name == "mdtest-hard" {
            MdtestTree::SharedDir
        } else {
            MdtestTree::DirPerRank
        };
        let meta = mdtest_spec(
            spec,
            MdtestOp::Delete,
            tree,
            0,
            false,
            mdtest_shift(&env.comm.topology()),
        );
        let opts = MetaOptions {
            tree: Some(tree_name.to_string()),
            ..MetaOptions::default()
        };
        let outcome = iolab_engine::MetaOutcome {
            phases: Vec::new(),
            created: created.clone(),
            made_tree: true,
            tree_exists: true,
        };
        finish_meta(env.comm, &meta, target, &opts, &outcome, false)?;
    }
    Ok(())
}
