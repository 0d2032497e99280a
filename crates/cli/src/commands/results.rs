//! The results store from the command line: `iolab results list|show|export|delete`,
//! `iolab compare A B` (the table the NFS study ends with) and `iolab report RUN --vs RUN`
//! (HTML with charts, Markdown, CSV). Runs are named by id (r42) or label; a label on a
//! side of a comparison means every run with that label.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use iolab_core::result::{RunProcess, RunRecord, RunStatus};
use iolab_host::Liveness;
use iolab_report::{Comparison, Format, ReportOptions, Units};
use iolab_store::{RunFilter, RunId, RunSummaryRow, Store};

use crate::args::DbArgs;
use crate::exit;

use iolab_report::listing::render_list;

#[derive(Args, Debug)]
pub struct ResultsArgs {
    #[command(subcommand)]
    pub command: ResultsCommand,

    #[command(flatten)]
    pub store: DbArgs,
}

#[derive(Subcommand, Debug)]
pub enum ResultsCommand {
    /// List stored runs, newest first (text, or another --format).
    List {
        #[command(flatten)]
        filter: ListArgs,
        /// text, json, csv, markdown or html.
        #[arg(long, default_value = "text")]
        format: Format,
    },
    /// Print one run (text, or another --format).
    Show {
        /// Run id (r42) or label (its latest run).
        run: String,
        #[arg(long, default_value = "text")]
        format: Format,
    },
    /// Write runs in a format: json, csv, markdown or html.
    Export(ExportArgs),
    /// Remove a run from the database.
    Delete {
        /// Run id (r42), or a label only one run carries.
        run: String,
    },
}

/// Which runs.
#[derive(Args, Debug, Clone, Default)]
pub struct ListArgs {
    /// Only runs with this label (a glob with * and ? matches several).
    #[arg(long)]
    pub label: Option<String>,
    /// Only runs of this kind: run, meta, study, io500, targets, ladder, ...
    #[arg(long)]
    pub kind: Option<String>,
    /// Only runs started on or after this date (YYYY-MM-DD, UTC).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only runs started before this date (YYYY-MM-DD, UTC).
    #[arg(long, value_name = "DATE")]
    pub until: Option<String>,
    /// At most this many runs.
    #[arg(long)]
    pub limit: Option<u32>,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Runs by id or label; none: every run the filters select.
    pub runs: Vec<String>,
    #[command(flatten)]
    pub filter: ListArgs,
    #[arg(long, default_value = "json")]
    pub format: Format,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The baseline: a run id or a label (all runs with it).
    pub a: String,
    /// The candidate: a run id or a label.
    pub b: String,
    #[arg(long, default_value = "text")]
    pub format: Format,
    /// Bandwidth in binary units (MiB/s, GiB/s) or decimal ones (MB/s, GB/s, as storage
    /// vendors and the reference studies quote it). CSV and JSON stay in bytes/s.
    #[arg(long, default_value = "binary", value_name = "binary|decimal")]
    pub units: Units,
    #[command(flatten)]
    pub store: DbArgs,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The run to report on: id or label.
    pub run: String,
    /// Runs to compare it with, overlaid on its charts (repeatable).
    #[arg(long = "vs", value_name = "RUN")]
    pub vs: Vec<String>,
    /// Write a self-contained HTML page with charts.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write Markdown tables.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write CSV (one row per phase and operation).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Bandwidth in binary units (MiB/s, GiB/s) or decimal ones (MB/s, GB/s, as storage
    /// vendors and the reference studies quote it). CSV stays in bytes/s.
    #[arg(long, default_value = "binary", value_name = "binary|decimal")]
    pub units: Units,
    /// Judge the runs against these rated figures instead of those stored with them: a
    /// targets file (TOML or CSV with rated_iops or rated_mbps per device and node,
    /// docs/targets.md).
    #[arg(long, value_name = "FILE")]
    pub rated: Option<PathBuf>,
    #[command(flatten)]
    pub store: DbArgs,
}

