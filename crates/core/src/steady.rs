//! Steady state: has a series of measurements settled? A series in, a verdict out, for
//! fio's `ss` criteria ([`SteadyRule`], [`check`]: the largest deviation from the
//! window's mean, or the least-squares slope, under a limit) and SNIA PTS's
//! ([`pts_check`]: over 5 rounds, range within 20 % and the fitted line's excursion
//! within 10 % of the average). Shared by `iolab run --steady-state`, fio's `ss` options
//! and PTS rounds.

use serde::{Deserialize, Serialize};

use crate::error::SpecError;
use crate::units::{Nanos, TimeSpan};

/// What is tracked: operations or bytes per second of each interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SteadyMetric {
    Iops,
    Bw,
}

/// fio's two tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SteadyTest {
    /// Every value within `limit` of the window's mean (fio's `iops`, `bw`).
    Deviation,
    /// The least-squares slope of the window (per interval) within `limit` (fio's
    /// `iops_slope`, `bw_slope`).
    Slope,
}

/// A steady-state criterion in fio's words: `iops:5%`, `bw_slope:0.1%`, `iops:200`
/// (stored and written in study files as that text).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SteadyRule {
    pub metric: SteadyMetric,
    pub test: SteadyTest,
    /// The limit: a percentage of the window's mean when `percent`, else in the metric's
    /// unit (operations or bytes per second; per interval for a slope).
    pub limit: f64,
    pub percent: bool,
}

impl SteadyRule {
    /// Parses fio's `ss=` value: `iops|bw|iops_slope|bw_slope:LIMIT[%]`.
    pub fn parse(option: &str, text: &str) -> Result<SteadyRule, SpecError> {
        let bad = |why: String| SpecError::new(option, why);
        let (name, limit) = text.split_once(':').ok_or_else(|| {
            bad(format!(
                "'{text}' needs a limit: iops:5%, bw:2%, iops_slope:0.1% or bw_slope:1%"
            ))
        })?;
        let (metric, test) = match name.trim() {
            "iops" => (SteadyMetric::Iops, SteadyTest::Deviation),
            "bw" => (SteadyMetric::Bw, SteadyTest::Deviation),
            "iops_slope" => (SteadyMetric::Iops, SteadyTest::Slope),
            "bw_slope" => (SteadyMetric::Bw, SteadyTest::Slope),
            other => {
                return Err(bad(format!(
                    "'{other}' is not a criterion: use iops, bw, iops_slope or bw_slope"
                )));
            }
        };
        let limit = limit.trim();
        let (number, percent) = match limit.strip_suffix('%') {
            Some(n) => (n, true),
            None => (limit, false),
        };
        let limit: f64 = number
            .trim()
            .parse()
            .ok()
            .filter(|l: &f64| l.is_finite() && *l >= 0.0)
            .ok_or_else(|| bad(format!("'{limit}' is not a limit (a number, or N%)")))?;
        if percent && limit > 100.0 {
            return Err(bad(format!("{limit}% is more than 100%")));
        }
        Ok(SteadyRule {
            metric,
            test,
            limit,
            percent,
        })
    }

    /// fio's name for the rule, as its JSON writes it: `iops`, `bw_slope`, ...
    pub fn name(&self) -> &'static str {
        match (self.metric, self.test) {
            (SteadyMetric::Iops, SteadyTest::Deviation) => "iops",
            (SteadyMetric::Bw, SteadyTest::Deviation) => "bw",
            (SteadyMetric::Iops, SteadyTest::Slope) => "iops_slope",
            (SteadyMetric::Bw, SteadyTest::Slope) => "bw_slope",
        }
    }
}

impl std::str::FromStr for SteadyRule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SteadyRule::parse("--steady-state", s).map_err(|e| e.reason)
    }
}

impl TryFrom<String> for SteadyRule {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<SteadyRule> for String {
    fn from(r: SteadyRule) -> String {
        r.to_string()
    }
}

impl std::fmt::Display for SteadyRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pct = if self.percent { "%" } else { "" };
        write!(f, "{}:{}{pct}", self.name(), self.limit)
    }
}

/// The settings of a steady-state stop: the rule, the window it judges (fio's `ss_dur`),
/// how often it looks (`ss_interval`) and what is ignored first (`ss_ramp`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SteadySpec {
    pub rule: SteadyRule,
    pub window: TimeSpan,
    pub interval: TimeSpan,
    pub ramp: Option<TimeSpan>,
}

impl SteadySpec {
    /// Intervals in the window (at least 2: one point has no slope).
    pub fn points(&self) -> usize {
        let i = self.interval.nanos().0.max(1);
        ((self.window.nanos().0 / i) as usize).max(2)
    }
}

