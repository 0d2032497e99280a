//! `iolab fio ...`: fio's command lines and job files run on iolab's engine. The jobs
//! are read and planned before anything runs (a refused option runs nothing), run one
//! after another as fio's stonewalls order them, stored as one run of kind "fio" with
//! the command line in its provenance, and printed in the shapes fio prints
//! (`--output-format=normal|json|json+|terse`, `--output FILE`).

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use iolab_compat::fio::output::{FioReport, json, terse, text};
use iolab_compat::fio::{
    FioError, FioJob, FioPlan, Invocation, OutputFormat, Section, Sources, parse_args,
    parse_job_file, plan_jobs,
};
use iolab_core::result::{PhaseResult, RunStatus};
use iolab_engine::data::{DataOptions, run_data};
use iolab_engine::{MonotonicClock, prepare_target};

use crate::cli::StoreArgs;
use crate::commands::finish::{cleanup, finish_status};
use crate::exit;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

/// Run fio command lines and job files on iolab's engine, with fio's output.
#[derive(Args, Debug)]
pub struct FioArgs {
    /// A label to find this run by later.
    #[arg(long)]
    pub label: Option<String>,

    #[command(flatten)]
    pub store: StoreArgs,

    /// fio's arguments: job files and --name=NAME --rw=... options, as fio takes them.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "FIO ARGS",
        required = true
    )]
    pub args: Vec<String>,
}

/// The most a job file may hold; a job file is a few kilobytes.
const MAX_JOB_FILE: u64 = 1 << 20;

pub fn fio(args: FioArgs) -> Result<u8> {
    let mut sources = HostSources;
    let inv = parse_args(&args.args, &sources)?;
    let sections = read_sections(&inv, &mut sources)?;
    let jobs = sections
        .iter()
        .map(FioJob::from_section)
        .collect::<Result<Vec<_>, FioError>>()?;
    let plans = plan_jobs(&jobs, iolab_engine::phase::now_ms() as u64)?;
    if inv.parse_only {
        print!("{}", describe_plans(&plans));
        return Ok(exit::OK);
    }
    Runtime::with(|rt| run_jobs(rt, &args, &inv, &plans))
}

/// The job files' jobs, then the command line's, as fio orders them.
fn read_sections(inv: &Invocation, sources: &mut HostSources) -> Result<Vec<Section>> {
    let mut sections = Vec::new();
    for file in &inv.job_files {
        let text = read_capped(Path::new(file)).with_context(|| format!("job file {file}"))?;
        sections.extend(parse_job_file(file, &text, sources)?);
    }
    sections.extend(inv.jobs.iter().cloned());
    Ok(sections)
}

/// Reads at most [`MAX_JOB_FILE`] bytes; a longer input is refused, not truncated.
fn read_capped(path: &Path) -> Result<String> {
    Ok(iolab_core::input::read_text_within(path, MAX_JOB_FILE)?)
}

/// What `--parse-only` prints: each job as the iolab workload it runs.
fn describe_plans(plans: &[FioPlan]) -> String {
    let mut out = String::new();
    for p in plans {
        let spec = serde_json::to_value(&p.spec).unwrap_or_default();
        let target = match (&p.target.dir, &p.target.device) {
            (_, Some(d)) => format!("device {}", d.display()),
            (Some(d), None) => format!("dir {}", d.display()),
            (None, None) => String::new(),
        };
        out.push_str(&format!("[{}] group {} on {target}\n", p.job.name, p.group));
        if let Some(m) = spec.as_object() {
            for (k, v) in m {
                if !v.is_null() {
                    out.push_str(&format!("  {k} = {v}\n"));
                }
            }
        }
        for n in &p.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
    }
    out
}

