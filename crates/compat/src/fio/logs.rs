//! fio's log files (`write_bw_log`, `write_lat_log`, `write_iops_log`) as one more
//! renderer of iolab's per-interval timeline: [`LogOptions`] are the options as a job
//! gives them, [`render_logs`] the files fio 3.33 would write for the clones of a job,
//! with fio's names (`PREFIX_bw.N.log`, `_lat`, `_clat`, `_slat`, `_iops`; one
//! `PREFIX_bw.log` with `per_job_logs=0`), columns (time in ms, value, direction,
//! block size, `[offset,]` priority) and units (KiB/s, I/Os per second, ns). Each line is
//! one `log_avg_msec` window of the timeline: its bandwidth or IOPS when the window is
//! whole and moved data, the mean (or, with `log_max_value`, the longest) latency of
//! the I/Os completed in it. fio without `log_avg_msec` logs every I/O; iolab keeps no
//! per-I/O record, so it logs 1000 ms windows then and says so. `write_hist_log`
//! (`PREFIX_clat_hist.N.log`) is written from each clone's own samples of fio's latency
//! bins (iolab_engine's hist_log, sampled as fio samples them): one line per
//! `log_hist_msec` window, `time, direction, block size` and fio's 1856 bins.

use std::path::Path;

use iolab_core::result::{OpKind, Timeline};
use iolab_core::units::Nanos;

use super::values::{boolean, number};

/// The window iolab logs in when fio would log every I/O.
pub const DEFAULT_WINDOW_MS: u64 = 1000;

/// A job's log options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    pub bw: Option<String>,
    pub lat: Option<String>,
    pub iops: Option<String>,
    /// fio's log_avg_msec (0: every I/O in fio).
    pub avg_msec: u64,
    pub max_value: bool,
    /// fio's per_job_logs (default 1): a file per clone, else one per job file prefix.
    pub shared_file: bool,
    pub offset: bool,
    /// fio's log_prio: the last column is the I/O priority in hex (0x0000 in iolab's
    /// averaged windows, as in fio's averaged logs), not fio's real-time flag.
    pub prio: bool,
    /// write_hist_log's prefix, and log_hist_msec (0: fio writes an empty file).
    pub hist: Option<String>,
    pub hist_msec: u64,
    /// fio's log_unix_epoch: the time column is milliseconds since the Unix epoch.
    pub unix_epoch: bool,
}

impl LogOptions {
    /// Applies `key` if it is a log option (None: it is not). `job` names the default
    /// prefix of a bare `write_*_log`.
    pub fn apply(
        &mut self,
        key: &str,
        value: Option<&str>,
        job: &str,
    ) -> Option<Result<(), String>> {
        let prefix = || -> Result<Option<String>, String> {
            match value.map(str::trim) {
                None => Ok(Some(job.to_string())),
                Some("") => Err("needs a file name prefix".into()),
                Some(p) => Ok(Some(p.to_string())),
            }
        };
        let result = match key {
            "write_bw_log" => prefix().map(|p| self.bw = p),
            "write_lat_log" => prefix().map(|p| self.lat = p),
            "write_iops_log" => prefix().map(|p| self.iops = p),
            "log_avg_msec" => value
                .ok_or_else(|| "needs a value (key=value)".to_string())
                .and_then(number)
                .map(|n| self.avg_msec = n),
            "log_hist_msec" => value
                .ok_or_else(|| "needs a value (key=value)".to_string())
                .and_then(number)
                .map(|n| self.hist_msec = n),
            "log_max_value" => boolean(value).map(|b| self.max_value = b),
            "per_job_logs" => boolean(value).map(|b| self.shared_file = !b),
            "log_offset" => boolean(value).map(|b| self.offset = b),
            "log_prio" => boolean(value).map(|b| self.prio = b),
            "log_unix_epoch" => boolean(value).map(|b| self.unix_epoch = b),
            "write_hist_log" => prefix().map(|p| self.hist = p),
            _ => return None,
        };
        Some(result)
    }

