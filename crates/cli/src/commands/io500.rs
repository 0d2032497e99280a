//! `iolab io500 score|plan|run`: read an IO500 result (IO500's own or iolab's), recompute
//! and check its score and store it; plan a run (phases, parameters, capacity, time);
//! run the suite (not yet: the runner comes with the metadata engine). Results print as
//! IO500 prints them: `[RESULT]` lines, then the `[SCORE ]` line.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use iolab_core::result::Provenance;
use iolab_core::spec::{BackendKind, TargetSpec};
use iolab_core::units::{ByteCount, Nanos};
use iolab_engine::phase::now_ms;
use iolab_engine::target::agree;
use iolab_engine::{EngineError, MonotonicClock, prepare_target};
use iolab_suites::io500::{
    Assumptions, Check, Integrity, Io500Config, Io500Spec, ParsedResult, ResultDir, estimate,
    plan_phases, render, run_from_parsed, run_io500,
};

use crate::cli::{OutputArgs, StoreArgs};
use crate::commands::finish::{abandon, cleanup, conclude};
use crate::exit;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::sink::open_store;
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
    use iolab_compat::io500::commands::{CommandSettings, command_line, ior_size};
    let timestamp = match &args.timestamp {
        Some(t) => t.clone(),
        None => default_result_dir(now_ms())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let s = &args.spec;
    let settings = CommandSettings {
        datadir: format!("{}/{timestamp}", dir.display()),
        resdir: format!("./results/{timestamp}"),
        timestamp: timestamp.clone(),
        stonewall_secs: s.stonewall.nanos().0.div_ceil(1_000_000_000),
        ior_easy_transfer: s.ior_easy_transfer,
        ior_easy_block: s.ior_easy_block,
        ior_hard_segments: s.ior_hard_segments,
        files_per_rank: s.files_per_rank,
    };
    println!(
        "# What IO500 runs for these settings: `io500 config.ini --dry-run --timestamp {timestamp}`"
    );
    println!("# with this config.ini (IO500's defaults elsewhere):");
    println!("#   [global]");
    println!("#   datadir = {}", dir.display());
    if s.drop_caches {
        println!("#   drop-caches = TRUE");
    }
    println!("#   [debug]");
    println!("#   stonewall-time = {}", settings.stonewall_secs);
    println!("#   [ior-easy]");
    println!("#   transferSize = {}", ior_size(s.ior_easy_transfer));
    println!("#   blockSize = {}", ior_size(s.ior_easy_block));
    println!("#   [ior-hard]");
    println!("#   segmentCount = {}", s.ior_hard_segments);
    println!("#   [mdtest-easy]");
    println!("#   n = {}", s.files_per_rank);
    println!("#   [mdtest-hard]");
    println!("#   n = {}", s.files_per_rank);
    for p in iolab_compat::io500::PHASES.iter() {
        if let Some(line) = command_line(p.name, &settings) {
            println!("\n[{}]\n{:<15} = {line}", p.name, "exe");
        }
    }
    Ok(exit::OK)
}

/// The default result directory: io500-results/YYYY.MM.DD-HH.MM.SS, as IO500 names them
/// ([`ResultDir::create`] numbers it when another run took it).
fn default_result_dir(now_ms: i64) -> PathBuf {
    let t = iolab_core::civil::UtcTime::from_ms(now_ms);
    PathBuf::from(format!(
        "io500-results/{:04}.{:02}.{:02}-{:02}.{:02}.{:02}",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    ))
}

