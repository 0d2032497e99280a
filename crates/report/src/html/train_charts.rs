//! The charts of `iolab train` runs, from their stored epochs (a phase each, with its
//! typed figures, AU among them, and the resolved workload, its `au_threshold`
//! included, as its spec): the accelerator search's curve, AU against the
//! number of accelerators with MLPerf's threshold ([`search_chart`]), and a training
//! run's AU per epoch with the threshold ([`epochs_chart`]).

use std::collections::BTreeMap;

use iolab_core::result::{PhaseResult, RunRecord};

use super::axis::Unit;
use super::chart::{Chart, Marks, Pt, Series, XAxis, YAxis};

/// An epoch's AU as stored: its typed figures (or, in a run stored before phases had
/// them, the `au_percent` it kept by name).
fn au(p: &PhaseResult) -> Option<f64> {
    match &p.figures {
        Some(f) => f.train_epoch().map(|t| t.au_percent),
        None => p.extra.get("au_percent").copied(),
    }
}

/// The AU threshold a run's epochs were judged by (the same in each of them).
fn threshold(phases: &[PhaseResult]) -> Option<f64> {
    phases
        .iter()
        .find_map(|p| p.spec.get("au_threshold")?.as_f64())
}

/// A horizontal line at the threshold across `xs`' range.
fn threshold_series(value: f64, (lo, hi): (f64, f64), color: usize) -> Series {
    let pt = |x: f64| Pt {
        x,
        y: value,
        range: None,
        label: None,
        tip: format!("threshold: AU {value:.0} %"),
    };
    Series {
        name: format!("threshold {value:.0} %"),
        points: vec![pt(lo), pt(hi)],
        dashed: true,
        color,
    }
}

fn au_axis() -> YAxis {
    YAxis {
        title: "AU".into(),
        unit: Unit::Percent,
        log: false,
    }
}

/// The search's curve: per accelerator count tried (the job's, `search_accelerators`),
/// the mean AU of its epochs, each point labelled pass or fail against the threshold.
pub fn search_chart(run: &RunRecord, name: &str) -> Option<Chart> {
    let mut by_n: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for p in &run.phases {
        let (Some(n), Some(au)) = (
            p.params
                .get("search_accelerators")
                .and_then(|v| v.parse().ok()),
            au(p),
        ) else {
            continue;
        };
        by_n.entry(n).or_default().push(au);
    }
    if by_n.is_empty() {
        return None;
    }
    let limit = threshold(&run.phases);
    let points: Vec<Pt> = by_n
        .iter()
        .map(|(&n, aus)| {
            let au = aus.iter().sum::<f64>() / aus.len() as f64;
            let verdict = limit.map(|t| if au >= t { "pass" } else { "fail" });
            Pt {
                x: n as f64,
                y: au,
                range: (aus.len() > 1).then(|| {
                    let lo = aus.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = aus.iter().copied().fold(0.0, f64::max);
                    (lo, hi)
                }),
                label: verdict.map(str::to_string),
                tip: format!(
                    "{n} accelerators: AU {au:.2} % (mean of {} epochs){}",
                    aus.len(),
                    verdict.map(|v| format!(", {v}")).unwrap_or_default()
                ),
            }
        })
        .collect();
    let lo = *by_n.keys().next()? as f64;
    let hi = *by_n.keys().last()? as f64;
    let mut series = vec![Series {
        name: "AU".into(),
        points,
        dashed: false,
        color: 0,
    }];
    if let Some(t) = limit {
        series.push(threshold_series(t, (lo, hi), 1));
    }
    Some(Chart {
        kind: "train-search",
        title: format!(
            "{name}: AU against accelerators (the most that keep AU at the threshold is the headline)"
        ),
        marks: Marks::Lines,
        x: XAxis::Numeric {
            title: "Accelerators".into(),
            unit: Unit::Count,
        },
        y: au_axis(),
        series,
        spans: Vec::new(),
    })
}

