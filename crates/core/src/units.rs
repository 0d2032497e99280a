//! Units as types: [`ByteCount`], [`Nanos`], [`TimeSpan`], [`BytesPerSec`], [`OpsPerSec`]
//! and [`CpuList`]. Each parses the human forms users type ("4KiB", "1MiB", "30s", "0-7")
//! and prints a form that parses back to the same value.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::UnitError;

/// A number of bytes. Binary prefixes for `K`, `Ki`, `KiB` (and `k`, as fio users write
/// `4k` for 4096); decimal for `KB`/`kB`, `MB`, ... Serialized as a plain integer;
/// deserialized from an integer or a human string.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteCount(pub u64);

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;
pub const GIB: u64 = 1024 * MIB;
pub const TIB: u64 = 1024 * GIB;
pub const PIB: u64 = 1024 * TIB;
pub const EIB: u64 = 1024 * PIB;

impl ByteCount {
    pub const ZERO: ByteCount = ByteCount(0);

    pub const fn new(bytes: u64) -> Self {
        ByteCount(bytes)
    }
    pub const fn kib(n: u64) -> Self {
        ByteCount(n * KIB)
    }
    pub const fn mib(n: u64) -> Self {
        ByteCount(n * MIB)
    }
    pub const fn gib(n: u64) -> Self {
        ByteCount(n * GIB)
    }
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Human form with three significant digits, e.g. "1.23 GiB", "512 B".
    pub fn human(self) -> String {
        human_binary(self.0 as f64, "B")
    }
}

fn human_binary(value: f64, unit: &str) -> String {
    const PREFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let mut v = value;
    let mut i = 0;
    while v.abs() >= 1024.0 && i + 1 < PREFIXES.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{} {}{}", three_digits(v), PREFIXES[i], unit)
}

fn human_decimal(value: f64, unit: &str) -> String {
    const PREFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    let mut v = value;
    let mut i = 0;
    // 999.6 would print as "1000": it is 1.00 of the next prefix.
    while v.abs() >= 999.5 && i + 1 < PREFIXES.len() {
        v /= 1000.0;
        i += 1;
    }
    format!("{} {}{}", three_digits(v), PREFIXES[i], unit)
}

