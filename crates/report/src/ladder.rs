//! The latency ladder (S3) read back from a stored run of kind "ladder": the objective
//! (the run's spec, `slo`), and per step (a phase the ladder marked with `ladder_load`,
//! `meets_objective`, `objective_latency_ns` and `knee`) the load, IOPS and latency.
//! [`ladder_outcome`] computes it; [`LadderOutcome::sentences`] and
//! [`LadderOutcome::table`] lay it out for the HTML and Markdown reports.

use std::fmt::Write as _;

use iolab_core::histogram::LatencySummary;
use iolab_core::ladder::LoadAxis;
use iolab_core::result::{OpKind, PhaseResult, RunRecord};
use iolab_core::units::{Nanos, OpsPerSec};

use crate::aggregate::Aggregate;
use crate::table::Table;

/// What a ladder run found.
#[derive(Clone, Debug, PartialEq)]
pub struct LadderOutcome {
    /// The objective as given: "p99<=1ms".
    pub objective: String,
    /// What was stepped up: "QD", "threads", "offered IOPS".
    pub load: &'static str,
    pub steps: Vec<LadderStep>,
    /// Index of the highest load that met the objective.
    pub highest: Option<usize>,
    /// Index of the knee of the IOPS-vs-latency curve.
    pub knee: Option<usize>,
}

/// One rung, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct LadderStep {
    pub load: u64,
    /// All operations but fsync, as the ladder counts them.
    pub iops: f64,
    /// The latency figure the objective is about: that of the slowest operation.
    pub latency: Nanos,
    /// The objective's figure of each operation (read p99, write p99), fsync aside.
    pub latencies: Vec<(OpKind, Nanos)>,
    pub meets: bool,
}

impl LadderStep {
    /// The operation the step was judged by: its slowest.
    pub fn judged(&self) -> Option<OpKind> {
        judged(&self.latencies)
    }
}

/// The operation a step was judged by: its slowest.
pub(crate) fn judged(latencies: &[(OpKind, Nanos)]) -> Option<OpKind> {
    latencies.iter().max_by_key(|(_, l)| *l).map(|(op, _)| *op)
}

/// The ladder of a run of kind "ladder"; None for other runs or a ladder with no step.
pub fn ladder_outcome(run: &RunRecord) -> Option<LadderOutcome> {
    if run.kind != "ladder" {
        return None;
    }
    let objective = run.spec["slo"].as_str().unwrap_or("unknown").to_string();
    let figure = figure_of(&objective);
    // A rate ladder's unthrottled probe carries no ladder_load: it is not a step.
    let steps: Vec<LadderStep> = run.phases.iter().filter_map(|p| step(p, figure)).collect();
    if steps.is_empty() {
        return None;
    }
    let knee = run
        .phases
        .iter()
        .filter(|p| p.extra.contains_key("ladder_load"))
        .position(|p| p.extra.get("knee").is_some_and(|k| *k > 0.0));
    let load = match run.spec["axis"].as_str() {
        Some("Threads") => LoadAxis::Threads,
        Some("Rate") => LoadAxis::Rate,
        _ => LoadAxis::QueueDepth,
    }
    .load_name();
    Some(LadderOutcome {
        objective,
        load,
        highest: steps.iter().rposition(|s| s.meets),
        knee,
        steps,
    })
}

/// Reads an objective's figure from a latency summary.
type FigureOf = fn(&LatencySummary) -> Nanos;

/// The figure an objective ("p99<=1ms") is about; the worst kept percentile when it does
/// not read.
fn figure_of(objective: &str) -> FigureOf {
    match objective.split("<=").next().map(str::trim) {
        Some("mean") => |l| Nanos(l.mean.round() as u64),
        Some("p50") => |l| l.p50,
        Some("p90") => |l| l.p90,
        Some("p99") => |l| l.p99,
        Some("p99.9") => |l| l.p99_9,
        _ => |l| l.p99_99,
    }
}

