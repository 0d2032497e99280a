//! `iolab targets analyze FILE`: reads saved output of
//! `beegfs-ctl --storagebench --alltargets --status --verbose` and runs the statistics
//! and flagging of `iolab targets` on it; `--json` writes the analysis as a document of
//! schema `iolab.targets-analysis/1`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use iolab_compat::beegfs::{BenchSection, parse_storage_bench};
use iolab_core::spec::{DEFAULT_THRESHOLD_PERCENT, Rated, RatedUnit, check_threshold};
use iolab_suites::targets::{TargetAnalysis, analyze as analyze_figures};
use serde::Serialize;

use crate::exit;
use iolab_report::targets::render_analysis;

/// The schema of the JSON document `iolab targets analyze --json` writes.
pub const ANALYSIS_SCHEMA: &str = "iolab.targets-analysis/1";

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Saved output of `beegfs-ctl --storagebench --alltargets --status --verbose`
    /// ("-" reads standard input).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Flag a target that falls this many percent below the median (and is an outlier by
    /// median and MAD).
    #[arg(long, value_name = "PERCENT", default_value_t = DEFAULT_THRESHOLD_PERCENT)]
    pub threshold: f64,

    /// Every target's rated throughput in MB/s (decimal), to show each target and the
    /// aggregate as % of theoretical.
    #[arg(long, value_name = "MBPS")]
    pub rated_mbps: Option<f64>,

    /// List every target, not only the minimum, maximum, average and aggregate.
    #[arg(short = 'v', long)]
    pub verbose: bool,

    /// Write the analysis as JSON ("-" writes it to standard output instead of the text).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    source: String,
    threshold_percent: f64,
    sections: Vec<SectionDoc<'a>>,
}

#[derive(Serialize)]
struct SectionDoc<'a> {
    /// "write", "read", or null when the file does not say.
    op: Option<&'static str>,
    bench: &'a BenchSection,
    analysis: Option<TargetAnalysis>,
    notes: Vec<String>,
}

fn read_input(file: &Path) -> Result<String> {
    Ok(iolab_core::input::read_text(file)?)
}

pub fn analyze(args: AnalyzeArgs) -> Result<u8> {
    check_threshold(args.threshold)?;
    if let Some(r) = args.rated_mbps
        && !(r.is_finite() && r > 0.0)
    {
        bail!("--rated-mbps: {r} must be a positive number of MB/s, e.g. 5000");
    }
    let name = args.file.display().to_string();
    let text = read_input(&args.file)?;
    let sections = parse_storage_bench(&name, &text)?;
    let rated = args.rated_mbps.map(|value| Rated {
        value,
        unit: RatedUnit::MegabytesPerSec,
    });
    let docs: Vec<SectionDoc<'_>> = sections
        .iter()
        .map(|s| {
            let mut figures = iolab_suites::targets::figures_of(s);
            for f in &mut figures {
                f.rated = rated;
            }
            SectionDoc {
                op: s.op.map(|o| o.name()),
                bench: s,
                analysis: analyze_figures(&figures, args.threshold),
                notes: s.notes(),
            }
        })
        .collect();
    let to_stdout = args.json.as_deref() == Some(Path::new("-"));
    if !to_stdout {
        print!("{}", render(&name, &docs, args.verbose));
    }
    if let Some(path) = &args.json {
        let doc = Document {
            schema: ANALYSIS_SCHEMA,
            source: name,
            threshold_percent: args.threshold,
            sections: docs,
        };
        let json = serde_json::to_string_pretty(&doc).context("encoding the analysis")? + "\n";
        if to_stdout {
            print!("{json}");
        } else {
            std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(exit::OK)
}

fn render(name: &str, docs: &[SectionDoc<'_>], verbose: bool) -> String {
    let mut out = format!(
        "iolab {} · targets analyze · {name}\n",
        env!("CARGO_PKG_VERSION")
    );
    for d in docs {
        out.push('\n');
        let title = format!("{} results (beegfs-ctl)", d.op.unwrap_or("benchmark"));
        if let Some(a) = &d.analysis {
            out.push_str(&render_analysis(&title, a, verbose));
        }
        for n in &d.notes {
            out.push_str(&format!("note: {n}\n"));
        }
    }
    out
}