fn run_jobs(rt: &Runtime, args: &FioArgs, inv: &Invocation, plans: &[FioPlan]) -> Result<u8> {
    let specs: Vec<_> = plans.iter().map(|p| &p.spec).collect();
    let dir = plans[0].target.dir.clone();
    let mut sink = RunSink::start(
        rt,
        &args.store,
        "fio",
        serde_json::json!({ "fio": args.args, "jobs": specs }),
        crate::commands::run::describe(&plans[0].target),
        dir.as_deref(),
        args.label.clone(),
    );
    let output = crate::cli::OutputArgs {
        label: args.label.clone(),
        quiet: true,
        progress: inv.status_interval.is_some(),
        ..Default::default()
    };
    let mut results: Vec<PhaseResult> = Vec::new();
    for plan in plans {
        if rt.is_root() {
            for n in &plan.notes {
                eprintln!("iolab fio: [{}] {n}", plan.job.name);
            }
        }
        if let Some(d) = plan.start_delay {
            std::thread::sleep(std::time::Duration::from_nanos(d.nanos().0));
        }
        match run_one(rt, &sink, &output, plan) {
            Ok(mut phases) => {
                for p in &mut phases {
                    p.name = plan.job.name.clone();
                }
                if rt.is_root() {
                    io_u_errors(&phases[0], plan.spec.block_size.0);
                }
                results.push(phases[0].clone());
                sink.phases(phases);
            }
            Err(e) => {
                let status = match e.downcast_ref::<iolab_engine::EngineError>() {
                    Some(iolab_engine::EngineError::Interrupted) => RunStatus::Interrupted,
                    _ => RunStatus::Failed,
                };
                sink.finish(status);
                return Err(e.context(format!("job {}", plan.job.name)));
            }
        }
    }
    let failed = results
        .iter()
        .any(|r| r.error_count > 0 || r.verify_failures > 0);
    let interrupted = rt.interrupted() || results.iter().any(|r| r.interrupted);
    let code = finish_status(&mut sink, interrupted, failed);
    if rt.is_root() {
        write_output(inv, plans, &results)?;
        if !sink.record.id.is_empty() {
            eprintln!("iolab fio: stored as {}", sink.record.id);
        }
    }
    Ok(code)
}

/// fio's line for a failed I/O (`fio: io_u error on file F: strerror: write offset=O,
/// buflen=B`), for each error the phase kept, then iolab's own count of the rest.
fn io_u_errors(phase: &PhaseResult, block_size: u64) {
    for e in &phase.errors {
        let what = e
            .errno
            .map(|n| iolab_core::error::describe(&std::io::Error::from_raw_os_error(n)))
            .unwrap_or_else(|| e.message.clone());
        let dir = match e.op {
            iolab_core::result::OpKind::Read => "read",
            iolab_core::result::OpKind::Write => "write",
            _ => "sync",
        };
        eprintln!(
            "fio: io_u error on file {}: {what}: {dir} offset={}, buflen={block_size}",
            e.path,
            e.offset.unwrap_or(0)
        );
    }
    let kept = phase.errors.len() as u64;
    if phase.error_count > kept {
        eprintln!(
            "iolab fio: and {} more I/O errors",
            phase.error_count - kept
        );
    }
}

fn run_one(
    rt: &Runtime,
    sink: &RunSink,
    output: &crate::cli::OutputArgs,
    plan: &FioPlan,
) -> Result<Vec<PhaseResult>> {
    let target = prepare_target(
        rt.comm.as_ref(),
        &plan.target,
        plan.spec.backend,
        plan.spec.rw.writes(),
    )?;
    let watch = Watch::new(output, sink, plan.target.device.as_deref());
    let env = watch.env(rt);
    let options = DataOptions {
        name: Some(plan.job.name.clone()),
        ..DataOptions::default()
    };
    let outcome = run_data(&env, &MonotonicClock, &plan.spec, &target, &options);
    watch.progress.finish();
    let files = outcome
        .as_ref()
        .map(|o| o.files.clone())
        .unwrap_or_default();
    let cleaned = cleanup(rt.comm.as_ref(), target, &files, false);
    let outcome = outcome?;
    cleaned?;
    Ok(outcome.phases)
}

fn write_output(inv: &Invocation, plans: &[FioPlan], results: &[PhaseResult]) -> Result<()> {
    let runs: Vec<(&FioPlan, &PhaseResult)> = plans.iter().zip(results).collect();
    let report = FioReport::new(&format!("iolab {}", env!("CARGO_PKG_VERSION")), &runs);
    let mut text_out = String::new();
    for f in &inv.formats {
        text_out.push_str(&match f {
            OutputFormat::Normal => text::render(&report),
            OutputFormat::Json => json::render(&report, false),
            OutputFormat::JsonPlus => json::render(&report, true),
            OutputFormat::Terse => terse::render(&report),
        });
    }
    match &inv.output {
        Some(path) => std::fs::write(path, text_out).with_context(|| format!("--output {path}"))?,
        None => print!("{text_out}"),
    }
    Ok(())
}

/// The environment and this machine's values for job files.
struct HostSources;

impl Sources for HostSources {
    fn env(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn host_value(&self, name: &str) -> Option<u64> {
        match name {
            "ncpus" => std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u64),
            "pagesize" => Some(4096),
            "mb_memory" => std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
                let kib: u64 = m.lines().next()?.split_whitespace().nth(1)?.parse().ok()?;
                Some(kib / 1024)
            }),
            _ => None,
        }
    }

    fn include(&mut self, from: &str, path: &str) -> Result<String, FioError> {
        read_capped(Path::new(path))
            .map_err(|e| FioError::at(from, format!("include {path}: {}", exit::one_line(&e))))
    }
}
