//! How a data workload's I/Os are sized, placed and paced beyond one block size and
//! uniform draws: [`SizeMix`] (sizes drawn per I/O: fio's bssplit and bsrange),
//! [`Distribution`] (skewed random offsets: fio's random_distribution), [`RateProcess`]
//! and [`ThinkCount`]. Each parses the form users type and prints a form that parses back
//! to the same value; specs store that text.

use std::fmt;
use std::str::FromStr;

use clap::ValueEnum;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::units::ByteCount;

/// The most sizes a split holds (fio's BSSPLIT_MAX).
pub const MAX_SPLIT_SIZES: usize = 64;

/// One size of a [`SizeMix::Split`] and its share of the I/Os in percent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SizeShare {
    pub size: ByteCount,
    pub percent: u8,
}

/// The sizes an I/O's length is drawn from, one draw per I/O.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SizeMix {
    /// Sizes with their shares of the I/Os, adding up to 100 % (fio's bssplit):
    /// `4KiB/10:64KiB/50:32KiB/40`. A size written without a share takes an even part
    /// of what the others leave.
    Split(Vec<SizeShare>),
    /// Every multiple of `min` from `min` to `max`, each as likely (fio's bsrange):
    /// `4KiB-64KiB`.
    Range { min: ByteCount, max: ByteCount },
}

impl SizeMix {
    pub fn smallest(&self) -> u64 {
        match self {
            SizeMix::Split(s) => s.iter().map(|e| e.size.get()).min().unwrap_or(0),
            SizeMix::Range { min, .. } => min.get(),
        }
    }

    pub fn largest(&self) -> u64 {
        match self {
            SizeMix::Split(s) => s.iter().map(|e| e.size.get()).max().unwrap_or(0),
            SizeMix::Range { max, .. } => max.get(),
        }
    }

    /// The mean size of an I/O drawn from the mix, in bytes.
    pub fn mean(&self) -> f64 {
        match self {
            SizeMix::Split(s) => s
                .iter()
                .map(|e| e.size.get() as f64 * f64::from(e.percent) / 100.0)
                .sum(),
            SizeMix::Range { min, max } => {
                (min.get() + max.get() / min.get() * min.get()) as f64 / 2.0
            }
        }
    }

    /// The sizes a check must see: a split's every size, a range's two ends (every size
    /// between is a multiple of its smallest).
    pub fn sizes(&self) -> Vec<u64> {
        match self {
            SizeMix::Split(s) => s.iter().map(|e| e.size.get()).collect(),
            SizeMix::Range { min, max } => vec![min.get(), max.get()],
        }
    }
}

impl fmt::Display for SizeMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeMix::Split(s) => {
                for (i, e) in s.iter().enumerate() {
                    if i > 0 {
                        f.write_str(":")?;
                    }
                    write!(f, "{}/{}", e.size, e.percent)?;
                }
                Ok(())
            }
            SizeMix::Range { min, max } => write!(f, "{min}-{max}"),
        }
    }
}

fn size(text: &str, what: &str) -> Result<ByteCount, String> {
    let s: ByteCount = text.trim().parse().map_err(|_| {
        format!(
            "'{}' in {what} is not a size (4KiB, 64KiB, 1MiB)",
            text.trim()
        )
    })?;
    if s.get() == 0 {
        return Err(format!("{what} holds a size of 0"));
    }
    Ok(s)
}

/// Shares in percent, some left blank (None): checked and completed so they add up to
/// 100, the blanks sharing what the others leave (the first ones take the remainder of
/// an uneven division). `names` says what each share belongs to, for messages.
pub fn complete_shares(given: &[Option<u32>], names: &[String]) -> Result<Vec<u8>, String> {
    if let Some((i, p)) = given
        .iter()
        .enumerate()
        .find_map(|(i, p)| p.filter(|p| *p > 100).map(|p| (i, p)))
    {
        return Err(format!("{} has a share of {p}%, over 100%", names[i]));
    }
    let sum: u32 = given.iter().flatten().sum();
    let blanks = given.iter().filter(|p| p.is_none()).count() as u32;
    if sum > 100 {
        return Err(format!("the shares add up to {sum}%, over 100%"));
    }
    if blanks == 0 && sum != 100 {
        return Err(format!(
            "the shares add up to {sum}%, not 100%: give every share, or leave one out to take the rest"
        ));
    }
    let mut extra = if blanks > 0 { (100 - sum) % blanks } else { 0 };
    let shares: Vec<u8> = given
        .iter()
        .map(|p| match p {
            Some(p) => *p as u8,
            None => {
                let one = u32::from(extra > 0);
                extra = extra.saturating_sub(1);
                ((100 - sum) / blanks + one) as u8
            }
        })
        .collect();
    if let Some(i) = shares.iter().position(|p| *p == 0) {
        return Err(format!("{} gets no share (0%): remove it", names[i]));
    }
    Ok(shares)
}

