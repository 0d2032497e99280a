//! The text `iolab ladder` prints when its steps are done ([`render_ladder`]): a row per
//! step with each operation's latency and the verdict, then the highest load within the
//! objective, the most IOPS within it and the knee; then what the steps warned of
//! ([`ladder_warnings`]).

use std::fmt::Write as _;

use iolab_core::ladder::{Ladder, LoadAxis, Slo};
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::units::{Nanos, OpsPerSec};

use crate::ladder::judged;
use crate::table::Table;

/// "p99" of an objective.
fn figure_name(slo: &Slo) -> String {
    match slo.percentile {
        None => "mean".to_string(),
        Some(p) => format!("p{p}"),
    }
}

/// "read p99 210 µs, write p99 6.10 ms" for step `i`.
fn latency_words(latencies: &[Vec<(OpKind, Nanos)>], i: usize, figure: &str) -> String {
    latencies
        .get(i)
        .map(|ls| {
            ls.iter()
                .map(|(op, l)| format!("{} {figure} {}", op.name(), l.human()))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// The text `iolab ladder` prints: the steps with each operation's latency in a column of its own ("read p99", "write
/// p99") and the verdict naming the operation it judged, then the highest load within
/// the objective and the knee.
pub fn render_ladder(
    l: &Ladder,
    slo: &Slo,
    axis: LoadAxis,
    latencies: &[Vec<(OpKind, Nanos)>],
) -> String {
    let name = axis.load_name();
    let figure = figure_name(slo);
    let mut ops: Vec<OpKind> = latencies.iter().flatten().map(|(op, _)| *op).collect();
    ops.sort();
    ops.dedup();
    let mut out = format!("\nladder: objective {slo}");
    if ops.len() > 1 {
        let _ = write!(
            out,
            " (judged on the slowest operation: each step's worst {figure})"
        );
    }
    let _ = write!(
        out,
        "\n{}",
        steps_table(l, (name, &figure), &ops, latencies).to_text()
    );
    out.push_str(&verdicts(l, (name, &figure), latencies));
    out
}

/// One row per step: load, IOPS, each operation's latency, and the verdict.
fn steps_table(
    l: &Ladder,
    (name, figure): (&str, &str),
    ops: &[OpKind],
    latencies: &[Vec<(OpKind, Nanos)>],
) -> Table {
    let mut headers = vec![format!(">{name}"), ">IOPS".to_string()];
    headers.extend(ops.iter().map(|op| format!(">{} {figure}", op.name())));
    headers.push("meets".to_string());
    let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new(&refs);
    for (i, s) in l.steps.iter().enumerate() {
        let step = latencies.get(i).map(Vec::as_slice).unwrap_or_default();
        let mut row = vec![s.load.to_string(), OpsPerSec(s.iops).human()];
        for op in ops {
            row.push(
                step.iter()
                    .find(|(o, _)| o == op)
                    .map(|(_, l)| l.human())
                    .unwrap_or_else(|| "—".to_string()),
            );
        }
        // The verdict names the operation whose latency decided it.
        let by = judged(step)
            .filter(|_| ops.len() > 1)
            .map(|op| format!(" ({} {figure})", op.name()))
            .unwrap_or_default();
        let tag = if l.knee == Some(i) { "  <- knee" } else { "" };
        let verdict = match s.latency {
            None => "no (no operations completed)".to_string(),
            Some(_) => format!("{}{by}{tag}", if s.meets { "yes" } else { "no" }),
        };
        row.push(verdict);
        t.push(row);
    }
    t
}

/// The highest load within the objective, the most IOPS within it, and the knee.
fn verdicts(
    l: &Ladder,
    (name, figure): (&str, &str),
    latencies: &[Vec<(OpKind, Nanos)>],
) -> String {
    let iops = |v: f64| OpsPerSec(v).human();
    let mut out = String::new();
    match (l.highest_load, l.peak) {
        (Some(h), Some(p)) => {
            let (hs, ps) = (&l.steps[h], &l.steps[p]);
            let _ = writeln!(
                out,
                "highest load within the objective: {name} {} at {} IOPS ({})",
                hs.load,
                iops(hs.iops),
                latency_words(latencies, h, figure)
            );
            let _ = writeln!(
                out,
                "most IOPS within the objective: {} IOPS, first at {name} {} ({})",
                iops(ps.iops),
                ps.load,
                latency_words(latencies, p, figure)
            );
        }
        _ if l.steps.first().is_some_and(|s| s.latency.is_none()) => {
            let _ = writeln!(
                out,
                "no load met the objective: the lightest step ({name} {}) completed no operations",
                l.steps[0].load
            );
        }
        _ => {
            let _ = writeln!(
                out,
                "no load met the objective: even the lightest step took {}",
                latency_words(latencies, 0, figure)
            );
        }
    }
    match l.knee {
        Some(k) if k + 1 == l.steps.len() => {
            let _ = writeln!(
                out,
                "knee: none up to {name} {}: IOPS still grew as fast as latency; try more load",
                l.steps[k].load
            );
        }
        Some(k) => {
            let _ = writeln!(
                out,
                "knee: {name} {} ({} IOPS at {}): beyond it latency grows faster than IOPS",
                l.steps[k].load,
                iops(l.steps[k].iops),
                latency_words(latencies, k, figure)
            );
        }
        None => {}
    }
    out
}

/// What the steps warned of (page cache, saturated CPU), once each, sorted, a line each.
pub fn ladder_warnings(phases: &[PhaseResult]) -> String {
    let mut warned: Vec<&String> = phases.iter().flat_map(|p| p.warnings.iter()).collect();
    warned.sort();
    warned.dedup();
    warned.iter().map(|w| format!("warning: {w}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::ladder::{Step, climb};

    /// A mixed workload whose writes are 30 times slower at p99 than its reads: the table
    /// gives each its own column and the verdict names the writes.
    #[test]
    fn a_mixed_ladder_labels_read_and_write_latency_and_says_which_it_judged() {
        let step = |load, iops, meets| Step {
            load,
            iops,
            latency: Some(Nanos::from_millis(if meets { 1 } else { 6 })),
            meets,
        };
        let l = Ladder {
            steps: vec![step(1, 10_000.0, true), step(2, 12_000.0, false)],
            highest_load: Some(0),
            peak: Some(0),
            knee: None,
        };
        let latencies = vec![
            vec![
                (OpKind::Read, Nanos::from_micros(33)),
                (OpKind::Write, Nanos::from_millis(1)),
            ],
            vec![
                (OpKind::Read, Nanos::from_micros(200)),
                (OpKind::Write, Nanos::from_millis(6)),
            ],
        ];
        let slo: Slo = "p99<=1ms".parse().unwrap();
        let text = render_ladder(&l, &slo, LoadAxis::QueueDepth, &latencies);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            "ladder: objective p99 <= 1.00 ms (judged on the slowest operation: each step's worst p99)"
        );
        assert_eq!(lines[2], "QD   IOPS  read p99  write p99  meets");
        assert_eq!(lines[3], " 1  10.0k   33.0 µs    1.00 ms  yes (write p99)");
        assert_eq!(lines[4], " 2  12.0k    200 µs    6.00 ms  no (write p99)");
        assert_eq!(
            lines[5],
            "highest load within the objective: QD 1 at 10.0k IOPS (read p99 33.0 µs, write p99 1.00 ms)"
        );
    }

    /// A step that completed no operation has no latency: its verdict is "no" and says
    /// why (it was "yes" at 0 IOPS, judged by a latency of 0).
    #[test]
    fn a_step_with_no_completed_operation_says_so() {
        let slo: Slo = "p99<=1ms".parse().unwrap();
        let measured = vec![(OpKind::Read, Nanos::from_micros(200))];
        let l = climb(&[1, 2, 4], &slo, |qd| {
            Ok::<_, ()>(if qd == 1 {
                (5_000.0, Some(Nanos::from_micros(200)))
            } else {
                (0.0, None)
            })
        })
        .unwrap();
        let text = render_ladder(&l, &slo, LoadAxis::QueueDepth, &[measured, vec![]]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2], "QD   IOPS  read p99  meets");
        assert_eq!(lines[3], " 1  5.00k    200 µs  yes");
        assert_eq!(
            lines[4],
            " 2      0         —  no (no operations completed)"
        );
        assert_eq!(
            lines[5],
            "highest load within the objective: QD 1 at 5.00k IOPS (read p99 200 µs)"
        );
        // None at the first step.
        let l = climb(&[1, 2], &slo, |_| Ok::<_, ()>((0.0, None))).unwrap();
        let text = render_ladder(&l, &slo, LoadAxis::Threads, &[vec![]]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[3], "      1     0  no (no operations completed)");
        assert_eq!(
            lines[4],
            "no load met the objective: the lightest step (threads 1) completed no operations"
        );
    }
}
