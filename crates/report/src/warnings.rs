//! What a reader must be warned about, gathered in one list of [`Warning`]s: the runs' and
//! phases' own warnings (page cache, ...), errors, verify failures, interrupted phases and
//! noisy figures (CV over 10 % across repetitions).

use iolab_core::result::RunRecord;
use iolab_core::stats::NOISY_CV;
use serde::Serialize;

use crate::aggregate::{Aggregate, Group, Point};
use crate::measure::at_phrase;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// The side (run) it concerns.
    pub side: String,
    pub text: String,
}

/// The warnings of `runs`, aggregated as `agg` (one side per run, as
/// [`crate::aggregate_runs`] makes it), without duplicates.
pub fn collect(runs: &[RunRecord], agg: &Aggregate) -> Vec<Warning> {
    let mut out: Vec<Warning> = Vec::new();
    let mut push = |side: &str, text: String| {
        if !out.iter().any(|w| w.side == side && w.text == text) {
            out.push(Warning {
                side: side.to_string(),
                text,
            });
        }
    };
    for (i, run) in runs.iter().enumerate() {
        let Some(side) = agg.sides.get(i) else {
            continue;
        };
        for w in &run.warnings {
            push(&side.name, w.clone());
        }
        for g in &agg.groups {
            let points = g.sides.get(i).map(Vec::as_slice).unwrap_or_default();
            for text in phase_warnings(run, g, points) {
                push(&side.name, text);
            }
            for point in points {
                for text in point_warnings(run, g, point) {
                    push(&side.name, text);
                }
            }
        }
    }
    out
}

/// The phases' own warnings, each said once for all the points that gave it: "seq-read
/// at 1, 2, 4, 8 threads: page cache may serve reads".
fn phase_warnings(run: &RunRecord, g: &Group, points: &[Point]) -> Vec<String> {
    let mut seen: Vec<(&str, Vec<String>)> = Vec::new();
    for point in points {
        for r in &point.phases {
            let Some(p) = run.phases.get(r.phase) else {
                continue;
            };
            for w in &p.warnings {
                let value = point.value.clone().unwrap_or_default();
                match seen.iter_mut().find(|(t, _)| *t == w.as_str()) {
                    Some((_, values)) if values.contains(&value) => {}
                    Some((_, values)) => values.push(value),
                    None => seen.push((w, vec![value])),
                }
            }
        }
    }
    seen.into_iter()
        .map(|(text, values)| match &g.swept {
            Some(key) => format!(
                "{} at {}: {text}",
                g.label(),
                at_phrase(key, &values.join(", "))
            ),
            None => format!("{}: {text}", g.label()),
        })
        .collect()
}

fn point_warnings(run: &RunRecord, g: &Group, point: &Point) -> Vec<String> {
    let place = match g.at(point) {
        Some(at) => format!("{} at {at}", g.label()),
        None => g.label(),
    };
    let mut out = Vec::new();
    for r in &point.phases {
        let Some(p) = run.phases.get(r.phase) else {
            continue;
        };
        let rep = if point.phases.len() > 1 {
            format!(" (repetition {})", p.repetition)
        } else {
            String::new()
        };
        if p.error_count > 0 {
            out.push(format!("{place}{rep}: {} errors", p.error_count));
        }
        if p.verify_failures > 0 {
            out.push(format!(
                "{place}{rep}: {} blocks failed verification",
                p.verify_failures
            ));
        }
        if p.interrupted {
            out.push(format!("{place}{rep}: interrupted, figures are partial"));
        }
    }
    for o in &point.ops {
        if o.value.is_noisy() {
            out.push(format!(
                "{place}: {} {:.1}% CV over {} repetitions, above {:.0}%: noisy",
                o.op.name(),
                o.value.cv * 100.0,
                o.value.n,
                NOISY_CV * 100.0
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::aggregate;
    use crate::test_support::{data_phase, run_with};
    use iolab_core::result::OpKind;

    #[test]
    fn noisy_points_errors_and_cache_warnings() {
        let mut a = data_phase("seq-read", "4", 0, OpKind::Read, 100.0);
        a.warnings.push("page cache may serve reads".into());
        let mut b = data_phase("seq-read", "4", 1, OpKind::Read, 130.0);
        b.warnings.push("page cache may serve reads".into());
        b.error_count = 3;
        let mut run = run_with("v1", vec![a, b]);
        run.warnings.push("run warning".into());
        let texts: Vec<String> = collect(std::slice::from_ref(&run), &aggregate(&run))
            .into_iter()
            .map(|w| w.text)
            .collect();
        assert_eq!(
            texts,
            [
                "run warning",
                "seq-read: page cache may serve reads",
                "seq-read (repetition 1): 3 errors",
                "seq-read: read 18.4% CV over 2 repetitions, above 10%: noisy",
            ]
        );
    }
}
