//! fio's normal output: per job the `read: IOPS=..., BW=...` line, `clat`/`lat` with
//! fio's unit choice, the percentile block, `bw`/`iops` sample lines, the latency
//! distribution, cpu and IO depths; then `Run status group N (all jobs):` lines and
//! `Disk stats (read/write):`.

use std::fmt::Write;

use super::{
    DEPTH_BUCKETS, Direction, FioReport, JobReport, LAT_MS_LIMITS, LAT_NS_LIMITS, Spread,
    depth_bucket,
};
use crate::fio::reporting::Unified;

/// The whole report: its head (one line per job, the version, the notes) and body.
pub fn render(report: &FioReport) -> String {
    let mut out = head(report);
    out.push_str(&body(report));
    out
}

/// One line per job (a clone's entry does not repeat its job's line), the version and
/// the notes: what fio prints once, before the first report.
pub fn head(report: &FioReport) -> String {
    let mut out = String::new();
    let mut last: Option<(&str, u32)> = None;
    for j in &report.jobs {
        if last == Some((j.name.as_str(), j.group)) {
            continue;
        }
        last = Some((j.name.as_str(), j.group));
        let _ = writeln!(
            out,
            "{}: (g={}): rw={}, bs=(R) {r}-{r2}, (W) {w}-{w2}, (T) {t}-{t2}, ioengine={}, iodepth={}",
            j.name,
            j.group,
            j.rw,
            j.engine,
            j.iodepth,
            // fio's number format: "4096B", "64.0KiB", "2048KiB".
            r = binary(j.block_sizes[0].0 as f64, ""),
            r2 = binary(j.block_sizes[0].1 as f64, ""),
            w = binary(j.block_sizes[1].0 as f64, ""),
            w2 = binary(j.block_sizes[1].1 as f64, ""),
            t = binary(j.block_sizes[2].0 as f64, ""),
            t2 = binary(j.block_sizes[2].1 as f64, ""),
        );
    }
    let _ = writeln!(out, "{}", report.version);
    for note in &report.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

/// Each entry's block, the run status of each group and the disk statistics: what fio
/// prints again at every `--status-interval`.
pub fn body(report: &FioReport) -> String {
    let mut out = String::new();
    for j in &report.jobs {
        out.push('\n');
        job(&mut out, j);
    }
    run_status(&mut out, report);
    if !report.disks.is_empty() {
        let _ = writeln!(out, "\nDisk stats (read/write):");
        for d in &report.disks {
            let _ = writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
                d.name,
                d.read_ios,
                d.write_ios,
                d.read_merges,
                d.write_merges,
                d.read_ticks,
                d.write_ticks,
                d.in_queue,
                d.util
            );
        }
    }
    out
}

/// `Run status group N (all jobs):` and its READ and WRITE lines.
fn run_status(out: &mut String, report: &FioReport) {
    for g in &report.groups {
        let _ = writeln!(out, "\nRun status group {} (all jobs):", g.group);
        for (label, dir) in [("READ", &g.read), ("WRITE", &g.write)] {
            let Some(d) = dir else { continue };
            let _ = writeln!(
                out,
                "{label:>7}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
                binary(d.agg_bw, "/s"),
                decimal(d.agg_bw, "/s"),
                binary(d.min_bw, "/s"),
                binary(d.max_bw, "/s"),
                decimal(d.min_bw, "/s"),
                decimal(d.max_bw, "/s"),
                binary(d.bytes as f64, ""),
                decimal(d.bytes as f64, ""),
                d.min_run_ms,
                d.max_run_ms,
            );
        }
    }
}

