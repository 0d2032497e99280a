//! How a job's figures are reported, as fio's options set it: [`ReportOptions`]
//! (`unified_rw_reporting`, `percentile_list`, `clat_percentiles`, `lat_percentiles`,
//! `slat_percentiles`), and the options iolab accepts with a word because its own
//! behaviour is already what they ask for ([`accepted_word`]).

use super::values::boolean;

/// fio's `unified_rw_reporting`: each direction apart (none), all directions summed as
/// one `mixed` entry (mixed), or both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Unified {
    #[default]
    None,
    Mixed,
    Both,
}

/// fio's default percentiles (`percentile_list`'s default).
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// fio's longest `percentile_list` (FIO_IO_U_LIST_MAX_LEN).
const MAX_PERCENTILES: usize = 20;

/// The reporting options of one job.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportOptions {
    pub unified: Unified,
    /// The percentiles reported, in order.
    pub percentiles: Vec<f64>,
    /// Digits after the point in the normal output's percentile labels: the most any
    /// value of the list was written with (fio's percentile_precision; 2 by default).
    pub precision: usize,
    /// Percentiles of completion latency (fio's default), of total latency, of
    /// submission latency (never measured by iolab: empty, as fio's for synchronous
    /// engines).
    pub clat: bool,
    pub lat: bool,
    pub slat: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            unified: Unified::None,
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            precision: 2,
            clat: true,
            lat: false,
            slat: false,
        }
    }
}

impl ReportOptions {
    /// Applies `key` if it is one of these options (None: not one of them).
    pub fn apply(&mut self, key: &str, value: Option<&str>) -> Option<Result<(), String>> {
        let result = match key {
            "unified_rw_reporting" => unified(value).map(|u| self.unified = u),
            "percentile_list" => self.set_list(value),
            "clat_percentiles" => boolean(value).map(|b| self.clat = b),
            "lat_percentiles" => boolean(value).map(|b| self.lat = b),
            "slat_percentiles" => boolean(value).map(|b| self.slat = b),
            _ => return None,
        };
        Some(result)
    }

    fn set_list(&mut self, value: Option<&str>) -> Result<(), String> {
        let text = value.ok_or("needs a value (key=value)")?;
        let mut list = Vec::new();
        let mut precision = 0;
        for part in text.split(':').map(str::trim) {
            let p: f64 = part
                .parse()
                .map_err(|_| format!("'{part}' is not a percentile (a number from 0 to 100)"))?;
            if !(0.0..=100.0).contains(&p) {
                return Err(format!("{part} is not a percentile from 0 to 100"));
            }
            if let Some((_, frac)) = part.split_once('.') {
                precision = precision.max(frac.len());
            }
            list.push(p);
        }
        if list.len() > MAX_PERCENTILES {
            return Err(format!(
                "{} percentiles: fio takes at most {MAX_PERCENTILES}",
                list.len()
            ));
        }
        self.percentiles = list;
        self.precision = precision;
        Ok(())
    }
}

/// fio 3.33's values: none/0, mixed/1, both/2.
fn unified(value: Option<&str>) -> Result<Unified, String> {
    match value.map(str::trim) {
        Some("none" | "0") => Ok(Unified::None),
        Some("mixed" | "1") | None => Ok(Unified::Mixed),
        Some("both" | "2") => Ok(Unified::Both),
        Some(other) => Err(format!(
            "'{other}' is not a value fio takes: use none, mixed or both (0, 1, 2)"
        )),
    }
}

