//! `iolab io500 run|plan|score`: run the suite (or print IO500's command lines for it
//! with --dry-run), plan a run (`plan`: phases, parameters, capacity, time), and read,
//! check and store an IO500 result (`score`). Results print as IO500 prints them:
//! `[RESULT]` lines, then the `[SCORE ]` line.

mod plan;
mod score;

use plan::plan;
use score::score;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use iolab_comm::CommExt;
use iolab_core::civil::now_ms;
use iolab_core::spec::{BackendKind, TargetSpec};
use iolab_core::units::ByteCount;
use iolab_engine::agree;
use iolab_engine::{EngineError, MonotonicClock, prepare_target};
use iolab_suites::io500::{Io500Config, Io500Outcome, Io500Spec, ResultDir, run_io500};

use crate::args::OutputArgs;
use crate::commands::finish::{abandon, cleanup, conclude};
use crate::exit;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

/// `iolab io500 --dir D ...` runs the suite (as `iolab io500 run`); `plan` and `score`
/// are subcommands.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Io500Args {
    #[command(subcommand)]
    pub command: Option<Io500Command>,

    #[command(flatten)]
    pub run: Io500RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum Io500Command {
    /// Run the IO500 phases in IO500's order in a directory, print the [RESULT] lines and
    /// the score, write a result directory and store the run (the default: `iolab io500
    /// --dir D` is the same).
    Run(Io500RunArgs),
    /// Print the phases in IO500's order with their parameters, and the capacity and time
    /// a run will need.
    Plan(Io500PlanArgs),
    /// Read an IO500 result (IO500's result.txt / result_summary.txt, or iolab's result
    /// directory), recompute its score and check it; exits 1 when the result is not valid
    /// for submission or does not agree with itself.
    Score(Io500ScoreArgs),
}

#[derive(Args, Debug)]
pub struct Io500RunArgs {
    /// Directory to run in (required); its last level is made when missing, as IO500 makes
    /// its datadir (the parent must exist).
    #[arg(short = 'd', long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    #[command(flatten)]
    pub spec: Io500Spec,

    /// Where to write the result (result.txt, config.json, phases.json, hash.txt): a new
    /// or empty directory [default: io500-results/<date-time> in the current directory,
    /// numbered -2, -3, ... when taken].
    #[arg(long, value_name = "DIR")]
    pub result_dir: Option<PathBuf>,

    /// Keep the files the suite wrote.
    #[arg(long)]
    pub keep: bool,

    /// Run nothing: print, per phase, the ior/mdtest/pfind command line IO500 runs for the
    /// same settings (its result.txt's `exe = ...`), and the config.ini that gives them.
    #[arg(long)]
    pub dry_run: bool,

