//! Axis scales for the charts: [`linear_ticks`] (from zero, "nice" steps of 1, 2, 2.5 or
//! 5, labels scaled to a unit such as GiB/s or "k") and [`log_ticks`] (decades, for
//! latencies, in one time unit). Tick labels never read "4000.0".

/// What an axis measures, which decides how its ticks read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes per second: ticks in one binary unit named in the title ("GiB/s").
    BytesPerSec,
    /// Bytes per second in one decimal unit ("GB/s").
    DecimalBytesPerSec,
    /// A rate or count: ticks with k / M suffixes ("2.5k").
    Count,
    /// Percent, 0-100.
    Percent,
    /// Seconds.
    Seconds,
    /// Nanoseconds, shown in one time unit named in the title ("µs").
    Latency,
}

/// Tick positions (in data units), their labels and the axis range.
#[derive(Clone, Debug, PartialEq)]
pub struct Ticks {
    pub values: Vec<f64>,
    pub labels: Vec<String>,
    pub min: f64,
    pub max: f64,
    pub log: bool,
    /// The unit the labels are in, for the axis title ("GiB/s", "µs, log scale").
    pub unit_label: Option<String>,
}

impl Ticks {
    /// Position of `v` in the range, 0 at `min` and 1 at `max`.
    pub fn fraction(&self, v: f64) -> f64 {
        if self.log {
            let (lo, hi) = (self.min.log10(), self.max.log10());
            (v.max(self.min * 1e-3).log10() - lo) / (hi - lo)
        } else {
            (v - self.min) / (self.max - self.min)
        }
    }
}

/// A step of 1, 2, 2.5 or 5 times a power of ten giving about `target` steps up to `max`.
fn nice_step(max: f64, target: f64) -> f64 {
    let raw = max / target;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let mult = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .find(|m| *m >= norm - 1e-9)
        .unwrap_or(10.0);
    mult * mag
}

/// Decimals needed to print multiples of `step` exactly, so that no two ticks read the
/// same: a step of 0.0005 s needs four ("0.0005", "0.0010"), not three ("0.001" twice).
fn decimals(step: f64) -> usize {
    const MOST: usize = 15;
    (0..MOST)
        .find(|d| {
            let scaled = step * 10f64.powi(*d as i32);
            scaled.round() >= 1.0 && (scaled - scaled.round()).abs() < 1e-6 * scaled
        })
        .unwrap_or(MOST)
}

/// "1,500", "2.5", "0.01": fixed decimals, thousands separated.
pub fn number(v: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, v.abs());
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i.to_string(), format!(".{f}")),
        None => (text.clone(), String::new()),
    };
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if v < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    format!("{sign}{grouped}{frac}")
}

/// The divisor and name of the unit labels are printed in, for a largest value `max`.
fn scale(unit: Unit, max: f64) -> (f64, &'static str, Option<String>) {
    match unit {
        Unit::BytesPerSec => {
            const NAMES: [&str; 6] = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s", "PiB/s"];
            let mut i = 0;
            while i + 1 < NAMES.len() && max >= 1024f64.powi(i as i32 + 1) {
                i += 1;
            }
            (1024f64.powi(i as i32), "", Some(NAMES[i].to_string()))
        }
        Unit::DecimalBytesPerSec => {
            const NAMES: [&str; 6] = ["B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s"];
            let mut i = 0;
            while i + 1 < NAMES.len() && max >= 1000f64.powi(i as i32 + 1) {
                i += 1;
            }
            (1000f64.powi(i as i32), "", Some(NAMES[i].to_string()))
        }
        Unit::Count if max >= 1e6 => (1e6, "M", None),
        Unit::Count if max >= 1e4 => (1e3, "k", None),
        Unit::Count => (1.0, "", None),
        Unit::Percent => (1.0, "", Some("%".to_string())),
        Unit::Seconds => (1.0, "", Some("s".to_string())),
        Unit::Latency => {
            let (div, name) = time_unit(max);
            (div, "", Some(name.to_string()))
        }
    }
}

fn time_unit(ns: f64) -> (f64, &'static str) {
    if ns < 1e3 {
        (1.0, "ns")
    } else if ns < 1e6 {
        (1e3, "µs")
    } else if ns < 1e9 {
        (1e6, "ms")
    } else {
        (1e9, "s")
    }
}

/// Ticks from 0 to a nice value at or above `max`.
pub fn linear_ticks(max: f64, unit: Unit) -> Ticks {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let max = if unit == Unit::Percent && max <= 100.0 {
        100.0
    } else {
        max
    };
    let (div, suffix, unit_label) = scale(unit, max);
    let step = nice_step(max / div, 5.0);
    let count = ((max / div) / step - 1e-9).ceil().max(1.0) as usize;
    let d = decimals(step);
    let values: Vec<f64> = (0..=count).map(|i| i as f64 * step * div).collect();
    let labels = values
        .iter()
        .map(|v| {
            if *v == 0.0 {
                "0".to_string()
            } else {
                format!("{}{suffix}", number(v / div, d))
            }
        })
        .collect();
    Ticks {
        min: 0.0,
        max: count as f64 * step * div,
        values,
        labels,
        log: false,
        unit_label,
    }
}

