//! `iolab pts`: SNIA PTS 2.0's IOPS test on a device or an image file. Purge (a discard
//! of the whole device), workload-independent preconditioning (sequential 128 KiB
//! writes over the active range, twice), then rounds of the R/W mix x block size matrix
//! until the tracked cells are steady over a 5-round window (at most 25), and the
//! report PTS asks for: the settings, the convergence and measurement-window plots, the
//! IOPS table and the device. Every phase is stored like a study's.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::{BackendKind, DataSpec, Layout, RandomKind, RwKind, TargetSpec};
use iolab_core::steady::{PTS_MAX_ROUNDS, PTS_WINDOW};
use iolab_core::units::{ByteCount, TimeSpan};
use iolab_engine::data::{DataOptions, run_data};
use iolab_engine::{EngineError, MonotonicClock, PreparedTarget, prepare_target};
use iolab_report::{PtsPage, WindowPlot};
use iolab_suites::pts::{Cell, PtsMatrix, PtsOutcome, PtsRounds};

use crate::cli::OutputArgs;
use crate::commands::finish::{abandon, conclude};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

/// PTS's two device classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Class {
    /// PTS-E: active range 100 %, the device's volatile write cache off.
    Enterprise,
    /// PTS-C: active range 75 %, the write cache on.
    Client,
}

#[derive(Args, Debug)]
pub struct PtsArgs {
    /// The device (or image file) to test. Every byte of it is discarded and
    /// overwritten: one holding a file system, a partition table or data is refused
    /// unless --allow-destroy; one in use always.
    #[arg(long, value_name = "DEVICE")]
    pub device: PathBuf,

    /// Allow destroying what the device holds.
    #[arg(long)]
    pub allow_destroy: bool,

    /// PTS-E or PTS-C settings (active range, write cache expected).
    #[arg(long, value_enum, default_value_t = Class::Enterprise)]
    pub class: Class,

    /// Multiply every duration by this (0.01: a cell of 0.6 s instead of a minute).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,

    /// How long each cell of a round runs, before --scale (PTS: one minute).
    #[arg(long, value_name = "TIME", default_value = "60s")]
    pub cell_time: TimeSpan,

    /// The share of the device the rounds address, in percent [default: 100 for
    /// enterprise, 75 for client].
    #[arg(long, value_name = "PERCENT")]
    pub active_range: Option<u8>,

    /// Workload-independent preconditioning: sequential writes of this many times the
    /// active range (PTS: 2; 0 skips it).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub precondition: u32,

    /// The preconditioning's block size (PTS: 128 KiB).
    #[arg(long, value_name = "SIZE", default_value = "128KiB")]
    pub precondition_block_size: ByteCount,

    /// Leave out the purge (the results then start from the device's current state).
    #[arg(long)]
    pub no_purge: bool,

    /// Worker threads per cell (PTS's thread count, TC; reported in the header).
    #[arg(short = 't', long, default_value_t = 4)]
    pub threads: u32,

    /// I/Os in flight per thread (PTS's queue depth, QD).
    #[arg(short = 'q', long, default_value_t = 32)]
    pub queue_depth: u32,

    /// I/O engine.
    #[arg(long, value_enum, default_value_t = BackendKind::Uring)]
    pub backend: BackendKind,

    /// Run only these of PTS's block sizes (1MiB,64KiB,4KiB): a shorter test that is no
    /// longer PTS's whole matrix (said in the report).
    #[arg(long, value_name = "SIZES", value_delimiter = ',')]
    pub block_sizes: Option<Vec<ByteCount>>,

    /// Run only these of PTS's R/W mixes (100/0,65/35,0/100).
    #[arg(long, value_name = "MIXES", value_delimiter = ',')]
    pub mixes: Option<Vec<String>>,

    /// The most rounds before the test is reported as not steady (PTS: 25).
    #[arg(long, value_name = "N", default_value_t = 25)]
    pub max_rounds: usize,