impl FromStr for SizeMix {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        if text.contains('/') || text.contains(':') {
            let parts: Vec<&str> = text.split(':').collect();
            if parts.len() > MAX_SPLIT_SIZES {
                return Err(format!(
                    "'{text}' has {} sizes; a split holds at most {MAX_SPLIT_SIZES}",
                    parts.len()
                ));
            }
            let mut sizes = Vec::with_capacity(parts.len());
            let mut given = Vec::with_capacity(parts.len());
            for part in &parts {
                let (sz, share) = match part.split_once('/') {
                    Some((sz, p)) if !p.trim().is_empty() => {
                        let p: u32 = p.trim().parse().map_err(|_| {
                            format!("'{}' in '{text}' is not a share in percent", p.trim())
                        })?;
                        (sz, Some(p))
                    }
                    Some((sz, _)) => (sz, None),
                    None => (*part, None),
                };
                let size = size(sz, &format!("'{text}'"))?;
                if sizes.contains(&size) {
                    return Err(format!("{size} appears twice in '{text}'"));
                }
                sizes.push(size);
                given.push(share);
            }
            let names: Vec<String> = sizes.iter().map(ToString::to_string).collect();
            let shares = complete_shares(&given, &names).map_err(|m| format!("'{text}': {m}"))?;
            return Ok(SizeMix::Split(
                sizes
                    .into_iter()
                    .zip(shares)
                    .map(|(size, percent)| SizeShare { size, percent })
                    .collect(),
            ));
        }
        let Some((lo, hi)) = text.split_once('-') else {
            return Err(format!(
                "'{text}' is not a mix of sizes: give shares (4KiB/10:64KiB/90) or a range (4KiB-64KiB)"
            ));
        };
        let (min, max) = (size(lo, "a range")?, size(hi, "a range")?);
        if min > max {
            return Err(format!("'{text}': the range's start is above its end"));
        }
        Ok(SizeMix::Range { min, max })
    }
}

/// A zone of [`Distribution::Zoned`]: `access` percent of the I/Os go to the next `size`
/// percent of the blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Zone {
    pub access: u8,
    pub size: u8,
}

/// A zone of [`Distribution::ZonedAbs`]: `access` percent of the I/Os go to the next
/// `size` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AbsZone {
    pub access: u8,
    pub size: ByteCount,
}

/// Where random offsets fall, when not evenly (fio's random_distribution, with its
/// formulas: lib/zipf.c, lib/gauss.c and its zones). Zipf, Pareto and normal rank the
/// blocks by popularity and scatter the ranks over the share, as fio does, so their
/// figure is the share of I/Os on the most popular blocks; zones are places.
#[derive(Clone, Debug, PartialEq)]
pub enum Distribution {
    /// Zipf with exponent `theta` (not 1): `zipf:1.2`; `center` (0 to 1) places the most
    /// popular block instead of a random place (`zipf:1.2:0.25`).
    Zipf { theta: f64, center: Option<f64> },
    /// Pareto with power `h` (between 0 and 1): `pareto:0.9`.
    Pareto { h: f64, center: Option<f64> },
    /// fio's normal: the mean of 12 uniform draws, widened by `dev` percent of the share:
    /// `normal:5`.
    Normal { dev: f64, center: Option<f64> },
    /// Shares of the I/Os on consecutive parts of the share, in percent:
    /// `zoned:60/10:30/20:8/30:2/40` (60 % of the I/Os on the first 10 %, ...); reads
    /// and writes each their own with a comma (`zoned:READ,WRITE`); a direction without
    /// zones draws evenly.
    Zoned { read: Vec<Zone>, write: Vec<Zone> },
    /// The same with zones of absolute sizes: `zoned_abs:60/20GiB:40/100GiB`.
    ZonedAbs {
        read: Vec<AbsZone>,
        write: Vec<AbsZone>,
    },
}