/// Decade ticks (with 2 and 5 between when the range is short) covering [min, max] of
/// positive values: latencies in nanoseconds are labelled in one time unit, counts with
/// k / M suffixes.
pub fn log_ticks(min: f64, max: f64, unit: Unit) -> Ticks {
    let min = if min.is_finite() && min > 0.0 {
        min
    } else {
        1.0
    };
    let max = if max.is_finite() && max > min {
        max
    } else {
        min * 10.0
    };
    let lo = min.log10().floor() as i32;
    let mut hi = max.log10().ceil() as i32;
    if hi <= lo {
        hi = lo + 1;
    }
    let mults: &[f64] = if hi - lo <= 2 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut values = Vec::new();
    for e in lo..=hi {
        for m in mults {
            let v = m * 10f64.powi(e);
            if v <= 10f64.powi(hi) * 1.0001 {
                values.push(v);
            }
        }
    }
    let (labels, unit_label) = if unit == Unit::Latency {
        // The unit of the lowest tick, unless the highest would need more than six digits.
        let (mut div, mut name) = time_unit(10f64.powi(lo));
        if 10f64.powi(hi) / div > 1e5 {
            (div, name) = time_unit(div * 1e3);
        }
        let labels = values.iter().map(|v| plain(v / div)).collect();
        (labels, Some(format!("{name}, log scale")))
    } else {
        (values.iter().map(|v| suffixed(*v)).collect(), None)
    };
    Ticks {
        min: 10f64.powi(lo),
        max: 10f64.powi(hi),
        values,
        labels,
        log: true,
        unit_label,
    }
}

/// A power-of-ten multiple as a plain number: "1,000", "0.01".
fn plain(x: f64) -> String {
    let d = if x >= 1.0 {
        0
    } else {
        (-x.log10()).ceil() as usize
    };
    number(x, d.min(6))
}

/// A count with a k / M suffix: "500", "20k", "1M".
fn suffixed(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", plain(v / 1e6))
    } else if v >= 1e3 {
        format!("{}k", plain(v / 1e3))
    } else {
        plain(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_read_well() {
        let t = linear_ticks(4.47 * 1024f64.powi(3), Unit::BytesPerSec);
        assert_eq!(t.labels, ["0", "1", "2", "3", "4", "5"]);
        assert_eq!(t.unit_label.as_deref(), Some("GiB/s"));
        let t = linear_ticks(16_600.0, Unit::Count);
        assert_eq!(t.labels, ["0", "5k", "10k", "15k", "20k"]);
        let t = linear_ticks(4000.0, Unit::Count);
        assert_eq!(t.labels, ["0", "1,000", "2,000", "3,000", "4,000"]);
        let t = linear_ticks(2.4, Unit::Seconds);
        assert_eq!(t.labels, ["0", "0.5", "1.0", "1.5", "2.0", "2.5"]);
        let t = linear_ticks(37.0, Unit::Percent);
        assert_eq!(t.labels.last().unwrap(), "100");
        let t = linear_ticks(0.0, Unit::Count);
        assert_eq!(t.max, 1.0);
    }

    #[test]
    fn ticks_of_a_very_short_axis_are_distinct() {
        // A phase of 2 ms: steps of 0.5 ms read "0, 0.001, 0.001, 0.002" at three decimals.
        let t = linear_ticks(0.002, Unit::Seconds);
        assert_eq!(t.labels, ["0", "0.0005", "0.0010", "0.0015", "0.0020"]);
        let t = linear_ticks(0.0009, Unit::Seconds);
        assert_eq!(
            t.labels,
            ["0", "0.0002", "0.0004", "0.0006", "0.0008", "0.0010"]
        );
        let t = linear_ticks(0.000_011, Unit::Seconds);
        assert_eq!(
            t.labels,
            [
                "0",
                "0.0000025",
                "0.0000050",
                "0.0000075",
                "0.0000100",
                "0.0000125"
            ]
        );
        for max in [3e-9, 7e-7, 0.0013, 0.02, 0.3, 4.0, 1.0e4] {
            let t = linear_ticks(max, Unit::Seconds);
            let mut seen = t.labels.clone();
            seen.dedup();
            assert_eq!(seen, t.labels, "max {max}");
        }
        assert_eq!(decimals(0.0005), 4);
        assert_eq!(decimals(0.25), 2);
        assert_eq!(decimals(2000.0), 0);
        assert_eq!(decimals(1e-9), 9);
    }

    #[test]
    fn log_ticks_are_decades_in_one_unit() {
        let t = log_ticks(20_000.0, 50_000_000.0, Unit::Latency);
        assert_eq!(t.labels, ["10", "100", "1,000", "10,000", "100,000"]);
        assert_eq!(t.unit_label.as_deref(), Some("µs, log scale"));
        let t = log_ticks(80_000.0, 900_000.0, Unit::Latency);
        assert_eq!(t.labels, ["10", "20", "50", "100", "200", "500", "1,000"]);
        assert!((t.fraction(t.max) - 1.0).abs() < 1e-12);
        assert_eq!(number(-1234.5, 1), "-1,234.5");
        let t = log_ticks(7_000.0, 522_000.0, Unit::Count);
        assert_eq!(t.labels, ["1k", "10k", "100k", "1M"]);
        assert_eq!(t.unit_label, None);
    }
}
