//! `iolab pts`: SNIA PTS 2.0's IOPS, throughput and latency tests on a device or an
//! image file. Purge (a discard of the whole device), workload-independent
//! preconditioning (sequential 128 KiB writes over the active range, twice), then rounds
//! of the test's R/W mix x block size matrix until the tracked cells are steady over a
//! 5-round window (at most 25), and the report PTS asks for: the settings, the
//! convergence and measurement-window plots, the tables and the device. The throughput
//! test runs each block size as its own test (purge, preconditioning, rounds). Every
//! phase is stored like a study's. The procedure is `iolab_suites::pts::run_pts`; this
//! command checks its arguments, stores the phases and renders the report.

mod args;
mod device;

use anyhow::{Result, bail};
use iolab_core::spec::TargetSpec;
use iolab_core::steady::{PTS_MAX_ROUNDS, PTS_WINDOW};
use iolab_core::units::TimeSpan;
use iolab_engine::{EngineError, MonotonicClock, PreparedTarget, prepare_target};
use iolab_suites::pts::{
    Cell, PtsHooks, PtsPlan, PtsStopped, PtsTest, PtsTestResult, cell_spec, run_pts,
};

use crate::commands::finish::{abandon, conclude, conclude_after_report};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;
pub use args::{Class, PtsArgs, TestKind};
use args::{matrices, parse_mix};
use device::{inventory, write_cache};
use iolab_report::pts::{PtsSettings, pts_header, pts_page, render_pts_text};

pub fn pts(mut args: PtsArgs) -> Result<u8> {
    // Before a test of hours, not after it.
    if let Some(path) = &args.html {
        crate::output::check_output_dir("--html", path)?;
    }
    let range = check_bounds(&args)?;
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
    let (threads, queue_depth) = load(&args, test)?;
    args.threads = Some(threads);
    args.queue_depth = Some(queue_depth);
    let (subs, whole_matrix) = matrices(test, args.class, sizes.as_deref(), mixes.as_deref())?;
    let plan = PtsPlan {
        test,
        subs,
        active: 0,
        cell_time: cell_time(&args)?,
        max_rounds: args.max_rounds,
        whole_matrix,
        threads,
        queue_depth,
        backend: args.backend,
        precondition: args.precondition,
        precondition_block_size: args.precondition_block_size,
        device: args.target_path(),
        size: 0,
        is_block_device: false,
        no_purge: args.no_purge,
    };
    let base = cell_spec(
        &plan,
        Cell {
            block_size: 4096,
            read_percent: 0,
        },
        4096,
    );
    base.validate()?;
    Runtime::with(|rt| pts_in(rt, &args, range, plan))
}

/// --scale and --max-rounds within their bounds; the active range in percent.
fn check_bounds(args: &PtsArgs) -> Result<u8> {
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
    Ok(range)
}

/// The threads and queue depth of the test: given, or PTS's (the latency test's one
/// outstanding I/O only).
fn load(args: &PtsArgs, test: PtsTest) -> Result<(u32, u32)> {
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
    Ok((threads, queue_depth))
}

/// A cell's time, --cell-time scaled, of 100ms at least.
fn cell_time(args: &PtsArgs) -> Result<TimeSpan> {
    let cell_time = TimeSpan(iolab_core::units::Nanos(
        (args.cell_time.nanos().0 as f64 * args.scale) as u64,
    ));
    if cell_time.nanos().0 < 100_000_000 {
        bail!(
            "--scale: a cell of {} is shorter than 100ms; use a larger --scale or --cell-time",
            cell_time
        );
    }
    Ok(cell_time)
}

fn target_spec(args: &PtsArgs) -> TargetSpec {
    TargetSpec {
        device: args.device.clone(),
        nbd_uri: args.nbd_uri.clone(),
        allow_destroy: args.allow_destroy,
        ..TargetSpec::default()
    }
}

fn pts_in(rt: &Runtime, args: &PtsArgs, range: u8, mut plan: PtsPlan) -> Result<u8> {
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
    plan.size = check.size;
    plan.is_block_device = check.is_block_device;
    plan.active = plan.active_bytes(range)?;
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "pts",
        stored_spec(args, &plan, range),
        crate::commands::run::describe(&target_spec),
        None,
    );
    let watch = Watch::new(&args.output, &sink, args.device.as_deref());
    let say = |s: String| {
        if rt.is_root() && !args.output.quiet {
            eprintln!("iolab pts: {s}");
        }
    };
    let hooks = PtsHooks {
        say: &say,
        phase_done: &|| watch.progress.finish(),
    };
    let done = match run_pts(&watch.env(rt), &MonotonicClock, &target, &plan, &hooks) {
        Ok(done) => done,
        Err(PtsStopped { phases, error }) => {
            for p in phases {
                sink.keep(p);
            }
            return match error {
                EngineError::Interrupted => conclude(rt, sink, &args.output),
                e => Err(abandon(sink, e)),
            };
        }
    };
    for p in done.phases {
        sink.keep(p);
    }
    if rt.is_root() {
        report(args, &plan, range, &done.tests)?;
    }
    conclude_after_report(rt, sink, &args.output)
}

/// The text (unless --quiet) and the --html page of a finished run (rank 0).
fn report(args: &PtsArgs, plan: &PtsPlan, range: u8, tests: &[PtsTestResult]) -> Result<()> {
    let header = pts_header(&settings(args, plan, range), tests);
    let inventory = inventory(&args.target_path(), plan.is_block_device);
    if !args.output.quiet {
        print!("{}", render_pts_text(plan.test, &header, tests, &inventory));
    }
    if let Some(path) = &args.html {
        let page = pts_page(plan.test, &plan.subs[0].mixes, header, tests, inventory);
        std::fs::write(path, iolab_report::render_pts_html(&page))
            .map_err(|e| anyhow::anyhow!("--html: cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// The settings the report's header shows.
fn settings(args: &PtsArgs, plan: &PtsPlan, range: u8) -> PtsSettings {
    PtsSettings {
        test: plan.test,
        class: args.class,
        device: args.target_path().display().to_string(),
        size: plan.size,
        range,
        active: plan.active,
        threads: plan.threads,
        queue_depth: plan.queue_depth,
        backend: args.backend.name().to_string(),
        nbd: args.nbd_uri.is_some(),
        cell_time: plan.cell_time,
        scale: args.scale,
        max_rounds: plan.max_rounds,
        whole_matrix: plan.whole_matrix,
        write_cache: write_cache(&args.target_path()),
    }
}

/// The run's settings as stored with it.
fn stored_spec(args: &PtsArgs, plan: &PtsPlan, range: u8) -> serde_json::Value {
    let all_sizes: Vec<u64> = plan
        .subs
        .iter()
        .flat_map(|m| m.block_sizes.iter().copied())
        .collect();
    serde_json::json!({
        "test": plan.test.key().trim_end_matches("_ms").replace("mbps", "throughput"),
        "class": format!("{:?}", args.class).to_lowercase(),
        "active_range_percent": range, "scale": args.scale,
        "cell_time": plan.cell_time.to_string(), "threads": plan.threads,
        "queue_depth": plan.queue_depth, "precondition": args.precondition,
        "block_sizes": all_sizes, "read_percents": plan.subs[0].mixes,
    })
}
