//! /proc/diskstats: [`DiskStat`] is one device's cumulative counters in any of the
//! kernel's layouts (7 fields for partitions before 2.6.25, 14 before 4.18, 18 with
//! discards, 20 with flushes since 5.5), and [`disk_rates`] turns two of them into
//! per-second rates exactly as iostat -x computes them ([`DiskRates`]).

use iolab_core::Nanos;
use serde::Serialize;

use crate::error::HostError;

const TABLE: &str = "/proc/diskstats";
const SECTOR_BYTES: f64 = 512.0;

/// One line of /proc/diskstats. Counters the layout lacks are 0.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DiskStat {
    pub major: u32,
    pub minor: u32,
    pub name: String,
    /// Number of fields on the line, names included: 7, 14, 18 or 20.
    pub layout: usize,
    pub reads: u64,
    pub reads_merged: u64,
    pub sectors_read: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub writes_merged: u64,
    pub sectors_written: u64,
    pub write_ms: u64,
    pub in_flight: u64,
    /// Time the device had I/O in flight (iostat's %util numerator).
    pub io_ms: u64,
    /// In-flight requests times time, summed (iostat's aqu-sz numerator).
    pub weighted_io_ms: u64,
    pub discards: u64,
    pub discards_merged: u64,
    pub sectors_discarded: u64,
    pub discard_ms: u64,
    pub flushes: u64,
    pub flush_ms: u64,
}

impl DiskStat {
    pub fn parse_line(line: &str) -> Result<DiskStat, HostError> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let layout = fields.len();
        if !matches!(layout, 7 | 14 | 18) && layout < 20 {
            return Err(HostError::FieldCount {
                table: TABLE,
                found: layout,
                expected: "7, 14, 18 or 20",
                line: line.trim().to_string(),
            });
        }
        let number = |i: usize, field: &'static str| -> Result<u64, HostError> {
            fields[i].parse().map_err(|_| HostError::NotANumber {
                table: TABLE,
                field,
                value: fields[i].to_string(),
                line: line.trim().to_string(),
            })
        };
        let mut s = DiskStat {
            major: number(0, "major")? as u32,
            minor: number(1, "minor")? as u32,
            name: fields[2].to_string(),
            layout,
            ..DiskStat::default()
        };
        if layout == 7 {
            // Old partition lines: reads, sectors read, writes, sectors written.
            s.reads = number(3, "reads")?;
            s.sectors_read = number(4, "sectors read")?;
            s.writes = number(5, "writes")?;
            s.sectors_written = number(6, "sectors written")?;
            return Ok(s);
        }
        s.reads = number(3, "reads")?;
        s.reads_merged = number(4, "reads merged")?;
        s.sectors_read = number(5, "sectors read")?;
        s.read_ms = number(6, "read ms")?;
        s.writes = number(7, "writes")?;
        s.writes_merged = number(8, "writes merged")?;
        s.sectors_written = number(9, "sectors written")?;
        s.write_ms = number(10, "write ms")?;
        s.in_flight = number(11, "in flight")?;
        s.io_ms = number(12, "io ms")?;
        s.weighted_io_ms = number(13, "weighted io ms")?;
        if layout >= 18 {
            s.discards = number(14, "discards")?;
            s.discards_merged = number(15, "discards merged")?;
            s.sectors_discarded = number(16, "sectors discarded")?;
            s.discard_ms = number(17, "discard ms")?;
        }
        if layout >= 20 {
            s.flushes = number(18, "flushes")?;
            s.flush_ms = number(19, "flush ms")?;
        }
        Ok(s)
    }
}

/// Every parsable line of /proc/diskstats, and the errors of those that were not.
pub fn parse(text: &str) -> (Vec<DiskStat>, Vec<HostError>) {
    let mut stats = Vec::new();
    let mut errors = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match DiskStat::parse_line(line) {
            Ok(s) => stats.push(s),
            Err(e) => errors.push(e),
        }
    }
    (stats, errors)
}