fn job(out: &mut String, j: &JobReport) {
    // fio adds where and why after a non-zero err (its own source line is left out).
    let why = if j.error == 0 {
        String::new()
    } else {
        format!(
            " (func=io_u error, error={})",
            iolab_core::error::describe(&std::io::Error::from_raw_os_error(j.error))
        )
    };
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err={:2}{why}: pid=0",
        j.name, j.group, j.jobs, j.error
    );
    let r = &j.reporting;
    let mut shown: Vec<(&str, &Direction)> = Vec::new();
    if r.unified != Unified::Mixed {
        shown.extend([("read", &j.read), ("write", &j.write)]);
    }
    shown.extend(j.mixed.as_ref().map(|m| ("mixed", m)));
    for (label, d) in shown {
        if d.total_ios == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "  {label}: IOPS={}, BW={} ({})({}/{}msec)",
            count(d.iops),
            binary(d.bw_bytes, "/s"),
            decimal(d.bw_bytes, "/s"),
            binary(d.io_bytes as f64, ""),
            d.runtime_ms
        );
        let (unit, div) = latency_unit(&d.lat);
        for name in ["clat", " lat"] {
            let _ = writeln!(
                out,
                "    {name} ({unit}): min={}, max={}, avg={:.2}, stdev={:.2}",
                (d.lat.min / div).floor(),
                (d.lat.max / div).floor(),
                d.lat.mean / div,
                d.lat.stddev / div
            );
        }
        // fio's per-priority lines (cmdprio_*), when two or more priorities have I/Os.
        let kind = if r.lat { "lat" } else { "clat" };
        for (p, s, _) in &d.prios {
            let (unit, div) = latency_unit(s);
            let _ = writeln!(
                out,
                "    {kind} prio {}/{} ({unit}): min={}, max={}, avg={:.2}, stdev={:.2}",
                p >> 13,
                p & 7,
                (s.min / div).floor(),
                (s.max / div).floor(),
                s.mean / div,
                s.stddev / div
            );
        }
        let (unit, div) = percentile_unit(d);
        // iolab's clat is its lat: both blocks, when asked for, hold the same values.
        for (on, name) in [(r.clat, "clat"), (r.lat, "lat")] {
            if on {
                percentiles(out, d, name, unit, div, r.precision);
            }
        }
        let _ = writeln!(
            out,
            "   bw (  KiB/s): min={}, max={}, per={:.2}%, avg={:.2}, stdev={:.2}, samples={}",
            d.bw_samples.min.round(),
            d.bw_samples.max.round(),
            d.agg_percent,
            d.bw_samples.mean,
            d.bw_samples.stddev,
            d.bw_samples.n
        );
        let _ = writeln!(
            out,
            "   iops        : min={}, max={}, avg={:.2}, stdev={:.2}, samples={}",
            d.iops_samples.min.round(),
            d.iops_samples.max.round(),
            d.iops_samples.mean,
            d.iops_samples.stddev,
            d.iops_samples.n
        );
    }
    for (unit, limits, values) in [
        ("nsec", &LAT_NS_LIMITS[..], &j.latency.ns[..]),
        ("usec", &LAT_NS_LIMITS[..], &j.latency.us[..]),
        ("msec", &LAT_MS_LIMITS[..], &j.latency.ms[..]),
    ] {
        let parts: Vec<String> = values
            .iter()
            .enumerate()
            .filter(|(_, v)| **v >= 0.01)
            .map(|(i, v)| match limits.get(i) {
                Some(l) => format!("{l}={v:.2}%"),
                None => format!(">=2000={v:.2}%"),
            })
            .collect();
        if !parts.is_empty() {
            let _ = writeln!(out, "  lat ({unit})   : {}", parts.join(", "));
        }
    }
    let _ = writeln!(
        out,
        "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}, majf=0, minf=0",
        j.usr_cpu, j.sys_cpu, j.ctx
    );
    let depth = depth_bucket(j.iodepth);
    let depths: Vec<String> = DEPTH_BUCKETS
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let share = if i == depth { 100.0 } else { 0.0 };
            match b {
                64 => format!(">=64={share:.1}%"),
                b => format!("{b}={share:.1}%"),
            }
        })
        .collect();
    let _ = writeln!(out, "  IO depths    : {}", depths.join(", "));
    // One I/O handed to the kernel per call: fio's "4" bucket holds 1 to 4.
    let per_call = "0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%";
    let _ = writeln!(out, "     submit    : {per_call}");
    let _ = writeln!(out, "     complete  : {per_call}");
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},0,0 short=0,0,0,0 dropped=0,0,0,0",
        j.read.total_ios, j.write.total_ios
    );
    let (depth, target, percentile, window) = j.latency_target.unwrap_or((j.iodepth, 0, 100.0, 0));
    let _ = writeln!(
        out,
        "     latency   : target={target}, window={window}, percentile={percentile:.2}%, depth={depth}"
    );
    if let Some(ss) = &j.steady {
        use iolab_core::steady::{SteadyMetric, SteadyTest};
        let _ = writeln!(
            out,
            "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={:.3}{}",
            if ss.attained { "yes" } else { "no" },
            binary(ss.bw_mean() as f64, ""),
            decimal(ss.bw_mean() as f64, ""),
            count(ss.iops_mean() as f64),
            if ss.rule.metric == SteadyMetric::Iops {
                "iops"
            } else {
                "bw"
            },
            if ss.rule.test == SteadyTest::Slope {
                " slope"
            } else {
                " mean dev"
            },
            ss.criterion,
            if ss.rule.percent { "%" } else { "" }
        );
    }
}

