//! `iolab study run|plan|list|show`: sweeps and matrices from a study file or a built-in
//! preset (presets/*.toml), every phase stored as soon as it ends, and a plan of phases,
//! capacity and time before anything is written.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use iolab_core::spec::{
    Overrides, PhaseSpec, PlannedPhase, StudySpec, TargetEntry, TargetSpec, parse_targets,
};
use iolab_core::units::{ByteCount, BytesPerSec};
use iolab_engine::DataTarget;
use iolab_engine::{MonotonicClock, PreparedTarget, prepare_target};
use iolab_report::study::{StudyPlanView, render_study_plan, study_end, study_start};
use iolab_suites::study::{StudyEstimate, StudyRun, estimate, run_study, target_backend};

use crate::args::OutputArgs;
use crate::commands::finish::{abandon, cleanup, conclude};
use crate::exit;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

/// The built-in studies, by name.
pub const PRESETS: [(&str, &str); 4] = [
    ("quick", include_str!("../../../../presets/quick.toml")),
    ("nfs", include_str!("../../../../presets/nfs.toml")),
    (
        "zfs-matrix",
        include_str!("../../../../presets/zfs-matrix.toml"),
    ),
    ("hci", include_str!("../../../../presets/hci.toml")),
];

#[derive(Args, Debug)]
pub struct StudyArgs {
    #[command(subcommand)]
    pub command: StudyCommand,
}

#[derive(Subcommand, Debug)]
pub enum StudyCommand {
    /// Run a study: a preset name (see `iolab study list`) or a study file.
    Run(Box<StudyRunArgs>),
    /// Print every phase a study will run, the capacity it needs and its duration.
    Plan(StudyPlanArgs),
    /// List the built-in presets.
    List,
    /// Print a preset's study file (a starting point for your own).
    Show {
        /// Preset name.
        preset: String,
    },
}

/// Which study, and how to adapt it.
#[derive(Args, Debug, Clone)]
pub struct StudySelect {
    /// A preset name or a study file (TOML).
    pub study: String,

    /// Multiply every size, file count and duration (0.001 turns 2 TB into 2 GB).
    #[arg(long)]
    pub scale: Option<f64>,

    /// Set an option in every phase, as in the study file (block_size=4KiB). Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,

    /// Run every point this many times instead of the study's repeat.
    #[arg(long)]
    pub repeat: Option<u32>,
}

#[derive(Args, Debug)]
pub struct StudyRunArgs {
    #[command(flatten)]
    pub select: StudySelect,

    /// Rated figures to judge the results against (% of the theoretical maximum, per node
    /// and cluster-wide): a targets file, TOML or CSV, with rated_iops or rated_mbps per
    /// device and node (docs/targets.md). Stored with the run; reports recompute it.
    #[arg(long, value_name = "FILE")]
    pub rated: Option<PathBuf>,

    /// The closing summary's bandwidth in binary units (MiB/s, GiB/s) or decimal ones
    /// (MB/s, GB/s, as the reference studies quote it); stored figures are in bytes/s.
    #[arg(long, default_value = "binary", value_name = "binary|decimal")]
    pub units: iolab_report::Units,

