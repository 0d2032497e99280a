//! MLPerf Storage's headline: the most accelerators that keep AU at or above the
//! threshold. [`search`] doubles the accelerator count until a trial fails (or the
//! dataset or the limit stops it), then bisects between the last pass and the first
//! failure. Each trial is a whole training run, given as a closure.

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
