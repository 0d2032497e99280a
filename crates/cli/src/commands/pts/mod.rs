//! `iolab pts`: SNIA PTS 2.0's IOPS, throughput and latency tests on a device or an
//! image file. Purge (a discard of the whole device), workload-independent
//! preconditioning (sequential 128 KiB writes over the active range, twice), then rounds
//! of the test's R/W mix x block size matrix until the tracked cells are steady over a
//! 5-round window (at most 25), and the report PTS asks for: the settings, the
//! convergence and measurement-window plots, the tables and the device. The throughput
//! test runs each block size as its own test (purge, preconditioning, rounds). Every
//! phase is stored like a study's.

mod args;
mod figures;
mod report;
mod steps;

use anyhow::{Result, bail};
use iolab_core::result::PhaseResult;
use iolab_core::spec::{DataSpec, Layout, RandomKind, RwKind, TargetSpec};
use iolab_core::steady::{PTS_MAX_ROUNDS, PTS_WINDOW};
use iolab_core::units::{ByteCount, TimeSpan};
use iolab_engine::data::{DataOptions, run_data};
use iolab_engine::{EngineError, MonotonicClock, PreparedTarget, prepare_target};
use iolab_suites::pts::{Cell, PtsMatrix, PtsOutcome, PtsRounds, PtsTest};

use crate::commands::finish::{abandon, conclude, conclude_after_report};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;
pub use args::{Class, PtsArgs, TestKind};
use args::{matrices, parse_mix};
use figures::{latency_tables, mark_window};
use report::{header, inventory, page, render_text};
use steps::{Steps, active_bytes, purge_step};

/// The settings every cell shares.
struct Plan {
    test: PtsTest,
    /// The tests run one after the other, each with its purge and preconditioning (the
    /// throughput test's block sizes; one matrix otherwise).
    subs: Vec<PtsMatrix>,
    active: u64,
    cell_time: TimeSpan,
    max_rounds: usize,
    whole_matrix: bool,
    threads: u32,
    queue_depth: u32,
}

/// What one of the plan's tests did.
struct Sub {
    matrix: PtsMatrix,
    purge: String,
    wipc: String,
    rounds: PtsRounds,
    outcome: Option<PtsOutcome>,
    /// The latency test's other tables (title, decimals, rows of block size and values
    /// per mix).
    extra_tables: Vec<(String, usize, Table)>,
}

type Table = Vec<(String, Vec<f64>)>;

pub fn pts(mut args: PtsArgs) -> Result<u8> {
    // Before a test of hours, not after it.
    if let Some(path) = &args.html {
        crate::output::check_output_dir("--html", path)?;
    }
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
    let test = match args.test {
        TestKind::Iops => PtsTest::Iops,
        TestKind::Throughput => PtsTest::Throughput,
        TestKind::Latency => PtsTest::Latency,
    };
    let (threads, queue_depth) = match test {
        PtsTest::Iops => (args.threads.unwrap_or(4), args.queue_depth.unwrap_or(32)),
        PtsTest::Throughput => (args.threads.unwrap_or(1), args.queue_depth.unwrap_or(32)),
        PtsTest::Latency => {
            if args.threads.unwrap_or(1) != 1 || args.queue_depth.unwrap_or(1) != 1 {
                bail!(
                    "--threads/--queue-depth: PTS's latency test runs at one outstanding I/O (TC 1 x QD 1); leave them out"
                );
            }
            (1, 1)
        }
    };
    if threads == 0 || queue_depth == 0 {
        bail!("--threads/--queue-depth: must be at least 1");
    }
    args.threads = Some(threads);
    args.queue_depth = Some(queue_depth);
    let (subs, whole_matrix) = matrices(test, args.class, sizes.as_deref(), mixes.as_deref())?;
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
    Runtime::with(|rt| {
        pts_in(
            rt,
            &args,
            range,
            Plan {
                test,
                subs,
                active: 0,
                cell_time,
                max_rounds: args.max_rounds,
                whole_matrix,
                threads,
                queue_depth,
            },
        )
    })
}