/// One device over one interval, in iostat -x's terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct DiskRates {
    /// r/s, w/s
    pub read_iops: f64,
    pub write_iops: f64,
    /// rrqm/s, wrqm/s
    pub read_merges_per_sec: f64,
    pub write_merges_per_sec: f64,
    /// rkB/s and wkB/s, in bytes
    pub read_bytes_per_sec: f64,
    pub write_bytes_per_sec: f64,
    /// aqu-sz
    pub queue_size: f64,
    /// r_await, w_await (0 when no request completed)
    pub read_await_ms: f64,
    pub write_await_ms: f64,
    /// %util (not capped: io_ticks sampled off the interval's edges can pass 100)
    pub util_percent: f64,
}

/// The rates between two readings of one device `elapsed` apart, as iostat computes
/// them: counts over the interval, awaits as time per completed request, aqu-sz as
/// weighted time over the interval and %util as busy time over the interval.
pub fn disk_rates(previous: &DiskStat, current: &DiskStat, elapsed: Nanos) -> DiskRates {
    let ms = elapsed.0 as f64 / 1e6;
    if ms <= 0.0 {
        return DiskRates::default();
    }
    let secs = ms / 1e3;
    let d = |f: fn(&DiskStat) -> u64| delta(f(previous), f(current)) as f64;
    let reads = d(|s| s.reads);
    let writes = d(|s| s.writes);
    let per_request = |time: f64, count: f64| if count > 0.0 { time / count } else { 0.0 };
    DiskRates {
        read_iops: reads / secs,
        write_iops: writes / secs,
        read_merges_per_sec: d(|s| s.reads_merged) / secs,
        write_merges_per_sec: d(|s| s.writes_merged) / secs,
        read_bytes_per_sec: d(|s| s.sectors_read) * SECTOR_BYTES / secs,
        write_bytes_per_sec: d(|s| s.sectors_written) * SECTOR_BYTES / secs,
        queue_size: d(|s| s.weighted_io_ms) / ms,
        read_await_ms: per_request(d(|s| s.read_ms), reads),
        write_await_ms: per_request(d(|s| s.write_ms), writes),
        util_percent: d(|s| s.io_ms) / ms * 100.0,
    }
}

