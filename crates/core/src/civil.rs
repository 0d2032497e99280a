//! UTC calendar dates for the epoch milliseconds runs are stamped with (Howard Hinnant's
//! civil-from-days algorithms): [`UtcTime::from_ms`] and its inverse for whole days,
//! [`days_from_civil`]; [`now_ms`], the one wall clock runs and samples are stamped with.

/// Milliseconds since the Unix epoch now (0 on a clock set before 1970): what runs,
/// phases, inventories and telemetry samples are stamped with.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A moment in UTC, to the second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
}

impl UtcTime {
    /// Milliseconds since 1970-01-01 00:00 UTC.
    pub fn from_ms(ms: i64) -> UtcTime {
        let secs = ms.div_euclid(1000);
        let days = secs.div_euclid(86_400);
        let rest = secs.rem_euclid(86_400);
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        UtcTime {
            year: yoe + era * 400 + i64::from(month <= 2),
            month,
            day,
            hour: rest / 3600,
            minute: rest / 60 % 60,
            second: rest % 60,
        }
    }
}

/// `ctime`'s form of a moment in UTC, as IOR and mdtest stamp their output:
/// "Wed Nov 25 08:34:02 2026".
pub fn ctime(ms: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = UtcTime::from_ms(ms);
    let weekday = ms.div_euclid(86_400_000).rem_euclid(7) as usize;
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[weekday],
        MONTHS[(t.month - 1).clamp(0, 11) as usize],
        t.day,
        t.hour,
        t.minute,
        t.second,
        t.year
    )
}

/// Days since 1970-01-01 of a calendar date (month 1-12, day 1-31).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_moments_and_round_trips() {
        let t = UtcTime::from_ms(1_700_000_000_000);
        assert_eq!(
            (t.year, t.month, t.day, t.hour, t.minute, t.second),
            (2023, 11, 14, 22, 13, 20)
        );
        assert_eq!(UtcTime::from_ms(0).year, 1970);
        assert_eq!(UtcTime::from_ms(-1).year, 1969);
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        for days in [-800_000, -1, 0, 59, 60, 11_016, 20_000, 2_000_000] {
            let t = UtcTime::from_ms(days * 86_400_000);
            assert_eq!(days_from_civil(t.year, t.month, t.day), days, "{t:?}");
        }
    }
}

#[cfg(test)]
mod ctime_tests {
    #[test]
    fn ctime_reads_like_iors_stamp() {
        // 2026-11-25 08:34:02 UTC, a Wednesday.
        let ms =
            super::days_from_civil(2026, 11, 25) * 86_400_000 + (8 * 3600 + 34 * 60 + 2) * 1000;
        assert_eq!(super::ctime(ms), "Wed Nov 25 08:34:02 2026");
        assert_eq!(super::ctime(0), "Thu Jan  1 00:00:00 1970");
    }
}
