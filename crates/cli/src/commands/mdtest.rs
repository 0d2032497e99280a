//! `iolab mdtest ...`: an mdtest command line (files, POSIX) run on iolab's metadata engine
//! with mdtest's calls and tree, one worker per rank as mdtest runs one task per rank,
//! printed in mdtest's layout (its header and SUMMARY table) and stored as a run of kind
//! "mdtest" with the command line in its provenance.

use anyhow::{Context, Result};
use clap::Args;
use iolab_comm::CommExt;
use iolab_compat::mdtest::MdtestOptions;
use iolab_compat::mdtest::parse_mdtest_args;
use iolab_compat::mdtest_front::{Iteration, MdtestPlan, plan_mdtest, summary};
use iolab_compat::rank_details::{Measured, mdtest_rank_lines};
use iolab_core::civil::UtcTime;
use iolab_core::result::PhaseResult;
use iolab_core::spec::{BackendKind, MetaItems, MetaOp, TargetSpec};
use iolab_engine::EngineError;
use iolab_engine::{MetaError, MetaOptions, finish_meta, run_meta};
use iolab_engine::{MonotonicClock, prepare_target_named};

use crate::commands::finish::{abandon, cleanup, finish_status};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

/// Run an mdtest command line (files, POSIX) on iolab's engine, with mdtest's output.
#[derive(Args, Debug)]
pub struct MdtestArgs {
    #[command(flatten)]
    pub common: crate::args::FrontEndArgs,

    /// mdtest's arguments, as mdtest takes them (-n 1000 -u -F -d DIR).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "MDTEST ARGS",
        required = true
    )]
    pub args: Vec<String>,
}

pub fn mdtest(args: MdtestArgs) -> Result<u8> {
    let options = parse_mdtest_args(&args.args)?;
    // mdtest makes a missing -d and, in a call that removes, takes it away again at the
    // end (rmdir: only when empty, so nothing of anyone else's goes with it). Looked at
    // before the ranks' first collective, so before any of them can have made it.
    let missing = !std::path::Path::new(&options.test_dir).exists();
    Runtime::with(|rt| {
        let topo = rt.comm.topology();
        let plan = rt.agree(
            plan_mdtest(&options, topo.ranks_on_first_host(), topo.hosts().len())
                .map_err(anyhow::Error::from),
        )?;
        args.common.live.start(rt)?;
        run_mdtest(rt, &args, &plan, missing && rt.is_root())
    })
}

/// mdtest's time stamps: "11/25/2026 08:35:13".
fn stamp() -> String {
    let t = UtcTime::from_ms(iolab_core::civil::now_ms());
    format!(
        "{:02}/{:02}/{} {:02}:{:02}:{:02}",
        t.month, t.day, t.year, t.hour, t.minute, t.second
    )
}