/// A training run's AU per epoch, in the order they ran (a repeated run's warm-up and
/// counted runs one after the other: point k is the k-th epoch stored).
pub fn epochs_chart(run: &RunRecord, name: &str) -> Option<Chart> {
    let epochs: Vec<(&PhaseResult, f64)> = run
        .phases
        .iter()
        .filter(|p| !p.params.contains_key("search_accelerators"))
        .filter_map(|p| Some((p, au(p)?)))
        .collect();
    if epochs.is_empty() {
        return None;
    }
    let points: Vec<Pt> = epochs
        .iter()
        .enumerate()
        .map(|(i, (p, au))| Pt {
            x: (i + 1) as f64,
            y: *au,
            range: None,
            label: None,
            tip: format!("{}: AU {au:.2} %", p.name),
        })
        .collect();
    let mut series = vec![Series {
        name: "AU".into(),
        points,
        dashed: false,
        color: 0,
    }];
    if let Some(t) = threshold(&run.phases) {
        series.push(threshold_series(t, (1.0, epochs.len() as f64), 1));
    }
    Some(Chart {
        kind: "train-epochs",
        title: format!("{name}: AU per epoch"),
        marks: Marks::Lines,
        x: XAxis::Numeric {
            title: "Epoch (in the order run)".into(),
            unit: Unit::Count,
        },
        y: au_axis(),
        series,
        spans: Vec::new(),
    })
}

/// The training charts of `runs` (each named by `names`): a search's curve, else the
/// run's AU per epoch.
pub fn train_charts(runs: &[RunRecord], names: &[String]) -> Vec<Chart> {
    runs.iter()
        .zip(names)
        .filter_map(|(run, name)| match run.kind.as_str() {
            "train-search" => search_chart(run, name),
            "train" => epochs_chart(run, name),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{phase, run_with};
    use iolab_core::result::{PhaseFigures, TrainEpochFigures};

    fn epoch(name: &str, n: &str, au: f64) -> PhaseResult {
        let mut p = phase(name, &[("search_accelerators", n)]);
        if n.is_empty() {
            p.params.clear();
        }
        p.figures = Some(PhaseFigures::TrainEpoch(TrainEpochFigures {
            au_percent: au,
            ..TrainEpochFigures::default()
        }));
        p.spec = serde_json::json!({ "au_threshold": 90.0 });
        p
    }

    #[test]
    fn the_search_curve_is_mean_au_per_count_with_the_threshold() {
        // 1, 2, 4 accelerators with two epochs each; 4 falls below 90 %.
        let mut run = run_with(
            "s",
            vec![
                epoch("search-1acc-train-epoch-1", "1", 99.0),
                epoch("search-1acc-train-epoch-2", "1", 97.0),
                epoch("search-2acc-train-epoch-1", "2", 93.0),
                epoch("search-2acc-train-epoch-2", "2", 91.0),
                epoch("search-4acc-train-epoch-1", "4", 70.0),
                epoch("search-4acc-train-epoch-2", "4", 60.0),
            ],
        );
        run.kind = "train-search".into();
        let charts = train_charts(&[run], &["s".into()]);
        assert_eq!(charts.len(), 1);
        let c = &charts[0];
        assert_eq!(c.kind, "train-search");
        let pts: Vec<(f64, f64, Option<&str>)> = c.series[0]
            .points
            .iter()
            .map(|p| (p.x, p.y, p.label.as_deref()))
            .collect();
        assert_eq!(
            pts,
            [
                (1.0, 98.0, Some("pass")),
                (2.0, 92.0, Some("pass")),
                (4.0, 65.0, Some("fail"))
            ]
        );
        assert_eq!(c.series[0].points[2].range, Some((60.0, 70.0)));
        let t = &c.series[1];
        assert_eq!(t.name, "threshold 90 %");
        assert_eq!(
            t.points.iter().map(|p| (p.x, p.y)).collect::<Vec<_>>(),
            [(1.0, 90.0), (4.0, 90.0)]
        );
        let svg = c.to_svg();
        assert!(svg.contains("data-chart=\"train-search\""), "{svg}");
        assert!(svg.contains("data-name=\"AU\" data-points=\"3\""), "{svg}");
    }

    #[test]
    fn a_training_run_charts_au_per_epoch_in_the_order_run() {
        let mut run = run_with(
            "t",
            vec![
                epoch("warmup-1-train-epoch-1", "", 80.0),
                epoch("run-1-train-epoch-1", "", 91.0),
                epoch("run-2-train-epoch-1", "", 92.5),
            ],
        );
        run.kind = "train".into();
        let mut other = run_with("fio", vec![phase("p", &[])]);
        other.kind = "fio".into();
        let charts = train_charts(&[run, other], &["t".into(), "fio".into()]);
        assert_eq!(charts.len(), 1, "only the training run has a chart");
        let c = &charts[0];
        assert_eq!(c.kind, "train-epochs");
        let ys: Vec<(f64, f64)> = c.series[0].points.iter().map(|p| (p.x, p.y)).collect();
        assert_eq!(ys, [(1.0, 80.0), (2.0, 91.0), (3.0, 92.5)]);
        assert!(c.series[0].points[1].tip.starts_with("run-1-train-epoch-1"));
        assert_eq!(c.series[1].points[1].x, 3.0);
    }
}
