//! mdtest's run on iolab's metadata engine: [`run_test`] runs one test (directories or
//! files) of an iteration of an mdtest plan (iolab_compat::mdtest_front) on its tree in
//! its work directory ([`test_dir_name`]), with mdtest's side file (-x); [`add_figures`]
//! folds its phases into the iteration's figures and [`rank_details`] gives them per
//! rank as `--saveRankPerformanceDetails` appends them. Errors say what an mdtest user
//! meets ([`MdtestError`]).

use iolab_comm::Comm;
use iolab_compat::mdtest::MdtestOptions;
use iolab_compat::mdtest_front::{Iteration, MdtestPlan};
use iolab_compat::rank_details::{Measured, mdtest_rank_lines};
use iolab_core::error::SpecError;
use iolab_core::result::PhaseResult;
use iolab_core::spec::{BackendKind, MetaItems, MetaOp, MetaSpec, TargetSpec};
use iolab_engine::{Clock, EngineError, Env, MetaError, MetaOptions};
use iolab_engine::{finish_meta, finish_target, prepare_target_named, run_meta};

/// Why a test stopped.
#[derive(Debug, thiserror::Error)]
pub enum MdtestError {
    /// The engine's (the run is abandoned with it), in mdtest's terms.
    #[error(transparent)]
    Engine(EngineError),
    /// The test's files could not be removed after it.
    #[error("cleaning up")]
    Cleanup(#[source] EngineError),
    /// -x's file could not be written (one rank: as it failed).
    #[error("{0}")]
    SideFile(String),
    /// The same, on several ranks: every rank's error, naming the first that failed.
    #[error(transparent)]
    Agreed(EngineError),
}

/// A test of iteration `it` of a plan.
pub struct MdtestTest<'a> {
    pub plan: &'a MdtestPlan,
    pub test: &'a MetaSpec,
    pub it: u32,
}

/// The directory iteration `it` works in, mdtest's `<-d>/test-dir.<it>-0`, which iolab
/// creates, marks and locks as its work directory and in which it makes mdtest's trees
/// (`mdtest_tree.0/`, `mdtest_tree.<task>.0/`): mdtest's paths, at mdtest's depth. With
/// both tests (neither -F nor -D) the directory test, which mdtest runs in the same
/// directory before the file test, works beside it in `test-dir.<it>-0.dirs` (each
/// test's tree keeps its own record for later calls), at the same depth.
pub fn test_dir_name(it: u32, items: MetaItems, both: bool) -> String {
    match (items, both) {
        (MetaItems::Dirs, true) => format!("test-dir.{it}-0.dirs"),
        _ => format!("test-dir.{it}-0"),
    }
}

/// One test of an iteration, its phases reporting to `env` (`phase_ended` called when
/// they return): its phases, on its tree in its work directory ([`test_dir_name`]), kept
/// for a later call unless this one removes, and what of the tree is left to say; with
/// -x, the items each task reached written for that call.
pub fn run_test<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    at: &MdtestTest<'_>,
    phase_ended: &dyn Fn(),
) -> Result<(Vec<PhaseResult>, Vec<String>), MdtestError> {
    let MdtestTest { plan, test, it } = *at;
    let o = &plan.options;
    let comm = env.comm;
    let target = TargetSpec {
        dir: Some(o.test_dir.clone().into()),
        create_dir: true,
        ..TargetSpec::default()
    };
    let work = test_dir_name(it, test.items, plan.tests.len() > 1);
    let in_terms = |e| MdtestError::Engine(in_mdtest_terms(e, o));
    let prepared =
        prepare_target_named(comm, &target, BackendKind::Psync, true, &work).map_err(in_terms)?;
    let opts = MetaOptions {
        in_workdir: true,
        repetition: it,
        ..MetaOptions::default()
    };
    let outcome = run_meta(env, clock, test, &prepared, &opts);
    phase_ended();
    // mdtest leaves the tree to a later call unless this one removes it (IO500 runs -C,
    // -T, -E and -r as calls of their own): kept with its record of the items.
    let keep = !o.remove;
    let tree = match &outcome {
        Ok(out) => finish_meta(comm, test, &prepared, &opts, out, keep).map(Some),
        Err(_) => Ok(None),
    };
    let cleaned = finish_target(comm, prepared, &[], false);
    let outcome = outcome.map_err(in_terms)?;
    let left = tree.map_err(in_terms)?.unwrap_or_default();
    cleaned.map_err(MdtestError::Cleanup)?;
    // -x: the items each task reached (after a stonewall, the most any did), as mdtest
    // writes them for a later call.
    if let Some(file) = &o.stonewall_status_file
        && test.has(MetaOp::Create)
    {
        let written = if comm.rank() == 0 {
            let most = outcome.created.iter().copied().max().unwrap_or(0);
            std::fs::write(file, most.to_string()).map_err(|e| format!("mdtest -x {file}: {e}"))
        } else {
            Ok(())
        };
        agree(comm, written)?;
    }
    Ok((outcome.phases, left))
}

