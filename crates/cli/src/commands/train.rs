//! `iolab train`: AI training's data loading, as MLPerf Storage's DLIO emulates it.
//! `datagen` writes a dataset in DLIO's layout and formats, `run` trains on one and
//! reports AU per epoch with MLPerf's validity checks, `search` finds the most
//! accelerators that keep AU at the threshold, `plan` prints what a workload resolves to.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use iolab_comm::CommExt;
use iolab_core::SpecError;
use iolab_core::result::{OpCount, OpKind, PhaseResult, RunStatus};
use iolab_core::spec::{TrainConfig, TrainSpec};
use iolab_core::train::{
    Check, RunFigures, RunOutcome, ValidityInput, Verdict, runs_rule, validity,
};
use iolab_core::units::{ByteCount, Nanos};
use iolab_engine::memory::{Available, ranks_on_this_host};
use iolab_suites::train::search::{SearchResult, search};
use iolab_suites::train::{
    Dataset, LiveStep, TrainError, TrainHooks, generate, train_epochs, whole_phase,
};

use crate::cli::OutputArgs;
use crate::commands::finish::conclude;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

#[derive(Args, Debug)]
pub struct TrainArgs {
    #[command(subcommand)]
    pub command: TrainCommand,
}

#[derive(Subcommand, Debug)]
pub enum TrainCommand {
    /// Write a dataset in DLIO's layout and format (npz, tfrecord) under --data-dir.
    Datagen(DatagenArgs),
    /// Train on a dataset: simulated accelerators read it and compute; AU per epoch.
    Run(TrainRunArgs),
    /// Find the most accelerators that keep AU at the threshold (MLPerf Storage's headline).
    Search(SearchArgs),
    /// Print what a workload resolves to (DLIO's settings, sizes, memory), without I/O.
    Plan(PlanArgs),
}

#[derive(Args, Debug)]
pub struct DatagenArgs {
    #[command(flatten)]
    pub spec: TrainSpec,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct TrainRunArgs {
    #[command(flatten)]
    pub spec: TrainSpec,
    /// Empty the page cache before the run (root; MLPerf requires it on every host).
    #[arg(long)]
    pub drop_caches: bool,
    /// Counted runs, each with a new seed (--seed, --seed + 1, ...): figures are their
    /// mean, and MLPerf wants them within 5 %.
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Warm-up runs before the counted ones (not counted, seeds before theirs).
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = clap::value_parser!(u32).range(0..=100))]
    pub warmup: u32,
    /// MLPerf Storage's run rule: --warmup 1 --runs 5 --drop-caches, with the verdict.
    #[arg(long, conflicts_with_all = ["runs", "warmup"])]
    pub mlperf: bool,
    /// Also write the result as DLIO's summary.json.
    #[arg(long, value_name = "FILE")]
    pub summary_json: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    pub spec: TrainSpec,
    /// The most accelerators per process to try.
    #[arg(long, default_value_t = 64)]
    pub max: u32,
    /// Empty the page cache before every trial (root).
    #[arg(long)]
    pub drop_caches: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(flatten)]
    pub spec: TrainSpec,
}

pub fn train(args: TrainArgs) -> Result<u8> {
    match args.command {
        TrainCommand::Datagen(a) => Runtime::with(|rt| datagen_in(rt, a)),
        TrainCommand::Run(a) => Runtime::with(|rt| run_in(rt, a)),
        TrainCommand::Search(a) => Runtime::with(|rt| search_in(rt, a)),
        TrainCommand::Plan(a) => plan(a),
    }
}

fn data_dir(spec: &TrainSpec) -> Result<PathBuf, SpecError> {
    spec.data_dir.clone().ok_or_else(|| {
        SpecError::new(
            "--data-dir",
            "is required: where the dataset is (DLIO's data_folder)",
        )
    })
}

/// What one accelerator's loader holds: iolab's read buffers, and DLIO's (a whole file
/// per reader thread while it loads, and prefetched batches of samples).
fn memory_per_accelerator(cfg: &TrainConfig) -> (u64, u64) {
    let iolab = u64::from(cfg.read_threads) * cfg.transfer_size;
    let file = cfg.record_length as u64 * cfg.samples_per_file;
    let dlio = u64::from(cfg.read_threads) * file + prefetched(cfg);
    (iolab, dlio)
}

