//! The terminal output of `iolab targets` and `iolab targets analyze`, laid out like
//! BeeGFS StorageBench's: minimum and maximum with node and target id, average,
//! aggregate, then (with --verbose) every target as `target-id  KiB/s  human  node`,
//! then what was flagged.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use iolab_core::result::{PhaseResult, RunRecord};
use iolab_core::spec::RatedUnit;
use iolab_core::targets::{TargetAnalysis, TargetsPhase, flag_lines, place};
use iolab_core::units::BytesPerSec;

fn kib(bytes_per_sec: f64) -> String {
    format!("{:.0}", bytes_per_sec / 1024.0)
}

fn human(bytes_per_sec: f64) -> String {
    BytesPerSec(bytes_per_sec).human()
}

/// One figure line: label, KiB/s, human units, and who.
fn figure(out: &mut String, label: &str, v: f64, who: &str) {
    let _ = writeln!(
        out,
        "  {label:<22} {:>12} KiB/s  {:>12}{who}",
        kib(v),
        human(v)
    );
}

/// The statistics of a set of targets, `title` naming it ("write results").
pub fn render_analysis(title: &str, a: &TargetAnalysis, verbose: bool) -> String {
    let mut out = String::new();
    let nodes: BTreeSet<&str> = a.targets.iter().map(|t| t.node.as_str()).collect();
    let _ = writeln!(
        out,
        "{title}: {} target{} on {} node{}",
        a.count,
        if a.count == 1 { "" } else { "s" },
        nodes.len(),
        if nodes.len() == 1 { "" } else { "s" }
    );
    let who = |id: &str, node: &str| format!("  node {node}, target {id}");
    figure(
        &mut out,
        "min throughput",
        a.min.throughput,
        &who(&a.min.id, place(&a.min.node, &a.min.service)),
    );
    figure(
        &mut out,
        "max throughput",
        a.max.throughput,
        &who(&a.max.id, place(&a.max.node, &a.max.service)),
    );
    figure(&mut out, "avg throughput", a.average, "");
    figure(
        &mut out,
        "aggregate throughput",
        a.aggregate,
        "  sum of the targets' own rates (StorageBench's aggregate)",
    );
    let mad = if a.median > 0.0 {
        a.mad / a.median * 100.0
    } else {
        0.0
    };
    let of = if a.reference.is_empty() {
        String::new()
    } else {
        format!(" (of {})", a.reference)
    };
    figure(
        &mut out,
        "median",
        a.median,
        &format!("  MAD {mad:.1}%{of}"),
    );
    if let Some(t) = &a.theoretical {
        let rated = match t.unit {
            RatedUnit::MegabytesPerSec => BytesPerSec(t.rated_total * 1e6).human_decimal(),
            RatedUnit::Iops => format!("{:.0} IOPS", t.rated_total),
        };
        let _ = writeln!(
            out,
            "  {:<22} {:>11.1}%  of {rated} rated ({} target{})",
            "of theoretical",
            t.percent,
            t.rated_targets,
            if t.rated_targets == 1 { "" } else { "s" }
        );
    }
    if verbose {
        out.push('\n');
        out.push_str(&target_list(a));
    }
    out.push('\n');
    out.push_str(&flags(a));
    for n in &a.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn target_list(a: &TargetAnalysis) -> String {
    let mut out = String::new();
    let rated = a.targets.iter().any(|t| t.percent_of_rated.is_some());
    let _ = writeln!(
        out,
        "  {:<16} {:>12} {:>12}  {:>9}{}  node",
        "target-id",
        "KiB/s",
        "human",
        "vs median",
        if rated { "    rated" } else { "" }
    );
    for t in &a.targets {
        let pct = match (rated, t.percent_of_rated) {
            (false, _) => String::new(),
            (true, Some(p)) => format!(" {p:>7.1}%"),
            (true, None) => format!(" {:>8}", "-"),
        };
        let mark = match (t.slow, t.node_slow) {
            (true, true) => "  SLOW (node)",
            (true, false) => "  SLOW",
            _ => "",
        };
        let _ = writeln!(
            out,
            "  {:<16} {:>12} {:>12}  {:>+8.1}%{pct}  {}{mark}",
            t.id,
            kib(t.throughput),
            human(t.throughput),
            t.vs_median_percent,
            place(&t.node, &t.service)
        );
    }
    out
}

fn flags(a: &TargetAnalysis) -> String {
    let lines = flag_lines(a);
    if lines.is_empty() {
        return format!(
            "no target is significantly below the median (flagged at {}% below it)\n",
            a.threshold_percent
        );
    }
    let mut out = String::from("slow:\n");
    for l in lines {
        let _ = writeln!(out, "  {l}");
    }
    out
}

/// The whole run: a header, then per direction the statistics, errors and warnings
/// (`verbose`: every target's line too).
pub fn render_targets(record: &RunRecord, phases: &[TargetsPhase], verbose: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "iolab {} · targets · {}{}",
        record.provenance.iolab_version,
        record.provenance.target,
        record
            .label
            .as_deref()
            .map(|l| format!(" · label {l}"))
            .unwrap_or_default()
    );
    for p in phases {
        out.push('\n');
        out.push_str(&phase_header(&p.summary));
        match &p.analysis {
            Some(a) => {
                let title = format!("{} results", p.rw.name());
                out.push_str(&render_analysis(&title, a, verbose));
                if let Some((rate, bytes)) = wall_rate(&p.summary) {
                    figure(
                        &mut out,
                        "total / wall time",
                        rate,
                        &format!(
                            "  {} moved in {} by all targets together",
                            iolab_core::units::ByteCount(bytes).human(),
                            p.summary.elapsed.human()
                        ),
                    );
                }
                skip_known_lines(&mut out, &p.summary, a);
            }
            None => out.push_str("  no target completed\n"),
        }
        out.push_str(&errors(&p.targets));
    }
    out
}