/// The word said for an option iolab accepts because its own behaviour is what the
/// option asks for (or its figures are unchanged by it); None: not such an option.
/// `value` is checked as fio would read it.
pub fn accepted_word(key: &str, value: Option<&str>) -> Option<Result<String, String>> {
    let v = value.map(str::trim).unwrap_or("1");
    let word = match key {
        "gtod_reduce" => {
            "gtod_reduce: iolab times every I/O with one clock read at issue and one at completion either way (its clock costs ~20 ns); the latencies are still reported"
        }
        "disable_lat"
        | "disable_clat"
        | "disable_slat"
        | "disable_bw_measurement"
        | "disable_bw" => {
            "latency and bandwidth are measured either way (histograms, not per-I/O logs): the figures are still reported"
        }
        "continue_on_error" => {
            "continue_on_error: an I/O error still ends the clone it happens in (counted and named, exit status 1)"
        }
        "cpus_allowed" | "cpumask" | "cpus_allowed_policy" => {
            "CPU placement is left to the scheduler: the workers are not pinned to the CPUs given"
        }
        "nice" => "nice: the workers keep iolab's own scheduling priority",
        "prio" | "prioclass" => {
            "prio/prioclass: the workers' threads keep iolab's own I/O priority (no ioprio_set); with io_uring or libaio each I/O carries it in its SQE, as fio's"
        }
        "iodepth_batch_complete_min" | "iodepth_batch_complete_max" | "iodepth_batch_complete" => {
            "iodepth_batch_complete_*: iolab waits for one completion and reaps every one that is ready (fio's defaults, min 1 and max iodepth)"
        }
        "threads" => {
            "threads is an option of fio's tiobench profile; a plain job ignores it, in fio as here"
        }
        "create_serialize" => {
            "create_serialize: the job's files are made before it starts, one after another"
        }
        "verify_fatal" => {
            "verify_fatal: every block is checked and any mismatch fails the job (exit 1); iolab counts every mismatch where fio stops at the first with verify_fatal=1"
        }
        "verify_backlog" | "verify_backlog_batch" => {
            "verify_backlog: the written blocks are checked in one read-back pass when the job's writes end, not every N writes as fio interleaves them"
        }
        "verify_interval" => {
            "verify_interval: iolab checks each block as one unit (its header carries the block's offset and a checksum of all of it), not a header every verify_interval bytes"
        }
        "verify_pattern" => {
            "verify_pattern: iolab writes and checks its own self-checking blocks, not the pattern; data fio wrote with it does not verify"
        }
        "unit_base" => {
            return Some(match v {
                "0" | "1" | "8" => Ok(
                    "unit_base: bandwidth is printed in bytes (fio's default); the figures are the same"
                        .into(),
                ),
                other => Err(format!("'{other}' is not a unit base: use 0, 1 or 8")),
            });
        }
        _ => return None,
    };
    Some(Ok(word.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_lists_and_their_precision() {
        let mut r = ReportOptions::default();
        assert_eq!(r.precision, 2);
        r.apply("percentile_list", Some("50:99:99.999"))
            .unwrap()
            .unwrap();
        assert_eq!(r.percentiles, vec![50.0, 99.0, 99.999]);
        assert_eq!(r.precision, 3);
        let err = r.apply("percentile_list", Some("50:101")).unwrap();
        assert_eq!(err.unwrap_err(), "101 is not a percentile from 0 to 100");
        let many = vec!["1"; 21].join(":");
        assert!(
            r.apply("percentile_list", Some(&many))
                .unwrap()
                .unwrap_err()
                .contains("at most 20")
        );
        assert!(r.apply("bs", Some("4k")).is_none());
    }

    #[test]
    fn unified_takes_fios_values() {
        let mut r = ReportOptions::default();
        for (v, want) in [
            ("mixed", Unified::Mixed),
            ("2", Unified::Both),
            ("none", Unified::None),
            ("1", Unified::Mixed),
        ] {
            r.apply("unified_rw_reporting", Some(v)).unwrap().unwrap();
            assert_eq!(r.unified, want);
        }
        assert!(
            r.apply("unified_rw_reporting", Some("foo"))
                .unwrap()
                .unwrap_err()
                .contains("none, mixed or both")
        );
    }

    #[test]
    fn accepted_options_say_what_runs() {
        assert!(
            accepted_word("gtod_reduce", Some("1"))
                .unwrap()
                .unwrap()
                .contains("latencies are still reported")
        );
        assert!(accepted_word("unit_base", Some("3")).unwrap().is_err());
        assert!(accepted_word("bssplit", Some("4k/50")).is_none());
    }
}
