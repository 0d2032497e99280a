//! fio's options of I/O sizes, offsets and pace as a job states them ([`FioAccess`]):
//! `bssplit`, `bsrange`, `blockalign`, `random_generator`, `random_distribution`,
//! `percentage_random`, `rate`, `rate_iops`, `rate_min`, `rate_iops_min`, `rate_process`, `rate_cycle` and
//! the `thinktime` family, each per direction where fio's is (`R,W`: `100,` limits only
//! reads, `,100` only writes). Values are kept as fio gives them (per job clone); the
//! plan turns them into the workload's options (`plan_access`).

use iolab_core::spec::{Distribution, RateProcess, ThinkCount};
use iolab_core::units::{Nanos, TimeSpan};

use super::values::{number, size_in, time};

/// fio's random_generator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RandomGenerator {
    #[default]
    Tausworthe,
    Tausworthe64,
    /// Every block once per pass without a map.
    Lfsr,
}

/// A bssplit as written: each size with its share, or none (a blank, or fio's 0).
pub type RawSplit = Vec<(u64, Option<u32>)>;

/// What a job says about sizes, offsets and pace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioAccess {
    /// Per direction (read, write): bssplit, bsrange and blockalign.
    pub bssplit: [Option<RawSplit>; 2],
    pub bsrange: [Option<(u64, u64)>; 2],
    pub blockalign: [Option<u64>; 2],
    /// None: fio's default (tausworthe), not given.
    pub random_generator: Option<RandomGenerator>,
    /// None: uniform (fio's `random`).
    pub random_distribution: Option<Distribution>,
    /// fio's percentage_random for reads, writes and trims (None: 100, all random).
    pub percentage_random: Option<[u8; 3]>,
    /// fio's allrandrepeat: every random seed fixed (fio's each from the clone's
    /// thread number alone, whatever randrepeat or randseed say).
    pub allrandrepeat: bool,
    /// Per direction and per job clone: bytes per second, I/Os per second, and their
    /// minimums.
    pub rate: [Option<u64>; 2],
    pub rate_iops: [Option<u64>; 2],
    pub rate_min: [Option<u64>; 2],
    pub rate_iops_min: [Option<u64>; 2],
    pub rate_process: RateProcess,
    /// rate_cycle, in milliseconds.
    pub rate_cycle: Option<u64>,
    pub thinktime: Option<TimeSpan>,
    pub thinktime_spin: Option<TimeSpan>,
    pub thinktime_blocks: Option<u64>,
    pub thinktime_blocks_type: ThinkCount,
    pub thinktime_iotime: Option<TimeSpan>,
    /// fio's token-based flow control: the group (`flow_id`), the job's weight in it
    /// (`flow`, 0: none) and the sleep when held back (`flow_sleep`, in µs).
    pub flow_id: i32,
    pub flow: u32,
    pub flow_sleep: Option<TimeSpan>,
    /// fio's zonemode=strided and its zonesize, zonerange and zoneskip (bytes; 0: not
    /// given).
    pub zonemode_strided: bool,
    pub zonesize: u64,
    pub zonerange: u64,
    pub zoneskip: u64,
    /// fio's dedupe_mode=working_set, dedupe_working_set_percentage (None: fio's 5)
    /// and dedupe_global.
    pub dedupe_working_set: bool,
    pub dedupe_working_set_percentage: Option<u8>,
    pub dedupe_global: bool,
    /// fio's latency_target and latency_window (bare numbers in µs),
    /// latency_percentile (None: fio's 100) and latency_run.
    pub latency_target: Option<TimeSpan>,
    pub latency_window: Option<TimeSpan>,
    pub latency_percentile: Option<f64>,
    pub latency_run: bool,
}

