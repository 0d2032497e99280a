//! fio's value syntax: sizes with fio's suffixes read as fio's default `kb_base=1024`
//! reads them (`4k`, `4KB`, `4Ki` are 4096 bytes, but `4KiB` is 4000: in that mode fio
//! takes the IEC spelling with a B as powers of 1000, "to avoid breaking old scripts"),
//! times with a default unit of seconds (`900`, `15m`, `500ms`), booleans (`1`, `0`,
//! bare), whole numbers, and the counts and percentages made of them.

use iolab_core::units::{Nanos, TimeSpan};

/// A size as fio reads it, in bytes.
pub fn size(text: &str) -> Result<u64, String> {
    size_in(text, 1024)
}

/// A size as fio reads it under `kb_base` (1024, its default, or 1000: then `k` and
/// `kB` are powers of 1000 and the IEC spellings `Ki`, `KiB` powers of 1024).
pub fn size_in(text: &str, kb_base: u64) -> Result<u64, String> {
    let t = text.trim();
    if t.ends_with('%') {
        return Err(format!(
            "'{t}': a size in percent of the file or device is not supported; give bytes (4k, 1g)"
        ));
    }
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    if unit.starts_with('.') {
        // fio's strtoll stops at the point and finds no unit after it: 1.5m is 1 byte.
        return Err(format!(
            "'{t}': fio reads no fraction in a size (it would take it as {num} B); give a whole number of a smaller unit (1536k)"
        ));
    }
    let num: u64 = num
        .parse()
        .map_err(|_| format!("'{t}' is not a size: use a whole number with k, m, g, t or p"))?;
    let unit = unit.trim().to_ascii_lowercase();
    // "KiB" (an i and a b) is a power of 1000 under kb_base=1024; k, kb and ki are 1024.
    // Under kb_base=1000 the IEC spellings (ki, kib) are 1024 and the others 1000.
    let (prefix, base): (&str, u64) = match (unit.strip_suffix("ib"), kb_base) {
        (Some(p), 1000) if !p.is_empty() => (p, 1024),
        (Some(p), _) if !p.is_empty() => (p, 1000),
        _ => {
            let u = unit.strip_suffix('b').unwrap_or(&unit);
            match (u.strip_suffix('i'), kb_base) {
                (Some(p), _) => (p, 1024),
                (None, 1000) => (u, 1000),
                (None, _) => (u, 1024),
            }
        }
    };
    let power = match prefix {
        "" => 0,
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        _ => {
            return Err(format!(
                "'{t}' has an unknown unit '{unit}': use k, m, g, t or p (powers of 1024)"
            ));
        }
    };
    num.checked_mul(base.pow(power))
        .ok_or_else(|| format!("'{t}' is too large"))
}

/// A time as fio reads it; a bare number is seconds.
pub fn time(text: &str) -> Result<TimeSpan, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num.parse().map_err(|_| {
        format!("'{t}' is not a time: use a whole number with us, ms, s, m, h or d")
    })?;
    let nanos_per: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "s" | "sec" => 1_000_000_000,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        other => return Err(format!("'{t}' has an unknown time unit '{other}'")),
    };
    n.checked_mul(nanos_per)
        .filter(|&n| n <= TimeSpan::MAX.0.0)
        .map(|n| TimeSpan(Nanos(n)))
        .ok_or_else(|| format!("'{t}' is more than 100 years"))
}

/// A boolean: a bare option is true; `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`.
pub fn boolean(value: Option<&str>) -> Result<bool, String> {
    match value.map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(true),
        Some(v) => match v.as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(format!("'{v}' is not a boolean: use 1 or 0")),
        },
    }
}

/// A whole number (fio accepts size suffixes on counts too: `iodepth=1k` is 1024).
pub fn number(value: &str) -> Result<u64, String> {
    size(value).map_err(|_| format!("'{}' is not a whole number", value.trim()))
}

/// An option's value, or why the option needs one (it was written bare).
pub fn given(value: Option<&str>) -> Result<&str, String> {
    value.ok_or_else(|| "needs a value (key=value)".to_string())
}

/// A whole number of at least `min` that fits a u32.
pub fn count(value: Option<&str>, min: u64) -> Result<u32, String> {
    let n = number(given(value)?)?;
    if n < min || n > u32::MAX as u64 {
        return Err(format!("{n} is out of range (at least {min})"));
    }
    Ok(n as u32)
}

/// A percentage from 0 to 100.
pub fn percent(value: Option<&str>) -> Result<u8, String> {
    let n = number(given(value)?)?;
    u8::try_from(n)
        .ok()
        .filter(|p| *p <= 100)
        .ok_or_else(|| format!("{n} is not a percentage from 0 to 100"))
}

/// A period of N I/Os, as fsync= gives it: None for 0 (never).
pub fn every(value: Option<&str>) -> Result<Option<u64>, String> {
    let n = number(given(value)?)?;
    Ok((n > 0).then_some(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_fio_reads_them() {
        assert_eq!(size("4k").unwrap(), 4096);
        assert_eq!(size("4K").unwrap(), 4096);
        assert_eq!(size("2048k").unwrap(), 2 << 20);
        assert_eq!(size("1g").unwrap(), 1 << 30);
        assert_eq!(size("1GB").unwrap(), 1 << 30);
        assert_eq!(size("1Mi").unwrap(), 1 << 20);
        assert_eq!(size("1kb").unwrap(), 1024);
        // As fio 3.33 reads them (io_bytes of a null job of that size): the IEC spelling
        // with a B is a power of 1000 under fio's default kb_base=1024.
        assert_eq!(size("1GiB").unwrap(), 1_000_000_000);
        assert_eq!(size("1MiB").unwrap(), 1_000_000);
        assert_eq!(size("4KiB").unwrap(), 4000);
        assert_eq!(size("1kib").unwrap(), 1000);
        assert_eq!(size("47008").unwrap(), 47008);
        assert!(size("1.5m").unwrap_err().contains("take it as 1 B"));
        assert!(size("10%").unwrap_err().contains("percent"));
        assert!(size("4x").unwrap_err().contains("unknown unit 'x'"));
        assert!(size("k").unwrap_err().contains("not a size"));
        // kb_base=1000: SI prefixes are powers of 1000, IEC ones of 1024.
        assert_eq!(size_in("4k", 1000).unwrap(), 4000);
        assert_eq!(size_in("1MB", 1000).unwrap(), 1_000_000);
        assert_eq!(size_in("4KiB", 1000).unwrap(), 4096);
        assert_eq!(size_in("1Mi", 1000).unwrap(), 1 << 20);
    }

    #[test]
    fn times_default_to_seconds() {
        assert_eq!(time("900").unwrap(), TimeSpan::from_secs(900));
        assert_eq!(time("15m").unwrap(), TimeSpan::from_secs(900));
        assert_eq!(time("500ms").unwrap(), TimeSpan(Nanos(500_000_000)));
        assert!(
            time("5 fortnights")
                .unwrap_err()
                .contains("unknown time unit")
        );
    }

    #[test]
    fn booleans_and_numbers() {
        assert!(boolean(None).unwrap());
        assert!(!boolean(Some("0")).unwrap());
        assert!(boolean(Some("maybe")).is_err());
        assert_eq!(number("8").unwrap(), 8);
        assert!(number("eight").unwrap_err().contains("whole number"));
    }
}