/// The samples a training job's loader holds ahead of one accelerator: prefetch x batch
/// x the mean sample size (the and MLPerf's memory figure for a reader).
fn prefetched(cfg: &TrainConfig) -> u64 {
    (f64::from(cfg.prefetch) * cfg.batch_size as f64 * cfg.record_length).min(u64::MAX as f64)
        as u64
}

/// The memory pre-flight, before anything is read: the prefetched batches a training
/// job's loader would hold for this host's accelerators (prefetch x batch x sample size
/// each), and iolab's own read buffers, against what the host can give. Either one over
/// 80 % of it is refused with the figure: iolab does not keep the samples it reads, but
/// a workload whose loader could not fit on the host is not one a host could train.
fn check_memory(cfg: &TrainConfig, ranks_on_host: u32) -> Result<(u64, u64), SpecError> {
    let (mine, dlio) = memory_per_accelerator(cfg);
    let accs = u64::from(cfg.accelerators) * u64::from(ranks_on_host.max(1));
    let need = mine.saturating_mul(accs);
    let held = prefetched(cfg).saturating_mul(accs);
    if let Some(have) = Available::read(Path::new("/")).bytes() {
        let limit = have as f64 * 0.8;
        if held as f64 > limit {
            return Err(SpecError::new(
                "--prefetch",
                format!(
                    "{accs} accelerators x prefetch {} x batch {} x {} samples: a loader holds {} on this host, more than 80% of the {} available: lower --prefetch, --batch-size or the accelerators",
                    cfg.prefetch,
                    cfg.batch_size,
                    ByteCount(cfg.record_length as u64).human(),
                    ByteCount(held).human(),
                    ByteCount(have).human()
                ),
            ));
        }
        if need as f64 > limit {
            return Err(SpecError::new(
                "--read-threads",
                format!(
                    "{accs} accelerators x {} reader threads x --transfer-size {} need {} of read buffers on this host, more than 80% of the {} available: lower one of them",
                    cfg.read_threads,
                    ByteCount(cfg.transfer_size).human(),
                    ByteCount(need).human(),
                    ByteCount(have).human()
                ),
            ));
        }
    }
    Ok((need, dlio.saturating_mul(accs)))
}

fn spec_json(spec: &TrainSpec, cfg: &TrainConfig) -> serde_json::Value {
    serde_json::json!({ "spec": spec, "workload": cfg })
}

fn plan(args: PlanArgs) -> Result<u8> {
    let cfg = args.spec.resolve()?;
    let total = u64::from(cfg.accelerators);
    cfg.check_job(total)?;
    let (mine, dlio) = memory_per_accelerator(&cfg);
    let mut out = String::new();
    let _ = writeln!(out, "iolab {} · train plan", env!("CARGO_PKG_VERSION"));
    if let Some(p) = cfg.preset {
        let _ = writeln!(
            out,
            "  preset          {} (DLIO workload {})",
            format!("{p:?}").to_lowercase(),
            p.dlio_workload(cfg.accelerator)
        );
    }
    let _ = writeln!(
        out,
        "  dataset         {} {} files x {} samples of {:.0} bytes (stdev {:.0}): {}",
        cfg.files,
        cfg.format.extension(),
        cfg.samples_per_file,
        cfg.record_length,
        cfg.record_length_stdev,
        ByteCount(cfg.dataset_bytes() as u64).human()
    );
    let _ = writeln!(
        out,
        "  loader          {:?}, batch {}, {} reader threads, prefetch {}",
        cfg.loader, cfg.batch_size, cfg.read_threads, cfg.prefetch
    );
    let _ = writeln!(
        out,
        "  compute         {:.4} s per step, {} epochs, {} steps per epoch with {} accelerator(s)",
        cfg.computation_time,
        cfg.epochs,
        cfg.steps_per_epoch(total),
        total
    );
    let _ = writeln!(out, "  AU threshold    {:.0}%", cfg.au_threshold);
    let _ = writeln!(
        out,
        "  memory          iolab holds {} per accelerator; DLIO's loader about {}",
        ByteCount(mine).human(),
        ByteCount(dlio).human()
    );
    print!("{out}");
    Ok(crate::exit::OK)
}

