//! What `iolab fio` prints: fio's report entries ([`report_units`]) made from the jobs'
//! worker rows, in the formats asked for, to standard output or `--output FILE`; and
//! the same report every `--status-interval` while jobs run (fio's status dumps,
//! cumulative from each job's start).

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use iolab_compat::fio::output::{DiskUtil, FioEntry, FioReport, json, terse, text};
use iolab_compat::fio::{FioPlan, Invocation, OutputFormat, ReportUnit, report_units};
use iolab_core::histogram::LatencyHistogram;
use iolab_core::result::{PhaseResult, Timeline};
use iolab_core::units::Nanos;
use iolab_engine::PhaseMeta;
use iolab_engine::{WorkerRow, phase_of_rows};

/// One entry's figures: its phase and its threads' context switches.
pub struct Entry {
    pub unit: usize,
    pub phase: PhaseResult,
    /// The job's read-back with `verify=`, when this entry covers every clone of it.
    pub verify: Option<PhaseResult>,
    /// Each clone's timeline and runtime (fio's samples are per clone).
    pub clones: Vec<(Timeline, Nanos)>,
    pub context_switches: u64,
    /// Its workers' runtimes added up.
    pub runtime_ms: u64,
    /// Its workers' per-priority latencies merged (fio's cmdprio_*).
    pub prios: BTreeMap<String, LatencyHistogram>,
}

pub struct Reporter<'a> {
    inv: &'a Invocation,
    plans: &'a [FioPlan],
    pub units: Vec<ReportUnit>,
    ranks: u32,
    /// The normal format's head was written.
    headed: AtomicBool,
    /// --output's file; standard output when None.
    file: Option<Mutex<OutputFile>>,
}

