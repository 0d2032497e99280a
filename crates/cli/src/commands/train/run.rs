//! `iolab train run`: the epochs on a dataset, repeated as MLPerf Storage's run rule asks
//! (warm-up runs, counted runs with a new seed each, caches dropped), with the validity
//! checks, the verdict and DLIO's summary.json.

use std::path::Path;

use anyhow::{Context, Result};
use iolab_comm::CommExt;
use iolab_core::result::{CpuUsage, PhaseResult};
use iolab_core::spec::TrainConfig;
use iolab_core::train::{EpochFigures, RunFigures, RunOutcome};
use iolab_suites::train::verdict::{CountedRuns, judge_runs};
use iolab_suites::train::{LiveStep, TrainOutcome, train_epochs};

use super::{
    Prepared, TrainRunArgs, drop_caches, hooks, live_step, prepare, quiet, spec_json, stored_as,
};
use crate::commands::finish::conclude;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;
use iolab_report::train::{TrainRunReport, render_train_run};

/// The runs of one invocation: warm-ups first, then the counted ones.
struct Repeats {
    warmups: u32,
    runs: u32,
    drop: bool,
}

impl Repeats {
    fn of(args: &TrainRunArgs) -> Repeats {
        if args.mlperf {
            Repeats {
                warmups: 1,
                runs: 5,
                drop: true,
            }
        } else {
            Repeats {
                warmups: args.warmup,
                runs: args.runs,
                drop: args.drop_caches,
            }
        }
    }

    fn total(&self) -> u32 {
        self.warmups + self.runs
    }

    fn is_warmup(&self, k: u32) -> bool {
        k < self.warmups
    }

    /// A repeated run names its runs' epochs "warmup-1-train-epoch-1", "run-2-...".
    fn prefix(&self, k: u32) -> String {
        if self.total() == 1 {
            String::new()
        } else if self.is_warmup(k) {
            format!("warmup-{}-", k + 1)
        } else {
            format!("run-{}-", k - self.warmups + 1)
        }
    }

    /// The run's name in the stored phases and the runs table: "warmup", "1", "2", ...
    fn name(&self, k: u32) -> String {
        if self.is_warmup(k) {
            "warmup".to_string()
        } else {
            (k - self.warmups + 1).to_string()
        }
    }
}

/// Run `k` of the invocation as it ended: seeded `seed`, caches dropped before it or not.
struct Ran {
    k: u32,
    seed: u64,
    dropped: bool,
    outcome: TrainOutcome,
}

/// What the counted runs add up to; a warm-up leaves only its phases and its row.
struct Counted {
    outcomes: Vec<RunOutcome>,
    epochs: Vec<EpochFigures>,
    cpu: CpuUsage,
    dropped: bool,
    device_read: Option<u64>,
    bytes_read: u64,
}

impl Counted {
    fn new() -> Counted {
        Counted {
            outcomes: Vec::new(),
            epochs: Vec::new(),
            cpu: CpuUsage::default(),
            dropped: true,
            device_read: None,
            bytes_read: 0,
        }
    }

    /// Adds a run and stores its phases under the run's prefix.
    fn add(&mut self, repeats: &Repeats, ran: Ran, sink: &mut RunSink) {
        let Ran {
            k,
            seed,
            dropped,
            outcome,
        } = ran;
        if !repeats.is_warmup(k) {
            self.dropped &= dropped;
            if let Some(d) = device_read_bytes(&outcome.phases) {
                self.device_read = Some(self.device_read.unwrap_or(0) + d);
            }
            self.bytes_read += outcome.figures.epochs.iter().map(|e| e.bytes).sum::<u64>();
            self.cpu.add_time_of(&outcome.cpu);
            self.epochs.extend(outcome.figures.epochs.iter().cloned());
        }
        let run = repeats.name(k);
        self.outcomes.push(RunOutcome {
            run: run.clone(),
            seed,
            au_percent: outcome.figures.au_mean_percent,
            samples_per_sec: outcome.figures.samples_per_sec_mean,
        });
        let prefix = repeats.prefix(k);
        for mut ph in outcome.phases {
            ph.name = format!("{prefix}{}", ph.name);
            ph.params.insert("seed".into(), seed.to_string());
            if repeats.total() > 1 {
                ph.params.insert("mlperf_run".into(), run.clone());
            }
            sink.phase(ph);
        }
    }
}

pub(super) fn run_in(rt: &Runtime, args: TrainRunArgs) -> Result<u8> {
    // Rank 0 writes it at the end: a directory that is not there is refused first.
    rt.agree(match &args.summary_json {
        Some(path) if rt.is_root() => crate::output::check_output_dir("--summary-json", path),
        _ => Ok(()),
    })?;
    let prepared = prepare(rt, &args.spec, &args.output)?;
    let (cfg, dataset) = (&prepared.cfg, &prepared.dataset);
    let repeats = Repeats::of(&args);
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "train",
        spec_json(&args.spec, cfg),
        dataset.dir.display().to_string(),
        Some(&dataset.dir),
    );
    crate::live::plan((0..repeats.total()).flat_map(|k| {
        let p = repeats.prefix(k);
        (1..=cfg.epochs).map(move |e| (format!("{p}train-epoch-{e}"), None))
    }));
    let watch = Watch::new(&args.output, &sink, None);
    let env = watch.env(rt);
    let mut counted = Counted::new();
    for k in 0..repeats.total() {
        let run_cfg = TrainConfig {
            seed: cfg.seed.wrapping_add(u64::from(k)),
            ..cfg.clone()
        };
        let dropped = repeats.drop && drop_caches(rt);
        let p = repeats.prefix(k);
        let on_step = |s: &LiveStep| live_step(&p, s);
        let hooks = hooks(rt, &args.output, env.probe, &on_step);
        let outcome = match train_epochs(rt.comm.as_ref(), dataset, &run_cfg, &hooks) {
            Ok(o) => o,
            Err(e) => {
                watch.progress.finish();
                return sink.end_on(rt.is_root(), e);
            }
        };
        let interrupted = outcome.interrupted;
        let ran = Ran {
            k,
            seed: run_cfg.seed,
            dropped,
            outcome,
        };
        counted.add(&repeats, ran, &mut sink);
        if interrupted {
            break;
        }
    }
    watch.progress.finish();
    judge(rt, &args, &prepared, counted, sink)
}

