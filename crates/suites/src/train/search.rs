//! MLPerf Storage's headline: the most accelerators that keep AU at or above the
//! threshold. [`search`] doubles the accelerator count until a trial fails (or the
//! dataset or the limit stops it), then bisects between the last pass and the first
//! failure. Each trial is a whole training run, given as a closure; [`run_search`] runs
//! them on a dataset (each trial checked, its phases named and kept, rank 0's figures
//! deciding) and settles what a limit cut short.

use std::sync::atomic::{AtomicBool, Ordering};

use iolab_comm::{Comm, CommExt};
use iolab_core::SpecError;
use iolab_core::result::PhaseResult;
use iolab_core::spec::TrainConfig;

use super::memory::check_memory;
use super::threads::{HostCpus, sized};
use super::{Dataset, TrainOutcome};
use crate::AiError;

pub use iolab_core::train::{SearchPoint, SearchResult};

/// Runs trials of `step` accelerators (1, then x2, ...) up to `max`; `trial(n)` returns
/// (AU %, samples/s) or an error, which ends the search.
pub fn search<E>(
    max: u64,
    step: u64,
    threshold: f64,
    mut trial: impl FnMut(u64) -> Result<(f64, f64), E>,
) -> Result<SearchResult, E> {
    let step = step.max(1);
    let mut r = SearchResult::default();
    let mut run = |n: u64, r: &mut SearchResult| -> Result<bool, E> {
        let (au, tp) = trial(n)?;
        let passed = au >= threshold;
        r.points.push(SearchPoint {
            accelerators: n,
            au_percent: au,
            samples_per_sec: tp,
            passed,
        });
        Ok(passed)
    };
    let mut lo = 0u64; // last passing
    let mut hi = None; // first failing
    let mut n = step;
    loop {
        if n > max {
            r.stopped = format!("reached --max {max}");
            break;
        }
        if run(n, &mut r)? {
            lo = n;
            n *= 2;
        } else {
            r.stopped = format!("AU below {threshold}% at {n} accelerators");
            hi = Some(n);
            break;
        }
    }
    if let Some(mut hi) = hi {
        // Bisect in multiples of `step`.
        while hi - lo > step {
            let mid = lo + ((hi - lo) / step / 2).max(1) * step;
            if run(mid, &mut r)? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }
    r.best = (lo > 0).then_some(lo);
    Ok(r)
}

/// A search on a dataset: trials of `cfg` with 1, 2, 4, ... up to `max` accelerators per
/// rank, `ranks` ranks in all, `ranks_on_host` of them on this host (the memory check's);
/// `host` the job's figures its read_threads are sized from at each count ([`sized`]).
pub struct SearchPlan<'a> {
    pub comm: &'a dyn Comm,
    pub dataset: &'a Dataset,
    pub cfg: &'a TrainConfig,
    pub max: u32,
    pub ranks_on_host: u32,
    pub host: HostCpus,
    pub interrupt: &'a AtomicBool,
}

/// Runs one trial's epochs (the caller's: it drops the caches and shows progress).
pub type TrialFn<'a> = dyn FnMut(&TrainConfig) -> Result<TrainOutcome, AiError> + 'a;