impl Distribution {
    /// fio's name for it.
    pub fn name(&self) -> &'static str {
        match self {
            Distribution::Zipf { .. } => "zipf",
            Distribution::Pareto { .. } => "pareto",
            Distribution::Normal { .. } => "normal",
            Distribution::Zoned { .. } => "zoned",
            Distribution::ZonedAbs { .. } => "zoned_abs",
        }
    }
}

fn list<T>(f: &mut fmt::Formatter<'_>, items: &[T], one: impl Fn(&T) -> String) -> fmt::Result {
    let text: Vec<String> = items.iter().map(one).collect();
    f.write_str(&text.join(":"))
}

fn directions<T: PartialEq>(
    f: &mut fmt::Formatter<'_>,
    read: &[T],
    write: &[T],
    one: impl Fn(&T) -> String + Copy,
) -> fmt::Result {
    list(f, read, one)?;
    if read != write {
        f.write_str(",")?;
        list(f, write, one)?;
    }
    Ok(())
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let with_center = |f: &mut fmt::Formatter<'_>, v: f64, c: Option<f64>| match c {
            Some(c) => write!(f, "{}:{v}:{c}", self.name()),
            None => write!(f, "{}:{v}", self.name()),
        };
        match self {
            Distribution::Zipf { theta, center } => with_center(f, *theta, *center),
            Distribution::Pareto { h, center } => with_center(f, *h, *center),
            Distribution::Normal { dev, center } => with_center(f, *dev, *center),
            Distribution::Zoned { read, write } => {
                f.write_str("zoned:")?;
                directions(f, read, write, |z| format!("{}/{}", z.access, z.size))
            }
            Distribution::ZonedAbs { read, write } => {
                f.write_str("zoned_abs:")?;
                directions(f, read, write, |z| format!("{}/{}", z.access, z.size))
            }
        }
    }
}

fn number(text: &str, what: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("'{}' is not a number for {what}", text.trim()))
}

/// One direction's zones: `ACCESS/SIZE:...`, the access shares adding up to 100.
fn zones<S>(
    text: &str,
    size_of: impl Fn(&str) -> Result<S, String>,
) -> Result<Vec<(u8, Option<S>)>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut sum = 0u32;
    for part in text.split(':') {
        let (access, size) = match part.split_once('/') {
            Some((a, s)) if !s.trim().is_empty() => (a, Some(size_of(s.trim())?)),
            Some((a, _)) => (a, None),
            None => (part, None),
        };
        let access: u32 = access
            .trim()
            .parse()
            .ok()
            .filter(|a| *a <= 100)
            .ok_or_else(|| {
                format!(
                    "'{}' is not a share of the I/Os from 0 to 100",
                    access.trim()
                )
            })?;
        sum += access;
        out.push((access as u8, size));
    }
    if sum != 100 {
        return Err(format!(
            "the zones' shares of the I/Os add up to {sum}%, not 100%"
        ));
    }
    Ok(out)
}

fn percent_zones(text: &str) -> Result<Vec<Zone>, String> {
    let raw = zones(text, |s| {
        s.parse::<u32>()
            .map_err(|_| format!("'{s}' is not a zone size in percent"))
    })?;
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let given: Vec<Option<u32>> = raw.iter().map(|(_, s)| *s).collect();
    let blanks = given.iter().filter(|s| s.is_none()).count() as u32;
    let sum: u32 = given.iter().flatten().sum();
    if sum > 100 || given.iter().flatten().any(|s| *s > 100) {
        return Err(format!("the zones' sizes add up to {sum}%, over 100%"));
    }
    let mut extra = if blanks > 0 { (100 - sum) % blanks } else { 0 };
    let zones: Vec<Zone> = raw
        .iter()
        .map(|(access, s)| {
            let size = s.unwrap_or_else(|| {
                let one = u32::from(extra > 0);
                extra = extra.saturating_sub(1);
                (100 - sum) / blanks + one
            });
            Zone {
                access: *access,
                size: size as u8,
            }
        })
        .collect();
    if let Some(z) = zones.iter().find(|z| z.size == 0 && z.access > 0) {
        return Err(format!(
            "a zone of 0% cannot take {}% of the I/Os",
            z.access
        ));
    }
    Ok(zones)
}

