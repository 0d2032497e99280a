//! fio's report entries ([`Entry`]) made from the jobs' worker rows by [`Reporter`], and
//! rendered in the formats fio was asked for (compat's `output`). Beside the procedure
//! and not in `report`: an entry is engine rows grouped by compat's `ReportUnit`s and
//! rendered by compat's fio formats, and `report` sees neither crate.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use iolab_compat::fio::output::{DiskUtil, FioEntry, FioReport, json, terse, text};
use iolab_compat::fio::{FioPlan, OutputFormat, ReportUnit, report_units};
use iolab_core::histogram::LatencyHistogram;
use iolab_core::result::{PhaseResult, Timeline};
use iolab_core::telemetry::Telemetry;
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

/// How the rows of a phase were taken: whether it was interrupted, when it started (ms
/// since the Unix epoch) and the machine's telemetry beside it.
pub type RowsContext = (bool, i64, Option<Telemetry>);

/// The report units of a run's plans, and the formats its report is rendered in.
pub struct Reporter<'a> {
    plans: &'a [FioPlan],
    formats: Vec<OutputFormat>,
    pub units: Vec<ReportUnit>,
    ranks: u32,
    /// The normal format's head was rendered.
    headed: AtomicBool,
}

impl<'a> Reporter<'a> {
    pub fn new(plans: &'a [FioPlan], formats: &[OutputFormat], ranks: u32) -> Self {
        Reporter {
            plans,
            formats: formats.to_vec(),
            units: report_units(plans, ranks),
            ranks: ranks.max(1),
            headed: AtomicBool::new(false),
        }
    }

    /// The entries of the units whose jobs ran in one phase, from its rows: `jobs[k]` is
    /// the plan index of job k of the phase (a row's `job`). `meta(plan)` names the phase
    /// of a unit headed by that plan.
    pub fn entries(
        &self,
        jobs: &[usize],
        rows: &[&WorkerRow],
        meta: &dyn Fn(usize) -> PhaseMeta,
        run: RowsContext,
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
            entries.push(entry(u, m, &mine, &run));
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

    /// The plan an entry reports on (its unit's first job).
    pub fn plan_of(&self, e: &Entry) -> &FioPlan {
        &self.plans[self.units[e.unit].plan]
    }

    /// The report of `entries` in every format asked for. The normal format's head
    /// comes once, with the first report rendered (fio prints it before the first).
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
        for f in &self.formats {
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
}

/// Unit `unit`'s entry from its rows, its phase named by `meta`.
fn entry(unit: usize, meta: PhaseMeta, rows: &[&WorkerRow], run: &RowsContext) -> Entry {
    let mut prios: BTreeMap<String, LatencyHistogram> = BTreeMap::new();
    for r in rows {
        for (k, h) in &r.measure.histograms {
            if k.starts_with("prio.") {
                prios.entry(k.clone()).or_default().merge(h);
            }
        }
    }
    Entry {
        verify: None,
        unit,
        phase: phase_of_rows(meta, rows, run.0, run.1, run.2.clone()),
        context_switches: rows.iter().map(|r| r.context_switches).sum(),
        runtime_ms: rows.iter().map(|r| r.elapsed.0 / 1_000_000).sum(),
        clones: rows
            .iter()
            .map(|r| (r.measure.timeline.clone(), r.elapsed))
            .collect(),
        prios,
    }
}
