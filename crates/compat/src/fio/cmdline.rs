//! fio's command line: `--name=NAME` starts a job and the options after it are that
//! job's (those before the first `--name` are global, as in fio), positional arguments
//! are job files, and a few options are the command's own (`--output`,
//! `--output-format`, `--minimal`, `--parse-only`, `--status-interval`).

use super::error::FioError;
use super::jobfile::{RawOption, Section, Sources, parse_option};

/// fio's output formats iolab writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Normal,
    Json,
    /// json+: json with the completion-latency histogram's bins.
    JsonPlus,
    Terse,
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation {
    pub output: Option<String>,
    pub formats: Vec<OutputFormat>,
    pub parse_only: bool,
    /// Seconds between progress lines.
    pub status_interval: Option<u64>,
    pub job_files: Vec<String>,
    /// Jobs given on the command line (after the job files' jobs, as fio orders them).
    pub jobs: Vec<Section>,
    /// Options before the first --name: they apply to the command line's jobs.
    pub global: Vec<RawOption>,
}

/// Options that need no value (`--thread`), so `--thread --name=x` is not read as
/// `thread=--name=x`.
const FLAGS: [&str; 12] = [
    "thread",
    "time_based",
    "group_reporting",
    "norandommap",
    "stonewall",
    "wait_for_previous",
    "new_group",
    "create_on_open",
    "minimal",
    "parse-only",
    "end_fsync",
    "fsync_on_close",
];

/// Reads fio's arguments (without the program name).
pub fn parse_args(args: &[String], sources: &dyn Sources) -> Result<Invocation, FioError> {
    let mut inv = Invocation {
        output: None,
        formats: Vec::new(),
        parse_only: false,
        status_interval: None,
        job_files: Vec::new(),
        jobs: Vec::new(),
        global: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(body) = arg.strip_prefix("--") else {
            if arg.starts_with('-') && arg.len() > 1 {
                return Err(FioError::at(
                    "command line",
                    format!("'{arg}': use fio's long options (--name=x --rw=read ...)"),
                ));
            }
            inv.job_files.push(arg.clone());
            continue;
        };
        let (key, value) = match body.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None if FLAGS.contains(&body) => (body.to_string(), None),
            None => match args.get(i) {
                Some(next) if !next.starts_with("--") => {
                    i += 1;
                    (body.to_string(), Some(next.clone()))
                }
                _ => (body.to_string(), None),
            },
        };
        inv.take(key, value, sources)?;
    }
    if inv.formats.is_empty() {
        inv.formats.push(OutputFormat::Normal);
    }
    Ok(inv)
}

impl Invocation {
    /// Takes one command-line option: iolab's own output and job options here, every
    /// other option fio's, for the job named last (or the global section before any).
    fn take(
        &mut self,
        key: String,
        value: Option<String>,
        sources: &dyn Sources,
    ) -> Result<(), FioError> {
        let at = format!("command line: --{key}");
        match key.as_str() {
            "output" => self.output = Some(need(&at, value)?),
            "output-format" => {
                for f in need(&at, value)?.split(',') {
                    self.formats.push(output_format(f.trim(), &at)?);
                }
            }
            "minimal" => self.formats.push(OutputFormat::Terse),
            "parse-only" => self.parse_only = true,
            "status-interval" => {
                let v = need(&at, value)?;
                let secs = super::values::time(&v)
                    .map_err(|m| FioError::at(&at, m))?
                    .as_secs_f64()
                    .round() as u64;
                self.status_interval = Some(secs.max(1));
            }
            "eta" | "eta-newline" => {} // the progress display is iolab's own
            "name" => {
                let v = need(&at, value)?;
                let mut options = self.global.clone();
                options.push(RawOption {
                    key: "name".into(),
                    value: Some(v.clone()),
                    at: at.clone(),
                });
                self.jobs.push(Section {
                    globals: self.global.len(),
                    name: v,
                    options,
                    at,
                });
            }
            _ => {
                let text = match &value {
                    Some(v) => format!("{key}={v}"),
                    None => key.clone(),
                };
                let option = parse_option(&text, &at, sources)?;
                match self.jobs.last_mut() {
                    Some(job) => job.options.push(option),
                    None => self.global.push(option),
                }
            }
        }
        Ok(())
    }
}

/// One of --output-format's comma-separated formats.
fn output_format(name: &str, at: &str) -> Result<OutputFormat, FioError> {
    Ok(match name {
        "normal" => OutputFormat::Normal,
        "json" => OutputFormat::Json,
        "json+" => OutputFormat::JsonPlus,
        "terse" => OutputFormat::Terse,
        other => {
            return Err(FioError::at(
                at,
                format!("'{other}' is not an output format: use normal, json, json+ or terse"),
            ));
        }
    })
}

fn need(at: &str, value: Option<String>) -> Result<String, FioError> {
    value.ok_or_else(|| FioError::at(at, "needs a value"))
}
