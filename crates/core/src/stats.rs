//! Statistics over repeated measurements: [`Spread`] (mean, standard deviation,
//! coefficient of variation, 95 % confidence interval), robust centre and scale
//! ([`median`], [`mad`]) and [`percent_change`].

use serde::{Deserialize, Serialize};

/// A coefficient of variation above this marks a figure as noisy.
pub const NOISY_CV: f64 = 0.10;

/// Summary of repeated measurements of one figure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1).
    pub stddev: f64,
    /// stddev / mean (0 when the mean is 0).
    pub cv: f64,
    /// Half-width of the 95 % confidence interval of the mean (Student's t).
    pub ci95: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// None for an empty sample.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let cv = if mean != 0.0 {
            stddev / mean.abs()
        } else {
            0.0
        };
        let ci95 = if n > 1 {
            t95(n - 1) * stddev / (n as f64).sqrt()
        } else {
            0.0
        };
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Spread {
            n,
            mean,
            stddev,
            cv,
            ci95,
            min,
            max,
        })
    }

    pub fn is_noisy(&self) -> bool {
        self.n > 1 && self.cv > NOISY_CV
    }
}

/// Two-sided 95 % critical value of Student's t for `df` degrees of freedom.
pub fn t95(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// The median (mean of the two middle values for an even count); None when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

/// Median absolute deviation from the median (unscaled).
pub fn mad(values: &[f64]) -> Option<f64> {
    let m = median(values)?;
    let dev: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    median(&dev)
}

/// The change from `old` to `new` in percent; None when `old` is 0.
pub fn percent_change(old: f64, new: f64) -> Option<f64> {
    if old == 0.0 {
        None
    } else {
        Some((new - old) / old.abs() * 100.0)
    }
}

/// Geometric mean of positive values; None if any is not positive or the list is empty.
pub fn geometric_mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan() || *v <= 0.0) {
        return None;
    }
    let log_sum: f64 = values.iter().map(|v| v.ln()).sum();
    Some((log_sum / values.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_known_sample() {
        let s = Spread::of(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!(s.mean, 12.0);
        assert_eq!(s.stddev, 2.0);
        assert!((s.cv - 1.0 / 6.0).abs() < 1e-12);
        // t(2) = 4.303; 4.303 * 2 / sqrt(3)
        assert!((s.ci95 - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-9);
        assert!(s.is_noisy());
        assert!(!Spread::of(&[100.0, 101.0, 99.0]).unwrap().is_noisy());
        assert!(Spread::of(&[]).is_none());
        assert_eq!(Spread::of(&[5.0]).unwrap().ci95, 0.0);
    }

    #[test]
    fn robust_statistics() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(mad(&[1.0, 1.0, 2.0, 2.0, 4.0, 6.0, 9.0]), Some(1.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn changes_and_means() {
        assert_eq!(percent_change(100.0, 58.0), Some(-42.0));
        assert_eq!(percent_change(0.0, 5.0), None);
        assert!((geometric_mean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(geometric_mean(&[1.0, 0.0]), None);
    }
}