/// All bytes over the phase's wall time (to the last target's end), for targets run all
/// at once: what they delivered together, beside the sum of their own rates.
fn wall_rate(s: &PhaseResult) -> Option<(f64, u64)> {
    let rate = *s.extra.get("wall_bytes_per_sec")?;
    let bytes = *s.extra.get("total_bytes")? as u64;
    Some((rate, bytes))
}

fn phase_header(s: &PhaseResult) -> String {
    let get = |k: &str| s.params.get(k).cloned().unwrap_or_default();
    format!(
        "{}  ({}, {} thread{} per target, {}; {} workers in {}){}\n",
        s.name,
        get("mode"),
        get("threads"),
        if get("threads") == "1" { "" } else { "s" },
        get("io"),
        s.workers,
        s.elapsed.human(),
        // As `iolab run` marks a phase Ctrl-C cut short: its figures are partial.
        if s.interrupted { "  [interrupted]" } else { "" }
    )
}

/// The summary's warnings other than the flags and notes already shown.
fn skip_known_lines(out: &mut String, s: &PhaseResult, a: &TargetAnalysis) {
    let known: Vec<String> = flag_lines(a).into_iter().chain(a.notes.clone()).collect();
    for w in s.warnings.iter().filter(|w| !known.contains(w)) {
        let _ = writeln!(out, "warning: {w}");
    }
}

fn errors(targets: &[PhaseResult]) -> String {
    let mut out = String::new();
    for t in targets.iter().filter(|t| t.error_count > 0) {
        let first = t.errors.first().map(|e| e.message.as_str()).unwrap_or("");
        let _ = writeln!(
            out,
            "ERRORS: {}: {} I/O error{}; first: {first}",
            t.name,
            t.error_count,
            if t.error_count == 1 { "" } else { "s" }
        );
    }
    out
}