    /// Write the PTS report (plots, IOPS table, device) as one HTML file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// "65/35" as its read share.
fn parse_mix(text: &str) -> Result<u8> {
    let (r, w) = text
        .split_once('/')
        .ok_or_else(|| anyhow::anyhow!("--mixes: '{text}' is not a R/W mix like 65/35"))?;
    let (r, w): (u8, u8) = match (r.trim().parse(), w.trim().parse()) {
        (Ok(r), Ok(w)) if u16::from(r) + u16::from(w) == 100 => (r, w),
        _ => bail!("--mixes: '{text}' is not a R/W mix whose shares add up to 100"),
    };
    let _ = w;
    Ok(r)
}

/// The settings every cell shares.
struct Plan {
    matrix: PtsMatrix,
    active: u64,
    cell_time: TimeSpan,
    max_rounds: usize,
    whole_matrix: bool,
}

pub fn pts(args: PtsArgs) -> Result<u8> {
    if !(args.scale > 0.0 && args.scale <= 1000.0) {
        bail!(
            "--scale: {} must be more than 0 (and at most 1000)",
            args.scale
        );
    }
    if args.max_rounds < PTS_WINDOW || args.max_rounds > PTS_MAX_ROUNDS {
        bail!(
            "--max-rounds: {} is not between {PTS_WINDOW} (one measurement window) and {PTS_MAX_ROUNDS} (PTS's most)",
            args.max_rounds
        );
    }
    let range = args.active_range.unwrap_or(match args.class {
        Class::Enterprise => 100,
        Class::Client => 75,
    });
    if range == 0 || range > 100 {
        bail!("--active-range: {range} is not a percentage from 1 to 100");
    }
    let mixes = args
        .mixes
        .as_ref()
        .map(|m| m.iter().map(|t| parse_mix(t)).collect::<Result<Vec<u8>>>())
        .transpose()?;
    let sizes: Option<Vec<u64>> = args
        .block_sizes
        .as_ref()
        .map(|b| b.iter().map(|s| s.get()).collect());
    let full = PtsMatrix::iops();
    let matrix = full
        .limited(sizes.as_deref(), mixes.as_deref())
        .map_err(|e| {
            anyhow::anyhow!(
                "{}: {e}",
                if e.contains("mix") {
                    "--mixes"
                } else {
                    "--block-sizes"
                }
            )
        })?;
    let cell_time = TimeSpan(iolab_core::units::Nanos(
        (args.cell_time.nanos().0 as f64 * args.scale) as u64,
    ));
    if cell_time.nanos().0 < 100_000_000 {
        bail!(
            "--scale: a cell of {} is shorter than 100ms; use a larger --scale or --cell-time",
            cell_time
        );
    }
    let base = cell_spec(
        &args,
        Cell {
            block_size: 4096,
            read_percent: 0,
        },
        4096,
        cell_time,
    );
    base.validate()?;
    let whole_matrix = matrix == full;
    Runtime::with(|rt| {
        pts_in(
            rt,
            &args,
            range,
            Plan {
                matrix,
                active: 0,
                cell_time,
                max_rounds: args.max_rounds,
                whole_matrix,
            },
        )
    })
}

/// One cell's workload over `active` bytes.
fn cell_spec(args: &PtsArgs, cell: Cell, active: u64, time: TimeSpan) -> DataSpec {
    DataSpec {
        rw: match cell.read_percent {
            100 => RwKind::Randread,
            0 => RwKind::Randwrite,
            _ => RwKind::Randrw,
        },
        rwmix_read: cell.read_percent,
        block_size: ByteCount(cell.block_size),
        threads: args.threads,
        queue_depth: args.queue_depth,
        backend: args.backend,
        direct: true,
        layout: Layout::Shared,
        total_size: Some(ByteCount(active)),
        random: RandomKind::Uniform,
        runtime: Some(time),
        ..DataSpec::default()
    }
}

fn target_spec(args: &PtsArgs) -> TargetSpec {
    TargetSpec {
        device: Some(args.device.clone()),
        allow_destroy: args.allow_destroy,
        ..TargetSpec::default()
    }
}

fn pts_in(rt: &Runtime, args: &PtsArgs, range: u8, mut plan: Plan) -> Result<u8> {
    if rt.comm.size() > 1 {
        bail!("iolab pts tests one device from one process: run it without MPI ranks");
    }
    rt.agree(args.output.prepare(rt))?;
    let target_spec = target_spec(args);
    let target = prepare_target(rt.comm.as_ref(), &target_spec, args.backend, true)?;
    let PreparedTarget::Device { check, .. } = &target else {
        bail!(
            "--device: {} is not a device or image file",
            args.device.display()
        );
    };
    let size = check.size;
    // The active range in whole MiB (every block size divides it), and room for one
    // largest block per thread at least: a round on less is no round.
    let largest = plan
        .matrix
        .block_sizes
        .iter()
        .copied()
        .max()
        .unwrap_or(4096);
    let active = (u128::from(size) * u128::from(range) / 100) as u64 / (1 << 20) * (1 << 20);
    let need = largest * u64::from(args.threads) * 2;
    if active < need.max(args.precondition_block_size.get()) {
        bail!(
            "--device: {} holds {} ({}% active: {}), less than one round needs ({} for {} threads of {} blocks); nothing was written",
            args.device.display(),
            ByteCount(size).human(),
            range,
            ByteCount(active).human(),
            ByteCount(need).human(),
            args.threads,
            ByteCount(largest)
        );
    }
    plan.active = active;
    let mut sink = RunSink::start(
        rt,
        &args.output.store,
        "pts",
        serde_json::json!({
            "test": "iops", "class": format!("{:?}", args.class).to_lowercase(),
            "active_range_percent": range, "scale": args.scale,
            "cell_time": plan.cell_time.to_string(), "threads": args.threads,
            "queue_depth": args.queue_depth, "precondition": args.precondition,
            "block_sizes": plan.matrix.block_sizes, "read_percents": plan.matrix.mixes,
        }),
        crate::commands::run::describe(&target_spec),
        None,
        args.output.label.clone(),
    );
    let watch = Watch::new(&args.output, &sink, Some(&args.device));
    let env = watch.env(rt);
    let say = |s: String| {
        if rt.is_root() && !args.output.quiet {
            eprintln!("iolab pts: {s}");
        }
    };
    // Purge.
    let purge = if args.no_purge {
        "left out (--no-purge)".to_string()
    } else {
        match purge(&args.device, size) {
            Ok(()) => format!(
                "{} discarded ({})",
                ByteCount(size).human(),
                if check.is_block_device {
                    "BLKDISCARD"
                } else {
                    "punched out of the file"
                }
            ),
            Err(why) => format!(
                "NOT done: the device cannot discard ({why}); PTS asks for a purge (a secure erase, sanitize or format): the rounds start from the device's current state"
            ),
        }
    };
    say(format!("purge: {purge}"));
    target.mark_written();
    let mut phases: Vec<PhaseResult> = Vec::new();
    let run = |spec: &DataSpec, opts: &DataOptions| -> Result<PhaseResult, EngineError> {
        if rt.interrupted() {
            return Err(EngineError::Interrupted);
        }
        let out = run_data(&env, &MonotonicClock, spec, &target, opts)?;
        watch.progress.finish();
        Ok(out
            .phases
            .into_iter()
            .next()
            .expect("a data run has its phase"))
    };
    // Workload-independent preconditioning.
    let wipc = if args.precondition == 0 {
        "left out (--precondition 0)".to_string()
    } else {
        let spec = DataSpec {
            rw: RwKind::Write,
            block_size: args.precondition_block_size,
            threads: 1,
            queue_depth: args.queue_depth,
            backend: args.backend,
            direct: true,
            total_size: Some(ByteCount(active)),
            layout: Layout::Shared,
            ..DataSpec::default()
        };
        let opts = DataOptions {
            name: Some("pts-wipc".into()),
            loops: args.precondition,
            ..DataOptions::default()
        };
        say(format!(
            "preconditioning: {} x {} of sequential {} writes",
            args.precondition,
            ByteCount(active).human(),
            args.precondition_block_size
        ));
        match run(&spec, &opts) {
            Ok(p) => {
                let text = format!(
                    "{} of sequential {} writes ({}x the active range) in {:.1} s",
                    p.op(OpKind::Write)
                        .map_or(ByteCount(0), |w| w.bytes)
                        .human(),
                    args.precondition_block_size,
                    args.precondition,
                    p.elapsed.as_secs_f64()
                );
                phases.push(p);
                text
            }
            Err(e) => return finish_early(rt, sink, phases, e, args),
        }
    };
    // Rounds until steady.
    let cells = plan.matrix.cells();
    let mut rounds = PtsRounds::default();
    let mut failed = None;
    'rounds: for round in 0..plan.max_rounds {
        let mut iops = Vec::with_capacity(cells.len());
        for cell in &cells {
            let spec = cell_spec(args, *cell, active, plan.cell_time);
            let mut params = std::collections::BTreeMap::new();
            params.insert("pts_round".to_string(), (round + 1).to_string());
            params.insert("pts_mix".to_string(), mix_name(cell.read_percent));
            let opts = DataOptions {
                name: Some(format!("pts-r{}-{}", round + 1, cell_tag(cell))),
                repetition: round as u32,
                params,
                ..DataOptions::default()
            };
            match run(&spec, &opts) {
                Ok(mut p) => {
                    let v = total_iops(&p);
                    p.extra.insert("pts_round".into(), (round + 1) as f64);
                    p.extra.insert("pts_iops".into(), v);
                    iops.push(v);
                    phases.push(p);
                }
                Err(e) => {
                    failed = Some(e);
                    break 'rounds;
                }
            }
        }
        rounds.rounds.push(iops);
        say(format!(
            "round {}: {}",
            round + 1,
            plan.matrix
                .tracked
                .iter()
                .map(|c| format!(
                    "{} {:.0} IOPS",
                    c.name(),
                    rounds
                        .series(&plan.matrix, *c)
                        .last()
                        .copied()
                        .unwrap_or(0.0)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if rounds.steady_now(&plan.matrix) {
            break;
        }
    }
    if let Some(e) = failed {
        return finish_early(rt, sink, phases, e, args);
    }
    let outcome = rounds.outcome(&plan.matrix);
    if let Some(o) = &outcome {
        mark_window(&mut phases, o, &plan);
    }
    for p in phases {
        sink.keep(p);
    }
    if rt.is_root() {
        let header = header(
            args,
            &plan,
            range,
            size,
            &purge,
            &wipc,
            &rounds,
            outcome.as_ref(),
        );
        let inventory = inventory(&args.device, check.is_block_device);
        if !args.output.quiet {
            print!(
                "{}",
                render_text(&plan, &header, &rounds, outcome.as_ref(), &inventory)
            );
        }
        if let Some(path) = &args.html {
            let page = page(&plan, header, &rounds, outcome.as_ref(), inventory);
            std::fs::write(path, iolab_report::render_pts_html(&page))
                .map_err(|e| anyhow::anyhow!("--html: cannot write {}: {e}", path.display()))?;
        }
    }
    let quiet = OutputArgs {
        quiet: true,
        ..args.output.clone()
    };
    if rt.is_root() && !args.output.quiet && !sink.record.id.is_empty() {
        println!("stored as {}", sink.record.id);
    }
    conclude(rt, sink, &quiet)
}

/// Stores what ran and ends with the error (or the interruption).
fn finish_early(
    rt: &Runtime,
    mut sink: RunSink,
    phases: Vec<PhaseResult>,
    e: EngineError,
    args: &PtsArgs,
) -> Result<u8> {
    for p in phases {
        sink.keep(p);
    }
    match e {
        EngineError::Interrupted => conclude(rt, sink, &args.output),
        e => Err(abandon(sink, e)),
    }
}

/// Discards the whole device or image: BLKDISCARD, or the file's range punched out.
fn purge(path: &Path, size: u64) -> Result<(), String> {
    let f = iolab_backend::files::DataFile::open(
        path,
        iolab_backend::files::OpenSpec {
            write: true,
            ..Default::default()
        },
    )
    .map_err(|e| e.to_string())?;
    f.discard(0, size).map_err(|e| e.to_string())
}

fn mix_name(read: u8) -> String {
    format!("{read}/{}", 100 - read)
}

/// "4KiB-r0": a cell in a phase name.
fn cell_tag(c: &Cell) -> String {
    format!("{}-r{}", ByteCount(c.block_size), c.read_percent)
}

/// Reads, writes and trims per second of a phase.
fn total_iops(p: &PhaseResult) -> f64 {
    p.ops
        .iter()
        .filter(|o| matches!(o.op, OpKind::Read | OpKind::Write))
        .map(|o| o.iops.get())
        .sum()
}

/// The verdict on the tracked cells' phases of the window's last round, and on every
/// window phase its place in the window.
fn mark_window(phases: &mut [PhaseResult], o: &PtsOutcome, plan: &Plan) {
    let (first, last) = (o.window.0 + 1, o.window.1 + 1);
    for p in phases.iter_mut() {
        let Some(round) = p.extra.get("pts_round").map(|r| *r as usize) else {
            continue;
        };
        if round < first || round > last {
            continue;
        }
        p.extra.insert("pts_window".into(), 1.0);
        if round != last {
            continue;
        }
        for (cell, v) in &o.tracked {
            if p.name == format!("pts-r{round}-{}", cell_tag(cell)) {
                p.extra
                    .insert("pts_steady".into(), f64::from(u8::from(v.steady)));
                p.extra.insert("pts_window_average_iops".into(), v.average);
                p.extra.insert("pts_range_iops".into(), v.range);
                p.extra.insert("pts_excursion_iops".into(), v.excursion);
                p.extra.insert("pts_slope_iops".into(), v.slope);
            }
        }
    }
    let _ = plan;
}

#[allow(clippy::too_many_arguments)]
fn header(
    args: &PtsArgs,
    plan: &Plan,
    range: u8,
    size: u64,
    purge: &str,
    wipc: &str,
    rounds: &PtsRounds,
    outcome: Option<&PtsOutcome>,
) -> Vec<(String, String)> {
    let class = match args.class {
        Class::Enterprise => "PTS-E (enterprise): active range 100 %, write cache expected off",
        Class::Client => "PTS-C (client): active range 75 %, write cache expected on",
    };
    let verdict = match outcome {
        Some(o) if o.steady => format!(
            "STEADY: rounds {}-{} are the measurement window ({} rounds run)",
            o.window.0 + 1,
            o.window.1 + 1,
            rounds.rounds.len()
        ),
        Some(o) => format!(
            "NOT STEADY after {} rounds (the most: {}): the table holds the last five, rounds {}-{}",
            rounds.rounds.len(),
            plan.max_rounds,
            o.window.0 + 1,
            o.window.1 + 1
        ),
        None => format!(
            "no verdict: {} rounds ran, five are needed",
            rounds.rounds.len()
        ),
    };
    let mut h = vec![
        ("test".to_string(), "SNIA PTS 2.0 IOPS".to_string()),
        ("class".into(), class.into()),
        (
            "device".into(),
            format!("{} ({})", args.device.display(), ByteCount(size).human()),
        ),
        (
            "active range".into(),
            format!("{range} % ({})", ByteCount(plan.active).human()),
        ),
        (
            "demand intensity".into(),
            format!(
                "{} threads x queue depth {} ({} engine, O_DIRECT)",
                args.threads,
                args.queue_depth,
                args.backend.name()
            ),
        ),
        ("purge".into(), purge.into()),
        ("preconditioning (workload-independent)".into(), wipc.into()),
        (
            "rounds".into(),
            format!(
                "{} cells of {} each (--scale {}), random, uniform over the active range",
                plan.matrix.cells().len(),
                plan.cell_time,
                args.scale
            ),
        ),
        (
            "tracked".into(),
            plan.matrix
                .tracked
                .iter()
                .map(Cell::name)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("steady state".into(), verdict),
    ];
    if !plan.whole_matrix {
        h.push((
            "matrix".into(),
            "limited by --block-sizes/--mixes: not PTS's whole IOPS matrix".into(),
        ));
    }
    if args.scale != 1.0 {
        h.push((
            "durations".into(),
            format!("scaled by {}: not PTS's one minute per cell", args.scale),
        ));
    }
    if let Some(w) = write_cache(&args.device) {
        let expected = match args.class {
            Class::Enterprise => "write through",
            Class::Client => "write back",
        };
        let note = if w == expected {
            String::new()
        } else {
            format!(" (PTS expects {expected} for this class; iolab does not change it)")
        };
        h.push(("write cache".into(), format!("{w}{note}")));
    }
    h
}

/// The kernel's name of a block device path (/dev/loop3 -> loop3).
fn kernel_name(device: &Path) -> Option<String> {
    let real = std::fs::canonicalize(device).ok()?;
    real.file_name().map(|n| n.to_string_lossy().into_owned())
}

fn sys(name: &str, rel: &str) -> Option<String> {
    std::fs::read_to_string(format!("/sys/class/block/{name}/{rel}"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn write_cache(device: &Path) -> Option<String> {
    sys(&kernel_name(device)?, "queue/write_cache")
}

/// The device's inventory (sysfs), or the image file's file system.
fn inventory(device: &Path, block: bool) -> Vec<(String, String)> {
    let mut rows = vec![("path".to_string(), device.display().to_string())];
    if block && let Some(name) = kernel_name(device) {
        rows.push(("kernel name".into(), name.clone()));
        for (label, rel) in [
            ("model", "device/model"),
            ("serial", "device/serial"),
            ("firmware", "device/firmware_rev"),
            ("vendor", "device/vendor"),
            ("backing file", "loop/backing_file"),
            ("logical block size", "queue/logical_block_size"),
            ("physical block size", "queue/physical_block_size"),
            ("rotational", "queue/rotational"),
            ("discard granularity", "queue/discard_granularity"),
            ("discard max bytes", "queue/discard_max_bytes"),
            ("write cache", "queue/write_cache"),
            ("scheduler", "queue/scheduler"),
        ] {
            if let Some(v) = sys(&name, rel) {
                rows.push((label.into(), v));
            }
        }
        if let Some(sectors) = sys(&name, "size").and_then(|s| s.parse::<u64>().ok()) {
            rows.push(("capacity".into(), ByteCount(sectors * 512).human()));
        }
    } else {
        let mut notes = Vec::new();
        let t = iolab_host::inventory::target_info(
            &iolab_host::SysRoot::live(),
            device.parent().unwrap_or(Path::new("/")),
            &mut notes,
        );
        rows.push(("kind".into(), "image file".into()));
        if let (Some(fs), Some(m)) = (t.fs_type, t.mount_point) {
            rows.push(("file system".into(), format!("{fs} at {m}")));
        }
        for d in t.block_devices {
            rows.push((
                "under it".into(),
                format!("{} {}", d.name, d.model.unwrap_or_default())
                    .trim()
                    .to_string(),
            ));
        }
    }
    rows
}

fn render_text(
    plan: &Plan,
    header: &[(String, String)],
    rounds: &PtsRounds,
    outcome: Option<&PtsOutcome>,
    inventory: &[(String, String)],
) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "iolab pts · SNIA PTS 2.0 IOPS");
    for (k, v) in header {
        let _ = writeln!(out, "  {k}: {v}");
    }
    if let Some(o) = outcome {
        let _ = writeln!(
            out,
            "\nSteady state (PTS: range <= 20 %, excursion <= 10 % of the window average):"
        );
        for (c, v) in &o.tracked {
            let _ = writeln!(
                out,
                "  {:<12} {}  average {:.0} IOPS, range {:.1} %, excursion {:.1} %, slope {:.1} IOPS/round",
                c.name(),
                if v.steady { "steady    " } else { "NOT steady" },
                v.average,
                100.0 * v.range / v.average.max(f64::MIN_POSITIVE),
                100.0 * v.excursion / v.average.max(f64::MIN_POSITIVE),
                v.slope
            );
        }
        let _ = writeln!(
            out,
            "\nIOPS, average of rounds {}-{} (rows: block size; columns: R/W mix):",
            o.window.0 + 1,
            o.window.1 + 1
        );
        let _ = write!(out, "  {:>8}", "");
        for m in &plan.matrix.mixes {
            let _ = write!(out, " {:>10}", mix_name(*m));
        }
        out.push('\n');
        for (bs, row) in table(plan, o) {
            let _ = write!(out, "  {bs:>8}");
            for v in row {
                let _ = write!(out, " {v:>10.0}");
            }
            out.push('\n');
        }
    } else {
        let _ = writeln!(
            out,
            "\n{} rounds ran: no measurement window",
            rounds.rounds.len()
        );
    }
    let _ = writeln!(out, "\nDevice:");
    for (k, v) in inventory {
        let _ = writeln!(out, "  {k}: {v}");
    }
    out
}

/// The IOPS table's rows: block size and each mix's window average.
fn table(plan: &Plan, o: &PtsOutcome) -> Vec<(String, Vec<f64>)> {
    let n = plan.matrix.mixes.len();
    plan.matrix
        .block_sizes
        .iter()
        .enumerate()
        .map(|(b, bs)| {
            (
                ByteCount(*bs).to_string(),
                o.averages[b * n..(b + 1) * n].to_vec(),
            )
        })
        .collect()
}

fn page(
    plan: &Plan,
    header: Vec<(String, String)>,
    rounds: &PtsRounds,
    outcome: Option<&PtsOutcome>,
    inventory: Vec<(String, String)>,
) -> PtsPage {
    // Convergence: every block size at the tracked cells' mixes (PTS plots each block
    // size's rounds at 100 % writes), the tracked cells first.
    let mut convergence: Vec<(String, Vec<f64>)> = plan
        .matrix
        .tracked
        .iter()
        .map(|c| (c.name(), rounds.series(&plan.matrix, *c)))
        .collect();
    if plan.matrix.mixes.contains(&0) {
        for bs in &plan.matrix.block_sizes {
            let c = Cell {
                block_size: *bs,
                read_percent: 0,
            };
            if !plan.matrix.tracked.contains(&c) {
                convergence.push((c.name(), rounds.series(&plan.matrix, c)));
            }
        }
    }
    let windows = outcome
        .map(|o| {
            o.tracked
                .iter()
                .map(|(c, v)| {
                    let s = rounds.series(&plan.matrix, *c);
                    WindowPlot {
                        cell: c.name(),
                        rounds: (o.window.0 + 1..=o.window.1 + 1).collect(),
                        iops: s[o.window.0..=o.window.1].to_vec(),
                        average: v.average,
                        intercept: v.intercept,
                        slope: v.slope,
                        steady: v.steady,
                        verdict: format!(
                            "range {:.1} % of the average (limit 20 %), least-squares excursion {:.1} % (limit 10 %): {}",
                            100.0 * v.range / v.average.max(f64::MIN_POSITIVE),
                            100.0 * v.excursion / v.average.max(f64::MIN_POSITIVE),
                            if v.steady { "steady" } else { "NOT steady" }
                        ),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    PtsPage {
        title: "iolab pts: SNIA PTS 2.0 IOPS".into(),
        header,
        convergence,
        windows,
        mixes: plan.matrix.mixes.iter().map(|m| mix_name(*m)).collect(),
        table: outcome.map(|o| table(plan, o)).unwrap_or_default(),
        inventory,
    }
}
