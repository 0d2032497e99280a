//! The terminal summary of a run: per phase and operation, bandwidth, IOPS (or rate),
//! the latency percentiles, first-done figures, CPU use and warnings. Plain text, no
//! colour, stable enough for golden tests.

use std::fmt::Write as _;

use iolab_core::histogram::LatencySummary;
use iolab_core::result::{OpResult, PhaseKind, PhaseResult, RunRecord};
use iolab_core::units::{ByteCount, Nanos};

/// The whole run: a header line, then each phase.
pub fn render_run(run: &RunRecord) -> String {
    let mut out = String::new();
    let label = run
        .label
        .as_deref()
        .map(|l| format!(" · label {l}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "iolab {} · {} · {}{}",
        run.provenance.iolab_version, run.kind, run.provenance.target, label
    );
    for p in &run.phases {
        out.push('\n');
        out.push_str(&render_phase(p));
    }
    for w in &run.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

fn phase_header(p: &PhaseResult) -> String {
    let mut parts = Vec::new();
    for key in ["threads", "queue_depth", "backend", "io", "layout"] {
        if let Some(v) = p.params.get(key) {
            parts.push(match key {
                "threads" => format!("{v} thread{}", if v == "1" { "" } else { "s" }),
                "queue_depth" => format!("QD{v}"),
                _ => v.clone(),
            });
        }
    }
    if p.ranks > 1 {
        parts.push(format!("{} ranks", p.ranks));
    }
    format!(
        "{}  ({}; {} in {})",
        p.name,
        parts.join(", "),
        plural(p.workers as u64, "worker"),
        p.elapsed.human()
    )
}

fn plural(n: u64, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// One phase.
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
    if p.ops.is_empty() {
        let _ = writeln!(out, "  no operations completed");
    }
    // Only worth a line when the first worker finished noticeably before the last.
    if p.workers > 1 && p.first_done.0 > 0 && (p.first_done.0 as f64) < p.elapsed.0 as f64 * 0.99 {
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
        let _ = writeln!(
            out,
            "  first done at {}: {}",
            p.first_done.human(),
            figures.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "  cpu: usr {:.1}% sys {:.1}% of one CPU ({:.1}% of {} CPUs)",
        p.cpu.user_percent(),
        p.cpu.system_percent(),
        p.cpu.percent_of_all(),
        p.cpu.cpus
    );
    for (k, v) in &p.extra {
        let _ = writeln!(out, "  {k}: {v}");
    }
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
    for e in p.errors.iter().take(5) {
        let _ = writeln!(out, "    rank {} on {}: {}", e.rank, e.host, e.message);
    }
    for w in &p.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
    out
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
    let _ = writeln!(out, "          lat {}", latency_line(&o.latency));
    if o.errors > 0 {
        let _ = writeln!(out, "          {} failed", o.errors);
    }
    out
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