/// `made_dir`: this is rank 0 and -d was missing before the run (this call makes it).
fn run_mdtest(rt: &Runtime, args: &MdtestArgs, plan: &MdtestPlan, made_dir: bool) -> Result<u8> {
    let o = &plan.options;
    crate::commands::finish::check_status_file(
        rt,
        o.stonewall_status_file.as_deref(),
        "mdtest -x ",
    )?;
    let target = TargetSpec {
        dir: Some(o.test_dir.clone().into()),
        create_dir: true,
        ..TargetSpec::default()
    };
    let both = plan.tests.len() > 1;
    let mut sink = RunSink::start(
        rt,
        args.common.recording(),
        "mdtest",
        serde_json::json!({ "mdtest": args.args, "tests": plan.tests }),
        o.test_dir.clone(),
        Some(std::path::Path::new(&o.test_dir)),
    );
    let root = rt.is_root();
    let tasks = rt.comm.size();
    // A collective: every rank, before only rank 0 prints.
    let nodes = rt.comm.topology().hosts().len();
    if root {
        print_header(args, plan, tasks, nodes);
    }
    let output = args.common.output();
    let mut iterations = Vec::new();
    let mut failed = false;
    for it in 0..o.iterations.max(1) {
        let mut figures = Iteration::default();
        let mut phases = Vec::new();
        for test in &plan.tests {
            let work = test_dir_name(it, test.items, both);
            let watch = Watch::new(&output, &sink, None);
            let ran = run_test(rt, &watch, plan, test, it, (&target, &work))
                .map_err(|e| e.map_engine(|e| in_mdtest_terms(e, o)));
            let ran = match ran {
                Ok((r, left)) => {
                    for w in left {
                        if rt.is_root() {
                            eprintln!("iolab mdtest: warning: {w}");
                        }
                        sink.record.warnings.push(w);
                    }
                    r
                }
                Err(TestError::Engine(e)) => return Err(abandon(sink, e)),
                Err(TestError::Other(e)) => return Err(e),
            };
            failed |= add_figures(&mut figures, test.items, &ran);
            phases.extend(ran);
        }
        save_rank_details(rt, plan, &figures, &phases)?;
        iterations.push(figures);
        sink.phases(phases);
    }
    let interrupted = rt.interrupted();
    if made_dir && o.remove {
        let _ = std::fs::remove_dir(&o.test_dir);
    }
    let code = finish_status(&mut sink, interrupted, failed);
    if root {
        print_end(plan, &iterations, &sink);
    }
    Ok(code)
}