/// Rank 0's result directory (None on the other ranks), made before anything runs; a
/// failure stops every rank.
fn make_result_dir(rt: &Runtime, given: Option<&Path>) -> Result<Option<ResultDir>> {
    let made = if rt.is_root() {
        match given {
            Some(given) => ResultDir::create(given, false),
            None => ResultDir::create(&default_result_dir(now_ms()), true),
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
    args.output.prepare(rt)?;
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
        &args.output.store,
        "io500",
        serde_json::json!({ "spec": args.spec }),
        dir.display().to_string(),
        Some(dir),
        args.output.label.clone(),
    );
    let config = Io500Config {
        tool: format!("iolab {}", env!("CARGO_PKG_VERSION")),
        ranks: rt.comm.size(),
        target: dir.display().to_string(),
        spec: args.spec.clone(),
    };
    let watch = Watch::new(&args.output, &sink, None);
    let progress = &watch.progress;
    let env = watch.env(rt);
    let root = rt.is_root() && !args.output.quiet;
    if root {
        println!("{}", iolab_suites::io500::output::header(&config));
    }
    let outcome = run_io500(
        &env,
        &MonotonicClock,
        &args.spec,
        &target,
        &mut |phase, fig| {
            progress.finish();
            if root {
                println!("{}", iolab_suites::io500::phase_line(fig));
            }
            sink.phase(phase.clone());
        },
    );
    progress.finish();
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
    // A result that cannot be written fails the command, but only once the run is
    // concluded in the store: the suite ran, and its phases are kept.
    let mut unwritten = None;
    if let Some(score) = &outcome.score {
        if root {
            println!("{}", iolab_suites::io500::score_line(score));
            for reason in &score.reasons {
                println!("invalid for submission: {reason}");
            }
            if let Some(note) = &outcome.cache_note {
                println!("note: IOR read phases: {note}");
            }
        }
        if let Some(result_dir) = &result_dir {
            unwritten = write_result(result_dir, &config, &outcome.figures, root).err();
            if root && !sink.record.id.is_empty() {
                println!("stored as {}", sink.record.id);
            }
        }
        for reason in &score.reasons {
            sink.record
                .warnings
                .push(format!("invalid for submission: {reason}"));
        }
        sink.annotate("score", iolab_suites::io500::score_json(score));
    }
    // A short stonewall makes a test run, not a failed one; a phase of 0, I/O errors or
    // a find that matched nothing fail it.
    let failed = outcome
        .score
        .as_ref()
        .is_some_and(|s| s.reasons.iter().any(|r| r.is_failure()));
    let quiet = OutputArgs {
        quiet: true,
        ..args.output.clone()
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

/// "45.0s", "5m00s", "1h02m".
fn duration(t: Nanos) -> String {
    let s = t.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1}s")
    } else if s < 3600.0 {
        let s = s.round() as u64;
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        let m = (s / 60.0).round() as u64;
        format!("{}h{:02}m", m / 60, m % 60)
    }
}

fn plan(args: Io500PlanArgs) -> Result<u8> {
    args.spec.validate()?;
    if args.ranks == 0 {
        bail!("--ranks must be at least 1");
    }
    for (name, v) in [
        ("--assume-bandwidth", args.assume_bandwidth.get() as f64),
        (
            "--assume-hard-bandwidth",
            args.assume_hard_bandwidth.get() as f64,
        ),
        ("--assume-file-rate", args.assume_file_rate),
        ("--assume-find-rate", args.assume_find_rate),
    ] {
        if !v.is_finite() || v <= 0.0 {
            bail!("{name} must be more than 0");
        }
    }
    let assumed = Assumptions {
        easy_bandwidth: args.assume_bandwidth.get() as f64,
        hard_bandwidth: args.assume_hard_bandwidth.get() as f64,
        file_rate: args.assume_file_rate,
        find_rate: args.assume_find_rate,
    };
    let plans = plan_phases(&args.spec);
    let est = estimate(&args.spec, args.ranks, &assumed);
    if args.json {
        let phases: Vec<serde_json::Value> = plans
            .iter()
            .zip(&est.phases)
            .map(|(p, e)| {
                serde_json::json!({
                    "name": p.def.name,
                    "scored": p.def.scored(),
                    "group": p.def.group,
                    "unit": p.def.unit().label(),
                    "works_on": p.def.works_on,
                    "params": p.params,
                    "data_spec": p.data,
                    "estimate": e,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "ranks": args.ranks,
            "spec": args.spec,
            "assumed": assumed,
            "phases": phases,
            "capacity": est.capacity,
            "inodes": est.inodes,
            "time": est.time,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_plan(&args, &plans, &est);
    }
    if let Some(dir) = &args.dir {
        check_room(dir, est.capacity, est.inodes)?;
        if !args.json {
            println!("{} has room for it", dir.display());
        }
    }
    Ok(exit::OK)
}

fn print_plan(
    args: &Io500PlanArgs,
    plans: &[iolab_suites::io500::PhasePlan],
    est: &iolab_suites::io500::Io500Estimate,
) {
    let s = &args.spec;
    println!(
        "IO500 on {} rank{}: stonewall {}{}, ior-easy transfers of {}, at most {} files per rank",
        args.ranks,
        if args.ranks == 1 { "" } else { "s" },
        s.stonewall,
        if s.stonewall_is_io500s() {
            ""
        } else {
            " (IO500 requires 300s: the result will be invalid for submission)"
        },
        s.ior_easy_transfer,
        s.files_per_rank
    );
    println!(
        "{:>3}  {:<20} {:<6} {:>8} {:>10} {:>9}  what",
        "#", "phase", "score", "time", "data", "files"
    );
    for (i, (p, e)) in plans.iter().zip(&est.phases).enumerate() {
        let unit = if p.def.scored() {
            p.def.unit().label()
        } else {
            "-"
        };
        let time = if e.stonewalled {
            duration(e.time)
        } else {
            format!("~{}", duration(e.time))
        };
        let data = if e.bytes > 0 {
            ByteCount(e.bytes).human()
        } else {
            "-".into()
        };
        let files = count(e.files);
        println!(
            "{:>3}  {:<20} {:<6} {:>8} {:>10} {:>9}  {}",
            i + 1,
            p.def.name,
            unit,
            time,
            data,
            files,
            p.describe()
        );
    }
    println!(
        "needs {} and {} inodes at most; takes about {} (write phases run for the stonewall plus wear-out; the rest at {}/s for ior-easy, {}/s for ior-hard, {} files/s, find at {} entries/s: --assume-* change that)",
        ByteCount(est.capacity).human(),
        count(est.inodes),
        duration(est.time),
        args.assume_bandwidth.human(),
        args.assume_hard_bandwidth.human(),
        args.assume_file_rate,
        args.assume_find_rate
    );
}

/// "-", "42", "3.00M".
fn count(n: u64) -> String {
    match n {
        0 => "-".into(),
        1..1000 => n.to_string(),
        _ => iolab_core::units::OpsPerSec(n as f64).human(),
    }
}

fn check_room(dir: &Path, bytes: u64, inodes: u64) -> Result<()> {
    let (total, free) =
        iolab_backend::files::fs_space(dir).with_context(|| format!("--dir {}", dir.display()))?;
    if total > 0 && bytes > free {
        bail!(
            "an IO500 run needs about {} in {} but only {} is free; lower --stonewall or --files-per-rank, or free space",
            ByteCount(bytes).human(),
            dir.display(),
            ByteCount(free).human()
        );
    }
    if let Some(free_inodes) = iolab_backend::files::fs_free_inodes(dir)
        .with_context(|| format!("--dir {}", dir.display()))?
        && inodes > free_inodes
    {
        bail!(
            "an IO500 run creates about {inodes} files in {} but only {free_inodes} inodes are free; lower --files-per-rank or --stonewall",
            dir.display()
        );
    }
    Ok(())
}

fn score(args: Io500ScoreArgs) -> Result<u8> {
    let parsed = iolab_suites::io500::read(&args.path)?;
    let check = parsed.check();
    let stored = if args.import {
        Some(import(&args, &parsed)?)
    } else {
        None
    };
    if args.json {
        let doc = serde_json::json!({ "result": parsed, "check": check, "stored": stored });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_score(&parsed, &check, stored.as_deref());
    }
    Ok(if check.ok() { exit::OK } else { exit::FAILED })
}

fn import(args: &Io500ScoreArgs, parsed: &ParsedResult) -> Result<String> {
    let rev = env!("IOLAB_GIT_REVISION");
    let provenance = Provenance {
        iolab_version: env!("CARGO_PKG_VERSION").to_string(),
        git_revision: (!rev.is_empty()).then(|| rev.to_string()),
        command: std::env::args().collect(),
        hosts: Vec::new(),
        ranks: parsed.procs.unwrap_or(0),
        target: parsed.path.display().to_string(),
        inventory: None,
        process: None,
    };
    let mut record = run_from_parsed(parsed, provenance, iolab_engine::phase::now_ms());
    record.label = args.label.clone();
    let mut store = open_store(&StoreArgs {
        db: args.db.clone(),
        no_store: false,
    })?;
    let id = store
        .import_run(&record)
        .with_context(|| format!("storing {}", parsed.path.display()))?;
    Ok(id.to_string())
}

fn print_score(parsed: &ParsedResult, check: &Check, stored: Option<&str>) {
    let mut header = format!("{}: {}", parsed.path.display(), parsed.format.describe());
    if let Some(v) = &parsed.version {
        header.push_str(&format!(", {v}"));
    }
    if let Some(p) = parsed.procs {
        header.push_str(&format!(", {p} ranks"));
    }
    print!("{}", render(&header, &parsed.phases, &check.score));
    match (check.file_score_agrees, &parsed.score) {
        (Some(true), Some(fs)) => {
            println!("the file's score (line {}) agrees with its phases", fs.line)
        }
        (None, _) => println!("the file states no score; the one above is recomputed"),
        _ => {}
    }
    if let Some(x) = &parsed.extended_score {
        println!(
            "extended-mode score (line {}, not checked): Bandwidth {:.6} GiB/s : IOPS {:.6} kiops : TOTAL {:.6}",
            x.line, x.bandwidth, x.metadata, x.total
        );
    }
    match &parsed.integrity {
        Some(
            i @ Integrity::Io500Hash {
                expected,
                as_invalid,
                ..
            },
        ) if i.intact() => println!(
            "IO500's score hash {expected} matches the file's values{}",
            if *as_invalid {
                " (as an invalid run)"
            } else {
                ""
            }
        ),
        Some(i @ Integrity::Sha256 { checked, .. }) if i.intact() => {
            println!("hash.txt matches {}", checked.join(", "))
        }
        _ => {}
    }
    for note in &check.score.notes {
        println!("note: {note}");
    }
    for problem in &check.problems {
        println!("problem: {problem}");
    }
    if check.score.valid() {
        println!("valid for submission");
    } else {
        println!("invalid for submission (fine for testing):");
        for r in &check.score.reasons {
            println!("  - {r}");
        }
    }
    if let Some(id) = stored {
        println!("stored as {id} (kind io500)");
    }
}