    #[command(flatten)]
    pub target: TargetSpec,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct StudyPlanArgs {
    #[command(flatten)]
    pub select: StudySelect,

    /// The directory it would run in (to check free space).
    #[arg(short = 'd', long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Ranks it would run on (under mpirun the plan uses the real number).
    #[arg(long, default_value_t = 1)]
    pub ranks: u32,

    /// Bandwidth assumed for size-based phases when estimating time.
    #[arg(long, default_value = "500MiB", value_name = "BYTES_PER_SEC")]
    pub assume_bandwidth: ByteCount,

    /// I/Os per second assumed for size-based phases of small blocks, and files per
    /// second for metadata phases.
    #[arg(long, default_value_t = 10_000.0, value_name = "IOPS")]
    pub assume_iops: f64,
}

pub fn study(args: StudyArgs) -> Result<u8> {
    match args.command {
        StudyCommand::Run(a) => run(*a),
        StudyCommand::Plan(a) => plan(a),
        StudyCommand::List => {
            for (name, text) in PRESETS {
                let s = StudySpec::from_toml(text, name)?;
                println!("{name:<12} {}", s.description);
            }
            Ok(exit::OK)
        }
        StudyCommand::Show { preset } => {
            let (_, text) = PRESETS
                .iter()
                .find(|(n, _)| *n == preset)
                .with_context(|| format!("no preset '{preset}'; `iolab study list` shows them"))?;
            print!("{text}");
            Ok(exit::OK)
        }
    }
}

/// Loads and expands the selected study: (its spec, the phases, where it came from).
fn load(select: &StudySelect) -> Result<(StudySpec, Vec<PlannedPhase>, String)> {
    let (text, origin) = match PRESETS.iter().find(|(n, _)| *n == select.study) {
        Some((name, text)) => (text.to_string(), format!("preset {name}")),
        None => {
            let path = PathBuf::from(&select.study);
            if !path.exists() {
                let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
                bail!(
                    "'{}' is neither a preset ({}) nor a study file",
                    select.study,
                    names.join(", ")
                );
            }
            let text = iolab_core::input::read_text(&path)?;
            (text, path.display().to_string())
        }
    };
    let spec = StudySpec::from_toml(&text, &origin)?;
    let overrides = Overrides {
        scale: select.scale,
        set: select
            .set
            .iter()
            .map(|s| Overrides::parse_set(s))
            .collect::<Result<_, _>>()?,
        repeat: select.repeat,
        user_swept: Vec::new(),
    };
    let phases = spec.expand(&origin, &overrides)?;
    Ok((spec, phases, origin))
}

fn plan(args: StudyPlanArgs) -> Result<u8> {
    for (name, v) in [
        ("--assume-bandwidth", args.assume_bandwidth.get() as f64),
        ("--assume-iops", args.assume_iops),
    ] {
        if !v.is_finite() || v <= 0.0 {
            bail!("{name} must be more than 0");
        }
    }
    if args.ranks == 0 || args.ranks > crate::commands::MAX_PLAN_RANKS {
        bail!(
            "--ranks must be at least 1 and at most {}",
            crate::commands::MAX_PLAN_RANKS
        );
    }
    let (spec, phases, origin) = load(&args.select)?;
    let est = estimate(
        &phases,
        args.ranks,
        BytesPerSec(args.assume_bandwidth.get() as f64),
        args.assume_iops,
    )
    .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    print!(
        "{}",
        render_study_plan(&StudyPlanView {
            spec: &spec,
            origin: &origin,
            phases: &phases,
            estimate: &est,
            ranks: args.ranks,
            assume_bandwidth: args.assume_bandwidth,
            assume_iops: args.assume_iops,
        })
    );
    if let Some(dir) = &args.dir {
        check_space(dir, est.capacity)?;
        println!("{} has room for it", dir.display());
    }
    Ok(exit::OK)
}

fn check_space(dir: &std::path::Path, need: u64) -> Result<()> {
    let short = iolab_backend::files::space_short(dir, need)
        .with_context(|| format!("--dir {}", dir.display()))?;
    if let Some(free) = short {
        bail!(
            "the study needs {} in {} but only {} is free; use --scale or --set size=... to make it smaller",
            ByteCount(need).human(),
            dir.display(),
            ByteCount(free).human()
        );
    }
    Ok(())
}

fn run(args: StudyRunArgs) -> Result<u8> {
    let (spec, phases, origin) = load(&args.select)?;
    let rated = match &args.rated {
        Some(file) => read_rated(file, "--rated")?,
        None => Vec::new(),
    };
    Runtime::with(|rt| run_in(rt, args, spec, phases, (origin, rated)))
}

/// The rated figures of a targets file given as `option`: every row that has one (a file
/// without any is refused).
pub fn read_rated(file: &std::path::Path, option: &str) -> Result<Vec<TargetEntry>> {
    let name = file.display().to_string();
    let text = iolab_core::input::read_text(file).with_context(|| option.to_string())?;
    let entries: Vec<TargetEntry> = parse_targets(&name, &text)
        .with_context(|| option.to_string())?
        .into_iter()
        .filter(|e| e.rated.is_some())
        .collect();
    if entries.is_empty() {
        bail!("{option} {name}: no target has a rated_iops or rated_mbps figure (docs/targets.md)");
    }
    Ok(entries)
}

/// Keeps rated figures in a run's spec, where reports read them (`rated`).
pub fn store_rated(spec: &mut serde_json::Value, rated: &[TargetEntry]) {
    if !spec.is_object() {
        *spec = serde_json::json!({});
    }
    spec["rated"] = serde_json::to_value(rated).expect("targets serialize to JSON");
}

/// The study's target prepared for its phases' backend, refused on every rank when a
/// phase's I/Os cannot be aligned on it.
fn prepare_study_target(
    rt: &Runtime,
    args: &StudyRunArgs,
    phases: &[PlannedPhase],
    origin: &str,
) -> Result<PreparedTarget> {
    let target = prepare_target(rt.comm.as_ref(), &args.target, target_backend(phases), true)?;
    agree_block_align(rt, phases, origin, target, args.target.keep)
}

/// Refuses a data phase whose block_align is larger than the share each worker draws
/// its random offsets in, as `run` does (no I/O would fit), agreed by all ranks before
/// anything is stored or written; on a refusal the work directory goes again.
fn agree_block_align(
    rt: &Runtime,
    phases: &[PlannedPhase],
    origin: &str,
    target: PreparedTarget,
    keep: bool,
) -> Result<PreparedTarget> {
    let aligned = phases.iter().try_for_each(|p| {
        let PhaseSpec::Data(spec) = &p.spec else {
            return Ok(());
        };
        // A phase on the null backend runs on no storage, whatever the study's target.
        let on = if spec.backend == iolab_core::spec::BackendKind::Null {
            DataTarget::Null
        } else {
            target.data_target()
        };
        let workers = rt.comm.size().saturating_mul(spec.threads);
        crate::commands::run::check_block_align(spec, &on, workers).map_err(|e| {
            let at = format!("{origin}: sweep '{}', phase '{}'", p.sweep, p.name);
            iolab_core::SpecError::new(at, e.to_string())
        })
    });
    match rt.agree(aligned.map_err(anyhow::Error::from)) {
        Ok(()) => Ok(target),
        Err(e) => {
            let _ = cleanup(rt.comm.as_ref(), target, &[], keep);
            Err(e)
        }
    }
}

/// The study's estimate, its capacity checked against the free space of rank 0's --dir
/// (not for a --dir inside an NFS export, which is not on this machine).
fn check_study_space(
    rt: &Runtime,
    args: &StudyRunArgs,
    phases: &[PlannedPhase],
    origin: &str,
) -> Result<StudyEstimate> {
    let est = estimate(
        phases,
        rt.comm.size(),
        BytesPerSec(500.0 * 1024.0 * 1024.0),
        10_000.0,
    )
    .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    if rt.is_root()
        && args.target.nfs_url.is_none()
        && let Some(dir) = &args.target.dir
    {
        // Rank 0's own directory: {host} and {rank} are resolved as for the run.
        let dir = iolab_engine::resolve_placeholders(dir, rt.comm.host(), rt.comm.rank());
        check_space(&dir, est.capacity)?;
    }
    Ok(est)
}

/// The run's sink: the study as resolved (its spec, origin, phase count, --scale and
/// --set, and the rated figures when given) stored with it.
fn start_sink(
    rt: &Runtime,
    args: &StudyRunArgs,
    spec: &StudySpec,
    phases: usize,
    (origin, rated): (&str, &[TargetEntry]),
) -> RunSink {
    let mut resolved = serde_json::json!({ "study": spec, "origin": origin, "phases": phases, "scale": args.select.scale, "set": args.select.set });
    if !rated.is_empty() {
        store_rated(&mut resolved, rated);
    }
    RunSink::start(
        rt,
        args.output.recording(),
        "study",
        resolved,
        crate::commands::run::describe(&args.target),
        args.target.dir.as_deref(),
    )
}

/// The live display's plan: every phase at its estimated time.
fn plan_live(phases: &[PlannedPhase], est: &StudyEstimate) {
    crate::live::plan(
        phases
            .iter()
            .zip(&est.phases)
            .map(|(p, e)| (p.name.clone(), Some(e.time.as_secs_f64()))),
    );
}

fn run_in(
    rt: &Runtime,
    args: StudyRunArgs,
    spec: StudySpec,
    phases: Vec<PlannedPhase>,
    (origin, rated): (String, Vec<TargetEntry>),
) -> Result<u8> {
    rt.agree(args.output.prepare(rt))?;
    let units = args.units;
    let est = check_study_space(rt, &args, &phases, &origin)?;
    let target = prepare_study_target(rt, &args, &phases, &origin)?;
    let mut sink = start_sink(rt, &args, &spec, phases.len(), (&origin, &rated));
    plan_live(&phases, &est);
    if rt.is_root() && !args.output.quiet {
        eprint!("{}", study_start(&spec.name, &origin, &phases, &est));
    }
    let watch = Watch::new(&args.output, &sink, args.target.device.as_deref());
    let progress = &watch.progress;
    let env = watch.env(rt);
    let root = rt.is_root() && !args.output.quiet;
    let connector = crate::commands::s3::Connector {
        output: &args.output,
    };
    let run = StudyRun {
        phases: &phases,
        target: &target,
        keep: args.target.keep,
        objects: Some(&connector),
    };
    let outcome = run_study(&env, &MonotonicClock, &run, &mut |phase| {
        progress.finish();
        if root {
            println!("{}", iolab_report::text::render_phase(&phase));
        }
        sink.phase(phase);
    });
    progress.finish();
    let cleaned = cleanup(rt.comm.as_ref(), target, &[], args.target.keep);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return Err(abandon(sink, e)),
    };
    cleaned?;
    sink.record
        .warnings
        .extend(outcome.warnings.iter().cloned());
    if root {
        print!(
            "{}",
            study_end(&spec.name, &sink.record, units, outcome.interrupted)
        );
    }
    // The phases were printed as they ended; conclude only stores, writes --json and
    // decides the exit code.
    let output = OutputArgs {
        quiet: true,
        ..args.output.clone()
    };
    conclude(rt, sink, &output)
}
