//! The latency ladder (S3): the highest IOPS at an acceptable latency. [`climb`] steps the
//! load up (queue depth, threads, or an offered rate) until the latency objective
//! ([`Slo`]) breaks, and [`knee`] finds where the IOPS-vs-latency curve bends: the step
//! with the best balance of IOPS and latency, each relative to its range; beyond it
//! latency grows faster than IOPS. Both are pure over a `measure` function, so the
//! search is tested against latency models. [`climb_axis`] steps a data spec's queue
//! depth, threads or offered rate, each step run by the caller (`iolab ladder` runs real
//! phases), and [`mark`] records the verdicts in the steps' phases.

use std::fmt;
use std::str::FromStr;

use iolab_core::histogram::{LatencySummary, PERCENTILES};
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::DataSpec;
use iolab_core::units::{Nanos, TimeSpan};
use serde::{Deserialize, Serialize};

/// A latency objective: "p99<=1ms", "p99.9<=500us", "mean<=200us".
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// Percentile (0-100), or None for the mean.
    pub percentile: Option<f64>,
    pub limit: Nanos,
}

impl Slo {
    /// The figure of `l` the objective is about.
    pub fn latency_of(&self, l: &LatencySummary) -> Nanos {
        match self.percentile {
            None => Nanos(l.mean.round() as u64),
            Some(p) if p <= 50.0 => l.p50,
            Some(p) if p <= 90.0 => l.p90,
            Some(p) if p <= 99.0 => l.p99,
            Some(p) if p <= 99.9 => l.p99_9,
            Some(_) => l.p99_99,
        }
    }

    pub fn met_by(&self, latency: Nanos) -> bool {
        latency <= self.limit
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.percentile {
            None => write!(f, "mean <= {}", self.limit.human()),
            Some(p) => write!(f, "p{p} <= {}", self.limit.human()),
        }
    }
}

impl FromStr for Slo {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // "p50, p90, p99, p99.9, p99.99 or mean": the percentiles a result keeps.
        let measured = PERCENTILES
            .iter()
            .map(|p| format!("p{p}"))
            .collect::<Vec<_>>()
            .join(", ")
            + " or mean";
        let bad = || {
            format!(
                "invalid objective '{s}': use {measured}, then <= and a duration, e.g. p99<=1ms"
            )
        };
        let (lhs, rhs) = s.split_once("<=").ok_or_else(bad)?;
        let lhs = lhs.trim().to_ascii_lowercase();
        let percentile = if lhs == "mean" {
            None
        } else {
            let p: f64 = lhs
                .strip_prefix('p')
                .ok_or_else(bad)?
                .parse()
                .map_err(|_| bad())?;
            // Only the percentiles a result keeps: any other would be judged against a
            // different one.
            if !PERCENTILES.contains(&p) {
                return Err(format!(
                    "invalid objective '{s}': {lhs} is not a measured percentile; use {measured}"
                ));
            }
            Some(p)
        };
        let limit: TimeSpan = rhs.trim().parse().map_err(|_| bad())?;
        Ok(Slo {
            percentile,
            limit: limit.nanos(),
        })
    }
}

/// One rung: the load applied and what it gave.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub load: u64,
    pub iops: f64,
    /// The latency the objective is about, at this load; None when the step completed no
    /// operation (there is no latency to judge, so it cannot meet the objective).
    pub latency: Option<Nanos>,
    pub meets: bool,
}

/// The whole ladder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ladder {
    pub steps: Vec<Step>,
    /// Index of the highest load that met the objective.
    pub highest_load: Option<usize>,
    /// Index of the step with the most IOPS that met the objective (the lowest such load
    /// on a tie: the same IOPS at lower latency).
    pub peak: Option<usize>,
    /// Index of the knee of the IOPS-vs-latency curve.
    pub knee: Option<usize>,
}