/// Parses YYYY-MM-DD (UTC) into ms since the epoch.
fn parse_date(option: &str, text: &str) -> Result<i64> {
    let bad = || anyhow::anyhow!("{option}: '{text}' is not a date; use YYYY-MM-DD");
    let parts: Vec<&str> = text.trim().split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return Err(bad());
    };
    let (y, m, d): (i64, i64, i64) = (
        y.parse().map_err(|_| bad())?,
        m.parse().map_err(|_| bad())?,
        d.parse().map_err(|_| bad())?,
    );
    // A day the month has (2026-02-30 is no date), in years the calendar arithmetic
    // handles without overflow (9223372036854775807-01-01 overflowed it).
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days_in_month = match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=days_in_month).contains(&d) {
        return Err(bad());
    }
    Ok(iolab_core::civil::days_from_civil(y, m, d) * 86_400_000)
}

fn filter(args: &ListArgs) -> Result<RunFilter> {
    Ok(RunFilter {
        label: args.label.clone(),
        kind: args.kind.clone(),
        since_ms: args
            .since
            .as_deref()
            .map(|d| parse_date("--since", d))
            .transpose()?,
        until_ms: args
            .until
            .as_deref()
            .map(|d| parse_date("--until", d))
            .transpose()?,
        limit: args.limit,
        ..RunFilter::default()
    })
}

pub fn results(args: ResultsArgs) -> Result<u8> {
    let mut store = args.store.open()?;
    match args.command {
        ResultsCommand::List { filter: l, format } => list(&store, &l, format)?,
        ResultsCommand::Show { run, format } => {
            let record = load(&store, &run)?;
            print!("{}", render(format, &[record])?);
        }
        ResultsCommand::Export(e) => export(&store, &e)?,
        ResultsCommand::Delete { run } => delete(&mut store, &run)?,
    }
    Ok(exit::OK)
}

/// `results list`: the runs the filter selects, or why there are none.
fn list(store: &Store, l: &ListArgs, format: Format) -> Result<()> {
    let rows = list_seen(store, &filter(l)?)?;
    if rows.is_empty() {
        let why = nothing_listed(store, l)?;
        if format != Format::Text {
            // An empty document on standard output, the reason on standard error.
            print!("{}", render_list(format, &rows));
            eprintln!("{why}");
        } else {
            println!("{why}");
        }
        return Ok(());
    }
    print!("{}", render_list(format, &rows));
    Ok(())
}

/// `results export`: the runs named, or those the filter selects, in a format.
fn export(store: &Store, e: &ExportArgs) -> Result<()> {
    if let Some(p) = &e.output {
        crate::output::check_output_dir("--output", p)?;
    }
    let records = if e.runs.is_empty() {
        let rows = store.list_runs(&filter(&e.filter)?)?;
        rows.iter()
            .map(|r| load_seen(store, r.id))
            .collect::<Result<Vec<_>>>()?
    } else {
        e.runs
            .iter()
            .map(|r| load(store, r))
            .collect::<Result<Vec<_>>>()?
    };
    if records.is_empty() {
        bail!("no runs match; `iolab results list` shows what is stored");
    }
    let text = render(e.format, &records)?;
    write_or_print("--output", e.output.as_ref(), &text)?;
    Ok(())
}