/// How much a counter grew. A counter that went back wrapped at 32 bits (the kernel
/// prints some as unsigned int) if it was below 2^32, else was reset (device re-created):
/// then it counts as no growth.
pub fn delta(previous: u64, current: u64) -> u64 {
    if current >= previous {
        current - previous
    } else if previous <= u64::from(u32::MAX) {
        (current + (1 << 32)) - previous
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL_6: &str = include_str!("../../tests/fixtures/diskstats-20");

    #[test]
    fn twenty_fields_with_discards_and_flushes() {
        let (stats, errors) = parse(KERNEL_6);
        assert!(errors.is_empty(), "{errors:?}");
        let vda = stats.iter().find(|s| s.name == "vda").unwrap();
        assert_eq!(
            *vda,
            DiskStat {
                major: 254,
                minor: 0,
                name: "vda".into(),
                layout: 20,
                reads: 31014,
                reads_merged: 5882,
                sectors_read: 2627722,
                read_ms: 15633,
                writes: 30551,
                writes_merged: 16478,
                sectors_written: 4577008,
                write_ms: 11466,
                in_flight: 0,
                io_ms: 9548,
                weighted_io_ms: 29441,
                discards: 8893,
                discards_merged: 20,
                sectors_discarded: 795032,
                discard_ms: 2281,
                flushes: 4411,
                flush_ms: 59,
            }
        );
        assert_eq!(stats.len(), 4);
    }

    #[test]
    fn eighteen_fields_have_discards_but_no_flushes() {
        let s = DiskStat::parse_line("8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15").unwrap();
        assert_eq!(s.layout, 18);
        assert_eq!((s.weighted_io_ms, s.discards, s.discard_ms), (11, 12, 15));
        assert_eq!((s.flushes, s.flush_ms), (0, 0));
    }

    #[test]
    fn fourteen_fields_before_discards() {
        let s =
            DiskStat::parse_line("   8       1 sda1 100 1 800 50 200 2 1600 70 3 110 130").unwrap();
        assert_eq!(s.layout, 14);
        assert_eq!(
            (s.reads, s.sectors_read, s.writes, s.sectors_written),
            (100, 800, 200, 1600)
        );
        assert_eq!((s.in_flight, s.io_ms, s.weighted_io_ms), (3, 110, 130));
        assert_eq!(s.discards, 0);
    }

    #[test]
    fn seven_fields_of_old_partitions() {
        let s = DiskStat::parse_line("8 1 sda1 35713 1122730 106304 850432").unwrap();
        assert_eq!(s.layout, 7);
        assert_eq!(
            (s.reads, s.sectors_read, s.writes, s.sectors_written),
            (35713, 1122730, 106304, 850432)
        );
        assert_eq!(s.read_ms, 0);
    }

    #[test]
    fn malformed_lines_are_errors_not_panics() {
        let (stats, errors) = parse(
            "8 0 sda 1 2 3\n8 0 sdb 1 2 3 4 5 6 7 8 9 x 11\n\n8 0 sdc 1 2 3 4 5 6 7 8 9 10 11\n",
        );
        assert_eq!(stats.len(), 1);
        assert_eq!(errors.len(), 2);
        assert!(matches!(errors[0], HostError::FieldCount { found: 6, .. }));
        assert!(
            matches!(&errors[1], HostError::NotANumber { field: "io ms", value, .. } if value == "x")
        );
        assert!(
            errors[0]
                .to_string()
                .contains("expected one of 7, 14, 18 or 20")
        );
    }

    #[test]
    fn future_layouts_with_more_fields_keep_the_known_ones() {
        let s = DiskStat::parse_line("8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 99 98")
            .unwrap();
        assert_eq!((s.flushes, s.flush_ms), (16, 17));
    }

    /// Two readings 2 s apart, rates worked out by hand with iostat's formulas.
    #[test]
    fn rates_match_iostat_arithmetic() {
        let before =
            DiskStat::parse_line("259 0 nvme0n1 1000 10 8000 500 2000 20 16000 3000 0 1000 3500")
                .unwrap();
        let after =
            DiskStat::parse_line("259 0 nvme0n1 3000 50 24000 1700 2500 30 20096 4000 4 2600 9900")
                .unwrap();
        let r = disk_rates(&before, &after, Nanos::from_secs(2));
        // r/s = 2000 reads / 2 s; w/s = 500 / 2
        assert_eq!(r.read_iops, 1000.0);
        assert_eq!(r.write_iops, 250.0);
        // rrqm/s = 40 / 2; wrqm/s = 10 / 2
        assert_eq!(r.read_merges_per_sec, 20.0);
        assert_eq!(r.write_merges_per_sec, 5.0);
        // rkB/s = 16000 sectors / 2 / 2 s = 4000 kB/s = 4,096,000 B/s; wkB/s = 4096/2/2 = 1024
        assert_eq!(r.read_bytes_per_sec, 4_096_000.0);
        assert_eq!(r.write_bytes_per_sec, 1_048_576.0);
        // r_await = 1200 ms / 2000 reads; w_await = 1000 ms / 500 writes
        assert_eq!(r.read_await_ms, 0.6);
        assert_eq!(r.write_await_ms, 2.0);
        // aqu-sz = 6400 weighted ms / 2000 ms
        assert_eq!(r.queue_size, 3.2);
        // %util = 1600 busy ms / 2000 ms
        assert_eq!(r.util_percent, 80.0);
    }

    #[test]
    fn idle_device_and_zero_interval() {
        let s = DiskStat::parse_line("8 0 sda 5 0 40 1 0 0 0 0 0 1 1").unwrap();
        let r = disk_rates(&s, &s, Nanos::from_millis(1000));
        assert_eq!(
            r,
            DiskRates::default(),
            "no requests: awaits are 0, not NaN"
        );
        assert_eq!(disk_rates(&s, &s, Nanos::ZERO), DiskRates::default());
    }

    #[test]
    fn counters_that_go_back() {
        assert_eq!(delta(10, 15), 5);
        assert_eq!(delta(u64::from(u32::MAX) - 1, 3), 5, "32-bit wrap");
        assert_eq!(delta(1 << 40, 7), 0, "reset");
    }
}