/// Tries `loads` in order, measuring each (its IOPS, and its latency or None when it
/// completed no operation), and stops after the first one that breaks the objective.
/// A step that completed no operation breaks it.
pub fn climb<E>(
    loads: &[u64],
    slo: &Slo,
    mut measure: impl FnMut(u64) -> Result<(f64, Option<Nanos>), E>,
) -> Result<Ladder, E> {
    let mut steps = Vec::new();
    for &load in loads {
        let (iops, latency) = measure(load)?;
        let meets = latency.is_some_and(|l| slo.met_by(l));
        steps.push(Step {
            load,
            iops,
            latency,
            meets,
        });
        if !meets {
            break;
        }
    }
    let highest_load = steps.iter().rposition(|s| s.meets);
    let mut peak: Option<usize> = None;
    for (i, s) in steps.iter().enumerate().filter(|(_, s)| s.meets) {
        if peak.is_none_or(|p| s.iops > steps[p].iops) {
            peak = Some(i);
        }
    }
    let knee = knee(&steps);
    Ok(Ladder {
        steps,
        highest_load,
        peak,
        knee,
    })
}

/// The step where IOPS is highest relative to latency, both scaled to the range the
/// ladder covered: past it, IOPS hardly grows while latency does. Steps that completed
/// no operation have no place on the curve.
pub fn knee(steps: &[Step]) -> Option<usize> {
    let measured = || {
        steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.latency.map(|l| (i, s.iops, l.0)))
    };
    if measured().count() < 3 {
        return None;
    }
    let max_iops = measured().map(|(_, iops, _)| iops).fold(0.0, f64::max);
    let (min_lat, max_lat) =
        measured().fold((u64::MAX, 0), |(lo, hi), (_, _, l)| (lo.min(l), hi.max(l)));
    if max_iops <= 0.0 || max_lat == min_lat {
        return None;
    }
    let score =
        |iops: f64, l: u64| iops / max_iops - (l - min_lat) as f64 / (max_lat - min_lat) as f64;
    measured()
        .max_by(|a, b| score(a.1, a.2).total_cmp(&score(b.1, b.2)))
        .map(|(i, _, _)| i)
}

/// Powers of two from 1 up to `max`.
pub fn doubling(max: u64) -> Vec<u64> {
    std::iter::successors(Some(1u64), |x| x.checked_mul(2))
        .take_while(|x| *x <= max.max(1))
        .collect()
}

/// What a ladder steps up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LoadAxis {
    /// I/Os in flight per thread: 1, 2, 4, ... up to the most.
    QueueDepth,
    /// Worker threads: 1, 2, 4, ... up to the most.
    Threads,
    /// An offered rate: 10%, 20%, ... 100% of what an unthrottled step reaches.
    Rate,
}

/// Runs one step's phase of a spec: its IOPS and the latency the objective is about
/// (None when it completed no operation).
pub type StepFn<'a, E> = dyn FnMut(&DataSpec) -> Result<(f64, Option<Nanos>), E> + 'a;

/// The ladder along `axis` from `base`, up to `max` (the deepest queue or the most
/// threads): each step is `base` at that load, run by `step`. A rate ladder first runs
/// `base` unthrottled to find the ceiling (a phase that is no step), then offers 10% ...
/// 100% of it.
pub fn climb_axis<E>(
    base: &DataSpec,
    axis: LoadAxis,
    max: u64,
    slo: &Slo,
    step: &mut StepFn<'_, E>,
) -> Result<Ladder, E> {
    match axis {
        LoadAxis::QueueDepth => climb(&doubling(max), slo, |qd| {
            step(&DataSpec {
                queue_depth: qd as u32,
                ..base.clone()
            })
        }),
        LoadAxis::Threads => climb(&doubling(max), slo, |t| {
            step(&DataSpec {
                threads: t as u32,
                ..base.clone()
            })
        }),
        LoadAxis::Rate => {
            let (max_iops, _) = step(&DataSpec {
                rate_iops: None,
                ..base.clone()
            })?;
            let rates: Vec<u64> = (1..=10)
                .map(|i| ((max_iops * i as f64 / 10.0) as u64).max(1))
                .collect();
            climb(&rates, slo, |r| {
                step(&DataSpec {
                    rate_iops: Some(r),
                    ..base.clone()
                })
            })
        }
    }
}