fn byte_zones(text: &str) -> Result<Vec<AbsZone>, String> {
    zones(text, |s| size(s, "a zone"))?
        .into_iter()
        .map(|(access, size)| match size {
            Some(size) => Ok(AbsZone { access, size }),
            None => Err("every zone of zoned_abs needs its size (60/20GiB)".into()),
        })
        .collect()
}

impl FromStr for Distribution {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let (value, center) = match rest.split_once(':') {
            Some((v, c)) if matches!(name, "zipf" | "pareto" | "normal") => {
                let c = number(c, "the center")?;
                if !(0.0..=1.0).contains(&c) {
                    return Err(format!("the center {c} is not between 0 and 1"));
                }
                (v, Some(c))
            }
            _ => (rest, None),
        };
        let per_direction = |rest: &str| -> (String, String) {
            match rest.split_once(',') {
                Some((r, w)) => (r.to_string(), w.to_string()),
                None => (rest.to_string(), rest.to_string()),
            }
        };
        match name {
            "zipf" => {
                let theta = if value.is_empty() {
                    1.1
                } else {
                    number(value, "zipf")?
                };
                if theta <= 0.0 || theta == 1.0 {
                    return Err(format!("zipf's theta {theta} must be above 0 and not 1"));
                }
                Ok(Distribution::Zipf { theta, center })
            }
            "pareto" => {
                let h = if value.is_empty() {
                    0.2
                } else {
                    number(value, "pareto")?
                };
                if h <= 0.0 || h >= 1.0 {
                    return Err(format!("pareto's power {h} must be between 0 and 1"));
                }
                Ok(Distribution::Pareto { h, center })
            }
            "normal" => {
                let dev = if value.is_empty() {
                    0.0
                } else {
                    number(value, "normal")?
                };
                if !(0.0..100.0).contains(&dev) {
                    return Err(format!(
                        "normal's deviation {dev} must be from 0 to below 100 (percent)"
                    ));
                }
                Ok(Distribution::Normal { dev, center })
            }
            "zoned" => {
                let (r, w) = per_direction(rest);
                let (read, write) = (percent_zones(&r)?, percent_zones(&w)?);
                if read.is_empty() && write.is_empty() {
                    return Err("zoned needs zones: zoned:60/10:40/90".into());
                }
                Ok(Distribution::Zoned { read, write })
            }
            "zoned_abs" => {
                let (r, w) = per_direction(rest);
                let (read, write) = (byte_zones(&r)?, byte_zones(&w)?);
                if read.is_empty() && write.is_empty() {
                    return Err("zoned_abs needs zones: zoned_abs:60/20GiB:40/100GiB".into());
                }
                Ok(Distribution::ZonedAbs { read, write })
            }
            other => Err(format!(
                "'{other}' is not a distribution: use zipf:THETA, pareto:H, normal:DEV, zoned:ACCESS/SIZE:... or zoned_abs:ACCESS/BYTES:..."
            )),
        }
    }
}

/// Text in, text out: the spec stores what the user would type.
macro_rules! text_serde {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?
                    .parse()
                    .map_err(serde::de::Error::custom)
            }
        }
    };
}

text_serde!(SizeMix);
text_serde!(Distribution);

/// How paced I/Os are spaced in time (fio's rate_process).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RateProcess {
    /// Evenly.
    #[default]
    Linear,
    /// As arrivals of a Poisson process of the same mean rate (exponential gaps).
    Poisson,
}

/// Which I/Os `--think-every` counts (fio's thinktime_blocks_type).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ThinkCount {
    /// Completed I/Os.
    #[default]
    Complete,
    /// Issued I/Os.
    Issue,
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