/// One cell's workload over `active` bytes.
fn cell_spec(args: &PtsArgs, cell: Cell, active: u64, time: TimeSpan) -> DataSpec {
    let sequential = args.test == TestKind::Throughput;
    DataSpec {
        rw: match (cell.read_percent, sequential) {
            (100, false) => RwKind::Randread,
            (0, false) => RwKind::Randwrite,
            (_, false) => RwKind::Randrw,
            (100, true) => RwKind::Read,
            (0, true) => RwKind::Write,
            (_, true) => RwKind::Rw,
        },
        rwmix_read: cell.read_percent,
        block_size: ByteCount(cell.block_size),
        threads: args.threads.unwrap_or(1),
        queue_depth: args.queue_depth.unwrap_or(1),
        backend: args.backend,
        direct: true,
        layout: Layout::Shared,
        total_size: Some(ByteCount(active)),
        random: if sequential {
            DataSpec::default().random
        } else {
            RandomKind::Uniform
        },
        runtime: Some(time),
        ..DataSpec::default()
    }
}

fn target_spec(args: &PtsArgs) -> TargetSpec {
    TargetSpec {
        device: args.device.clone(),
        nbd_uri: args.nbd_uri.clone(),
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
            args.target_path().display()
        );
    };
    let size = check.size;
    let active = active_bytes(args, &plan, range, size)?;
    plan.active = active;
    let all_sizes: Vec<u64> = plan
        .subs
        .iter()
        .flat_map(|m| m.block_sizes.iter().copied())
        .collect();
    let mut sink = RunSink::start(
        rt,
        &args.output.store,
        "pts",
        serde_json::json!({
            "test": plan.test.key().trim_end_matches("_ms").replace("mbps", "throughput"),
            "class": format!("{:?}", args.class).to_lowercase(),
            "active_range_percent": range, "scale": args.scale,
            "cell_time": plan.cell_time.to_string(), "threads": plan.threads,
            "queue_depth": plan.queue_depth, "precondition": args.precondition,
            "block_sizes": all_sizes, "read_percents": plan.subs[0].mixes,
        }),
        crate::commands::run::describe(&target_spec),
        None,
        args.output.label.clone(),
    );
    let watch = Watch::new(&args.output, &sink, args.device.as_deref());
    let env = watch.env(rt);
    let say = |s: String| {
        if rt.is_root() && !args.output.quiet {
            eprintln!("iolab pts: {s}");
        }
    };
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
    let several = plan.subs.len() > 1;
    let mut done: Vec<Sub> = Vec::new();
    for matrix in plan.subs.clone() {
        let of = if several {
            format!(" ({} test)", ByteCount(matrix.block_sizes[0]))
        } else {
            String::new()
        };
        let purge = purge_step(args, size, check.is_block_device);
        say(format!("purge{of}: {purge}"));
        target.mark_written();
        let wipc_name = if several {
            format!("pts-wipc-{}", ByteCount(matrix.block_sizes[0]))
        } else {
            "pts-wipc".into()
        };
        let steps = Steps {
            args,
            plan: &plan,
            active,
            of: &of,
            run: &run,
            say: &say,
        };
        let steps = steps.precondition(wipc_name, &mut phases).and_then(|wipc| {
            steps
                .rounds(&matrix, &mut phases)
                .map(|rounds| (wipc, rounds))
        });
        let (wipc, rounds) = match steps {
            Ok(done) => done,
            Err(e) => return finish_early(rt, sink, phases, e, args),
        };
        let outcome = rounds.outcome(&matrix);
        let mut extra_tables = Vec::new();
        if let Some(o) = &outcome {
            mark_window(&mut phases, o, &matrix);
            if plan.test == PtsTest::Latency {
                extra_tables = latency_tables(&phases, &matrix, o);
            }
        }
        done.push(Sub {
            matrix,
            purge,
            wipc,
            rounds,
            outcome,
            extra_tables,
        });
    }
    for p in phases {
        sink.keep(p);
    }
    if rt.is_root() {
        let header = header(args, &plan, range, size, &done);
        let inventory = inventory(&args.target_path(), check.is_block_device);
        if !args.output.quiet {
            print!("{}", render_text(&plan, &header, &done, &inventory));
        }
        if let Some(path) = &args.html {
            let page = page(&plan, header, &done, inventory);
            std::fs::write(path, iolab_report::render_pts_html(&page))
                .map_err(|e| anyhow::anyhow!("--html: cannot write {}: {e}", path.display()))?;
        }
    }
    conclude_after_report(rt, sink, &args.output)
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
