//! The terminal summary of a run: per phase and operation, bandwidth, IOPS (or rate),
//! the latency percentiles, first-done figures, CPU use and warnings. Plain text, no
//! colour, stable enough for golden tests.

use crate::table::escape_control;
use std::fmt::Write as _;

use iolab_core::histogram::LatencySummary;
use iolab_core::result::{CpuUsage, OpResult, Pause, PhaseKind, PhaseResult, RunRecord};
use iolab_core::units::{ByteCount, BytesPerSec, Nanos, OpsPerSec};

use crate::measure::Units;
use crate::table::Table;

pub use crate::text_summary::{render_summary, summary_table};

use crate::phase_words::{mixed_total, phase_settings};

/// The whole run: a header line, then each phase, in binary units.
pub fn render_run(run: &RunRecord) -> String {
    render_run_in(run, Units::Binary)
}

/// The whole run in `units`: a header line, each phase, the repetitions, and for a run of
/// several phases the headline of every phase with its matrices and rated figures.
pub fn render_run_in(run: &RunRecord, units: Units) -> String {
    let mut out = String::new();
    let label = run
        .label
        .as_deref()
        .map(|l| format!(" · label {}", escape_control(l)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "iolab {} · {} · {}{}",
        run.provenance.iolab_version,
        run.kind,
        escape_control(&run.provenance.target),
        label
    );
    if let Some(score) = io500_score_line(run) {
        let _ = writeln!(out, "{score}");
    }
    for p in &run.phases {
        out.push('\n');
        out.push_str(&render_phase(p));
    }
    out.push_str(&repetitions_section(run));
    if run.phases.len() > 1 {
        let _ = write!(out, "\nevery phase:\n{}", render_summary(run, units));
    }
    for w in &run.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

/// Explains the columns of the repetitions section (`repetitions_section`).
pub const REPETITIONS_NOTE: &str = "mean, SD (standard deviation) and CV (SD / mean) over \
the n repetitions; ± is the half-width of the 95% confidence interval of the mean; * marks \
a noisy figure (CV over 10%)";

/// Figures measured more than once, pooled: a table with the mean, SD, CV and 95 % CI of
/// each; empty when nothing was repeated.
fn repetitions_section(run: &RunRecord) -> String {
    let agg = crate::aggregate::aggregate(run);
    let rows: Vec<_> = agg
        .spread_rows()
        .into_iter()
        .filter(|r| r.spread.n > 1)
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    // "at 8 threads" only when something was swept.
    let swept = rows.iter().any(|r| !r.at().is_empty());
    let headers = [
        "phase", "at", "op", ">n", ">mean", ">SD", ">CV", ">95% CI", "",
    ];
    let headers: Vec<&str> = headers
        .into_iter()
        .filter(|h| swept || *h != "at")
        .collect();
    let mut t = Table::new(&headers);
    for r in &rows {
        let s = &r.spread;
        let mut cells = vec![r.label()];
        if swept {
            cells.push(r.at());
        }
        cells.extend([
            r.op.name().to_string(),
            s.n.to_string(),
            r.measure.format(s.mean),
            r.measure.format(s.stddev),
            format!("{:.1}%", s.cv * 100.0),
            format!("±{}", r.measure.format(s.ci95)),
            if r.noisy { "*" } else { "" }.to_string(),
        ]);
        t.push(cells);
    }
    format!("\nrepetitions ({REPETITIONS_NOTE}):\n{}", t.to_text())
}

fn phase_header(p: &PhaseResult) -> String {
    format!(
        "{}  ({}; {} in {})",
        p.name,
        phase_settings(p).join(", "),
        plural(p.workers as u64, "worker"),
        p.elapsed.human()
    )
}

fn plural(n: u64, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// One phase.
/// Ranks shown one by one up to this many; beyond, only hosts.
const RANK_LINES: usize = 16;

/// Under MPI: a line per host (when there are several) and per rank (up to
/// [`RANK_LINES`]), so an uneven host or rank shows.
fn render_spread(p: &PhaseResult) -> String {
    let mut out = String::new();
    if p.per_rank.len() < 2 {
        return out;
    }
    let by_bytes = p.kind != PhaseKind::Meta && p.ops.iter().any(|o| o.op.moves_data());
    let figure = |ops: u64, bytes: u64, over: Nanos| {
        let secs = over.as_secs_f64().max(1e-9);
        if by_bytes {
            format!(
                "{} IOPS, {}",
                OpsPerSec(ops as f64 / secs).human(),
                BytesPerSec(bytes as f64 / secs).human()
            )
        } else {
            format!("{}/s", OpsPerSec(ops as f64 / secs).human())
        }
    };
    let hosts = p.per_host();
    if hosts.len() > 1 {
        for h in &hosts {
            let _ = writeln!(
                out,
                "  host {}: {} rank{}, {} worker{}, {}, cpu {:.1}% of {} CPUs",
                h.host,
                h.ranks.len(),
                if h.ranks.len() == 1 { "" } else { "s" },
                h.workers,
                if h.workers == 1 { "" } else { "s" },
                figure(h.ops, h.bytes.get(), p.elapsed),
                h.cpu.percent_of_all(),
                h.cpu.cpus
            );
        }
    }
    if p.per_rank.len() <= RANK_LINES {
        for r in &p.per_rank {
            let (ops, bytes) = r
                .ops
                .values()
                .fold((0, 0), |(o, b), c| (o + c.ops, b + c.bytes));
            let _ = writeln!(
                out,
                "  rank {} on {}: {}, done at {}, cpu {:.1}% of one CPU",
                r.rank,
                r.host,
                figure(ops, bytes, r.elapsed),
                r.elapsed.human(),
                r.cpu.percent_of_one_cpu()
            );
        }
    }
    out
}

/// A mixed data phase's `total` line; nothing for other phases.
fn render_total(p: &PhaseResult) -> String {
    let Some((iops, bw, names)) = mixed_total(p) else {
        return String::new();
    };
    format!(
        "  {:<7} IOPS {:<8} BW {} ({})  {}\n",
        "total",
        iops.human(),
        bw.human(),
        bw.human_decimal(),
        names.join(" + ")
    )
}

/// The phase's CPU line; none for imported results (an IO500 directory), which carry no
/// CPU figures: no line rather than 0%.
fn cpu_line(p: &PhaseResult) -> String {
    if !cpu_measured(&p.cpu) {
        return String::new();
    }
    let mut out = format!(
        "  cpu: usr {:.1}% sys {:.1}% of one CPU",
        p.cpu.user_percent(),
        p.cpu.system_percent(),
    );
    // A row that does not know its CPUs (a target within a run) says nothing of them.
    if p.cpu.cpus > 0 {
        let _ = write!(
            out,
            " ({:.1}% of {} CPUs)",
            p.cpu.percent_of_all(),
            p.cpu.cpus
        );
    }
    out.push('\n');
    out
}

/// The phase's error and verify failure counts, and the first few errors kept with
/// their details.
fn error_lines(p: &PhaseResult) -> String {
    let mut out = String::new();
    if p.error_count > 0 {
        let _ = writeln!(out, "  ERRORS: {}", p.error_count);
    }
    if p.verify_failures > 0 {
        let _ = writeln!(
            out,
            "  VERIFY FAILURES: {}",
            plural(p.verify_failures, "block")
        );
    }
    const SHOWN: usize = 5;
    for e in p.errors.iter().take(SHOWN) {
        let _ = writeln!(out, "    rank {} on {}: {}", e.rank, e.host, e.message);
    }
    // Every failed operation and block is counted, a few are kept with details.
    let counted = (p.error_count + p.verify_failures).max(p.errors.len() as u64);
    let shown = p.errors.len().min(SHOWN) as u64;
    if shown > 0 && counted > shown {
        let _ = writeln!(out, "    and {} more", counted - shown);
    }
    out
}

pub fn render_phase(p: &PhaseResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}{}",
        phase_header(p),
        if p.interrupted { "  [interrupted]" } else { "" }
    );
    for op in &p.ops {
        out.push_str(&render_op(p, op));
    }
    out.push_str(&render_total(p));
    // A summary of figures kept elsewhere (a targets run's statistics) is not empty.
    if p.ops.is_empty() && p.extra.is_empty() {
        let _ = writeln!(out, "  no operations completed");
    }
    out.push_str(&first_done_line(p));
    if let Some(pause) = p.pause() {
        out.push_str(&pause_line(&pause));
    }
    out.push_str(&cpu_line(p));
    out.push_str(&render_spread(p));
    if p.kind == PhaseKind::Object {
        for line in crate::object::object_lines(p) {
            let _ = writeln!(out, "  {line}");
        }
    }
    for (k, v) in &crate::phase_figures::listed(p) {
        if p.kind == PhaseKind::Object && crate::object::shown(k) {
            continue;
        }
        let _ = writeln!(
            out,
            "  {}: {}",
            crate::extra::label(k),
            crate::extra::value(k, *v)
        );
    }
    out.push_str(&error_lines(p));
    for w in &p.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
    out
}

/// The first-done figures, when the first worker finished noticeably before the last
/// (else nothing).
fn first_done_line(p: &PhaseResult) -> String {
    if !(p.workers > 1 && p.first_done.0 > 0 && (p.first_done.0 as f64) < p.elapsed.0 as f64 * 0.99)
    {
        return String::new();
    }
    let figures: Vec<String> = p
        .ops
        .iter()
        .filter(|o| o.first_done_ops > 0)
        .map(|o| {
            if o.op.moves_data() && p.kind != PhaseKind::Meta {
                format!("{} {}", o.op.name(), o.first_done_bandwidth.human())
            } else {
                format!("{} {}/s", o.op.name(), o.first_done_iops.human())
            }
        })
        .collect();
    // A worker that failed at its first request is done with nothing to show.
    if figures.is_empty() {
        return String::new();
    }
    format!(
        "  first done at {}: {}\n",
        p.first_done.human(),
        figures.join(", ")
    )
}

/// The phase's pause (docs/figures.md, "Pause"): how long nothing completed, from when,
/// and the rates around it.
fn pause_line(p: &Pause) -> String {
    let rate =
        |r: Option<f64>| r.map_or("-".to_string(), |v| format!("{}/s", OpsPerSec(v).human()));
    format!(
        "  pause: no operation completed for {:.2} s from {:.2} s into the phase; {} before, {} after; {} retried (in flight through it)\n",
        p.length.as_secs_f64(),
        p.start.as_secs_f64(),
        rate(p.ops_per_sec_before),
        rate(p.ops_per_sec_after),
        match p.ios_retried {
            1 => "1 I/O".to_string(),
            n => format!("{n} I/Os"),
        }
    )
}

fn render_op(p: &PhaseResult, o: &OpResult) -> String {
    let mut out = String::new();
    let name = o.op.name();
    if o.op.moves_data() && p.kind == PhaseKind::Data {
        let _ = writeln!(
            out,
            "  {name:<7} IOPS {:<8} BW {} ({})  {} in {}",
            o.iops.human(),
            o.bandwidth.human(),
            o.bandwidth.human_decimal(),
            o.bytes.human(),
            plural(o.ops, "I/O"),
        );
    } else {
        let bytes = if o.bytes > ByteCount::ZERO {
            format!(", {}", o.bytes.human())
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {name:<7} {}/s  {}{}",
            o.iops.human(),
            plural(o.ops, "op"),
            bytes
        );
    }
    // No samples (imported results): no made-up "min 0 ns ... max 0 ns".
    if o.latency.count > 0 {
        let _ = writeln!(out, "          lat {}", latency_line(&o.latency));
    }
    if o.errors > 0 {
        let _ = writeln!(out, "          {} failed", o.errors);
    }
    out
}

fn cpu_measured(cpu: &CpuUsage) -> bool {
    cpu.wall.0 > 0 || cpu.user.0 > 0 || cpu.system.0 > 0
}

/// IO500's own score line for a run of kind io500 whose spec carries
/// `score = {bandwidth, iops, total, valid}`: `[SCORE ] Bandwidth 1.234567 GiB/s : IOPS
/// 12.345678 kiops : TOTAL 4.123456`, then ` [INVALID]` when not valid.
pub fn io500_score_line(run: &RunRecord) -> Option<String> {
    if run.kind != "io500" {
        return None;
    }
    let score = run.spec.get("score")?;
    let figure = |key: &str| score.get(key).and_then(serde_json::Value::as_f64);
    let mut line = format!(
        "[SCORE ] Bandwidth {:.6} GiB/s : IOPS {:.6} kiops : TOTAL {:.6}",
        figure("bandwidth")?,
        figure("iops")?,
        figure("total")?
    );
    if score.get("valid").and_then(serde_json::Value::as_bool) == Some(false) {
        line.push_str(" [INVALID]");
    }
    Some(line)
}

/// "min 12.1 µs  mean 64.2 µs  p50 ...  max 1.20 ms"
pub fn latency_line(l: &LatencySummary) -> String {
    let mut parts = vec![
        format!("min {}", l.min.human()),
        format!("mean {}", Nanos(l.mean.round() as u64).human()),
    ];
    for (name, v) in l.percentiles() {
        parts.push(format!("{name} {}", v.human()));
    }
    parts.push(format!("max {}", l.max.human()));
    parts.join("  ")
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