/// --output's file: opened (and checked) before anything runs but emptied only when the
/// first report is written, so a run refused before it writes leaves the file as it was
/// (and removes it again if it made it).
struct OutputFile {
    file: std::fs::File,
    path: std::path::PathBuf,
    made: bool,
    written: bool,
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if self.made && !self.written {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl<'a> Reporter<'a> {
    /// Opens `--output` before anything runs, on the rank that prints (`root`); it is
    /// emptied, as fio does, when the first report is written.
    pub fn new(inv: &'a Invocation, plans: &'a [FioPlan], ranks: u32, root: bool) -> Result<Self> {
        let file = match &inv.output {
            Some(path) if root => {
                let path = std::path::PathBuf::from(path);
                let made = std::fs::symlink_metadata(&path).is_err();
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&path)
                    .with_context(|| format!("--output {}", path.display()))?;
                Some(Mutex::new(OutputFile {
                    file,
                    path,
                    made,
                    written: false,
                }))
            }
            _ => None,
        };
        Ok(Reporter {
            inv,
            plans,
            units: report_units(plans, ranks),
            ranks: ranks.max(1),
            headed: AtomicBool::new(false),
            file,
        })
    }

    /// The entries of the units whose jobs ran in one phase, from its rows: `jobs[k]` is
    /// the plan index of job k of the phase (a row's `job`). `meta(plan)` names the phase
    /// of a unit headed by that plan.
    pub fn entries(
        &self,
        jobs: &[usize],
        rows: &[&WorkerRow],
        meta: &dyn Fn(usize) -> PhaseMeta,
        run: (bool, i64, Option<iolab_core::telemetry::Telemetry>),
    ) -> Vec<Entry> {
        let mut entries = Vec::new();
        for (u, unit) in self.units.iter().enumerate() {
            if !jobs.contains(&unit.plan) {
                continue;
            }
            let mine: Vec<&WorkerRow> = rows
                .iter()
                .filter(|r| {
                    let plan = jobs.get(r.job as usize).copied();
                    unit.members
                        .iter()
                        .any(|(j, c)| Some(*j) == plan && *c == r.worker)
                })
                .copied()
                .collect();
            if mine.is_empty() {
                continue;
            }
            let mut m = meta(unit.plan);
            m.name = self.name(unit);
            m.params.insert("fio_group".into(), unit.group.to_string());
            entries.push(Entry {
                verify: None,
                unit: u,
                phase: phase_of_rows(m, &mine, run.0, run.1, run.2.clone()),
                context_switches: mine.iter().map(|r| r.context_switches).sum(),
                runtime_ms: mine.iter().map(|r| r.elapsed.0 / 1_000_000).sum(),
                clones: mine
                    .iter()
                    .map(|r| (r.measure.timeline.clone(), r.elapsed))
                    .collect(),
                prios: {
                    let mut all: BTreeMap<String, LatencyHistogram> = BTreeMap::new();
                    for r in &mine {
                        for (k, h) in &r.measure.histograms {
                            if k.starts_with("prio.") {
                                all.entry(k.clone()).or_default().merge(h);
                            }
                        }
                    }
                    all
                },
            });
        }
        entries
    }

    /// Gives each entry that covers every clone of one job that job's read-back (`verify`
    /// phases named "JOB verify"), as fio counts those reads in the job's figures.
    pub fn attach_verify(&self, entries: &mut [Entry], verify: &[PhaseResult]) {
        for e in entries.iter_mut() {
            let unit = &self.units[e.unit];
            let plan = &self.plans[unit.plan];
            let whole = unit.members.iter().all(|(j, _)| *j == unit.plan)
                && unit.members.len() as u32 == plan.spec.threads * self.ranks;
            if whole {
                let name = format!("{} verify", plan.job.name);
                e.verify = verify.iter().find(|v| v.name == name).cloned();
            }
        }
    }

    /// A stored phase's name: the job's, with the clone's number when the entry is one
    /// clone of several (fio prints the job's name alone).
    fn name(&self, unit: &ReportUnit) -> String {
        let plan = &self.plans[unit.plan];
        if unit.members.len() == 1 && plan.spec.threads * self.ranks > 1 {
            format!("{}.{}", plan.job.name, unit.members[0].1)
        } else {
            plan.job.name.clone()
        }
    }

    /// The report of `entries` in every format asked for. The normal format's head
    /// comes once, with the first report written (fio prints it before the first).
    pub fn render(&self, entries: &[&Entry], disks: &[DiskUtil]) -> String {
        let list: Vec<FioEntry<'_>> = entries
            .iter()
            .map(|e| {
                let unit = &self.units[e.unit];
                FioEntry {
                    plan: &self.plans[unit.plan],
                    phase: &e.phase,
                    jobs: unit.members.len() as u32,
                    context_switches: e.context_switches,
                    job_runtime_ms: e.runtime_ms,
                    clones: e.clones.iter().map(|(t, n)| (t, *n)).collect(),
                    verify: e.verify.as_ref(),
                    prios: &e.prios,
                }
            })
            .collect();
        let report = FioReport::new(
            &format!("iolab {}", env!("CARGO_PKG_VERSION")),
            &list,
            disks.to_vec(),
        );
        let mut out = String::new();
        for f in &self.inv.formats {
            out.push_str(&match f {
                OutputFormat::Normal if self.headed.swap(true, Ordering::Relaxed) => {
                    text::body(&report)
                }
                OutputFormat::Normal => text::render(&report),
                OutputFormat::Json => json::render(&report, false),
                OutputFormat::JsonPlus => json::render(&report, true),
                OutputFormat::Terse => terse::render(&report),
            });
        }
        out
    }

    /// Writes to `--output` or standard output.
    pub fn write(&self, text: &str) -> Result<()> {
        match &self.file {
            Some(f) => {
                let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                let first = !f.written;
                f.written = true;
                let out = &mut f.file;
                (if first { out.set_len(0) } else { Ok(()) })
                    .and_then(|_| out.write_all(text.as_bytes()))
                    .and_then(|_| out.flush())
                    .with_context(|| {
                        format!("--output {}", self.inv.output.as_deref().unwrap_or(""))
                    })
            }
            None => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())
                    .and_then(|_| out.flush())
                    .context("standard output")
            }
        }
    }
}