/// What [`check`] found over a full window.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SteadyVerdict {
    pub attained: bool,
    /// The value compared with the limit (a percentage of the mean when the rule's is).
    pub criterion: f64,
    pub mean: f64,
    /// The largest distance of a value from the mean.
    pub max_deviation: f64,
    /// The least-squares slope, per interval.
    pub slope: f64,
}

/// Mean and least-squares slope of `y` against 0, 1, 2, ...
fn mean_and_slope(y: &[f64]) -> (f64, f64) {
    let n = y.len() as f64;
    let mean = y.iter().sum::<f64>() / n;
    let mean_x = (n - 1.0) / 2.0;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, v) in y.iter().enumerate() {
        let dx = i as f64 - mean_x;
        sxy += dx * (v - mean);
        sxx += dx * dx;
    }
    (mean, if sxx > 0.0 { sxy / sxx } else { 0.0 })
}

/// fio's test over the last `points` values of `series`; None until there are that many.
pub fn check(series: &[f64], points: usize, rule: &SteadyRule) -> Option<SteadyVerdict> {
    let points = points.max(2);
    if series.len() < points {
        return None;
    }
    let window = &series[series.len() - points..];
    let (mean, slope) = mean_and_slope(window);
    let max_deviation = window.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max);
    let raw = match rule.test {
        SteadyTest::Deviation => max_deviation,
        SteadyTest::Slope => slope.abs(),
    };
    let criterion = if rule.percent {
        if mean > 0.0 {
            100.0 * raw / mean
        } else {
            f64::INFINITY
        }
    } else {
        raw
    };
    Some(SteadyVerdict {
        attained: criterion < rule.limit,
        criterion,
        mean,
        max_deviation,
        slope,
    })
}

/// The first length of `series` at which [`check`] attains: the index of the point that
/// settled it, or None when it never does.
pub fn first_steady(series: &[f64], points: usize, rule: &SteadyRule) -> Option<usize> {
    (points.max(2)..=series.len())
        .find(|&n| check(&series[..n], points, rule).is_some_and(|v| v.attained))
        .map(|n| n - 1)
}

/// A live steady-state judge: fed the phase's elapsed time and its operations and bytes
/// so far (every 0.1 s), it takes one sample per interval (operations and bytes per
/// second over the time since the last sample, truncated to integers as fio's are),
/// ignores the samples that start within the ramp, and judges the last window with
/// [`check`] at every new sample. It says when the rule is first met.
#[derive(Clone, Debug)]
pub struct SteadyTracker {
    spec: SteadySpec,
    /// The time, operations and bytes at the last sample (the phase start at first).
    last: (Nanos, u64, u64),
    /// The end of the interval being filled.
    next: Nanos,
    /// Samples kept, after the ramp.
    pub iops: Vec<u64>,
    pub bw: Vec<u64>,
    /// The last full window's verdict.
    pub verdict: Option<SteadyVerdict>,
    /// When the rule was met (elapsed time of the sample that met it).
    pub attained_at: Option<Nanos>,
}

impl SteadyTracker {
    pub fn new(spec: SteadySpec) -> SteadyTracker {
        SteadyTracker {
            spec,
            last: (Nanos::ZERO, 0, 0),
            next: spec.interval.nanos(),
            iops: Vec::new(),
            bw: Vec::new(),
            verdict: None,
            attained_at: None,
        }
    }

    pub fn spec(&self) -> &SteadySpec {
        &self.spec
    }

    /// One observation: `ops` and `bytes` done by `elapsed`. True the first time the
    /// rule is met (the caller stops the work then).
    pub fn observe(&mut self, elapsed: Nanos, ops: u64, bytes: u64) -> bool {
        if self.attained_at.is_some() || elapsed < self.next {
            return false;
        }
        let (t0, ops0, bytes0) = self.last;
        let span = elapsed.0.saturating_sub(t0.0).max(1) as u128;
        let per_sec = |d: u64| (u128::from(d) * 1_000_000_000 / span) as u64;
        let interval = self.spec.interval.nanos().0.max(1);
        let ramp = self.spec.ramp.map_or(0, |r| r.nanos().0);
        // The sample covers [t0, elapsed]: kept when it starts after the ramp.
        if t0.0 >= ramp {
            self.iops.push(per_sec(ops.saturating_sub(ops0)));
            self.bw.push(per_sec(bytes.saturating_sub(bytes0)));
        }
        self.last = (elapsed, ops, bytes);
        while self.next <= elapsed {
            self.next = Nanos(self.next.0 + interval);
        }
        let series: Vec<f64> = match self.spec.rule.metric {
            SteadyMetric::Iops => self.iops.iter().map(|v| *v as f64).collect(),
            SteadyMetric::Bw => self.bw.iter().map(|v| *v as f64).collect(),
        };
        let points = self.spec.points();
        if let Some(v) = check(&series, points, &self.spec.rule) {
            self.verdict = Some(v);
            if v.attained {
                self.attained_at = Some(elapsed);
                return true;
            }
        }
        false
    }

