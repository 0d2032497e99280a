//! What `iolab study` prints around its phases: the plan of a study before it runs
//! ([`render_study_plan`]: every phase, the values it runs with, its data and time, then
//! the capacity and time of the whole), its opening line ([`study_start`]) and its
//! closing summary ([`study_end`]).

use iolab_core::result::RunRecord;
use iolab_core::spec::{PhaseEstimate, PhaseSpec, PlannedPhase, StudyEstimate, StudySpec};
use iolab_core::units::{ByteCount, Nanos};

use crate::Units;
use crate::table::Table;

/// A study's plan as `iolab study plan` shows it: the study, its phases and their
/// estimate, for `ranks` ranks at the assumed bandwidth and IOPS.
pub struct StudyPlanView<'a> {
    pub spec: &'a StudySpec,
    pub origin: &'a str,
    pub phases: &'a [PlannedPhase],
    pub estimate: &'a StudyEstimate,
    pub ranks: u32,
    pub assume_bandwidth: ByteCount,
    pub assume_iops: f64,
}

/// The plan: a header, one row per phase, notes on metadata phases, then the totals.
pub fn render_study_plan(plan: &StudyPlanView<'_>) -> String {
    let StudyPlanView {
        spec,
        origin,
        phases,
        estimate: est,
        ranks,
        ..
    } = plan;
    let mut out = format!("study {} ({origin}): {}\n", spec.name, spec.description);
    // Columns as wide as their widest cell: a point such as `rwmix_read=100` or a long
    // "runs as" must not push the row out of its columns.
    let mut table = Table::new(&[
        ">#", "sweep", "point", ">rep", "phase", "runs as", ">data", ">time",
    ]);
    for (i, (p, e)) in phases.iter().zip(&est.phases).enumerate() {
        let point: Vec<String> = p
            .coordinates
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let time = if e.time_based {
            e.time.human()
        } else {
            format!("~{}", e.time.human())
        };
        table.push(vec![
            (i + 1).to_string(),
            p.sweep.clone(),
            point.join(" "),
            (p.repetition + 1).to_string(),
            p.name.clone(),
            runs_as(&p.spec, e, *ranks),
            ByteCount(e.data_bytes).human(),
            time,
        ]);
    }
    out.push_str(&table.to_text());
    out.push_str(&plan_notes(phases, *ranks));
    out.push_str(&format!(
        "{} phases; needs {} of free space at most; takes about {} (size-based phases at {}/s or {} IOPS, metadata at as many files/s; --assume-bandwidth and --assume-iops change that)\n",
        phases.len(),
        ByteCount(est.capacity).human(),
        est.time.human(),
        plan.assume_bandwidth.human(),
        plan.assume_iops
    ));
    out
}

/// What a metadata phase's tree does to the files asked for, one line per such phase.
fn plan_notes(phases: &[PlannedPhase], ranks: u32) -> String {
    let mut out = String::new();
    for (i, p) in phases.iter().enumerate() {
        if let PhaseSpec::Meta(m) = &p.spec
            && let Some(note) = m.total_files_note(u64::from(m.threads) * u64::from(ranks))
        {
            out.push_str(&format!("note on #{}: {note}\n", i + 1));
        }
    }
    out
}

/// The resolved values a phase runs with (after --scale and --set): what a plan row
/// shows beside the point, so that a scaled or overridden study can be checked before it runs.
fn runs_as(spec: &PhaseSpec, e: &PhaseEstimate, ranks: u32) -> String {
    let per_rank = if ranks > 1 { " per rank" } else { "" };
    match spec {
        PhaseSpec::Data(d) => {
            let amount = d.runtime.map(|t| format!(" for {t}")).unwrap_or_default();
            let mix = if d.rw.is_mixed() {
                format!(" {}%r", d.read_percent())
            } else {
                String::new()
            };
            format!(
                "{}{mix} {} x{}{per_rank} qd{}{amount}",
                d.rw.name(),
                d.block_size,
                d.threads,
                d.queue_depth
            )
        }
        PhaseSpec::Meta(m) => format!(
            "{} files in {} dirs, x{}{per_rank}",
            e.files, e.dirs, m.threads
        ),
        PhaseSpec::S3(s) => format!(
            "s3 {} {} objects of {} x{}{per_rank}{}",
            s.ops.iter().map(|o| o.name()).collect::<Vec<_>>().join(","),
            s.objects,
            s.size_label(),
            s.concurrency,
            s.duration.map(|d| format!(" for {d}")).unwrap_or_default()
        ),
    }
}

/// The study's opening line: its name and origin, its phases (and the results they
/// print, when a phase prints more than one), and about how long it takes.
pub fn study_start(
    name: &str,
    origin: &str,
    phases: &[PlannedPhase],
    est: &StudyEstimate,
) -> String {
    let results: usize = phases.iter().map(|p| p.spec.results()).sum();
    let printed = if results == phases.len() {
        String::new()
    } else {
        format!(" ({results} results: a metadata or S3 phase prints one per operation)")
    };
    format!(
        "study {name} ({origin}): {} phases{printed}, about {}\n",
        phases.len(),
        Nanos(est.time.0).human()
    )
}

/// The headline figure of every phase, as the study's own summary table (then its
/// matrices and its figures against the rated ones), and where the run is stored.
pub fn study_end(name: &str, record: &RunRecord, units: Units, interrupted: bool) -> String {
    let mut out = format!(
        "study {name}: every phase\n{}\n",
        crate::text::render_summary(record, units)
    );
    if !record.id.is_empty() {
        out.push_str(&format!(
            "study {name} stored as {}{}\n",
            record.id,
            if interrupted { " (interrupted)" } else { "" }
        ));
    }
    out
}