/// Formats with three significant digits (but never in exponent form).
pub fn three_digits(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".to_string()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

impl fmt::Display for ByteCount {
    /// The exact, re-parsable form: the largest binary unit that divides the value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 6] = [
            (EIB, "EiB"),
            (PIB, "PiB"),
            (TIB, "TiB"),
            (GIB, "GiB"),
            (MIB, "MiB"),
            (KIB, "KiB"),
        ];
        if self.0 > 0 {
            for (mult, name) in UNITS {
                if self.0.is_multiple_of(mult) {
                    return write!(f, "{}{}", self.0 / mult, name);
                }
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl FromStr for ByteCount {
    type Err = UnitError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let (number, unit) = split_number(text);
        if number.is_empty() {
            return Err(UnitError::bytes(s));
        }
        let mult: u64 = match unit.trim() {
            "" | "b" | "B" | "c" => 1,
            "k" | "K" | "Ki" | "KiB" | "kiB" | "kib" | "KIB" => KIB,
            "m" | "M" | "Mi" | "MiB" | "mib" | "MIB" => MIB,
            "g" | "G" | "Gi" | "GiB" | "gib" | "GIB" => GIB,
            "t" | "T" | "Ti" | "TiB" | "tib" | "TIB" => TIB,
            "p" | "P" | "Pi" | "PiB" | "pib" | "PIB" => PIB,
            "e" | "E" | "Ei" | "EiB" | "eib" | "EIB" => EIB,
            "KB" | "kB" | "kb" => 1_000,
            "MB" | "mb" => 1_000_000,
            "GB" | "gb" => 1_000_000_000,
            "TB" | "tb" => 1_000_000_000_000,
            "PB" | "pb" => 1_000_000_000_000_000,
            "EB" | "eb" => 1_000_000_000_000_000_000,
            _ => return Err(UnitError::bytes(s)),
        };
        let value = scale(number, mult).ok_or_else(|| UnitError::bytes(s))?;
        Ok(ByteCount(value))
    }
}

/// Splits "4.5KiB" into ("4.5", "KiB").
fn split_number(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    (&text[..end], &text[end..])
}

/// `number * mult` exactly, for an integer or decimal `number`; None when the result is
/// not a whole number or overflows.
fn scale(number: &str, mult: u64) -> Option<u64> {
    let clean: String = number.chars().filter(|c| *c != '_').collect();
    let (int_part, frac_part) = match clean.split_once('.') {
        Some((i, f)) => (i, f),
        None => (clean.as_str(), ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let int: u128 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().ok()?
    };
    let mut total = int.checked_mul(mult as u128)?;
    if !frac_part.is_empty() {
        let digits = frac_part.len() as u32;
        if digits > 18 {
            return None;
        }
        let frac: u128 = frac_part.parse().ok()?;
        let denom = 10u128.pow(digits);
        let scaled = frac.checked_mul(mult as u128)?;
        if scaled % denom != 0 {
            return None;
        }
        total = total.checked_add(scaled / denom)?;
    }
    u64::try_from(total).ok()
}

impl Add for ByteCount {
    type Output = ByteCount;
    fn add(self, rhs: ByteCount) -> ByteCount {
        ByteCount(self.0 + rhs.0)
    }
}
impl AddAssign for ByteCount {
    fn add_assign(&mut self, rhs: ByteCount) {
        self.0 += rhs.0;
    }
}
impl Sub for ByteCount {
    type Output = ByteCount;
    fn sub(self, rhs: ByteCount) -> ByteCount {
        ByteCount(self.0 - rhs.0)
    }
}

impl Serialize for ByteCount {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for ByteCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(v) => Ok(ByteCount(v)),
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// A measured duration in nanoseconds. Serialized as an integer.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const SECOND: Nanos = Nanos(1_000_000_000);

    pub const fn from_secs(s: u64) -> Self {
        Nanos(s * 1_000_000_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Nanos(ms * 1_000_000)
    }
    pub const fn from_micros(us: u64) -> Self {
        Nanos(us * 1_000)
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn as_micros_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    pub fn from_duration(d: std::time::Duration) -> Self {
        Nanos(d.as_nanos().min(u64::MAX as u128) as u64)
    }
    pub fn to_duration(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0)
    }
    pub fn saturating_sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(rhs.0))
    }

    /// Human form for latencies and elapsed times: "812 ns", "64.2 µs", "1.50 ms", "60.0 s".
    pub fn human(self) -> String {
        let n = self.0 as f64;
        if n < 1e3 {
            format!("{} ns", self.0)
        } else if n < 1e6 {
            format!("{} µs", three_digits(n / 1e3))
        } else if n < 1e9 {
            format!("{} ms", three_digits(n / 1e6))
        } else {
            format!("{} s", three_digits(n / 1e9))
        }
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 + rhs.0)
    }
}
impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 - rhs.0)
    }
}

/// A duration the user asked for ("30s", "5m", "500ms", or a plain number of seconds).
/// Serialized as its human string so study files and stored specs read naturally.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeSpan(pub Nanos);

impl TimeSpan {
    /// The longest duration iolab takes: 100 years. A deadline is a start time plus a
    /// few of these, and must stay well inside u64 nanoseconds (584 years), where an
    /// overflow would panic (debug) or wrap into a deadline already past (release).
    pub const MAX: TimeSpan = TimeSpan(Nanos(100 * 365 * 86_400 * 1_000_000_000));

    pub const fn from_secs(s: u64) -> Self {
        TimeSpan(Nanos::from_secs(s))
    }
    pub fn nanos(self) -> Nanos {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0.as_secs_f64()
    }
}

impl fmt::Display for TimeSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.0;
        // Seconds rather than minutes or hours: "900s" reads as fio's runtime=900.
        const UNITS: [(u64, &str); 4] = [
            (1_000_000_000, "s"),
            (1_000_000, "ms"),
            (1_000, "us"),
            (1, "ns"),
        ];
        if n == 0 {
            return write!(f, "0s");
        }
        for (mult, name) in UNITS {
            if n.is_multiple_of(mult) {
                return write!(f, "{}{}", n / mult, name);
            }
        }
        unreachable!("every integer is a multiple of 1")
    }
}