/// Every rank learns whether rank 0's step succeeded (one rank: the error as it is).
fn agree(comm: &dyn Comm, step: Result<(), String>) -> Result<(), MdtestError> {
    if comm.size() == 1 {
        return step.map_err(MdtestError::SideFile);
    }
    iolab_engine::agree(comm, step.map_err(EngineError::Setup)).map_err(MdtestError::Agreed)
}

/// The tree errors of the metadata engine said as an mdtest user meets them: a call of
/// -T, -E or -r works on the tree an earlier -C call with the same options left.
fn in_mdtest_terms(e: EngineError, o: &MdtestOptions) -> EngineError {
    let phase = if o.create {
        "-C"
    } else if o.stat {
        "-T"
    } else if o.read {
        "-E"
    } else {
        "-r"
    };
    let said = match e {
        EngineError::Meta(MetaError::NoTree { root }) => format!(
            "no tree in {} from an earlier mdtest -C call with this -d: run the -C call first",
            root.display()
        ),
        EngineError::Meta(MetaError::TreeKept { root }) => format!(
            "{} holds the files of an earlier -C call: work on them with -T, -E or -r (-r removes them) before creating anew",
            root.display()
        ),
        EngineError::Meta(MetaError::LayoutMismatch { root, kept, asked }) => format!(
            "the tree in {} was made with {kept}, but this call asks for {asked}: give the -n, -u, -z, -b, -w and -N of the -C call",
            root.display()
        ),
        other => return other,
    };
    EngineError::Spec(SpecError::new(format!("mdtest {phase}"), said))
}

/// Adds each phase's figures (its items of its operation, its seconds) of a test of
/// `items` to an iteration's; whether a phase failed (I/O errors, verify failures).
pub fn add_figures(figures: &mut Iteration, items: MetaItems, ran: &[PhaseResult]) -> bool {
    let mut failed = false;
    for p in ran {
        failed |= p.error_count > 0 || p.verify_failures > 0;
        let op = [MetaOp::Create, MetaOp::Stat, MetaOp::Read, MetaOp::Remove]
            .into_iter()
            .find(|op| p.op(op.op_kind()).is_some());
        if let Some(op) = op {
            let done = p.op(op.op_kind()).map_or(0, |r| r.ops);
            figures
                .phases
                .push((items, op, done, p.elapsed.as_secs_f64()));
        }
    }
    failed
}

/// `--saveRankPerformanceDetails`' lines for an iteration (`all` its figures, `phases`
/// its phases): each rank's items and seconds of each phase, as mdtest writes them.
pub fn rank_details(plan: &MdtestPlan, all: &Iteration, phases: &[PhaseResult]) -> String {
    let ranks = phases.first().map_or(0, |p| p.per_rank.len());
    let per_rank: Vec<Vec<Measured>> = (0..ranks)
        .map(|r| {
            phases
                .iter()
                .zip(&all.phases)
                .filter_map(|(p, &(kind, op, _, _))| {
                    let rank = p.per_rank.get(r)?;
                    let items = rank.ops.get(&op.op_kind()).map_or(0, |c| c.ops);
                    Some((kind, op, items, rank.elapsed.as_secs_f64()))
                })
                .collect()
        })
        .collect();
    mdtest_rank_lines(plan.items_per_task, &all.phases, &per_rank)
}