    /// Whether the job writes any log.
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.lat.is_some() || self.iops.is_some()
    }

    /// The window each line covers, in ms.
    pub fn window_ms(&self) -> u64 {
        if self.avg_msec == 0 {
            DEFAULT_WINDOW_MS
        } else {
            self.avg_msec
        }
    }

    /// The timeline resolution the windows need: a divisor of both the window and a
    /// second (iolab's own samples are per second).
    pub fn interval_ms(&self) -> Option<u64> {
        self.any().then(|| gcd(self.window_ms(), 1000))
    }

    /// The prefixes the job writes to, with the option that names each.
    pub fn prefixes(&self) -> Vec<(&'static str, &str)> {
        [
            ("write_bw_log", &self.bw),
            ("write_lat_log", &self.lat),
            ("write_iops_log", &self.iops),
            ("write_hist_log", &self.hist),
        ]
        .into_iter()
        .filter_map(|(k, p)| p.as_deref().map(|p| (k, p)))
        .collect()
    }

    /// Why a prefix cannot be written: its directory is missing (fio would run the job
    /// and lose the log with "fopen log: No such file or directory").
    pub fn check_dirs(&self, cwd: &Path) -> Result<(), (&'static str, String)> {
        for (key, prefix) in self.prefixes() {
            let dir = Path::new(prefix)
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let full = cwd.join(dir);
            if !full.is_dir() {
                return Err((
                    key,
                    format!(
                        "the log's directory {} does not exist; create it first (nothing was run)",
                        dir.display()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The greatest common divisor (1 for 0 and 0).
pub fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a.max(1) } else { gcd(b, a % b) }
}

/// One clone's data for its logs.
pub struct CloneLog<'a> {
    /// fio's thread number: clones counted from 1 over all jobs in order.
    pub number: u32,
    pub timeline: &'a Timeline,
    /// Per operation, each interval's longest latency.
    pub latency_max: &'a [(OpKind, Vec<u64>)],
    /// Its measured time.
    pub elapsed: Nanos,
    /// Added to every time of its lines: the wall-clock ms its measured time started at
    /// with log_unix_epoch (fio's alternate_epoch), else 0.
    pub epoch_ms: u64,
}

/// One log line's values per direction of a window.
#[derive(Clone, Copy, Default)]
struct Window {
    ops: u64,
    bytes: u64,
    latency_sum: u64,
    latency_max: u64,
}

/// The files a job's clones make, in order: (file name, its text). With a file per
/// clone each is whole; with `per_job_logs=0` the clones' lines follow one another in
/// one file per kind, as fio appends them.
pub fn render_logs(opts: &LogOptions, clones: &[CloneLog<'_>]) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = Vec::new();
    let mut add = |name: String, text: String| match files.iter_mut().find(|f| f.0 == name) {
        Some(f) => f.1.push_str(&text),
        None => files.push((name, text)),
    };
    let window = opts.window_ms();
    for c in clones {
        let name = |prefix: &str, kind: &str| {
            if opts.shared_file {
                format!("{prefix}_{kind}.log")
            } else {
                format!("{prefix}_{kind}.{}.log", c.number)
            }
        };
        let log = Samples {
            opts,
            epoch_ms: c.epoch_ms,
            windows: windows(c, window),
            window,
            elapsed_ms: c.elapsed.0 / 1_000_000,
        };
        if let Some(p) = &opts.bw {
            add(name(p, "bw"), log.rate(|w| w.bytes, 1024));
        }
        if let Some(p) = &opts.iops {
            add(name(p, "iops"), log.rate(|w| w.ops, 1));
        }
        if let Some(p) = &opts.lat {
            let lat = log.latency();
            // iolab times issue to completion (fio's lat, and its clat); it has no
            // submission time, so the slat log is empty, as fio's for psync.
            add(name(p, "lat"), lat.clone());
            add(name(p, "clat"), lat);
            add(name(p, "slat"), String::new());
        }
    }
    files
}

/// One clone's windows and how fio writes their samples.
struct Samples<'a> {
    opts: &'a LogOptions,
    epoch_ms: u64,
    windows: Vec<[Window; 2]>,
    window: u64,
    elapsed_ms: u64,
}

impl Samples<'_> {
    /// A sample line as fio writes it: time in ms (from the job's start, or since the
    /// Unix epoch with log_unix_epoch), value, direction, block size (0), with
    /// log_offset an offset (0), and the priority.
    fn line(&self, t: u64, v: u64, dir: usize) -> String {
        let t = t + self.epoch_ms;
        let prio = if self.opts.prio { "0x0000" } else { "0" };
        if self.opts.offset {
            format!("{t}, {v}, {dir}, 0, 0, {prio}\n")
        } else {
            format!("{t}, {v}, {dir}, 0, {prio}\n")
        }
    }

    /// Rates over whole windows that moved data, as fio's __add_samples: `pick` of a
    /// window per second, over `per`.
    fn rate(&self, pick: fn(&Window) -> u64, per: u64) -> String {
        let mut out = String::new();
        for (j, w) in self.windows.iter().enumerate() {
            let end = (j as u64 + 1) * self.window;
            if end > self.elapsed_ms {
                break;
            }
            for (dir, d) in w.iter().enumerate() {
                let v = pick(d);
                if v > 0 {
                    out.push_str(&self.line(end, v * 1000 / self.window / per, dir));
                }
            }
        }
        out
    }

    /// The mean (or with log_max_value the largest) latency of each window that
    /// completed I/O, the last one ending at the job's end.
    fn latency(&self) -> String {
        let mut lat = String::new();
        let windows = self.with_short_tail_joined();
        let last = windows.len();
        for (j, w) in windows.iter().enumerate() {
            let end = if j + 1 == last {
                self.elapsed_ms.max(1)
            } else {
                (j as u64 + 1) * self.window
            };
            for (dir, d) in w.iter().enumerate() {
                if d.ops == 0 {
                    continue;
                }
                let v = if self.opts.max_value {
                    d.latency_max
                } else {
                    (d.latency_sum as f64 / d.ops as f64 + 0.5) as u64
                };
                lat.push_str(&self.line(end, v, dir));
            }
        }
        lat
    }

    /// fio writes what completed after its last whole window with the one before it at
    /// the job's end: a last window of less than half its length joins the window before.
    fn with_short_tail_joined(&self) -> Vec<[Window; 2]> {
        let (window, elapsed_ms) = (self.window, self.elapsed_ms);
        let mut windows = self.windows.clone();
        let whole = (elapsed_ms / window) as usize;
        if windows.len() > whole && whole > 0 && elapsed_ms - whole as u64 * window < window / 2 {
            let tail = windows.split_off(whole);
            for t in tail {
                for (dir, d) in t.iter().enumerate() {
                    let w = &mut windows[whole - 1][dir];
                    w.ops += d.ops;
                    w.bytes += d.bytes;
                    w.latency_sum += d.latency_sum;
                    w.latency_max = w.latency_max.max(d.latency_max);
                }
            }
        }
        windows
    }
}

/// A clone's timeline in windows of `window` ms: per window, read and write.
fn windows(c: &CloneLog<'_>, window: u64) -> Vec<[Window; 2]> {
    let interval_ms = (c.timeline.interval.0 / 1_000_000).max(1);
    let per = (window / interval_ms).max(1) as usize;
    let mut out: Vec<[Window; 2]> = Vec::new();
    for (dir, op) in [OpKind::Read, OpKind::Write].into_iter().enumerate() {
        let Some(s) = c.timeline.series(op) else {
            continue;
        };
        let max = c
            .latency_max
            .iter()
            .find(|(o, _)| *o == op)
            .map(|(_, v)| v.as_slice())
            .unwrap_or(&[]);
        for i in 0..s.ops.len() {
            let j = i / per;
            if out.len() <= j {
                out.resize(j + 1, [Window::default(); 2]);
            }
            let w = &mut out[j][dir];
            w.ops += s.ops[i];
            w.bytes += s.bytes.get(i).copied().unwrap_or(0);
            w.latency_sum += s.latency_sum.get(i).copied().unwrap_or(0);
            w.latency_max = w.latency_max.max(max.get(i).copied().unwrap_or(0));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::result::OpSeries;

    fn timeline() -> Timeline {
        // 100 ms intervals: 3 intervals of reads, one of writes.
        Timeline {
            interval: Nanos(100_000_000),
            series: vec![
                OpSeries {
                    op: OpKind::Read,
                    ops: vec![10, 20, 30, 0, 40],
                    bytes: vec![40960, 81920, 122880, 0, 163840],
                    latency_sum: vec![1000, 4000, 9000, 0, 4000],
                },
                OpSeries {
                    op: OpKind::Write,
                    ops: vec![0, 5],
                    bytes: vec![0, 20480],
                    latency_sum: vec![0, 500],
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn windows_become_fios_lines() {
        let mut opts = LogOptions::default();
        for (k, v) in [
            ("write_bw_log", Some("p")),
            ("write_iops_log", Some("p")),
            ("write_lat_log", Some("p")),
            ("log_avg_msec", Some("200")),
        ] {
            opts.apply(k, v, "j").unwrap().unwrap();
        }
        assert_eq!(opts.interval_ms(), Some(200));
        let t = timeline();
        let max = vec![(OpKind::Read, vec![150, 300, 700, 0, 100])];
        let clones = [CloneLog {
            number: 3,
            timeline: &t,
            latency_max: &max,
            elapsed: Nanos(450_000_000),
            epoch_ms: 0,
        }];
        let files = render_logs(&opts, &clones);
        let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "p_bw.3.log",
                "p_iops.3.log",
                "p_lat.3.log",
                "p_clat.3.log",
                "p_slat.3.log"
            ]
        );
        // Window 0-200 ms: 30 reads (122880 B), 5 writes (20480 B); 200-400: 30 reads.
        // The window 400-600 is not whole at 450 ms: no rate; its latencies join the
        // window before, logged at the end (450 ms), as fio's last line.
        assert_eq!(
            files[0].1,
            "200, 600, 0, 0, 0\n200, 100, 1, 0, 0\n400, 600, 0, 0, 0\n"
        );
        assert_eq!(
            files[1].1,
            "200, 150, 0, 0, 0\n200, 25, 1, 0, 0\n400, 150, 0, 0, 0\n"
        );
        assert_eq!(
            files[2].1,
            "200, 167, 0, 0, 0\n200, 100, 1, 0, 0\n450, 186, 0, 0, 0\n"
        );
        assert_eq!(files[4].1, "");
        opts.max_value = true;
        opts.offset = true;
        opts.prio = true;
        opts.shared_file = true;
        let files = render_logs(&opts, &clones);
        assert_eq!(files[2].0, "p_lat.log");
        assert!(
            files[2].1.starts_with("200, 300, 0, 0, 0, 0x0000\n"),
            "{}",
            files[2].1
        );
    }

    #[test]
    fn bare_prefixes_and_missing_directories() {
        let mut opts = LogOptions::default();
        opts.apply("write_bw_log", None, "job1").unwrap().unwrap();
        assert_eq!(opts.bw.as_deref(), Some("job1"));
        assert_eq!(opts.window_ms(), 1000);
        opts.apply("write_iops_log", Some("no/such/dir/p"), "job1")
            .unwrap()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (key, why) = opts.check_dirs(dir.path()).unwrap_err();
        assert_eq!(key, "write_iops_log");
        assert!(why.contains("no/such/dir does not exist"), "{why}");
        opts.apply("write_hist_log", Some("h"), "j")
            .unwrap()
            .unwrap();
        assert_eq!(opts.hist.as_deref(), Some("h"));
    }
}