impl FromStr for TimeSpan {
    type Err = UnitError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let (number, unit) = split_number(text);
        if number.is_empty() {
            return Err(UnitError::duration(s));
        }
        let mult: u64 = match unit.trim() {
            "" | "s" | "sec" | "secs" => 1_000_000_000,
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "m" | "min" | "mins" => 60_000_000_000,
            "h" | "hr" | "hours" => 3_600_000_000_000,
            _ => return Err(UnitError::duration(s)),
        };
        let value = scale(number, mult).ok_or_else(|| UnitError::duration(s))?;
        if value > TimeSpan::MAX.0.0 {
            return Err(UnitError::DurationTooLong(s.to_string()));
        }
        Ok(TimeSpan(Nanos(value)))
    }
}

impl Serialize for TimeSpan {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for TimeSpan {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Secs(u64),
            Float(f64),
            Text(String),
        }
        let too_long = |v: f64| {
            serde::de::Error::custom(UnitError::DurationTooLong(format!("{v}s")).to_string())
        };
        match Raw::deserialize(d)? {
            Raw::Secs(v) if v <= TimeSpan::MAX.0.0 / 1_000_000_000 => Ok(TimeSpan::from_secs(v)),
            Raw::Secs(v) => Err(too_long(v as f64)),
            Raw::Float(v) if v >= 0.0 && v.is_finite() => {
                let nanos = (v * 1e9).round();
                if nanos > TimeSpan::MAX.0.0 as f64 {
                    return Err(too_long(v));
                }
                Ok(TimeSpan(Nanos(nanos as u64)))
            }
            Raw::Float(v) => Err(serde::de::Error::custom(format!(
                "invalid duration {v}: must be a non-negative number of seconds"
            ))),
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Bandwidth in bytes per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BytesPerSec(pub f64);

impl BytesPerSec {
    pub fn get(self) -> f64 {
        self.0
    }
    /// "482 MiB/s"
    pub fn human(self) -> String {
        human_binary(self.0, "B/s")
    }
    /// "505 MB/s", the decimal form storage vendors and the reference studies quote.
    pub fn human_decimal(self) -> String {
        human_decimal(self.0, "B/s")
    }
    pub fn mib_per_sec(self) -> f64 {
        self.0 / MIB as f64
    }
    pub fn gib_per_sec(self) -> f64 {
        self.0 / GIB as f64
    }
}

/// Operations per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OpsPerSec(pub f64);

impl OpsPerSec {
    pub fn get(self) -> f64 {
        self.0
    }
    /// "123k", "1.23M"
    pub fn human(self) -> String {
        human_decimal(self.0, "").trim_end().replace(' ', "")
    }
}

/// Bytes moved over a time: the one definition of bandwidth.
pub fn bandwidth(moved: ByteCount, took: Nanos) -> BytesPerSec {
    if took.0 == 0 {
        return BytesPerSec(0.0);
    }
    BytesPerSec(moved.0 as f64 * 1e9 / took.0 as f64)
}

/// Operations over a time: the one definition of a rate.
pub fn rate(ops: u64, took: Nanos) -> OpsPerSec {
    if took.0 == 0 {
        return OpsPerSec(0.0);
    }
    OpsPerSec(ops as f64 * 1e9 / took.0 as f64)
}

/// A list of CPU numbers, parsed from "0-7,9,12-15".
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpuList(pub Vec<usize>);

impl FromStr for CpuList {
    type Err = UnitError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut cpus = Vec::new();
        for part in s.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(UnitError::cpus(s));
            }
            match part.split_once('-') {
                Some((a, b)) => {
                    let a: usize = a.trim().parse().map_err(|_| UnitError::cpus(s))?;
                    let b: usize = b.trim().parse().map_err(|_| UnitError::cpus(s))?;
                    if a > b || b > 65_535 {
                        return Err(UnitError::cpus(s));
                    }
                    cpus.extend(a..=b);
                }
                None => cpus.push(part.parse().map_err(|_| UnitError::cpus(s))?),
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuList(cpus))
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            if !first {
                write!(f, ",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

impl Serialize for CpuList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for CpuList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
#[path = "units_tests.rs"]
mod tests;