/// A value per direction as fio reads it: `a` for both, `a,b`, `a,` (reads only),
/// `,b` (writes only); a third part is the trims', which iolab does not issue.
fn per_direction<T: Copy>(
    text: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<[Option<T>; 2], String> {
    let mut parts = text.split(',');
    let read = parts.next().unwrap_or_default().trim();
    let one = |p: &str| -> Result<Option<T>, String> {
        if p.is_empty() {
            Ok(None)
        } else {
            parse(p).map(Some)
        }
    };
    Ok(match parts.next() {
        None => {
            let v = one(read)?;
            [v, v]
        }
        Some(write) => [one(read)?, one(write.trim())?],
    })
}

fn nonzero(v: Option<u64>) -> Option<u64> {
    v.filter(|v| *v > 0)
}

/// A time whose bare number is microseconds (fio's thinktime).
fn micros(text: &str) -> Result<TimeSpan, String> {
    let t = text.trim();
    match t.parse::<u64>() {
        Ok(us) => us
            .checked_mul(1000)
            .filter(|&n| n <= TimeSpan::MAX.0.0)
            .map(|n| TimeSpan(Nanos(n)))
            .ok_or_else(|| format!("'{t}' microseconds is more than 100 years")),
        Err(_) => time(t),
    }
}

/// fio's percentage_random (an int option with three offsets, parse.c): `P` for every
/// direction, `R,W` (trims as writes), `R,W,T`; a blank first part keeps the reads'.
fn random_percentages(text: &str, mut now: [u8; 3]) -> Result<[u8; 3], String> {
    let t = text.trim();
    let t = t.strip_suffix(',').unwrap_or(t);
    let parts: Vec<&str> = t.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!(
            "'{t}' has more than three parts (reads, writes, trims)"
        ));
    }
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() && i == 0 {
            continue;
        }
        let n = p
            .parse::<u8>()
            .ok()
            .filter(|n| *n <= 100)
            .ok_or_else(|| format!("'{p}' is not a percentage from 0 to 100"))?;
        now[i] = n;
        // The last part given stands for the directions after it.
        if i + 1 == parts.len() {
            now[i..].fill(n);
        }
    }
    Ok(now)
}

/// fio's bssplit for one direction: `SIZE/SHARE:SIZE/SHARE...`, a blank or 0 share
/// taking part of the rest.
fn split(text: &str, kb: u64) -> Result<Option<RawSplit>, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for entry in t.split(':').filter(|e| !e.is_empty()) {
        let (sz, share) = match entry.split_once('/') {
            Some((sz, p)) => {
                let p = p.trim();
                let share = if p.is_empty() {
                    None
                } else {
                    let n: u32 = p
                        .parse()
                        .map_err(|_| format!("'{p}' in '{entry}' is not a share in percent"))?;
                    (n > 0).then_some(n)
                };
                (sz, share)
            }
            None => (entry, None),
        };
        let bytes = size_in(sz, kb)?;
        if bytes == 0 {
            return Err(format!("'{entry}' has a size of 0"));
        }
        out.push((bytes, share));
    }
    if out.len() > iolab_core::spec::access::MAX_SPLIT_SIZES {
        return Err(format!(
            "{} sizes; fio takes at most {}",
            out.len(),
            iolab_core::spec::access::MAX_SPLIT_SIZES
        ));
    }
    Ok(Some(out))
}

/// fio's bsrange for one direction: `LOW-HIGH` (or `LOW:HIGH`); reversed ends are
/// swapped, as fio 3.33's parser does (parse.c, FIO_OPT_RANGE).
fn range(text: &str, kb: u64) -> Result<(u64, u64), String> {
    let t = text.trim();
    let (lo, hi) = t
        .split_once('-')
        .or_else(|| t.split_once(':'))
        .ok_or_else(|| format!("'{t}' is not a range: give LOW-HIGH (4k-64k)"))?;
    let (lo, hi) = (size_in(lo, kb)?, size_in(hi, kb)?);
    if lo == 0 {
        return Err(format!("'{t}' starts at 0"));
    }
    Ok((lo.min(hi), lo.max(hi)))
}

/// fio's random_distribution, with zoned_abs sizes read as fio reads sizes.
fn distribution(text: &str, kb: u64) -> Result<Option<Distribution>, String> {
    let t = text.trim();
    if t == "random" {
        return Ok(None);
    }
    let text = match t.strip_prefix("zoned_abs:") {
        Some(zones) => {
            let dirs: Vec<String> = zones
                .split(',')
                .map(|dir| {
                    dir.split(':')
                        .filter(|z| !z.is_empty())
                        .map(|z| match z.split_once('/') {
                            Some((a, s)) => Ok(format!("{a}/{}", size_in(s, kb)?)),
                            None => Ok(z.to_string()),
                        })
                        .collect::<Result<Vec<_>, String>>()
                        .map(|v| v.join(":"))
                })
                .collect::<Result<_, _>>()?;
            format!("zoned_abs:{}", dirs.join(","))
        }
        None => t.to_string(),
    };
    text.parse().map(Some)
}

