//! `iolab fio ...`: fio's command lines and job files run on iolab's engine. The jobs
//! are read and planned (compat) before anything runs (a refused option runs nothing),
//! then run by `iolab_suites::fio::run_fio` ([`run`]); each report entry fio would print
//! is stored as a phase of one run of kind "fio" with the command line in its
//! provenance, and printed in the shapes fio prints
//! (`--output-format=normal|json|json+|terse`, `--status-interval`) to standard output
//! or `--output FILE` ([`output`]), with fio's disk statistics (host's `DiskTotals`).

mod output;
mod run;

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use iolab_compat::fio::{
    FioError, FioJob, Invocation, Section, Sources, describe_plans, parse_args, parse_job_file,
    plan_jobs,
};

use crate::exit;
use crate::runtime::Runtime;

/// Run fio command lines and job files on iolab's engine, with fio's output.
#[derive(Args, Debug)]
pub struct FioArgs {
    #[command(flatten)]
    pub common: crate::args::FrontEndArgs,

    /// Let jobs write a `filename` (a device or file) that holds data, destroying it
    /// (refused otherwise, as fio never does).
    #[arg(long)]
    pub allow_destroy: bool,

    /// Keep the files the jobs wrote in DIR/iolab-work (removed at the end by default).
    #[arg(long)]
    pub keep: bool,

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
    let mut plans = plan_jobs(&jobs, iolab_core::civil::now_ms() as u64)?;
    iolab_suites::fio::check_log_dirs(&plans)?;
    for p in &mut plans {
        p.target.allow_destroy = args.allow_destroy;
    }
    if inv.parse_only {
        print!("{}", describe_plans(&plans));
        return Ok(exit::OK);
    }
    Runtime::with(|rt| {
        // fio's rates are each job clone's, and every rank runs every job's clones.
        for p in &mut plans {
            iolab_compat::fio::scale_rates(&mut p.spec, rt.comm.size());
        }
        run::run_jobs(rt, &args, &inv, &plans)
    })
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