fn datagen_in(rt: &Runtime, args: DatagenArgs) -> Result<u8> {
    let prepared = args
        .spec
        .resolve()
        .map_err(anyhow::Error::from)
        .and_then(|cfg| Ok((cfg, data_dir(&args.spec)?)))
        .and_then(|x| {
            args.output.prepare(rt)?;
            Ok(x)
        });
    let (cfg, dir) = rt.agree(prepared)?;
    let mut sink = RunSink::start(
        rt,
        &args.output.store,
        "train-datagen",
        spec_json(&args.spec, &cfg),
        dir.display().to_string(),
        dir.parent(),
        args.output.label.clone(),
    );
    let started_at_ms = iolab_engine::phase::now_ms();
    let out = match generate(rt.comm.as_ref(), &dir, &cfg, cfg.accelerators, rt.interrupt) {
        Ok(o) => o,
        Err(e) => return fail(rt, sink, e),
    };
    let mut extra = std::collections::BTreeMap::new();
    extra.insert("files".into(), out.files as f64);
    extra.insert(
        "files_per_sec".into(),
        out.files as f64 / out.elapsed.as_secs_f64().max(1e-9),
    );
    let count = OpCount {
        ops: out.writes,
        bytes: out.bytes,
    };
    let phase = PhaseResult {
        params: [("format".to_string(), cfg.format.extension().to_string())].into(),
        extra,
        interrupted: out.interrupted,
        ..whole_phase(
            "train-datagen".into(),
            OpKind::Write,
            count,
            out.elapsed,
            out.histogram.clone(),
            serde_json::to_value(&cfg).unwrap_or_default(),
            started_at_ms,
            (rt.comm.size(), rt.comm.size() * cfg.accelerators),
        )
    };
    if rt.is_root() && !args.output.quiet {
        println!(
            "iolab {} · train datagen: {} {} files, {} in {} ({}, {:.1} files/s) in {}",
            env!("CARGO_PKG_VERSION"),
            out.files,
            cfg.format.extension(),
            ByteCount(out.bytes).human(),
            out.elapsed.human(),
            iolab_core::bandwidth(ByteCount(out.bytes), out.elapsed).human(),
            out.files as f64 / out.elapsed.as_secs_f64().max(1e-9),
            dir.display()
        );
    }
    sink.phase(phase);
    stored_as(rt, &sink, &args.output);
    conclude(rt, sink, &quiet(&args.output))
}

fn stored_as(rt: &Runtime, sink: &RunSink, output: &OutputArgs) {
    if rt.is_root() && !output.quiet && !sink.record.id.is_empty() {
        println!("stored as {}", sink.record.id);
    }
}

fn quiet(o: &OutputArgs) -> OutputArgs {
    OutputArgs {
        quiet: true,
        ..o.clone()
    }
}

/// Ends a run that stopped on an error: an I/O error is a failed benchmark (exit 1),
/// Ctrl-C an interrupted one (130), anything else a usage error (2).
fn fail(rt: &Runtime, mut sink: RunSink, e: TrainError) -> Result<u8> {
    match e {
        TrainError::Interrupted => {
            sink.finish(RunStatus::Interrupted);
            Ok(crate::exit::INTERRUPTED)
        }
        TrainError::Io(why) => {
            sink.finish(RunStatus::Failed);
            if rt.is_root() {
                eprintln!("iolab: the benchmark ran but failed: {why}");
            }
            Ok(crate::exit::FAILED)
        }
        e => {
            sink.discard();
            Err(anyhow::Error::from(e))
        }
    }
}

/// Everything a training run needs before it reads: the workload, the dataset, the
/// memory pre-flight. Agreed by every rank.
fn prepare(
    rt: &Runtime,
    spec: &TrainSpec,
    output: &OutputArgs,
) -> Result<(TrainConfig, Dataset, (u64, u64))> {
    let ranks_here = ranks_on_this_host(rt.comm.as_ref());
    let step = (|| -> Result<_> {
        let cfg = spec.resolve()?;
        let dir = data_dir(spec)?;
        let dataset = Dataset::open(&dir, &cfg)?;
        let mem = check_memory(&cfg, ranks_here)?;
        output.prepare(rt)?;
        Ok((cfg, dataset, mem))
    })();
    rt.agree(step)
}

fn drop_caches(rt: &Runtime) -> bool {
    let ok = iolab_backend::files::drop_whole_page_cache().is_ok();
    rt.comm.all_ok(ok)
}