impl FioAccess {
    /// Applies option `key` if it is one of these (sizes read with fio's `kb_base`);
    /// None when it is not.
    pub fn apply(&mut self, key: &str, value: Option<&str>, kb: u64) -> Option<Result<(), String>> {
        let v = || value.ok_or_else(|| "needs a value (key=value)".to_string());
        let size = |t: &str| size_in(t, kb);
        let result = (|| -> Result<(), String> {
            match key {
                "bssplit" => {
                    let text = v()?;
                    let mut parts = text.splitn(3, ',');
                    let read = split(parts.next().unwrap_or_default(), kb)?;
                    self.bssplit = match parts.next() {
                        None => [read.clone(), read],
                        Some(w) => [read, split(w, kb)?],
                    };
                }
                "bsrange" | "blocksize_range" => {
                    self.bsrange = per_direction(v()?, |t| range(t, kb))?;
                }
                "blockalign" | "ba" => self.blockalign = per_direction(v()?, size)?,
                "random_generator" => {
                    self.random_generator = Some(match v()?.trim() {
                        "tausworthe" => RandomGenerator::Tausworthe,
                        "tausworthe64" => RandomGenerator::Tausworthe64,
                        "lfsr" => RandomGenerator::Lfsr,
                        other => {
                            return Err(format!(
                                "'{other}' is not one of fio's generators: tausworthe, lfsr or tausworthe64"
                            ));
                        }
                    })
                }
                "random_distribution" => self.random_distribution = distribution(v()?, kb)?,
                "percentage_random" => {
                    let now = self.percentage_random.unwrap_or([100; 3]);
                    self.percentage_random = Some(random_percentages(v()?, now)?);
                }
                "allrandrepeat" => self.allrandrepeat = super::values::boolean(value)?,
                // fio 3.33 knows the name but fails the job file ("failed parsing").
                "percentage_sequential" => {
                    return Err(
                        "fio 3.33 refuses it too (a deprecated option): give percentage_random, the random share (100 less the sequential one)"
                            .into(),
                    );
                }
                // A rate of 0 is fio's default: no limit.
                "rate" => self.rate = per_direction(v()?, size)?.map(nonzero),
                "rate_iops" => self.rate_iops = per_direction(v()?, number)?.map(nonzero),
                "rate_min" | "ratemin" => self.rate_min = per_direction(v()?, size)?.map(nonzero),
                "rate_iops_min" => self.rate_iops_min = per_direction(v()?, number)?.map(nonzero),
                "rate_process" => {
                    self.rate_process = match v()?.trim() {
                        "linear" => RateProcess::Linear,
                        "poisson" => RateProcess::Poisson,
                        other => {
                            return Err(format!("'{other}' is not linear or poisson"));
                        }
                    }
                }
                "rate_cycle" | "ratecycle" => {
                    let ms = number(v()?)?;
                    if ms == 0 {
                        return Err("must be at least 1 (milliseconds)".into());
                    }
                    self.rate_cycle = Some(ms);
                }
                "thinktime" => self.thinktime = Some(micros(v()?)?),
                "thinktime_spin" => self.thinktime_spin = Some(micros(v()?)?),
                "thinktime_blocks" => self.thinktime_blocks = Some(number(v()?)?),
                "thinktime_blocks_type" => {
                    self.thinktime_blocks_type = match v()?.trim() {
                        "complete" => ThinkCount::Complete,
                        "issue" => ThinkCount::Issue,
                        other => return Err(format!("'{other}' is not complete or issue")),
                    }
                }
                "thinktime_iotime" => self.thinktime_iotime = Some(time(v()?)?),
                "flow_id" => {
                    let t = v()?.trim();
                    self.flow_id = t
                        .parse()
                        .map_err(|_| format!("'{t}' is not a whole number"))?;
                }
                "flow" => {
                    let w = number(v()?)?;
                    if w > 1000 {
                        return Err(format!("{w} is over fio's largest weight, 1000"));
                    }
                    self.flow = w as u32;
                }
                "flow_sleep" => self.flow_sleep = Some(micros(v()?)?),
                "zonemode" => {
                    self.zonemode_strided = match v()?.trim() {
                        "none" => false,
                        "strided" => true,
                        "zbd" => {
                            return Err(
                                "zbd (zoned block devices) is not supported: use none or strided"
                                    .into(),
                            );
                        }
                        other => return Err(format!("'{other}' is not none, strided or zbd")),
                    }
                }
                "dedupe_mode" => {
                    self.dedupe_working_set = match v()?.trim() {
                        "repeat" => false,
                        "working_set" => true,
                        other => return Err(format!("'{other}' is not repeat or working_set")),
                    }
                }
                "dedupe_working_set_percentage" => {
                    let t = v()?.trim();
                    let p = t
                        .parse::<u8>()
                        .ok()
                        .filter(|p| *p <= 100)
                        .ok_or_else(|| format!("'{t}' is not a percentage from 0 to 100"))?;
                    self.dedupe_working_set_percentage = Some(p);
                }
                "dedupe_global" => self.dedupe_global = super::values::boolean(value)?,
                "latency_target" => self.latency_target = Some(micros(v()?)?),
                "latency_window" => self.latency_window = Some(micros(v()?)?),
                "latency_percentile" => {
                    let t = v()?.trim();
                    let p = t
                        .trim_end_matches('%')
                        .parse::<f64>()
                        .ok()
                        .filter(|p| (0.0..=100.0).contains(p))
                        .ok_or_else(|| format!("'{t}' is not a percentile from 0 to 100"))?;
                    self.latency_percentile = Some(p);
                }
                "latency_run" => self.latency_run = super::values::boolean(value)?,
                "zonesize" => self.zonesize = size(v()?)?,
                "zonerange" => self.zonerange = size(v()?)?,
                "zoneskip" => self.zoneskip = size(v()?)?,
                _ => return Err(String::new()),
            }
            Ok(())
        })();
        match result {
            Err(e) if e.is_empty() => None,
            other => Some(other),
        }
    }