/// fio's percentile block (stat.c's show_clat_percentiles): labels with `precision`
/// decimals, values at least 5 wide, as many to a line as fit in 80 columns.
fn percentiles(
    out: &mut String,
    d: &Direction,
    name: &str,
    unit: &str,
    div: f64,
    precision: usize,
) {
    if d.percentiles.is_empty() {
        return;
    }
    let _ = writeln!(out, "    {name} percentiles ({unit}):");
    let values: Vec<u64> = d
        .percentiles
        .iter()
        .map(|(_, v)| (*v as f64 / div).ceil() as u64)
        .collect();
    let max = values.iter().copied().max().unwrap_or(0);
    let width = max.max(1).ilog10() as usize + 1;
    let width = width.max(5);
    let per_line = ((80 - 7) / (precision + 10 + width)).max(1);
    let label = precision + 3;
    let cells: Vec<(f64, u64)> = d
        .percentiles
        .iter()
        .zip(&values)
        .map(|((p, _), v)| (*p, *v))
        .collect();
    let rows: Vec<&[(f64, u64)]> = cells.chunks(per_line).collect();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .map(|(p, v)| format!("{p:label$.precision$}th=[{v:width$}]"))
            .collect();
        let end = if i + 1 < rows.len() { "," } else { "" };
        let _ = writeln!(out, "     | {}{end}", cells.join(", "));
    }
}

/// fio's unit for a latency block (stat.h's nsec_to_usec and nsec_to_msec): usec when
/// min is above 2 µs, max above 100 µs and the deviation above 1 µs; msec likewise
/// above 2 ms, 100 ms and 1 ms; else nsec.
fn latency_unit(s: &Spread) -> (&'static str, f64) {
    if s.min > 2_000_000.0 && s.max > 99_999_999.0 && s.stddev > 1_000_000.0 {
        ("msec", 1_000_000.0)
    } else if s.min > 2_000.0 && s.max > 99_999.0 && s.stddev > 1_000.0 {
        ("usec", 1_000.0)
    } else {
        ("nsec", 1.0)
    }
}

/// fio's unit for the percentile block (stat.c's show_clat_percentiles): msec when the
/// smallest value is above 2 ms and the largest above 100 ms, usec when above 2 µs and
/// 100 µs, else nsec.
fn percentile_unit(d: &Direction) -> (&'static str, f64) {
    let min = d.percentiles.iter().map(|p| p.1).min().unwrap_or(0);
    let max = d.percentiles.iter().map(|p| p.1).max().unwrap_or(0);
    if min > 2_000_000 && max > 99_999_999 {
        ("msec", 1_000_000.0)
    } else if min > 2_000 && max > 99_999 {
        ("usec", 1_000.0)
    } else {
        ("nsec", 1.0)
    }
}

/// `15.3k`, `651k`, as fio prints IOPS.
fn count(v: f64) -> String {
    scaled(v, 1000.0, &["", "k", "M", "G"], "")
}

/// `59.9MiB` + suffix.
fn binary(v: f64, suffix: &str) -> String {
    scaled(v, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB"], suffix)
}

/// `62.8MB` + suffix.
fn decimal(v: f64, suffix: &str) -> String {
    scaled(v, 1000.0, &["B", "kB", "MB", "GB", "TB"], suffix)
}

/// fio's number format: scaled until it fits four digits, then as many decimals as
/// keep it to four characters ("1400KiB", "59.9MiB", "9.77MiB").
fn scaled(mut v: f64, base: f64, units: &[&str], suffix: &str) -> String {
    let mut i = 0;
    while v >= 10_000.0 && i + 1 < units.len() {
        v /= base;
        i += 1;
    }
    let int_digits = format!("{:.0}", v.trunc()).len();
    let decimals = if i == 0 {
        0
    } else {
        3usize.saturating_sub(int_digits)
    };
    format!("{v:.decimals$}{}{suffix}", units[i])
}