/// The live page after a step; `prefix` names the run of a repeated run ("run-2-").
fn live_step(prefix: &str, s: &LiveStep) {
    if let Some(live) = crate::live::current() {
        let secs = s.elapsed.as_secs_f64().max(1e-9);
        live.update(|st| {
            st.train = Some(crate::live::state::TrainLive {
                epoch: s.epoch,
                epochs: s.epochs,
                step: s.step,
                steps: s.steps,
                accelerators: s.accelerators,
                au_percent: s.au_percent,
                samples_per_sec: s.samples as f64 / secs,
            });
        });
        live.progress(&iolab_engine::Progress {
            phase: &format!("{prefix}train-epoch-{}", s.epoch),
            elapsed: Nanos(s.elapsed.as_nanos() as u64),
            ops: s.reads,
            bytes: s.bytes,
            workers_done: 0,
            workers: s.accelerators as u32,
            latency: &[],
            per_rank: &[],
            per_unit: &[],
            counted: &[],
        });
    }
}

/// How a run is watched: Ctrl-C, the live page after every step, the stall deadline,
/// the device and CPU probe.
fn hooks<'a>(
    rt: &'a Runtime,
    output: &OutputArgs,
    probe: Option<&'a dyn iolab_engine::PhaseProbe>,
    on_step: &'a (dyn Fn(&LiveStep) + Sync),
) -> TrainHooks<'a> {
    TrainHooks {
        interrupt: rt.interrupt,
        on_step: Some(on_step),
        stall: output.stall_timeout(),
        probe,
    }
}

fn run_in(rt: &Runtime, args: TrainRunArgs) -> Result<u8> {
    let (cfg, dataset, (mem_mine, mem_dlio)) = prepare(rt, &args.spec, &args.output)?;
    let (warmups, runs, drop) = if args.mlperf {
        (1, 5, true)
    } else {
        (args.warmup, args.runs, args.drop_caches)
    };
    let total = warmups + runs;
    // A repeated run names its runs' epochs "warmup-1-train-epoch-1", "run-2-...".
    let prefix = |k: u32| -> String {
        if total == 1 {
            String::new()
        } else if k < warmups {
            format!("warmup-{}-", k + 1)
        } else {
            format!("run-{}-", k - warmups + 1)
        }
    };
    let mut sink = RunSink::start(
        rt,
        &args.output.store,
        "train",
        spec_json(&args.spec, &cfg),
        dataset.dir.display().to_string(),
        Some(&dataset.dir),
        args.output.label.clone(),
    );
    crate::live::plan((0..total).flat_map(|k| {
        let p = prefix(k);
        (1..=cfg.epochs).map(move |e| (format!("{p}train-epoch-{e}"), None))
    }));
    let watch = Watch::new(&args.output, &sink, None);
    let env = watch.env(rt);
    let mut outcomes: Vec<RunOutcome> = Vec::new();
    let mut epochs = Vec::new();
    let mut cpu = iolab_core::result::CpuUsage::default();
    let (mut dropped, mut device_read, mut bytes_read) = (true, None::<u64>, 0u64);
    for k in 0..total {
        let warmup = k < warmups;
        let run_cfg = TrainConfig {
            seed: cfg.seed.wrapping_add(u64::from(k)),
            ..cfg.clone()
        };
        let dropped_now = drop && drop_caches(rt);
        let p = prefix(k);
        let on_step = |s: &LiveStep| live_step(&p, s);
        let hooks = hooks(rt, &args.output, env.probe, &on_step);
        let outcome = match train_epochs(rt.comm.as_ref(), &dataset, &run_cfg, &hooks) {
            Ok(o) => o,
            Err(e) => {
                watch.progress.finish();
                return fail(rt, sink, e);
            }
        };
        if !warmup {
            dropped &= dropped_now;
            if let Some(d) = device_read_bytes(&outcome.phases) {
                device_read = Some(device_read.unwrap_or(0) + d);
            }
            bytes_read += outcome.figures.epochs.iter().map(|e| e.bytes).sum::<u64>();
            cpu.user.0 += outcome.cpu.user.0;
            cpu.system.0 += outcome.cpu.system.0;
            epochs.extend(outcome.figures.epochs.iter().cloned());
        }
        let run = if warmup {
            "warmup".to_string()
        } else {
            (k - warmups + 1).to_string()
        };
        outcomes.push(RunOutcome {
            run: run.clone(),
            seed: run_cfg.seed,
            au_percent: outcome.figures.au_mean_percent,
            samples_per_sec: outcome.figures.samples_per_sec_mean,
        });
        for mut ph in outcome.phases {
            ph.name = format!("{p}{}", ph.name);
            ph.params.insert("seed".into(), run_cfg.seed.to_string());
            if total > 1 {
                ph.params.insert("mlperf_run".into(), run.clone());
            }
            sink.phase(ph);
        }
        if outcome.interrupted {
            break;
        }
    }
    watch.progress.finish();
    let accelerators = u64::from(cfg.accelerators) * u64::from(rt.comm.size());
    let figures = RunFigures::of(accelerators, epochs, cfg.record_length, cfg.au_threshold);
    let hosts_memory: u64 = host_memory(rt);
    let mut checks = validity(&ValidityInput {
        dataset_bytes: cfg.dataset_bytes(),
        hosts_memory,
        caches_dropped: dropped,
        device_read_bytes: device_read,
        bytes_read,
        steps_per_epoch: cfg.steps_per_epoch(accelerators),
    });
    checks.extend(runs_rule(&outcomes));
    let verdict = Verdict::of(&checks);
    if rt.is_root() && !args.output.quiet {
        print!(
            "{}",
            render_run(
                &cfg,
                &figures,
                &outcomes,
                &checks,
                &verdict,
                (mem_mine, mem_dlio),
                &cpu,
                &dataset
            )
        );
    }
    if let Some(path) = &args.summary_json
        && rt.is_root()
    {
        let ctx = iolab_compat::dlio::summary::SummaryContext {
            hosts: rt
                .comm
                .all_gather(&rt.comm.host().to_string())
                .unwrap_or_default(),
            host_memory_gib: vec![hosts_memory as f64 / 1073741824.0],
            num_files_train: cfg.files,
            num_samples_per_file: cfg.samples_per_file,
            start: String::new(),
            end: String::new(),
            data_size_per_host_gib: cfg.dataset_bytes() / 1073741824.0,
        };
        let v = iolab_compat::dlio::summary::render(&figures, &ctx);
        std::fs::write(path, serde_json::to_string_pretty(&v)? + "\n")
            .with_context(|| format!("--summary-json {}", path.display()))?;
    } else if args.summary_json.is_some() {
        let _ = rt.comm.all_gather(&rt.comm.host().to_string());
    }
    sink.annotate("train", serde_json::to_value(&figures)?);
    sink.annotate("runs", serde_json::to_value(&outcomes)?);
    sink.annotate("validity", serde_json::to_value(&checks)?);
    sink.annotate("verdict", serde_json::to_value(&verdict)?);
    stored_as(rt, &sink, &args.output);
    conclude(rt, sink, &quiet(&args.output))
}

