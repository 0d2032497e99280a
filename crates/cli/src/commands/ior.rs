//! `iolab ior ...`: an IOR command line (POSIX) run on iolab's engine, one worker per rank
//! as IOR runs one task per rank, printed in IOR's layout (its "Results:" rows and
//! "Summary of all tests:") and stored as a run of kind "ior" with the command line in its
//! provenance, so that `compare` and `report` work on it. Options iolab does not run are
//! refused before anything runs (iolab_compat::ior_plan). The repetitions run in
//! `iolab_suites::ior::run_ior`; this command prints and stores them.

use anyhow::Result;
use clap::Args;
use iolab_comm::CommExt;
use iolab_compat::ior::parse_ior_args;
use iolab_compat::ior_output::{IorPhase, Job, RunFacts, TABLE_HEADER, header, row, summary};
use iolab_compat::ior_plan::{IorPlan, plan_ior};
use iolab_core::civil::ctime;
use iolab_core::result::PhaseResult;
use iolab_engine::MonotonicClock;
use iolab_suites::ior::{IorError, IorHooks, run_ior};

use crate::commands::finish::{abandon, finish_status};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

/// Run an IOR command line (POSIX API) on iolab's engine, with IOR's output.
#[derive(Args, Debug)]
pub struct IorArgs {
    #[command(flatten)]
    pub common: crate::args::FrontEndArgs,

    /// IOR's arguments, as IOR takes them (-a POSIX -b 1m -t 256k -s 4 -F -w -r -o DIR/f).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "IOR ARGS",
        required = true
    )]
    pub args: Vec<String>,
}

pub fn ior(args: IorArgs) -> Result<u8> {
    let options = parse_ior_args(&args.args)?;
    Runtime::with(|rt| {
        let topo = rt.comm.topology();
        let plan = rt.agree(
            plan_ior(&options, rt.comm.size(), topo.ranks_on_first_host())
                .map_err(anyhow::Error::from),
        )?;
        args.common.live.start(rt)?;
        ior_in(rt, &args, &plan)
    })
}

fn ior_in(rt: &Runtime, args: &IorArgs, plan: &IorPlan) -> Result<u8> {
    let o = &plan.options;
    crate::commands::finish::check_status_file(
        rt,
        o.stonewall_status_file.as_deref(),
        "-O stoneWallingStatusFile=",
    )?;
    let mut sink = RunSink::start(
        rt,
        args.common.recording(),
        "ior",
        serde_json::json!({ "ior": args.args, "write": plan.write, "read": plan.read }),
        plan.dir.display().to_string(),
        Some(&plan.dir),
    );
    let root = rt.is_root();
    let topo = rt.comm.topology();
    let job = Job {
        tasks: rt.comm.size(),
        tasks_on_node0: topo.ranks_on_first_host(),
    };
    let nodes = topo.hosts().len();
    if root {
        print_header(args, plan, job, nodes);
    }
    let watch = Watch::new(&args.common.output(), &sink, None);
    let env = watch.env(rt);
    let mut hooks = IorHooks {
        phase_ended: &|| watch.progress.finish(),
        on_phase: &mut |rep, f, phases| {
            if root {
                say_errors(&phases);
                print!("{}", row(o, f, rep));
            }
            sink.phases(phases);
        },
    };
    let run = match run_ior(&env, &MonotonicClock, plan, &mut hooks) {
        Ok(run) => run,
        Err(IorError::Engine(e)) => return Err(abandon(sink, e)),
        Err(IorError::Prepare(e)) => return Err(e.into()),
        Err(IorError::Cleanup(e)) => return Err(anyhow::Error::from(e).context("cleaning up")),
        Err(e) => return Err(e.into()),
    };
    let code = finish_status(&mut sink, rt.interrupted(), run.failed);
    if root {
        print_end(plan, job, &run.figures, &sink);
    }
    Ok(code)
}

/// IOR's opening block and the head of its results table.
fn print_header(args: &IorArgs, plan: &IorPlan, job: Job, nodes: usize) {
    let began = ctime(iolab_core::civil::now_ms());
    let facts = RunFacts {
        began: &began,
        args: &args.args,
        host: &iolab_comm::hostname(),
        path: &plan.dir.join("iolab-work"),
        nodes,
        bytes_per_rank: plan.bytes_per_rank,
    };
    print!("{}", header(&plan.options, job, &facts));
    print!("\nResults: \n\n{TABLE_HEADER}");
}

/// After the tables: what they mean here (an error before them stays one line), IOR's
/// summary, when it finished and where the run is stored.
fn print_end(plan: &IorPlan, job: Job, figures: &[IorPhase], sink: &RunSink) {
    for n in &plan.notes {
        eprintln!("iolab ior: note: {n}");
    }
    print!("{}", summary(&plan.options, job, figures));
    println!(
        "Finished            : {}",
        ctime(iolab_core::civil::now_ms())
    );
    if !sink.record.id.is_empty() {
        eprintln!("iolab ior: stored as {}", sink.record.id);
    }
}

/// What went wrong in a phase, on stderr (IOR prints "Incorrect data on read" for -R):
/// the counts and the first error, which names the file, offset and byte.
fn say_errors(phases: &[PhaseResult]) {
    for p in phases {
        if p.verify_failures > 0 {
            eprintln!(
                "iolab ior: {}: {} transfer(s) did not hold the data written",
                p.name, p.verify_failures
            );
        }
        if p.error_count > p.verify_failures {
            eprintln!(
                "iolab ior: {}: {} I/O error(s)",
                p.name,
                p.error_count - p.verify_failures
            );
        }
        if let Some(e) = p.errors.first() {
            eprintln!("iolab ior: {}: first: {}", p.name, e.message);
        }
    }
}