/// `results delete`: one run, by its id or a label only it carries, once it has ended.
fn delete(store: &mut Store, run: &str) -> Result<()> {
    let id = store.resolve(run)?;
    let reference = run.trim();
    if RunId::parse(reference) != Some(id) {
        // A label deletes only the one run carrying it: which of several was meant
        // is not for us to guess.
        let mut carriers: Vec<RunId> = store
            .list_runs(&RunFilter {
                label: Some(reference.to_string()),
                ..RunFilter::default()
            })?
            .into_iter()
            .filter(|r| r.label.as_deref() == Some(reference))
            .map(|r| r.id)
            .collect();
        if carriers.len() > 1 {
            carriers.sort();
            let ids: Vec<String> = carriers.iter().map(RunId::to_string).collect();
            bail!(
                "label '{reference}' names {} runs ({}); delete one by its id",
                ids.len(),
                ids.join(", ")
            );
        }
    }
    // A run still going would lose its phases as they are stored, and its end
    // would find no run to mark.
    if load_seen(store, id)?.status == RunStatus::Running {
        bail!(
            "run {id} is still running (its process is alive); delete it once it has ended, or stop it first"
        );
    }
    store.delete_run(id)?;
    println!("deleted {id}");
    Ok(())
}

/// Why `results list` shows nothing: an empty database, or filters matching no run.
fn nothing_listed(store: &Store, args: &ListArgs) -> Result<String> {
    let stored = store.list_runs(&RunFilter::default())?.len();
    let db = store.path().display();
    if stored == 0 {
        return Ok(format!("no runs stored in {db}"));
    }
    let mut filters = Vec::new();
    for (option, value) in [
        ("--label", &args.label),
        ("--kind", &args.kind),
        ("--since", &args.since),
        ("--until", &args.until),
    ] {
        if let Some(v) = value {
            filters.push(format!("{option} {v}"));
        }
    }
    if let Some(n) = args.limit {
        filters.push(format!("--limit {n}"));
    }
    Ok(format!(
        "no run matches {} ({} stored in {db})",
        filters.join(", "),
        plural(stored, "run")
    ))
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

fn render(format: Format, runs: &[RunRecord]) -> Result<String> {
    Ok(iolab_report::render(
        format,
        runs,
        &ReportOptions::default(),
    ))
}

fn write_or_print(option: &str, path: Option<&PathBuf>, text: &str) -> Result<()> {
    match path {
        Some(p) => std::fs::write(p, text).with_context(|| format!("{option} {}", p.display())),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// One run by id or label (the latest with that label).
fn load(store: &Store, reference: &str) -> Result<RunRecord> {
    let id = store.resolve(reference)?;
    load_seen(store, id)
}

/// A stored run with the status a reader here should see (see [`seen_status`]).
fn load_seen(store: &Store, id: RunId) -> Result<RunRecord> {
    let mut run = store.load_run(id)?;
    run.status = seen_status(run.status, run.provenance.process.as_ref());
    Ok(run)
}

/// The runs `filter` selects, with the status a reader here should see.
fn list_seen(store: &Store, filter: &RunFilter) -> Result<Vec<RunSummaryRow>> {
    let mut rows = store.list_runs(filter)?;
    for r in &mut rows {
        r.status = seen_status(r.status, r.process.as_ref());
    }
    Ok(rows)
}

/// An incomplete run is still going or was abandoned (its process killed, crashed, or
/// its host rebooted); a reader on the host of the storing process can tell which. The
/// store keeps "incomplete": the process may be seen from elsewhere, or finish.
fn seen_status(stored: RunStatus, process: Option<&RunProcess>) -> RunStatus {
    let (RunStatus::Incomplete, Some(p)) = (stored, process) else {
        return stored;
    };
    let root = iolab_host::SysRoot::live();
    match iolab_host::liveness(&root, &iolab_comm::hostname(), p) {
        Liveness::Alive => RunStatus::Running,
        Liveness::Gone => RunStatus::Abandoned,
        Liveness::Unknown => stored,
    }
}

/// A side of a comparison: a run id, or every run with a label.
fn side(store: &Store, reference: &str) -> Result<Vec<RunRecord>> {
    if let Some(id) = RunId::parse(reference)
        && let Ok(run) = load_seen(store, id)
    {
        return Ok(vec![run]);
    }
    let rows = store.list_runs(&RunFilter {
        label: Some(reference.to_string()),
        ..RunFilter::default()
    })?;
    if rows.is_empty() {
        // Let the store word the error ("no run labelled ...").
        store.resolve(reference)?;
    }
    rows.iter().map(|r| load_seen(store, r.id)).collect()
}

/// `b` against the baseline `a`, each a run id or every run with a label: what `iolab
/// compare A B` prints and `iolab report B --vs A` shows.
fn compare_refs(
    store: &Store,
    a: &str,
    b: &str,
) -> Result<(Vec<RunRecord>, Vec<RunRecord>, Comparison)> {
    let a = side(store, a)?;
    let b = side(store, b)?;
    let c = iolab_report::compare_sides(&a, &b);
    Ok((a, b, c))
}

pub fn compare(args: CompareArgs) -> Result<u8> {
    let store = args.store.open()?;
    let (a, b, c) = compare_refs(&store, &args.a, &args.b)?;
    let text = match args.format {
        Format::Text => iolab_report::render_comparison_text(&c, args.units),
        Format::Markdown => iolab_report::render_comparison_markdown(&c, args.units),
        Format::Csv => iolab_report::render_comparison_csv(&c),
        Format::Json => iolab_report::render_comparison_json(&c),
        Format::Html => {
            let mut runs = b.clone();
            runs.extend(a.iter().cloned());
            iolab_report::render_html(
                &runs,
                &ReportOptions {
                    comparison: Some(c),
                    units: args.units,
                    ..ReportOptions::default()
                },
            )
        }
    };
    print!("{text}");
    Ok(exit::OK)
}

pub fn report(args: ReportArgs) -> Result<u8> {
    if args.html.is_none() && args.markdown.is_none() && args.csv.is_none() {
        bail!("say what to write: --html FILE, --markdown FILE and/or --csv FILE");
    }
    let outputs = [
        ("--html", &args.html),
        ("--markdown", &args.markdown),
        ("--csv", &args.csv),
    ];
    for (option, path) in outputs {
        if let Some(p) = path {
            crate::output::check_output_dir(option, p)?;
        }
    }
    let rated = match &args.rated {
        Some(file) => Some(crate::commands::study::read_rated(file, "--rated")?),
        None => None,
    };
    let store = args.store.open()?;
    let mut runs = vec![load(&store, &args.run)?];
    for v in &args.vs {
        runs.push(load(&store, v)?);
    }
    if let Some(rated) = &rated {
        for run in &mut runs {
            crate::commands::study::store_rated(&mut run.spec, rated);
        }
    }
    // Compared with the first --vs as the baseline, exactly as `iolab compare` does: a
    // label on either side pools all its runs.
    let comparison = match args.vs.first() {
        Some(old) => Some(compare_refs(&store, old, &args.run)?.2),
        None => None,
    };
    let opts = ReportOptions {
        comparison,
        units: args.units,
        ..ReportOptions::default()
    };
    if let Some(p) = &args.html {
        let html = iolab_report::render_html(&runs, &opts);
        write_or_print("--html", Some(p), &html)?;
        println!("wrote {}", p.display());
    }
    if let Some(p) = &args.markdown {
        write_or_print(
            "--markdown",
            Some(p),
            &iolab_report::render_markdown_with(&runs, &opts),
        )?;
        println!("wrote {}", p.display());
    }
    if let Some(p) = &args.csv {
        write_or_print("--csv", Some(p), &iolab_report::render_csv(&runs))?;
        println!("wrote {}", p.display());
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_report::listing::date;

    #[test]
    fn dates_round_trip() {
        assert_eq!(parse_date("--since", "1970-01-01").unwrap(), 0);
        assert_eq!(
            parse_date("--since", "2026-11-22").unwrap(),
            1_795_305_600_000
        );
        assert_eq!(date(1_795_305_600_000 + 3_723_000), "2026-11-22 01:02");
        assert!(
            parse_date("--since", "yesterday")
                .unwrap_err()
                .to_string()
                .contains("--since: 'yesterday' is not a date")
        );
        assert!(parse_date("--until", "2026-13-01").is_err());
    }
}