/// Memory of every host of the job, summed (each host counted once).
fn host_memory(rt: &Runtime) -> u64 {
    let mine = iolab_engine::memory::Available::read(Path::new("/"));
    let _ = mine;
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0)
        * 1024;
    let hosts: Vec<(String, u64)> = rt
        .comm
        .all_gather(&(rt.comm.host().to_string(), total))
        .unwrap_or_default();
    let mut seen = std::collections::BTreeMap::new();
    for (h, m) in hosts {
        seen.insert(h, m);
    }
    seen.values().sum()
}

/// Bytes the devices under the data read while the epochs ran, from the telemetry.
fn device_read_bytes(phases: &[PhaseResult]) -> Option<u64> {
    let mut total = 0.0;
    let mut any = false;
    for p in phases {
        let Some(t) = &p.telemetry else { continue };
        let mut prev = 0u64;
        let widths: Vec<f64> = t
            .sample_ends_ms
            .iter()
            .map(|&e| {
                let w = (e - prev) as f64 / 1000.0;
                prev = e;
                w
            })
            .collect();
        for d in &t.devices {
            any = true;
            total += d
                .read_bytes_per_sec
                .iter()
                .zip(&widths)
                .map(|(r, w)| r * w)
                .sum::<f64>();
        }
    }
    any.then_some(total as u64)
}

