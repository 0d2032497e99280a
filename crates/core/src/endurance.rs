//! Device endurance: how much a workload writes over a period, and how long a device
//! rated for a number of bytes written (TBW/PBW, or drive writes per day over a
//! warranty) lasts at that rate. Years are 365-day years; vendors' TB and PB are decimal
//! (10^12, 10^15 bytes); results are given in binary units (PiB) with the decimal form.

use serde::{Deserialize, Serialize};

use crate::error::UnitError;
use crate::result::{OpKind, RunRecord};
use crate::units::{ByteCount, BytesPerSec};

/// Seconds in a 365-day year.
pub const YEAR_SECS: f64 = 365.0 * 86_400.0;

/// Parses a rated endurance: "2.61PBW", "600TBW", "41 PBW", or any size iolab reads
/// ("2PB", "14.69PiB"), rounded to whole bytes (a rating is not exact to the byte). A
/// rating of 16 EiB or more is refused, not saturated to u64's largest value.
pub fn parse_rated(text: &str) -> Result<ByteCount, UnitError> {
    let t = text.trim();
    let t = t
        .strip_suffix('W')
        .or_else(|| t.strip_suffix('w'))
        .unwrap_or(t);
    let bytes = approximate_bytes(t).ok_or_else(|| UnitError::Bytes(text.to_string()))?;
    whole_bytes(bytes).ok_or_else(|| UnitError::Bytes(text.to_string()))
}

/// `bytes` rounded to a [`ByteCount`]; None when it is not finite or does not fit in
/// 64 bits (`as u64` would saturate silently).
fn whole_bytes(bytes: f64) -> Option<ByteCount> {
    let rounded = bytes.round();
    // 2^64: u64::MAX as f64 rounds up to it, and every f64 below it fits.
    (rounded.is_finite() && rounded < 18_446_744_073_709_551_616.0)
        .then(|| ByteCount(rounded.max(0.0) as u64))
}

/// Parses a write rate: "100MiB/s", "1.5GB/s", "0.7GiB/s", "100MiB".
pub fn parse_rate(text: &str) -> Result<BytesPerSec, UnitError> {
    let t = text.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    approximate_bytes(t)
        .map(BytesPerSec)
        .ok_or_else(|| UnitError::Bytes(text.to_string()))
}

/// A size with any of the units [`ByteCount`] reads, where a fraction of a byte is
/// allowed ("14.69PiB"): the number times the unit.
fn approximate_bytes(text: &str) -> Option<f64> {
    if let Ok(exact) = text.parse::<ByteCount>() {
        return Some(exact.get() as f64);
    }
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(end);
    let number: f64 = number.parse().ok().filter(|n: &f64| n.is_finite())?;
    let unit: ByteCount = format!("1{}", unit.trim()).parse().ok()?;
    Some(number * unit.get() as f64)
}

/// Rated bytes of a device rated for `dwpd` drive writes per day over `years`; None
/// when that is not a number of bytes below 16 EiB.
pub fn rated_from_dwpd(dwpd: f64, capacity: ByteCount, years: f64) -> Option<ByteCount> {
    whole_bytes(dwpd * capacity.get() as f64 * 365.0 * years)
}

/// Drive writes per day that `rate` amounts to on a device of `capacity`.
pub fn dwpd_of(rate: BytesPerSec, capacity: ByteCount) -> f64 {
    rate.get() * 86_400.0 / capacity.get().max(1) as f64
}

/// The verdict for a device at a write rate over a period.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    pub rate: BytesPerSec,
    pub years: f64,
    pub rated: ByteCount,
    /// Bytes written at `rate` over `years`.
    pub written: f64,
    /// How long the rated endurance lasts at `rate`, in years.
    pub lifetime_years: f64,
    /// rated / written: above 1 the device outlasts the period.
    pub margin: f64,
}

impl Projection {
    pub fn lasts(&self) -> bool {
        self.margin >= 1.0
    }
}

pub fn project(rated: ByteCount, rate: BytesPerSec, years: f64) -> Projection {
    let written = rate.get() * years * YEAR_SECS;
    let lifetime_years = if rate.get() > 0.0 {
        rated.get() as f64 / rate.get() / YEAR_SECS
    } else {
        f64::INFINITY
    };
    let margin = if written > 0.0 {
        rated.get() as f64 / written
    } else {
        f64::INFINITY
    };
    Projection {
        rate,
        years,
        rated,
        written,
        lifetime_years,
        margin,
    }
}