fn step(p: &PhaseResult, figure: FigureOf) -> Option<LadderStep> {
    let load = *p.extra.get("ladder_load")?;
    let ops = || p.ops.iter().filter(|o| !o.op.is_auxiliary());
    let latencies: Vec<(OpKind, Nanos)> = ops()
        .filter(|o| o.latency.count > 0)
        .map(|o| (o.op, figure(&o.latency)))
        .collect();
    Some(LadderStep {
        load: load as u64,
        iops: ops().map(|o| o.iops.get()).sum(),
        latency: Nanos(p.extra.get("objective_latency_ns").copied().unwrap_or(0.0) as u64),
        // A step that completed no operation never met it (runs stored before the ladder
        // knew this say it did, at 0 IOPS).
        meets: p.extra.get("meets_objective").is_some_and(|m| *m > 0.0) && !latencies.is_empty(),
        latencies,
    })
}

impl LadderOutcome {
    /// "QD 16: 45.1k IOPS at 812 µs", or in a mixed workload "QD 16: 45.1k IOPS at read
    /// p99 210 µs, write p99 812 µs".
    fn describe(&self, s: &LadderStep) -> String {
        format!(
            "{} {}: {} IOPS at {}",
            self.load,
            s.load,
            OpsPerSec(s.iops).human(),
            self.latency_words(s)
        )
    }

