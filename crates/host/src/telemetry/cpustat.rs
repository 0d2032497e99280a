//! /proc/stat: [`CpuTimes`] is the aggregate "cpu" line (ticks per state, summed over
//! all CPUs), and [`cpu_percent`] turns two of them into the shares of the interval
//! iostat's avg-cpu shows ([`CpuPercent`]).

use serde::Serialize;

use crate::error::HostError;
use crate::telemetry::diskstats::delta;

const TABLE: &str = "/proc/stat";

/// Cumulative ticks of all CPUs. Fields an older kernel does not print are 0. Guest
/// time is also counted in user (and guest_nice in nice), as the kernel does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub guest: u64,
    pub guest_nice: u64,
}

impl CpuTimes {
    /// The aggregate "cpu " line of /proc/stat's text.
    pub fn parse(stat: &str) -> Result<CpuTimes, HostError> {
        let line = stat
            .lines()
            .find(|l| l.split_whitespace().next() == Some("cpu"))
            .ok_or_else(|| HostError::FieldCount {
                table: TABLE,
                found: 0,
                expected: "a 'cpu' line",
                line: String::new(),
            })?;
        let fields: Vec<&str> = line.split_whitespace().skip(1).collect();
        if fields.len() < 4 {
            return Err(HostError::FieldCount {
                table: TABLE,
                found: fields.len() + 1,
                expected: "5 to 11",
                line: line.to_string(),
            });
        }
        const NAMES: [&str; 10] = [
            "user",
            "nice",
            "system",
            "idle",
            "iowait",
            "irq",
            "softirq",
            "steal",
            "guest",
            "guest_nice",
        ];
        let mut values = [0u64; 10];
        for (i, (value, name)) in fields.iter().zip(NAMES).enumerate() {
            values[i] = value.parse().map_err(|_| HostError::NotANumber {
                table: TABLE,
                field: name,
                value: value.to_string(),
                line: line.to_string(),
            })?;
        }
        let [
            user,
            nice,
            system,
            idle,
            iowait,
            irq,
            softirq,
            steal,
            guest,
            guest_nice,
        ] = values;
        Ok(CpuTimes {
            user,
            nice,
            system,
            idle,
            iowait,
            irq,
            softirq,
            steal,
            guest,
            guest_nice,
        })
    }

    /// All the time there was: guest time is left out as it is already in user/nice.
    fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// Shares of an interval, in percent of all CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct CpuPercent {
    pub user: f64,
    pub nice: f64,
    /// Kernel time including hard and soft interrupts.
    pub system: f64,
    pub iowait: f64,
    pub steal: f64,
    pub idle: f64,
}

/// CPU use between two readings, as iostat's avg-cpu: each state's ticks over the total.
pub fn cpu_percent(previous: &CpuTimes, current: &CpuTimes) -> CpuPercent {
    let total = delta(previous.total(), current.total()) as f64;
    if total <= 0.0 {
        return CpuPercent::default();
    }
    let share = |f: fn(&CpuTimes) -> u64| delta(f(previous), f(current)) as f64 / total * 100.0;
    CpuPercent {
        user: share(|c| c.user),
        nice: share(|c| c.nice),
        system: share(|c| c.system + c.irq + c.softirq),
        iowait: share(|c| c.iowait),
        steal: share(|c| c.steal),
        idle: share(|c| c.idle),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_aggregate_line() {
        let t = CpuTimes::parse(include_str!("../../tests/fixtures/proc-stat")).unwrap();
        assert_eq!(
            t,
            CpuTimes {
                user: 23156,
                nice: 12,
                system: 2766,
                idle: 77064,
                iowait: 764,
                irq: 5,
                softirq: 91,
                steal: 8,
                guest: 100,
                guest_nice: 3,
            }
        );
    }

    #[test]
    fn old_kernels_print_fewer_fields() {
        let t = CpuTimes::parse("cpu 1 2 3 4\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!((t.user, t.idle, t.iowait, t.steal), (1, 4, 0, 0));
    }

    #[test]
    fn malformed_is_an_error() {
        assert!(CpuTimes::parse("intr 1 2\n").is_err());
        assert!(CpuTimes::parse("cpu 1 2\n").is_err());
        let e = CpuTimes::parse("cpu 1 2 x 4\n").unwrap_err();
        assert!(
            matches!(
                e,
                HostError::NotANumber {
                    field: "system",
                    ..
                }
            ),
            "{e:?}"
        );
    }

    /// 1000 ticks pass: user 400 (of which guest 50), nice 50, system 150 + irq 20 +
    /// softirq 30, iowait 100, steal 50, idle 200.
    #[test]
    fn percentages_by_hand() {
        let before = CpuTimes::parse("cpu 1000 100 500 5000 200 10 20 5 0 0").unwrap();
        let after = CpuTimes::parse("cpu 1400 150 650 5200 300 30 50 55 50 0").unwrap();
        let p = cpu_percent(&before, &after);
        assert_eq!(p.user, 40.0);
        assert_eq!(p.nice, 5.0);
        assert_eq!(p.system, 20.0);
        assert_eq!(p.iowait, 10.0);
        assert_eq!(p.steal, 5.0);
        assert_eq!(p.idle, 20.0);
        let sum = p.user + p.nice + p.system + p.iowait + p.steal + p.idle;
        assert!((sum - 100.0).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn no_time_passed() {
        let t = CpuTimes::parse("cpu 1 2 3 4").unwrap();
        assert_eq!(cpu_percent(&t, &t), CpuPercent::default());
    }
}