#[allow(clippy::too_many_arguments)]
fn render_run(
    cfg: &TrainConfig,
    f: &RunFigures,
    runs: &[RunOutcome],
    checks: &[Check],
    verdict: &Verdict,
    (mem_mine, mem_dlio): (u64, u64),
    cpu: &iolab_core::result::CpuUsage,
    dataset: &Dataset,
) -> String {
    let mut out = format!("iolab {} · train", env!("CARGO_PKG_VERSION"));
    if let Some(p) = cfg.preset {
        let _ = write!(out, " · {}", p.dlio_workload(cfg.accelerator));
    }
    let _ = writeln!(
        out,
        "\n  {} accelerators, {} {} files ({}), batch {}, {} reader threads, compute {:.4} s per step",
        f.accelerators,
        cfg.files,
        cfg.format.extension(),
        ByteCount(dataset.total_bytes()).human(),
        cfg.batch_size,
        cfg.read_threads,
        cfg.computation_time
    );
    if runs.len() > 1 {
        let _ = writeln!(
            out,
            "\n  {:>7} {:>20} {:>9} {:>12}",
            "run", "seed", "AU %", "samples/s"
        );
        for r in runs {
            let _ = writeln!(
                out,
                "  {:>7} {:>20} {:>9.2} {:>12.2}{}",
                r.run,
                r.seed,
                r.au_percent,
                r.samples_per_sec,
                if r.is_warmup() { "  (not counted)" } else { "" }
            );
        }
        out.push_str("\n  the counted runs' epochs:");
    }
    let _ = writeln!(
        out,
        "\n  {:>5} {:>9} {:>8} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "epoch", "AU %", "min AU", "samples/s", "MiB/s (DLIO)", "read/s", "wait/step", "time"
    );
    for e in &f.epochs {
        let _ = writeln!(
            out,
            "  {:>5} {:>9.2} {:>8.2} {:>12.2} {:>12.2} {:>12} {:>9.4}s {:>9.2}s",
            e.epoch,
            e.au_percent,
            e.au_min_percent,
            e.samples_per_sec,
            e.dlio_mib_per_sec,
            iolab_core::units::BytesPerSec(e.bytes_per_sec).human(),
            e.load_mean,
            e.elapsed
        );
    }
    let samples: u64 = f.epochs.iter().map(|e| e.samples).sum();
    let _ = writeln!(
        out,
        "\n  AU {:.2}% (stdev {:.2}) against {:.0}%: {}; samples/s {:.2} (stdev {:.2}); DLIO's I/O figure {:.2} MiB/s",
        f.au_mean_percent,
        f.au_stdev_percent,
        f.au_threshold,
        if f.au_met { "met" } else { "NOT met" },
        f.samples_per_sec_mean,
        f.samples_per_sec_stdev,
        f.dlio_mib_per_sec_mean
    );
    if cfg.computation_time == 0.0 {
        out.push_str("  AU is 0 by definition with no compute (DLIO's convention): samples/s is the figure\n");
    }
    let _ = writeln!(
        out,
        "  CPU {:.1} µs per sample (user + system, all ranks); memory: iolab's readers hold {}, DLIO's loader about {}",
        if samples > 0 {
            (cpu.user.0 + cpu.system.0) as f64 / samples as f64 / 1000.0
        } else {
            0.0
        },
        ByteCount(mem_mine).human(),
        ByteCount(mem_dlio).human()
    );
    out.push_str("\n  MLPerf Storage's rules:\n");
    for c in checks {
        let _ = writeln!(
            out,
            "    {:<5} {:<28} {}",
            if c.ok { "ok" } else { "FAIL" },
            c.rule,
            c.detail
        );
    }
    if verdict.valid {
        out.push_str("\n  verdict: VALID under MLPerf Storage's run rules\n");
    } else {
        let _ = writeln!(
            out,
            "\n  verdict: NOT VALID under MLPerf Storage's run rules (failed: {}){}",
            verdict.failed.join("; "),
            if runs.len() == 1 {
                "; --mlperf runs the warm-up and the 5 counted runs"
            } else {
                ""
            }
        );
    }
    out
}