    /// The step's latency, each operation named when there are several.
    fn latency_words(&self, s: &LadderStep) -> String {
        if s.latencies.len() < 2 {
            return s.latency.human();
        }
        let figure = self.objective_figure();
        s.latencies
            .iter()
            .map(|(op, l)| format!("{} {figure} {}", op.name(), l.human()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The operations whose latencies the steps carry, in order.
    fn ops(&self) -> Vec<OpKind> {
        let mut ops: Vec<OpKind> = self
            .steps
            .iter()
            .flat_map(|s| s.latencies.iter().map(|(op, _)| *op))
            .collect();
        ops.sort();
        ops.dedup();
        ops
    }

    /// The objective, the highest load that met it, and the knee, one sentence each.
    pub fn sentences(&self) -> Vec<String> {
        let mut out = vec![format!("Objective: {}.", self.objective)];
        out.push(match self.highest {
            Some(h) => format!(
                "Highest load that met the objective: {}.",
                self.describe(&self.steps[h])
            ),
            None if self.steps[0].latencies.is_empty() => format!(
                "No load met the objective: the lightest step ({} {}) completed no operations.",
                self.load, self.steps[0].load
            ),
            None => format!(
                "No load met the objective: even the lightest step took {}.",
                self.latency_words(&self.steps[0])
            ),
        });
        out.push(match self.knee {
            Some(k) => format!(
                "Knee: {}; beyond it more load buys latency, not IOPS.",
                self.describe(&self.steps[k])
            ),
            None => "Knee: none found (fewer than three steps, or a flat curve).".to_string(),
        });
        out
    }

    /// One row per step: load, IOPS, the objective's latency of each operation (read p99,
    /// write p99: never one unnamed latency in a mixed workload), whether it met the
    /// objective and by which operation it was judged, and which step is the knee or the
    /// highest load within the objective.
    pub fn table(&self) -> Table {
        let figure = self.objective_figure().to_string();
        let ops = self.ops();
        let mut headers = vec![self.load.to_string(), ">IOPS".to_string()];
        if ops.len() > 1 {
            headers.extend(ops.iter().map(|op| format!(">{} {figure}", op.name())));
            headers.push("Judged by".to_string());
        } else {
            let op = ops
                .first()
                .map(|op| format!("{} ", op.name()))
                .unwrap_or_default();
            headers.push(format!(">Latency ({op}{figure})"));
        }
        headers.extend(["Meets".to_string(), "Note".to_string()]);
        let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
        let mut t = Table::new(&refs);
        for (i, s) in self.steps.iter().enumerate() {
            let mut notes = Vec::new();
            if self.highest == Some(i) {
                notes.push("highest load within the objective");
            }
            if self.knee == Some(i) {
                notes.push("knee");
            }
            if s.latencies.is_empty() {
                notes.push("no operations completed");
            }
            let mut row = vec![s.load.to_string(), OpsPerSec(s.iops).human()];
            if ops.len() > 1 {
                for op in &ops {
                    let l = s.latencies.iter().find(|(o, _)| o == op);
                    row.push(l.map(|(_, l)| l.human()).unwrap_or_else(|| "—".into()));
                }
                let by = s.judged().map(|op| format!("{} {figure}", op.name()));
                row.push(by.unwrap_or_default());
            } else if s.latencies.is_empty() {
                row.push("—".into());
            } else {
                row.push(s.latency.human());
            }
            row.push(if s.meets { "yes" } else { "no" }.to_string());
            row.push(notes.join(", "));
            t.push(row);
        }
        t
    }

    /// "p99" of "p99<=1ms".
    fn objective_figure(&self) -> &str {
        self.objective
            .split("<=")
            .next()
            .map(str::trim)
            .unwrap_or("")
    }

    /// The ladder as Markdown, under a heading of `level`.
    pub fn to_markdown(&self, level: &str, side: &str) -> String {
        let mut out = format!("\n{level} Latency ladder: {side}\n\n");
        for s in self.sentences() {
            let _ = writeln!(out, "{s}");
        }
        out.push('\n');
        out.push_str(&self.table().to_markdown());
        out
    }
}

/// The ladder sections of a report's runs (each its side of `agg`), as Markdown.
pub fn ladders_markdown(runs: &[RunRecord], agg: &Aggregate) -> String {
    runs.iter()
        .zip(&agg.sides)
        .filter_map(|(run, side)| Some(ladder_outcome(run)?.to_markdown("##", &side.name)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{data_phase, run_with};

    /// A queue-depth ladder: QD 1, 2, 4 meet p99<=1ms, QD 8 breaks it; the knee at 2.
    fn ladder_run() -> RunRecord {
        let steps = [(1, 100.0, 200_000, true), (2, 180.0, 400_000, true)];
        let steps = steps
            .into_iter()
            .chain([(4, 190.0, 900_000, true), (8, 195.0, 3_000_000, false)]);
        let phases = steps
            .map(|(qd, iops, ns, meets)| {
                let mut p = data_phase("ladder", "1", 0, OpKind::Read, iops);
                p.params.insert("queue_depth".into(), qd.to_string());
                p.extra.insert("ladder_load".into(), qd as f64);
                p.extra
                    .insert("meets_objective".into(), f64::from(u8::from(meets)));
                p.extra.insert("objective_latency_ns".into(), ns as f64);
                if qd == 2 {
                    p.extra.insert("knee".into(), 1.0);
                }
                p
            })
            .collect();
        let mut run = run_with("l1", phases);
        run.kind = "ladder".into();
        run.spec = serde_json::json!({ "slo": "p99<=1ms", "axis": "QueueDepth", "max": 8 });
        run
    }

    #[test]
    fn objective_highest_load_and_knee() {
        let l = ladder_outcome(&ladder_run()).unwrap();
        assert_eq!(l.steps.len(), 4);
        assert_eq!(l.highest, Some(2));
        assert_eq!(l.knee, Some(1));
        assert_eq!(
            l.sentences(),
            [
                "Objective: p99<=1ms.",
                "Highest load that met the objective: QD 4: 190 IOPS at 900 µs.",
                "Knee: QD 2: 180 IOPS at 400 µs; beyond it more load buys latency, not IOPS.",
            ]
        );
        let md = l.table().to_markdown();
        assert!(md.contains("Latency (read p99)"), "{md}");
        let row = md.lines().find(|r| r.starts_with("| 4 ")).unwrap();
        assert!(
            row.contains("yes") && row.contains("highest load within"),
            "{row}"
        );
        let row = md.lines().find(|r| r.starts_with("| 8 ")).unwrap();
        assert!(row.contains("3.00 ms") && row.contains(" no "), "{row}");
    }

    /// A mixed workload whose write p99 is 30 times its read p99: each has its column,
    /// and the verdict says it judged the writes.
    #[test]
    fn a_mixed_ladder_names_the_operation_of_every_latency() {
        let mut run = ladder_run();
        for p in &mut run.phases {
            let mut h = iolab_core::histogram::LatencyHistogram::new();
            h.record_n(3_000_000, 1000);
            let mut w = crate::test_support::op_result(OpKind::Write, 10, 10 << 20);
            w.histogram = h.clone();
            w.latency = h.summary();
            p.ops.push(w);
        }
        let l = ladder_outcome(&run).unwrap();
        let t = l.table();
        assert_eq!(
            t.headers,
            [
                "QD",
                "IOPS",
                "read p99",
                "write p99",
                "Judged by",
                "Meets",
                "Note"
            ]
        );
        assert_eq!(t.rows[0][2..5], ["100 µs", "3.00 ms", "write p99"]);
        assert_eq!(
            l.sentences()[1],
            "Highest load that met the objective: QD 4: 200 IOPS at read p99 100 µs, write p99 3.00 ms."
        );
    }

    #[test]
    fn a_ladder_that_never_met_its_objective_says_so() {
        let mut run = ladder_run();
        run.phases.truncate(1);
        run.phases[0].extra.insert("meets_objective".into(), 0.0);
        run.spec["axis"] = "Threads".into();
        let l = ladder_outcome(&run).unwrap();
        assert_eq!(l.load, "threads");
        assert_eq!(
            l.sentences()[1..],
            [
                "No load met the objective: even the lightest step took 200 µs.",
                "Knee: none found (fewer than three steps, or a flat curve).",
            ]
        );
        assert!(ladder_outcome(&run_with("s", vec![])).is_none());
    }

    /// A step that completed no operation did not meet the objective, whatever its run
    /// stored (ladders judged it "meets" by a latency of 0), and the report says why.
    #[test]
    fn a_step_with_no_completed_operation_does_not_meet_the_objective() {
        let mut run = ladder_run();
        run.phases.truncate(2);
        let idle = &mut run.phases[1];
        let none = iolab_core::result::OpCount { ops: 0, bytes: 0 };
        let histogram = iolab_core::histogram::LatencyHistogram::new();
        idle.ops[0] =
            iolab_core::result::OpResult::whole(OpKind::Read, none, Nanos::SECOND, 0, histogram);
        idle.extra.insert("objective_latency_ns".into(), 0.0);
        idle.extra.remove("knee");
        let l = ladder_outcome(&run).unwrap();
        assert_eq!(l.highest, Some(0));
        assert!(!l.steps[1].meets);
        let t = l.table();
        assert_eq!(t.rows[1][2..], ["—", "no", "no operations completed"]);
        run.phases.remove(0);
        let l = ladder_outcome(&run).unwrap();
        assert_eq!(
            l.sentences()[1],
            "No load met the objective: the lightest step (QD 2) completed no operations."
        );
    }

    #[test]
    fn reports_show_the_ladder() {
        let runs = [ladder_run()];
        let md = crate::render_markdown(&runs, None);
        assert!(md.contains("## Latency ladder: l1"), "{md}");
        assert!(md.contains("Highest load that met the objective: QD 4: 190 IOPS at 900 µs."));
        let html = crate::render_html(&runs, &crate::ReportOptions::default());
        assert!(html.contains("<section id=\"ladder\">"), "{html}");
        assert!(html.contains("<p>Objective: p99&lt;=1ms.</p>"));
        assert!(html.contains("<p>Knee: QD 2: 180 IOPS at 400 µs;"));
        let other = crate::render_markdown(&[run_with("s", vec![])], None);
        assert!(!other.contains("Latency ladder"));
    }
}