/// Adds each phase's figures (its items of its operation, its seconds) of a test of
/// `items` to an iteration's; whether a phase failed (I/O errors, verify failures).
fn add_figures(figures: &mut Iteration, items: MetaItems, ran: &[PhaseResult]) -> bool {
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

/// mdtest's lines after its runs: iolab's notes, the summary tables, when it finished
/// and where the run is stored.
fn print_end(plan: &MdtestPlan, iterations: &[Iteration], sink: &RunSink) {
    for n in &plan.notes {
        eprintln!("iolab mdtest: note: {n}");
    }
    print!("{}", summary(plan, iterations, false));
    if plan.options.print_both {
        print!("{}", summary(plan, iterations, true));
    }
    println!("-- finished at {} --\n", stamp());
    if !sink.record.id.is_empty() {
        eprintln!("iolab mdtest: stored as {}", sink.record.id);
    }
}

/// mdtest's lines before its tables: when it started, the tasks and nodes, the command
/// line, the path, and the items in all.
fn print_header(args: &MdtestArgs, plan: &MdtestPlan, tasks: u32, nodes: usize) {
    let quoted: Vec<String> = args.args.iter().map(|a| format!("'{a}'")).collect();
    println!("-- started at {} --\n", stamp());
    println!(
        "mdtest-iolab-{} was launched with {tasks} total task(s) on {} node(s)",
        env!("CARGO_PKG_VERSION"),
        nodes
    );
    println!("Command line used: mdtest {}", quoted.join(" "));
    println!("{:<20}: {}", "Path", plan.options.test_dir);
    let what = match (
        plan.tests.iter().any(|t| t.items == MetaItems::Dirs),
        plan.tests.iter().any(|t| t.items == MetaItems::Files),
    ) {
        (true, true) => "files/directories",
        (true, false) => "directories",
        _ => "files",
    };
    println!(
        "{tasks} tasks, {} {what}",
        plan.items_per_task * u64::from(tasks)
    );
}

/// Why a test of an iteration stopped: the engine's error (the run is abandoned with
/// it), or another (already said in one line).
enum TestError {
    Engine(EngineError),
    Other(anyhow::Error),
}

impl TestError {
    fn map_engine(self, f: impl FnOnce(EngineError) -> EngineError) -> TestError {
        match self {
            TestError::Engine(e) => TestError::Engine(f(e)),
            other => other,
        }
    }
}

impl From<anyhow::Error> for TestError {
    fn from(e: anyhow::Error) -> Self {
        TestError::Other(e)
    }
}

/// The directory iteration `it` works in, mdtest's `<-d>/test-dir.<it>-0`, which iolab
/// creates, marks and locks as its work directory and in which it makes mdtest's trees
/// (`mdtest_tree.0/`, `mdtest_tree.<task>.0/`): mdtest's paths, at mdtest's depth. With
/// both tests (neither -F nor -D) the directory test, which mdtest runs in the same
/// directory before the file test, works beside it in `test-dir.<it>-0.dirs` (each
/// test's tree keeps its own record for later calls), at the same depth.
fn test_dir_name(it: u32, items: MetaItems, both: bool) -> String {
    match (items, both) {
        (MetaItems::Dirs, true) => format!("test-dir.{it}-0.dirs"),
        _ => format!("test-dir.{it}-0"),
    }
}

/// One test (directories or files) of iteration `it`, watched by `watch`: its phases, on
/// its tree in its work directory ([`test_dir_name`]), kept for a later call unless this
/// one removes; with -x, the items each task reached written for that call.
fn run_test(
    rt: &Runtime,
    watch: &Watch,
    plan: &MdtestPlan,
    test: &iolab_core::spec::MetaSpec,
    it: u32,
    (target, work): (&TargetSpec, &str),
) -> std::result::Result<(Vec<iolab_core::result::PhaseResult>, Vec<String>), TestError> {
    let o = &plan.options;
    let comm = rt.comm.as_ref();
    let prepared = prepare_target_named(comm, target, BackendKind::Psync, true, work)
        .map_err(TestError::Engine)?;
    let env = watch.env(rt);
    let opts = MetaOptions {
        in_workdir: true,
        repetition: it,
        ..MetaOptions::default()
    };
    let outcome = run_meta(&env, &MonotonicClock, test, &prepared, &opts);
    watch.progress.finish();
    // mdtest leaves the tree to a later call unless this one removes it (IO500 runs -C,
    // -T, -E and -r as calls of their own): kept with its record of the items.
    let keep = !o.remove;
    let tree = match &outcome {
        Ok(out) => finish_meta(comm, test, &prepared, &opts, out, keep).map(Some),
        Err(_) => Ok(None),
    };
    let cleaned = cleanup(comm, prepared, &[], false);
    let outcome = outcome.map_err(TestError::Engine)?;
    let left = tree.map_err(TestError::Engine)?.unwrap_or_default();
    cleaned?;
    // -x: the items each task reached (after a stonewall, the most any did), as mdtest
    // writes them for a later call.
    if let Some(file) = &o.stonewall_status_file
        && test.has(MetaOp::Create)
    {
        let written = if rt.is_root() {
            let most = outcome.created.iter().copied().max().unwrap_or(0);
            std::fs::write(file, most.to_string())
                .map_err(|e| anyhow::anyhow!("mdtest -x {file}: {e}"))
        } else {
            Ok(())
        };
        rt.agree(written)?;
    }
    Ok((outcome.phases, left))
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
    EngineError::Spec(iolab_core::error::SpecError::new(
        format!("mdtest {phase}"),
        said,
    ))
}

/// `--saveRankPerformanceDetails=F`: rank 0 appends mdtest's lines for the iteration.
fn save_rank_details(
    rt: &Runtime,
    plan: &MdtestPlan,
    all: &Iteration,
    phases: &[iolab_core::result::PhaseResult],
) -> Result<()> {
    let Some(path) = &plan.options.rank_details else {
        return Ok(());
    };
    let result = if rt.is_root() {
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
        let text = mdtest_rank_lines(plan.items_per_task, &all.phases, &per_rank);
        iolab_suites::ior::append(path, &text)
            .with_context(|| format!("--saveRankPerformanceDetails={path}"))
    } else {
        Ok(())
    };
    rt.agree(result)
}