/// Searches the most accelerators that keep AU at the threshold: each trial checked
/// (a batch for every accelerator, the loader's memory) and run by `trial`, its phases
/// named `search-<N>acc-<phase>`, rank 0's figures deciding the next on every rank. A
/// dataset or memory limit that stops the climb after some trials reports what was
/// found. Returns the result and every trial's phases. Collective.
pub fn run_search(
    plan: &SearchPlan<'_>,
    trial: &mut TrialFn<'_>,
) -> (Result<SearchResult, AiError>, Vec<PhaseResult>) {
    let ranks = u64::from(plan.comm.size());
    let mut phases: Vec<PhaseResult> = Vec::new();
    let threshold = plan.cfg.au_threshold;
    let result = search(u64::from(plan.max), 1, threshold, |n| {
        if plan.interrupt.load(Ordering::SeqCst) {
            return Err(AiError::Interrupted);
        }
        // DLIO sizes a read_threads of 1 by the accelerators on the host: at each count.
        let cfg = sized(
            &TrainConfig {
                accelerators: n as u32,
                ..plan.cfg.clone()
            },
            plan.host,
        );
        if cfg.steps_per_epoch(n * ranks) == 0 {
            return Err(AiError::Spec(SpecError::new(
                "--max",
                format!(
                    "the dataset has less than one batch for each of {} accelerators: add files or lower --max",
                    n * ranks
                ),
            )));
        }
        check_memory(&cfg, plan.dataset, plan.ranks_on_host)?;
        let o = trial(&cfg)?;
        for mut p in o.phases {
            p.name = format!("search-{}acc-{}", n * ranks, p.name);
            p.params
                .insert("search_accelerators".into(), (n * ranks).to_string());
            phases.push(p);
        }
        plan.comm
            .broadcast(
                0,
                &(o.figures.au_mean_percent, o.figures.samples_per_sec_mean),
            )
            .map_err(|e| AiError::Setup(e.to_string()))
    });
    let result = settle(result, &phases, threshold, ranks);
    (result, phases)
}

/// The search's points from its stored trials (when a limit cut it short).
fn rebuild(phases: &[PhaseResult], threshold: f64, stopped: String, ranks: u64) -> SearchResult {
    let mut by_n: std::collections::BTreeMap<u64, Vec<(f64, f64)>> = Default::default();
    for p in phases {
        let n = p
            .params
            .get("search_accelerators")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let f = p.figures.as_ref().and_then(|f| f.train_epoch());
        let au = f.map_or(0.0, |f| f.au_percent);
        let tp = f.map_or(0.0, |f| f.samples_per_sec);
        by_n.entry(n).or_default().push((au, tp));
    }
    let points: Vec<_> = by_n
        .into_iter()
        .map(|(n, v)| {
            let au = v.iter().map(|x| x.0).sum::<f64>() / v.len() as f64;
            let tp = v.iter().map(|x| x.1).sum::<f64>() / v.len() as f64;
            SearchPoint {
                accelerators: n / ranks.max(1),
                au_percent: au,
                samples_per_sec: tp,
                passed: au >= threshold,
            }
        })
        .collect();
    let best = points
        .iter()
        .filter(|p| p.passed)
        .map(|p| p.accelerators)
        .max();
    SearchResult {
        points,
        best,
        stopped,
    }
}

/// The search's result: a dataset or memory limit that stopped the climb after some
/// trials reports what was found, rebuilt from the stored trials when it holds none.
fn settle(
    result: Result<SearchResult, AiError>,
    phases: &[PhaseResult],
    threshold: f64,
    ranks: u64,
) -> Result<SearchResult, AiError> {
    let r = match result {
        Ok(r) => r,
        Err(AiError::Spec(e)) if !phases.is_empty() => SearchResult {
            stopped: e.to_string(),
            best: None,
            points: Vec::new(),
        },
        Err(e) => return Err(e),
    };
    Ok(if r.points.is_empty() && !phases.is_empty() {
        rebuild(phases, threshold, r.stopped, ranks)
    } else {
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_knee() {
        // AU falls below 90 beyond 11 accelerators.
        let r = search::<()>(64, 1, 90.0, |n| {
            Ok((if n <= 11 { 95.0 } else { 80.0 }, n as f64))
        })
        .unwrap();
        assert_eq!(r.best, Some(11));
        let tried: Vec<u64> = r.points.iter().map(|p| p.accelerators).collect();
        assert_eq!(tried, vec![1, 2, 4, 8, 16, 12, 10, 11]);
    }

    #[test]
    fn none_when_one_fails_and_max_when_all_pass() {
        let r = search::<()>(8, 1, 90.0, |_| Ok((50.0, 1.0))).unwrap();
        assert_eq!(r.best, None);
        let r = search::<()>(8, 2, 90.0, |_| Ok((99.0, 1.0))).unwrap();
        assert_eq!(r.best, Some(8));
        assert!(r.stopped.contains("--max 8"));
    }
}