    /// With --dry-run: the timestamp IO500 is given (`io500 --timestamp T`), which seeds
    /// its -G values [default: now, as YYYY.MM.DD-HH.MM.SS].
    #[arg(long, requires = "dry_run", value_name = "T")]
    pub timestamp: Option<String>,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct Io500PlanArgs {
    /// The directory it would run in (to check free space and inodes).
    #[arg(short = 'd', long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Ranks it would run on (MPI processes; IO500's procs).
    #[arg(long, default_value_t = 1)]
    pub ranks: u32,

    #[command(flatten)]
    pub spec: Io500Spec,

    /// ior-easy bandwidth of all ranks together assumed for the estimate, per second.
    #[arg(long, default_value = "1GiB", value_name = "BYTES_PER_SEC")]
    pub assume_bandwidth: ByteCount,

    /// ior-hard bandwidth of all ranks together assumed for the estimate, per second.
    #[arg(long, default_value = "100MiB", value_name = "BYTES_PER_SEC")]
    pub assume_hard_bandwidth: ByteCount,

    /// Files created, stat'ed, read or deleted per second by all ranks together.
    #[arg(long, default_value_t = 10_000.0, value_name = "FILES_PER_SEC")]
    pub assume_file_rate: f64,

    /// Directory entries find examines per second.
    #[arg(long, default_value_t = 100_000.0, value_name = "ENTRIES_PER_SEC")]
    pub assume_find_rate: f64,

    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct Io500ScoreArgs {
    /// A result file (result.txt, result_summary.txt, IO500's output) or a directory
    /// holding one (IO500's results/<timestamp>, or iolab's result directory).
    #[arg(value_name = "DIR_OR_FILE")]
    pub path: PathBuf,

    /// Store the result as a run of kind io500, to compare with iolab's own runs.
    #[arg(long)]
    pub import: bool,

    /// A label for the imported run ("lustre-2.15-isc24").
    #[arg(long, requires = "import")]
    pub label: Option<String>,

    /// Print the result and its check as JSON.
    #[arg(long)]
    pub json: bool,

    /// Results database for --import [default: $IOLAB_DB, else
    /// ~/.local/share/iolab/results.db].
    #[arg(long, value_name = "FILE", requires = "import")]
    pub db: Option<PathBuf>,
}

pub fn io500(args: Io500Args) -> Result<u8> {
    match args.command {
        Some(Io500Command::Run(a)) => run(a),
        Some(Io500Command::Plan(a)) => plan(a),
        Some(Io500Command::Score(a)) => score(a),
        None => run(args.run),
    }
}

fn run(args: Io500RunArgs) -> Result<u8> {
    let Some(dir) = args.dir.clone() else {
        bail!("io500: give --dir DIR to run the suite (or plan, score: see iolab io500 --help)");
    };
    args.spec.validate()?;
    if args.dry_run {
        return dry_run(&dir, &args);
    }
    Runtime::with(|rt| run_in(rt, &dir, args))
}

/// `--dry-run`: IO500's command lines for these settings, as `io500 config.ini
/// --dry-run --timestamp T` prints them, with the config.ini that gives them.
fn dry_run(dir: &Path, args: &Io500RunArgs) -> Result<u8> {
    let timestamp = match &args.timestamp {
        Some(t) => t.clone(),
        None => ResultDir::default_path(now_ms())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    print!(
        "{}",
        iolab_compat::io500::commands::dry_run_text(&args.spec, dir, &timestamp)
    );
    Ok(exit::OK)
}

/// Rank 0's result directory (None on the other ranks), made before anything runs; a
/// failure stops every rank.
fn make_result_dir(rt: &Runtime, given: Option<&Path>) -> Result<Option<ResultDir>> {
    let made = if rt.is_root() {
        match given {
            Some(given) => ResultDir::create(given, false),
            None => ResultDir::create(&ResultDir::default_path(now_ms()), true),
        }
        .map(Some)
        // The message is what the agreement carries to every rank.
        .map_err(|e| EngineError::Setup(e.to_string()))
    } else {
        Ok(None)
    };
    Ok(agree(rt.comm.as_ref(), made)?)
}

fn run_in(rt: &Runtime, dir: &Path, args: Io500RunArgs) -> Result<u8> {
    rt.agree(args.output.prepare(rt))?;
    let result_dir = make_result_dir(rt, args.result_dir.as_deref())?;
    let target_spec = TargetSpec {
        dir: Some(dir.to_path_buf()),
        keep: args.keep,
        // IO500 creates its datadir; so does iolab io500 (its last level).
        create_dir: true,
        ..TargetSpec::default()
    };
    let target = prepare_target(rt.comm.as_ref(), &target_spec, BackendKind::Psync, true)?;
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "io500",
        serde_json::json!({ "spec": args.spec }),
        dir.display().to_string(),
        Some(dir),
    );
    let config = Io500Config {
        tool: format!("iolab {}", env!("CARGO_PKG_VERSION")),
        ranks: rt.comm.size(),
        target: dir.display().to_string(),
        spec: args.spec.clone(),
    };
    let outcome = run_phases(rt, &args, &target, &mut sink, &config);
    let files = outcome
        .as_ref()
        .map(|o| o.files.clone())
        .unwrap_or_default();
    let cleaned = cleanup(rt.comm.as_ref(), target, &files, args.keep);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return Err(abandon(sink, e)),
    };
    cleaned?;
    verdict(
        rt,
        sink,
        &outcome,
        result_dir.as_ref(),
        &config,
        &args.output,
    )
}

/// The suite's phases on the prepared target: the header, then each phase's line as it
/// ends (rank 0, unless quiet), each phase stored as it ends.
fn run_phases(
    rt: &Runtime,
    args: &Io500RunArgs,
    target: &iolab_engine::PreparedTarget,
    sink: &mut RunSink,
    config: &Io500Config,
) -> Result<Io500Outcome, EngineError> {
    plan_live(&args.spec, rt.comm.size());
    let watch = Watch::new(&args.output, sink, None);
    let progress = &watch.progress;
    let env = watch.env(rt);
    let root = rt.is_root() && !args.output.quiet;
    if root {
        println!("{}", iolab_suites::io500::output::header(config));
    }
    let outcome = run_io500(
        &env,
        &MonotonicClock,
        &args.spec,
        target,
        &mut |phase, fig| {
            progress.finish();
            if root {
                println!("{}", iolab_suites::io500::phase_line(fig));
            }
            sink.phase(phase.clone());
        },
    );
    progress.finish();
    outcome
}

/// The live display's plan: every phase's estimate at `io500 plan`'s assumed rates; the
/// ETA corrects them by what the phases that ran took.
fn plan_live(spec: &Io500Spec, ranks: u32) {
    let est =
        iolab_suites::io500::estimate(spec, ranks, &iolab_suites::io500::Assumptions::default());
    crate::live::plan(
        est.timed_phases()
            .into_iter()
            .map(|(name, secs)| (name, Some(secs))),
    );
}

/// Ends a run the suite finished: the score said and kept, the run concluded in the
/// store, and the exit code (1 for a run that is not valid).
fn verdict(
    rt: &Runtime,
    mut sink: RunSink,
    outcome: &Io500Outcome,
    result_dir: Option<&ResultDir>,
    config: &Io500Config,
    output: &OutputArgs,
) -> Result<u8> {
    let root = rt.is_root() && !output.quiet;
    // A result that cannot be written fails the command, but only once the run is
    // concluded in the store: the suite ran, and its phases are kept.
    let unwritten = say_score(&mut sink, outcome, result_dir, config, root);
    // A short stonewall makes a test run, not a failed one; a phase of 0, I/O errors or
    // a find that matched nothing fail it.
    // Rank 0 judges from every rank's figures; the others hold only their own (a pfind
    // rank that stole no work matched nothing), so they take rank 0's word for it.
    let failed = rt
        .comm
        .broadcast(0, &outcome.failed())
        .unwrap_or(outcome.failed());
    let quiet = OutputArgs {
        quiet: true,
        ..output.clone()
    };
    let code = conclude(rt, sink, &quiet)?;
    if let Some(e) = unwritten {
        return Err(e);
    }
    Ok(if code == exit::OK && failed {
        exit::FAILED
    } else {
        code
    })
}

/// The score, why it is not valid, where the result files are: printed (by rank 0,
/// `say`), and kept with the run. A result directory that cannot be written is returned,
/// to fail the command once the run is concluded in the store.
fn say_score(
    sink: &mut RunSink,
    outcome: &Io500Outcome,
    result_dir: Option<&ResultDir>,
    config: &Io500Config,
    say: bool,
) -> Option<anyhow::Error> {
    let score = outcome.score.as_ref()?;
    if say {
        for line in outcome.score_lines() {
            println!("{line}");
        }
    }
    let mut unwritten = None;
    if let Some(result_dir) = result_dir {
        unwritten = write_result(result_dir, config, &outcome.figures, say).err();
        if say && !sink.record.id.is_empty() {
            println!("stored as {}", sink.record.id);
        }
    }
    for reason in &score.reasons {
        sink.record
            .warnings
            .push(format!("invalid for submission: {reason}"));
    }
    sink.annotate("score", iolab_suites::io500::score_json(score));
    unwritten
}

/// Writes the result files and, when `say`, where they are.
fn write_result(
    dir: &ResultDir,
    config: &Io500Config,
    figures: &[iolab_suites::io500::PhaseFigure],
    say: bool,
) -> Result<()> {
    iolab_suites::io500::write_result_dir(&dir.path, config, figures)
        .with_context(|| format!("writing the result to {}", dir.path.display()))?;
    if say {
        println!("result in {}", dir.path.display());
    }
    Ok(())
}
