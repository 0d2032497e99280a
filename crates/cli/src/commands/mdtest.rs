//! `iolab mdtest ...`: an mdtest command line (files, POSIX) run on iolab's metadata engine
//! with mdtest's calls and tree, one worker per rank as mdtest runs one task per rank,
//! printed in mdtest's layout (its header and SUMMARY table) and stored as a run of kind
//! "mdtest" with the command line in its provenance.

use anyhow::{Context, Result};
use clap::Args;
use iolab_comm::CommExt;
use iolab_compat::mdtest::parse_mdtest_args;
use iolab_compat::mdtest_front::{Iteration, MdtestPlan, plan_mdtest, summary};
use iolab_core::civil::UtcTime;
use iolab_core::result::PhaseResult;
use iolab_core::spec::MetaItems;
use iolab_engine::MonotonicClock;
use iolab_suites::mdtest::{MdtestError, MdtestTest, add_figures, rank_details, run_test};

use crate::args::OutputArgs;
use crate::commands::finish::{abandon, finish_status};
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
        let (figures, bad, phases) = match run_iteration(rt, plan, it, &mut sink, &output) {
            Ok(r) => r,
            Err(e) => return Err(ended_on(sink, e)),
        };
        failed |= bad;
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

/// Iteration `it`'s tests, each watched on its own (what of a tree is left to say goes
/// to stderr and the run's warnings): its figures, whether a phase failed, its phases.
fn run_iteration(
    rt: &Runtime,
    plan: &MdtestPlan,
    it: u32,
    sink: &mut RunSink,
    output: &OutputArgs,
) -> Result<(Iteration, bool, Vec<PhaseResult>), MdtestError> {
    let mut figures = Iteration::default();
    let mut phases = Vec::new();
    let mut failed = false;
    for test in &plan.tests {
        let watch = Watch::new(output, sink, None);
        let at = MdtestTest { plan, test, it };
        let ended = || watch.progress.finish();
        let (ran, left) = run_test(&watch.env(rt), &MonotonicClock, &at, &ended)?;
        for w in left {
            if rt.is_root() {
                eprintln!("iolab mdtest: warning: {w}");
            }
            sink.record.warnings.push(w);
        }
        failed |= add_figures(&mut figures, test.items, &ran);
        phases.extend(ran);
    }
    Ok((figures, failed, phases))
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

/// The run's end on a test's error: the engine's abandons the run with it (stored as
/// failed or interrupted); the others are said in one line.
fn ended_on(sink: RunSink, e: MdtestError) -> anyhow::Error {
    match e {
        MdtestError::Engine(e) => abandon(sink, e),
        MdtestError::Cleanup(e) => anyhow::Error::from(e).context("cleaning up"),
        MdtestError::Agreed(e) => e.into(),
        MdtestError::SideFile(e) => anyhow::anyhow!(e),
    }
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
        let text = rank_details(plan, all, phases);
        iolab_suites::ior::append(path, &text)
            .with_context(|| format!("--saveRankPerformanceDetails={path}"))
    } else {
        Ok(())
    };
    rt.agree(result)
}