/// A lifetime in the unit that keeps it readable: years (two decimals) down to about a
/// month, then days, hours under a day, minutes under an hour, seconds under a minute
/// ("0.00 years" said nothing about a device worn out in a week).
pub fn lifetime_text(years: f64) -> String {
    let secs = years * YEAR_SECS;
    if secs >= 30.0 * 86_400.0 {
        return format!("{years:.2} years");
    }
    [("days", 86_400.0), ("hours", 3_600.0), ("minutes", 60.0)]
        .iter()
        .find(|(_, unit)| secs >= *unit)
        .map(|(name, unit)| format!("{:.1} {name}", secs / unit))
        .unwrap_or_else(|| format!("{secs:.1} seconds"))
}

/// "14.69 PiB (16.53 PB)": two decimals in the largest fitting binary unit, with the
/// decimal figure vendors use.
pub fn exact_bytes(bytes: f64) -> String {
    const BIN: [(&str, f64); 5] = [
        ("EiB", 1152921504606846976.0),
        ("PiB", 1125899906842624.0),
        ("TiB", 1099511627776.0),
        ("GiB", 1073741824.0),
        ("MiB", 1048576.0),
    ];
    const DEC: [(&str, f64); 5] = [
        ("EB", 1e18),
        ("PB", 1e15),
        ("TB", 1e12),
        ("GB", 1e9),
        ("MB", 1e6),
    ];
    let pick = |table: &[(&'static str, f64)]| {
        table
            .iter()
            .find(|(_, m)| bytes >= *m)
            .map(|(u, m)| format!("{:.2} {u}", bytes / m))
            .unwrap_or_else(|| format!("{bytes:.0} B"))
    };
    format!("{} ({})", pick(&BIN), pick(&DEC))
}

/// A stored run's mean write rate, where it came from, and what makes it probably not
/// the device's.
#[derive(Clone, Debug, PartialEq)]
pub struct RunWriteRate {
    pub rate: BytesPerSec,
    /// "mean write rate of run r4 over its 3 phase(s): ..."
    pub source: String,
    pub warnings: Vec<String>,
}

/// The mean write rate of stored run `id` over its whole duration: every byte its phases
/// wrote over the time they ran. Not a peak: a sweep's best point (64 threads flat out)
/// is not what a device sees for years.
/// With it, what makes the rate probably not the device's: a run too short to stand for
/// years, or writes the page cache absorbed. None when the run wrote nothing.
pub fn run_write_rate(run: &RunRecord, id: &str) -> Option<RunWriteRate> {
    let mut written = 0u64;
    let mut secs = 0.0;
    let mut cached = false;
    for p in &run.phases {
        secs += p.elapsed.as_secs_f64();
        if let Some(w) = p.op(OpKind::Write) {
            written += w.bytes.get();
            // Buffered writes with no sync of any kind end in the page cache.
            let buffered = p.params.get("io").is_some_and(|io| io == "buffered")
                && p.params.get("backend").is_none_or(|b| b != "null");
            cached |= buffered && w.bytes.get() > 0 && p.op(OpKind::Fsync).is_none();
        }
    }
    let mut warnings = Vec::new();
    if secs < 60.0 {
        warnings.push(format!(
            "run {id} wrote for only {secs:.3} s: too short to stand for years of writing; measure minutes of the real workload, or give --write-rate"
        ));
    }
    if cached {
        warnings.push(format!(
            "run {id} wrote buffered with no sync: the page cache absorbed the writes, so the rate is memory's, not the device's"
        ));
    }
    if written == 0 || secs <= 0.0 {
        return None;
    }
    let source = format!(
        "mean write rate of run {id} over its {} phase(s): {} written in {} s (give --write-rate for another)",
        run.phases.len(),
        exact_bytes(written as f64),
        if secs < 10.0 {
            format!("{secs:.3}")
        } else {
            format!("{secs:.1}")
        }
    );
    Some(RunWriteRate {
        rate: BytesPerSec(written as f64 / secs),
        source,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hundred_mib_per_second_for_five_years_is_14_69_pib() {
        let p = project(
            parse_rated("2.61PBW").unwrap(),
            parse_rate("100MiB/s").unwrap(),
            5.0,
        );
        assert_eq!(p.written, 104_857_600.0 * 5.0 * 365.0 * 86_400.0);
        assert!(
            exact_bytes(p.written).starts_with("14.69 PiB (16.53 PB)"),
            "{}",
            exact_bytes(p.written)
        );
        assert!(!p.lasts());
        // 2.61 PB at 100 MiB/s: 2.61e15 / 104857600 / 31536000 = 0.789 years.
        assert!(
            (p.lifetime_years - 0.7893).abs() < 1e-3,
            "{}",
            p.lifetime_years
        );
        let optane = project(
            parse_rated("41PBW").unwrap(),
            parse_rate("100MiB/s").unwrap(),
            5.0,
        );
        assert!(optane.lasts());
        assert!(
            (optane.lifetime_years - 12.40).abs() < 0.01,
            "{}",
            optane.lifetime_years
        );
    }

    #[test]
    fn a_rating_beyond_64_bits_is_refused_not_saturated() {
        assert!(parse_rated("20EiB").is_err());
        assert!(parse_rated("99999999999999999999999PBW").is_err());
        assert_eq!(parse_rated("15EiB").unwrap(), ByteCount(15 << 60));
        let tb = ByteCount(1_000_000_000_000);
        assert_eq!(
            rated_from_dwpd(1.0, tb, 5.0),
            Some(ByteCount(1_825 * tb.get()))
        );
        assert_eq!(rated_from_dwpd(1e30, tb, 5.0), None);
        assert_eq!(rated_from_dwpd(1.0, tb, f64::INFINITY), None);
        assert_eq!(rated_from_dwpd(f64::NAN, tb, 5.0), None);
    }

    #[test]
    fn short_lifetimes_are_given_in_days_hours_and_minutes() {
        let day = 1.0 / 365.0;
        assert_eq!(lifetime_text(0.7893), "0.79 years");
        assert_eq!(lifetime_text(12.4), "12.40 years");
        assert_eq!(lifetime_text(30.0 * day), "0.08 years");
        assert_eq!(lifetime_text(7.0 * day), "7.0 days");
        assert_eq!(lifetime_text(29.5 * day), "29.5 days");
        assert_eq!(lifetime_text(day), "1.0 days");
        assert_eq!(lifetime_text(day / 4.0), "6.0 hours");
        assert_eq!(lifetime_text(day / 48.0), "30.0 minutes");
        assert_eq!(lifetime_text(day / 86_400.0 * 5.0), "5.0 seconds");
        // 600 TB at 1 GB/s: 600,000 s, just under a week.
        let p = project(
            parse_rated("600TBW").unwrap(),
            parse_rate("1GB/s").unwrap(),
            5.0,
        );
        assert_eq!(lifetime_text(p.lifetime_years), "6.9 days");
    }

    #[test]
    fn dwpd_and_tbw_conversions() {
        // 1 DWPD on a 2 TB drive over 5 years is 3650 TBW.
        assert_eq!(
            rated_from_dwpd(1.0, "2TB".parse().unwrap(), 5.0),
            Some(ByteCount(3_650_000_000_000_000))
        );
        assert_eq!(
            parse_rated("600TBW").unwrap(),
            ByteCount(600_000_000_000_000)
        );
        assert!(
            (dwpd_of(BytesPerSec(2e12 / 86_400.0), "2TB".parse().unwrap()) - 1.0).abs() < 1e-12
        );
        assert!(parse_rated("lots").is_err());
        // Any size the rest of iolab reads, fractions of binary units included.
        assert_eq!(
            parse_rated("14.69PiB").unwrap().get(),
            (14.69 * (1u64 << 50) as f64).round() as u64
        );
        assert_eq!(
            parse_rated("16.53PB").unwrap().get(),
            16_530_000_000_000_000
        );
        assert_eq!(parse_rate("0.5KiB/s").unwrap().get(), 512.0);
        assert!(parse_rated("1.5XB").is_err());
        assert!(parse_rated("PiB").is_err());
        assert!(parse_rate("fast/s").is_err());
    }
}