/// Records the ladder's verdicts in step `step_index`'s phase (so stored runs keep them).
pub fn mark(p: &mut PhaseResult, l: &Ladder, step_index: usize) {
    if let Some(step) = l.steps.get(step_index) {
        p.extra.insert("ladder_load".into(), step.load as f64);
        p.extra
            .insert("meets_objective".into(), step.meets as u8 as f64);
        if let Some(latency) = step.latency {
            p.extra
                .insert("objective_latency_ns".into(), latency.0 as f64);
        }
        if l.knee == Some(step_index) {
            p.extra.insert("knee".into(), 1.0);
        }
    }
}

/// The objective's figure of each operation of a step (fsync aside): "read p99 210 µs,
/// write p99 6.1 ms" in a mixed workload.
pub fn op_latencies(p: &PhaseResult, slo: &Slo) -> Vec<(OpKind, Nanos)> {
    p.ops
        .iter()
        .filter(|o| !o.op.is_auxiliary() && o.latency.count > 0)
        .map(|o| (o.op, slo.latency_of(&o.latency)))
        .collect()
}

/// A step's figures: the IOPS of its operations (fsync aside) and the objective's
/// latency of its slowest operation (in a mixed workload, often the writes), none when
/// the step completed no operation.
pub fn step_figures(p: &PhaseResult, slo: &Slo) -> (f64, Option<Nanos>) {
    let iops: f64 = p
        .ops
        .iter()
        .filter(|o| o.op != OpKind::Fsync)
        .map(|o| o.iops.get())
        .sum();
    let latency = op_latencies(p, slo).into_iter().map(|(_, l)| l).max();
    (iops, latency)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device that completes 10k IOPS per outstanding I/O up to 100k IOPS; beyond that
    /// requests queue (Little's law: latency = outstanding / IOPS).
    fn device(qd: u64) -> Result<(f64, Option<Nanos>), ()> {
        let iops = (10_000.0 * qd as f64).min(100_000.0);
        Ok((iops, Some(Nanos((qd as f64 / iops * 1e9) as u64))))
    }

    #[test]
    fn climbs_until_the_objective_breaks_and_finds_the_knee() {
        let slo: Slo = "p99<=1ms".parse().unwrap();
        let l = climb(&doubling(256), &slo, device).unwrap();
        let loads: Vec<u64> = l.steps.iter().map(|s| s.load).collect();
        assert_eq!(
            loads,
            vec![1, 2, 4, 8, 16, 32, 64, 128],
            "stops at the first broken step"
        );
        assert!(!l.steps.last().unwrap().meets);
        // QD 64 is the highest load within 1 ms (640 us); its 100k IOPS were already
        // reached at QD 16 (160 us).
        assert_eq!(l.steps[l.highest_load.unwrap()].load, 64);
        assert_eq!(l.steps[l.peak.unwrap()].load, 16);
        // The curve bends where the device saturates.
        assert_eq!(l.steps[l.knee.unwrap()].load, 16);
    }

    #[test]
    fn a_tight_objective_can_fail_at_once() {
        let slo: Slo = "p99<=50us".parse().unwrap();
        let l = climb(&doubling(256), &slo, device).unwrap();
        assert_eq!(l.steps.len(), 1);
        assert_eq!(l.highest_load, None);
        assert_eq!(l.peak, None);
    }

    /// A step with no completed operation has no latency: it does not meet the objective
    /// (it was judged by a latency of 0 and met any), and the climb stops there.
    #[test]
    fn a_step_that_completes_no_operation_does_not_meet_the_objective() {
        let slo: Slo = "p99<=1ms".parse().unwrap();
        let l = climb(&doubling(256), &slo, |qd| {
            if qd < 32 { device(qd) } else { Ok((0.0, None)) }
        })
        .unwrap();
        let loads: Vec<u64> = l.steps.iter().map(|s| s.load).collect();
        assert_eq!(loads, vec![1, 2, 4, 8, 16, 32]);
        let last = l.steps.last().unwrap();
        assert_eq!((last.iops, last.latency, last.meets), (0.0, None, false));
        assert_eq!(l.steps[l.highest_load.unwrap()].load, 16);
        assert_eq!(l.steps[l.peak.unwrap()].load, 16);
        // The knee is found among the measured steps: QD 8 (80k IOPS at 100 us; QD 16
        // adds 25% IOPS at 60% more latency).
        assert_eq!(l.steps[l.knee.unwrap()].load, 8);
        // At the first step: nothing met it.
        let l = climb(&doubling(4), &slo, |_| Ok::<_, ()>((0.0, None))).unwrap();
        assert_eq!(l.steps.len(), 1);
        assert!(!l.steps[0].meets);
        assert_eq!((l.highest_load, l.peak, l.knee), (None, None, None));
    }

    #[test]
    fn objectives_parse_and_print() {
        let s: Slo = "p99.9 <= 500us".parse().unwrap();
        assert_eq!(
            s,
            Slo {
                percentile: Some(99.9),
                limit: Nanos::from_micros(500)
            }
        );
        assert_eq!(s.to_string(), "p99.9 <= 500 µs");
        assert_eq!("mean<=2ms".parse::<Slo>().unwrap().percentile, None);
        for bad in ["p99<1ms", "q99<=1ms", "p100<=1ms", "p99<=soon"] {
            assert!(bad.parse::<Slo>().unwrap_err().contains(bad), "{bad}");
        }
    }

    #[test]
    fn only_measured_percentiles_are_objectives() {
        for (good, p) in [
            ("p50<=1ms", 50.0),
            ("p90<=1ms", 90.0),
            ("P99<=1ms", 99.0),
            ("p99.9<=1ms", 99.9),
            ("p99.99<=1ms", 99.99),
        ] {
            assert_eq!(good.parse::<Slo>().unwrap().percentile, Some(p), "{good}");
        }
        for bad in ["p42<=1ms", "p95<=1ms", "p99.5<=1ms", "p0<=1ms", "p-1<=1ms"] {
            let lhs = bad.split_once("<=").unwrap().0;
            assert_eq!(
                bad.parse::<Slo>().unwrap_err(),
                format!(
                    "invalid objective '{bad}': {lhs} is not a measured percentile; use p50, p90, p99, p99.9, p99.99 or mean"
                )
            );
        }
    }

    #[test]
    fn doubling_loads() {
        assert_eq!(doubling(16), vec![1, 2, 4, 8, 16]);
        assert_eq!(doubling(0), vec![1]);
    }

    /// Each axis steps its own setting of the spec; a rate ladder first finds the
    /// ceiling unthrottled, then offers tenths of it.
    #[test]
    fn climb_axis_steps_the_axis_setting_of_the_spec() {
        let slo: Slo = "p99<=1ms".parse().unwrap();
        let base = DataSpec {
            queue_depth: 3,
            threads: 5,
            rate_iops: Some(7),
            ..DataSpec::default()
        };
        let run = |axis, max| {
            let mut seen = Vec::new();
            let mut step = |s: &DataSpec| -> Result<(f64, Option<Nanos>), ()> {
                seen.push((s.queue_depth, s.threads, s.rate_iops));
                Ok((1000.0, Some(Nanos::from_micros(100))))
            };
            let l = climb_axis(&base, axis, max, &slo, &mut step).unwrap();
            (l, seen)
        };
        let (l, seen) = run(LoadAxis::QueueDepth, 4);
        assert_eq!(l.steps.len(), 3);
        assert_eq!(seen, [(1, 5, Some(7)), (2, 5, Some(7)), (4, 5, Some(7))]);
        let (_, seen) = run(LoadAxis::Threads, 2);
        assert_eq!(seen, [(3, 1, Some(7)), (3, 2, Some(7))]);
        let (l, seen) = run(LoadAxis::Rate, 0);
        assert_eq!(seen[0], (3, 5, None), "the unthrottled probe");
        let rates: Vec<Option<u64>> = seen[1..].iter().map(|s| s.2).collect();
        assert_eq!(rates, (1..=10).map(|i| Some(i * 100)).collect::<Vec<_>>());
        assert_eq!(l.steps.len(), 10);
    }
}
