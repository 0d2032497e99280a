//! The latency ladder's maths: the highest IOPS at an acceptable latency. [`climb`] steps
//! the load up (queue depth, threads, or an offered rate: [`LoadAxis`]) until the latency
//! objective ([`Slo`]) breaks, and [`knee`] finds where the IOPS-vs-latency curve bends:
//! the step with the best balance of IOPS and latency, each relative to its range; beyond
//! it latency grows faster than IOPS. Both are pure over a `measure` function, so the
//! search is tested against latency models; the [`Ladder`] they give is what
//! `iolab_suites::ladder` runs and `iolab_report` renders.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::histogram::{LatencySummary, PERCENTILES};
use crate::units::{Nanos, TimeSpan};

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

impl LoadAxis {
    /// What a report calls the load: "QD", "threads", "offered IOPS".
    pub fn load_name(self) -> &'static str {
        match self {
            LoadAxis::QueueDepth => "QD",
            LoadAxis::Threads => "threads",
            LoadAxis::Rate => "offered IOPS",
        }
    }
}

#[cfg(test)]
#[path = "ladder_tests.rs"]
mod tests;
