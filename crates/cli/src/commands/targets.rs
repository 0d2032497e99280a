//! `iolab targets`: a data workload on every storage target at once (or one at a time),
//! reported as BeeGFS StorageBench does (minimum and maximum with node and target id,
//! average, aggregate, and with --verbose every target) plus the targets and nodes that
//! fall below their peers. `iolab targets analyze FILE` runs the same analysis on saved
//! beegfs-ctl output. Targets are paths (on every host; under MPI the ranks of a host
//! share its targets) or a targets file whose node column places each target on its host.

mod analyze;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use iolab_comm::Comm;
use iolab_core::SpecError;
use iolab_core::inventory::Inventory;
use iolab_core::result::RunStatus;
use iolab_core::spec::{DataSpec, TargetEntry, TargetsSpec, parse_targets};
use iolab_engine::{EngineError, MonotonicClock};
use iolab_suites::targets::{
    PrepareOptions, TargetSet, TargetsPhase, cleanup_targets, prepare_targets, run_targets_with,
};

use crate::args::OutputArgs;
use crate::commands::finish::conclude;
use crate::commands::run::check_block_align;
use crate::live::targets::TargetInfo;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

#[derive(Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    mut_arg("rw", |a| a.default_value("write")),
    mut_arg("threads", |a| a.help("Worker threads per target")),
    mut_arg("total_size", |a| a.help("Data per target, split evenly over its threads")),
    mut_arg("rate_iops", |a| a.help("Limit the rate of each target's threads together (I/Os per second)"))
)]
pub struct TargetsArgs {
    #[command(subcommand)]
    pub action: Option<TargetsAction>,

    #[command(flatten)]
    pub targets: TargetsSpec,

    #[command(flatten)]
    pub spec: DataSpec,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Subcommand, Debug)]
pub enum TargetsAction {
    /// Find slow targets and nodes in saved output of
    /// `beegfs-ctl --storagebench --alltargets --status --verbose`.
    Analyze(analyze::AnalyzeArgs),
}

pub fn targets(args: TargetsArgs) -> Result<u8> {
    if let Some(TargetsAction::Analyze(a)) = args.action {
        return analyze::analyze(a);
    }
    Runtime::with(|rt| targets_in(rt, args))
}

fn targets_in(rt: &Runtime, args: TargetsArgs) -> Result<u8> {
    rt.agree(
        args.targets
            .validate()
            .and_then(|()| args.spec.validate())
            .map_err(anyhow::Error::from)
            .and_then(|()| args.output.prepare(rt)),
    )?;
    let comm = rt.comm.as_ref();
    let set = prepare(comm, &args)?;
    let mut set = agree_block_align(rt, &args, set)?;
    let spec = serde_json::json!({
        "targets": args.targets,
        "workload": args.spec,
        "list": set.all,
    });
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "targets",
        spec,
        describe(&args.targets, set.all.len()),
        set.local.first().map(|t| t.target.entry.path.as_path()),
    );
    let inventory = sink.record.provenance.inventory.clone();
    show_live(&args, &set);
    // Each phase is stored, and shown on the live page, as soon as it ended.
    let mut keep = |p: &TargetsPhase| {
        if let Some(live) = crate::live::current() {
            live.targets_done(&p.summary, &p.targets);
        }
        sink.keep(p.summary.clone());
        for t in &p.targets {
            sink.keep(t.clone());
        }
    };
    let outcome = measure(rt, &args, &mut set, inventory.as_ref(), &mut keep);
    let cleaned = cleanup_targets(comm, set, args.targets.keep).context("cleaning up");
    let phases = match outcome {
        Ok(p) => p,
        Err(e) => {
            sink.finish(RunStatus::Failed);
            return Err(e.into());
        }
    };
    cleaned?;
    print_and_conclude(rt, &args.output, sink, &phases, args.targets.verbose)
}

/// Prints the targets' report on rank 0 (every target with `verbose`) and where it is
/// stored; then stores the run, writes --json and decides the exit code.
fn print_and_conclude(
    rt: &Runtime,
    output: &OutputArgs,
    sink: RunSink,
    phases: &[TargetsPhase],
    verbose: bool,
) -> Result<u8> {
    let show = rt.is_root() && !output.quiet;
    if show {
        print!(
            "{}",
            iolab_report::targets::render_targets(&sink.record, phases, verbose)
        );
    }
    if show && !sink.record.id.is_empty() {
        println!("stored as {}", sink.record.id);
    }
    // The results are printed above; conclude stores, writes --json and decides the
    // exit code.
    let quiet = OutputArgs {
        quiet: true,
        ..output.clone()
    };
    conclude(rt, sink, &quiet)
}