    /// The last `points` samples of a metric, oldest first (fewer while the window is
    /// not full).
    pub fn window(&self, metric: SteadyMetric) -> &[u64] {
        let s = match metric {
            SteadyMetric::Iops => &self.iops,
            SteadyMetric::Bw => &self.bw,
        };
        &s[s.len().saturating_sub(self.spec.points())..]
    }

    /// The outcome as named figures (a phase's `extra`; docs/figures.md, *Steady
    /// state*): the rule, the verdict over the last full window, the window's means and
    /// its samples (`steady_iops.N`, `steady_bw.N`, oldest first).
    pub fn figures(&self) -> Vec<(String, f64)> {
        let r = &self.spec.rule;
        let mut out = vec![
            (
                "steady_attained".to_string(),
                f64::from(u8::from(self.attained_at.is_some())),
            ),
            ("steady_limit".into(), r.limit),
            (
                "steady_limit_is_percent".into(),
                f64::from(u8::from(r.percent)),
            ),
            ("steady_window_points".into(), self.spec.points() as f64),
            (
                "steady_interval_ns".into(),
                self.spec.interval.nanos().0 as f64,
            ),
            ("steady_samples".into(), self.iops.len() as f64),
        ];
        if let Some(ramp) = self.spec.ramp {
            out.push(("steady_ramp_ns".into(), ramp.nanos().0 as f64));
        }
        if let Some(at) = self.attained_at {
            out.push(("steady_at_ns".into(), at.0 as f64));
        }
        if let Some(v) = &self.verdict {
            out.push(("steady_criterion".into(), v.criterion));
            out.push(("steady_max_deviation".into(), v.max_deviation));
            out.push(("steady_slope".into(), v.slope));
        }
        let mean = |s: &[u64]| {
            if s.is_empty() {
                0.0
            } else {
                s.iter().sum::<u64>() as f64 / s.len() as f64
            }
        };
        let (iops, bw) = (
            self.window(SteadyMetric::Iops),
            self.window(SteadyMetric::Bw),
        );
        out.push(("steady_mean_iops".into(), mean(iops)));
        out.push(("steady_mean_bytes_per_sec".into(), mean(bw)));
        for (i, v) in iops.iter().enumerate() {
            out.push((format!("steady_iops.{i}"), *v as f64));
        }
        for (i, v) in bw.iter().enumerate() {
            out.push((format!("steady_bw.{i}"), *v as f64));
        }
        out
    }
}

/// A stored figure that is one sample of a steady-state window (`steady_iops.3`): kept
/// for recomputation and fio's JSON, not listed among a phase's figures.
pub fn is_window_sample(key: &str) -> bool {
    key.starts_with("steady_") && key.contains('.')
}

/// SNIA PTS: the measurement window is the last 5 rounds.
pub const PTS_WINDOW: usize = 5;
/// PTS: at most this many rounds before a test is reported as not steady.
pub const PTS_MAX_ROUNDS: usize = 25;

/// What [`pts_check`] found over the last five rounds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PtsVerdict {
    pub steady: bool,
    pub average: f64,
    /// max - min of the window, and its limit (20 % of the average).
    pub range: f64,
    /// The least-squares line's rise over the window (|slope| x 4 rounds), and its limit
    /// (10 % of the average).
    pub excursion: f64,
    pub slope: f64,
    pub intercept: f64,
}

/// PTS 2.0's steady state over the last [`PTS_WINDOW`] rounds of `rounds`: the range of
/// the values within 20 % of their average, and the excursion of their least-squares
/// line within 10 % of it. None until five rounds exist.
pub fn pts_check(rounds: &[f64]) -> Option<PtsVerdict> {
    if rounds.len() < PTS_WINDOW {
        return None;
    }
    let w = &rounds[rounds.len() - PTS_WINDOW..];
    let (average, slope) = mean_and_slope(w);
    let max = w.iter().copied().fold(f64::MIN, f64::max);
    let min = w.iter().copied().fold(f64::MAX, f64::min);
    let range = max - min;
    let excursion = slope.abs() * (PTS_WINDOW - 1) as f64;
    let intercept = average - slope * (PTS_WINDOW - 1) as f64 / 2.0;
    Some(PtsVerdict {
        steady: average > 0.0 && range <= 0.2 * average && excursion <= 0.1 * average,
        average,
        range,
        excursion,
        slope,
        intercept,
    })
}

/// The round (0-based) at which PTS's steady state is first reached within
/// [`PTS_MAX_ROUNDS`], or None.
pub fn pts_first_steady(rounds: &[f64]) -> Option<usize> {
    (PTS_WINDOW..=rounds.len().min(PTS_MAX_ROUNDS))
        .find(|&n| pts_check(&rounds[..n]).is_some_and(|v| v.steady))
        .map(|n| n - 1)
}

#[cfg(test)]
#[path = "steady_tests.rs"]
mod tests;