/// The figures of the counted runs, MLPerf's checks and verdict: printed, written as
/// DLIO's summary.json when asked, and stored with the run.
fn judge(
    rt: &Runtime,
    args: &TrainRunArgs,
    prepared: &Prepared,
    counted: Counted,
    mut sink: RunSink,
) -> Result<u8> {
    let (cfg, dataset, memory) = (&prepared.cfg, &prepared.dataset, prepared.memory);
    let accelerators = u64::from(cfg.accelerators) * u64::from(rt.comm.size());
    let figures = RunFigures::of(
        accelerators,
        counted.epochs,
        cfg.record_length,
        cfg.au_threshold,
    );
    let hosts_memory = host_memory(rt);
    let runs = CountedRuns {
        outcomes: &counted.outcomes,
        dropped: counted.dropped,
        device_read: counted.device_read,
        bytes_read: counted.bytes_read,
    };
    let (checks, verdict) = judge_runs(cfg, accelerators, hosts_memory, &runs);
    if rt.is_root() && !args.output.quiet {
        print!(
            "{}",
            render_train_run(&TrainRunReport {
                cfg,
                figures: &figures,
                runs: &counted.outcomes,
                checks: &checks,
                verdict: &verdict,
                memory,
                cpu: &counted.cpu,
                dataset_bytes: dataset.total_bytes(),
            })
        );
    }
    if let Some(path) = &args.summary_json {
        write_summary(rt, path, cfg, &figures, hosts_memory)?;
    }
    sink.annotate("train", serde_json::to_value(&figures)?);
    sink.annotate("runs", serde_json::to_value(&counted.outcomes)?);
    sink.annotate("validity", serde_json::to_value(&checks)?);
    sink.annotate("verdict", serde_json::to_value(&verdict)?);
    let hosts = rt.comm.topology().hosts().len();
    sink.annotate("provenance", provenance(cfg, hosts_memory, hosts));
    stored_as(rt, &sink, &args.output);
    conclude(rt, sink, &quiet(&args.output))
}

/// DLIO's summary.json of the run, written by rank 0; every rank takes part in
/// gathering the host names.
fn write_summary(
    rt: &Runtime,
    path: &Path,
    cfg: &TrainConfig,
    figures: &RunFigures,
    hosts_memory: u64,
) -> Result<()> {
    let hosts = rt
        .comm
        .all_gather(&rt.comm.host().to_string())
        .unwrap_or_default();
    if !rt.is_root() {
        return Ok(());
    }
    let ctx = iolab_compat::dlio::summary::SummaryContext {
        hosts,
        host_memory_gib: vec![hosts_memory as f64 / 1073741824.0],
        num_files_train: cfg.files,
        num_samples_per_file: cfg.samples_per_file,
        start: String::new(),
        end: String::new(),
        data_size_per_host_gib: cfg.dataset_bytes() / 1073741824.0,
    };
    let mut v = iolab_compat::dlio::summary::render(figures, &ctx);
    v["provenance"] = provenance(cfg, hosts_memory, ctx.hosts.len());
    std::fs::write(path, serde_json::to_string_pretty(&v)? + "\n")
        .with_context(|| format!("--summary-json {}", path.display()))
}

/// What v3.0 asks every result to carry (Rules.md §2.1.6, in iolab's words): the tool
/// and its revision, a hash of the resolved configuration (SHA-256 of its JSON, the
/// first 16 hex digits: iolab's own, not mlpstorage's core-config hash) and the system.
fn provenance(cfg: &TrainConfig, hosts_memory: u64, hosts: usize) -> serde_json::Value {
    use sha2::Digest;
    let json = serde_json::to_string(cfg).unwrap_or_default();
    let hash = sha2::Sha256::digest(json.as_bytes());
    let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let rev = env!("IOLAB_GIT_REVISION");
    serde_json::json!({
        "rules_edition": "3.0",
        "mode": cfg.mode.map(|m| m.name()),
        "tool": {
            "name": "iolab",
            "version": env!("CARGO_PKG_VERSION"),
            "git_sha": if rev.is_empty() { "unknown" } else { rev },
        },
        "config": { "algorithm": "iolab-config-sha256-16", "hash": hex },
        "system": {
            "hosts": hosts,
            "hosts_memory_bytes": hosts_memory,
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|k| k.trim().to_string())
                .unwrap_or_else(|_| "unknown".into()),
        },
    })
}

/// This host's memory (MemTotal), 0 when unknown.
pub(crate) fn node_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0)
        * 1024
}

/// Memory of every host of the job, summed (each host counted once).
fn host_memory(rt: &Runtime) -> u64 {
    let total = node_memory();
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