fn search_in(rt: &Runtime, args: SearchArgs) -> Result<u8> {
    let (cfg, dataset, _) = prepare(rt, &args.spec, &args.output)?;
    let mut sink = RunSink::start(
        rt,
        &args.output.store,
        "train-search",
        spec_json(&args.spec, &cfg),
        dataset.dir.display().to_string(),
        Some(&dataset.dir),
        args.output.label.clone(),
    );
    let watch = Watch::new(&args.output, &sink, None);
    let env = watch.env(rt);
    let ranks = u64::from(rt.comm.size());
    let mut phases: Vec<PhaseResult> = Vec::new();
    let threshold = cfg.au_threshold;
    let result: Result<SearchResult, TrainError> = search(u64::from(args.max), 1, threshold, |n| {
        if rt.interrupted() {
            return Err(TrainError::Interrupted);
        }
        let trial = TrainConfig {
            accelerators: n as u32,
            ..cfg.clone()
        };
        if trial.steps_per_epoch(n * ranks) == 0 {
            return Err(TrainError::Spec(SpecError::new(
                "--max",
                format!(
                    "the dataset has less than one batch for each of {} accelerators: add files or lower --max",
                    n * ranks
                ),
            )));
        }
        check_memory(&trial, ranks_on_this_host(rt.comm.as_ref()))?;
        if args.drop_caches {
            drop_caches(rt);
        }
        let on_step = |s: &LiveStep| live_step("", s);
        let hooks = hooks(rt, &args.output, env.probe, &on_step);
        let o = train_epochs(rt.comm.as_ref(), &dataset, &trial, &hooks)?;
        for mut p in o.phases {
            p.name = format!("search-{}acc-{}", n * ranks, p.name);
            p.params
                .insert("search_accelerators".into(), (n * ranks).to_string());
            phases.push(p);
        }
        let v = rt
            .comm
            .broadcast(
                0,
                &(o.figures.au_mean_percent, o.figures.samples_per_sec_mean),
            )
            .map_err(|e| TrainError::Setup(e.to_string()))?;
        Ok(v)
    });
    watch.progress.finish();
    for p in phases {
        sink.phase(p);
    }
    let r = match result {
        Ok(r) => r,
        Err(TrainError::Spec(e)) if !sink.record.phases.is_empty() => {
            // The dataset or memory stopped the climb: report what was found.
            SearchResult {
                stopped: e.to_string(),
                best: None,
                points: Vec::new(),
            }
        }
        Err(e) => return fail(rt, sink, e),
    };
    let r = if r.points.is_empty() && !sink.record.phases.is_empty() {
        rebuild(&sink.record.phases, threshold, r.stopped, ranks)
    } else {
        r
    };
    if rt.is_root() && !args.output.quiet {
        let mut out = format!(
            "iolab {} · train search (AU threshold {threshold:.0}%)\n\n  {:>12} {:>9} {:>12}  verdict\n",
            env!("CARGO_PKG_VERSION"),
            "accelerators",
            "AU %",
            "samples/s"
        );
        for p in &r.points {
            let _ = writeln!(
                out,
                "  {:>12} {:>9.2} {:>12.2}  {}",
                p.accelerators * ranks,
                p.au_percent,
                p.samples_per_sec,
                if p.passed { "pass" } else { "fail" }
            );
        }
        match r.best {
            Some(b) => {
                let _ = writeln!(
                    out,
                    "\n  most accelerators at AU >= {threshold:.0}%: {} ({})",
                    b * ranks,
                    r.stopped
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "\n  no accelerator count met AU >= {threshold:.0}% ({})",
                    r.stopped
                );
            }
        }
        print!("{out}");
    }
    sink.annotate("search", serde_json::to_value(&r)?);
    stored_as(rt, &sink, &args.output);
    conclude(rt, sink, &quiet(&args.output))
}

/// The search's points from its stored trials (when a limit cut it short).
fn rebuild(phases: &[PhaseResult], threshold: f64, stopped: String, ranks: u64) -> SearchResult {
    let mut by_n: std::collections::BTreeMap<u64, Vec<(f64, f64)>> = Default::default();
    for p in phases {
        let n = p
            .params
            .get("search_accelerators")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let au = p.extra.get("au_percent").copied().unwrap_or(0.0);
        let tp = p.extra.get("samples_per_sec").copied().unwrap_or(0.0);
        by_n.entry(n).or_default().push((au, tp));
    }
    let points: Vec<_> = by_n
        .into_iter()
        .map(|(n, v)| {
            let au = v.iter().map(|x| x.0).sum::<f64>() / v.len() as f64;
            let tp = v.iter().map(|x| x.1).sum::<f64>() / v.len() as f64;
            iolab_suites::train::search::SearchPoint {
                accelerators: n / ranks.max(1),
                au_percent: au,
                samples_per_sec: tp,
                passed: au >= threshold,
            }
        })
        .collect();
    let best = points
        .iter()
        .filter(|p| p.passed)
        .map(|p| p.accelerators)
        .max();
    SearchResult {
        points,
        best,
        stopped,
    }
}