/// Checks the options and prepares every rank's targets.
fn prepare(comm: &dyn Comm, args: &TargetsArgs) -> Result<TargetSet> {
    let rws = args.targets.plan_phases(&args.spec)?;
    let entries = entries_of(&args.targets)?;
    let opts = PrepareOptions {
        backend: args.spec.backend,
        writes: rws.iter().any(|r| r.writes()) || args.spec.verify,
        allow_destroy: args.targets.allow_destroy,
        direct: args.spec.direct,
    };
    Ok(prepare_targets(comm, &entries, opts)?)
}

/// Refuses a --block-align larger than the share each of a target's threads draws its
/// random offsets in, as `run` does (no I/O would fit), agreed by all ranks before
/// anything is stored or written; on a refusal the targets' files go again.
fn agree_block_align(rt: &Runtime, args: &TargetsArgs, set: TargetSet) -> Result<TargetSet> {
    let aligned = set.local.iter().try_for_each(|t| {
        let target = t.prepared.data_target();
        check_block_align(&args.spec, &target, args.spec.threads).map_err(|e| {
            let id = &t.target.entry.id;
            SpecError::new(e.option, format!("target {id}: {}", e.reason))
        })
    });
    match rt.agree(aligned.map_err(anyhow::Error::from)) {
        Ok(()) => Ok(set),
        Err(e) => {
            let _ = cleanup_targets(rt.comm.as_ref(), set, args.targets.keep);
            Err(e)
        }
    }
}

/// Runs the phases with live progress.
fn measure(
    rt: &Runtime,
    args: &TargetsArgs,
    set: &mut TargetSet,
    inventory: Option<&Inventory>,
    done: &mut dyn FnMut(&TargetsPhase),
) -> Result<Vec<TargetsPhase>, EngineError> {
    let paths: Vec<&std::path::Path> = set
        .local
        .iter()
        .map(|t| t.target.entry.path.as_path())
        .collect();
    let watch = Watch::for_paths(&args.output, inventory, &paths);
    let progress = &watch.progress;
    let env = watch.env(rt);
    let outcome = run_targets_with(&env, &MonotonicClock, set, &args.targets, &args.spec, done);
    progress.finish();
    outcome
}

/// Tells the live state (rank 0) the phases to come and the targets they run on.
fn show_live(args: &TargetsArgs, set: &TargetSet) {
    let rws = args.targets.plan_phases(&args.spec).unwrap_or_default();
    // A time-based phase takes its runtime, once per target when one at a time.
    let each = if args.targets.one_at_a_time {
        set.all.len() as f64
    } else {
        1.0
    };
    crate::live::plan(rws.into_iter().map(|rw| {
        let spec = DataSpec {
            rw,
            ..args.spec.clone()
        };
        let estimate = spec.runtime.map(|r| r.as_secs_f64() * each);
        (spec.name(), estimate)
    }));
    crate::live::targets(
        set.all
            .iter()
            .map(|t| TargetInfo {
                id: t.entry.id.clone(),
                host: t.host.clone(),
                path: t.entry.path.display().to_string(),
            })
            .collect(),
    );
}

/// The targets of the run: the targets file's, or one per path on every host.
fn entries_of(spec: &TargetsSpec) -> Result<Vec<TargetEntry>> {
    if let Some(file) = &spec.targets_file {
        let name = file.display().to_string();
        let text = iolab_core::input::read_text(file).context("--targets-file")?;
        return Ok(parse_targets(&name, &text)?);
    }
    Ok(spec
        .paths
        .iter()
        .map(|p| TargetEntry {
            id: p.display().to_string(),
            node: String::new(),
            path: p.clone(),
            rated: None,
        })
        .collect())
}

fn describe(spec: &TargetsSpec, count: usize) -> String {
    match &spec.targets_file {
        Some(f) => format!("{count} targets from {}", f.display()),
        None => {
            let paths: Vec<String> = spec.paths.iter().map(|p| p.display().to_string()).collect();
            paths.join(" ")
        }
    }
}