    /// The smallest and largest I/O of direction `dir` (0 reads, 1 writes) for a job
    /// whose bs is `bs`: what fio's header line shows.
    pub fn size_range(&self, dir: usize, bs: u64) -> (u64, u64) {
        if let Some(s) = &self.bssplit[dir] {
            let sizes = s.iter().map(|(b, _)| *b);
            return (sizes.clone().min().unwrap_or(bs), sizes.max().unwrap_or(bs));
        }
        self.bsrange[dir].unwrap_or((bs, bs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(opts: &[(&str, &str)]) -> Result<FioAccess, String> {
        let mut a = FioAccess::default();
        for (k, v) in opts {
            a.apply(k, Some(v), 1024).expect("one of ours")?;
        }
        Ok(a)
    }

    #[test]
    fn values_per_direction_read_as_fio_reads_them() {
        let a = job(&[("rate_iops", "100,")]).unwrap();
        assert_eq!(a.rate_iops, [Some(100), None]);
        let a = job(&[("rate_iops", ",50")]).unwrap();
        assert_eq!(a.rate_iops, [None, Some(50)]);
        let a = job(&[("rate", "1m")]).unwrap();
        assert_eq!(a.rate, [Some(1 << 20), Some(1 << 20)]);
        let a = job(&[("rate", "1m,500k,1k")]).unwrap();
        assert_eq!(a.rate, [Some(1 << 20), Some(500 << 10)]);
    }

    #[test]
    fn bssplit_keeps_blanks_and_directions() {
        let a = job(&[("bssplit", "4k/10:64k/50:32k/40")]).unwrap();
        let s = vec![(4096, Some(10)), (65536, Some(50)), (32768, Some(40))];
        assert_eq!(a.bssplit, [Some(s.clone()), Some(s)]);
        // A 0 share is a blank in fio; a split for reads only.
        let a = job(&[("bssplit", "4k/0:8k,")]).unwrap();
        assert_eq!(a.bssplit, [Some(vec![(4096, None), (8192, None)]), None]);
        assert_eq!(a.size_range(0, 4096), (4096, 8192));
        assert_eq!(a.size_range(1, 16384), (16384, 16384));
        assert!(job(&[("bssplit", "4k/x")]).unwrap_err().contains("'x'"));
        let a = job(&[("bsrange", "64k-4k,8k:16k")]).unwrap();
        assert_eq!(a.bsrange, [Some((4096, 65536)), Some((8192, 16384))]);
    }

    #[test]
    fn distributions_and_times() {
        let a = job(&[("random_distribution", "zoned_abs:60/20g:40/100g")]).unwrap();
        assert_eq!(
            a.random_distribution.unwrap().to_string(),
            "zoned_abs:60/20GiB:40/100GiB"
        );
        let a = job(&[("random_distribution", "random")]).unwrap();
        assert_eq!(a.random_distribution, None);
        assert!(
            job(&[("random_distribution", "zipf:1")])
                .unwrap_err()
                .contains("not 1")
        );
        // thinktime's bare number is microseconds; thinktime_iotime's seconds.
        let a = job(&[("thinktime", "250"), ("thinktime_iotime", "2")]).unwrap();
        assert_eq!(a.thinktime, Some(TimeSpan(Nanos(250_000))));
        assert_eq!(a.thinktime_iotime, Some(TimeSpan::from_secs(2)));
        assert!(FioAccess::default().apply("bs", Some("4k"), 1024).is_none());
    }
}
