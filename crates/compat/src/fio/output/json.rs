//! fio's `--output-format=json` (and `json+`, which adds each direction's completion
//! latency bins): the keys, nesting and types fio 3.33 writes, so fio-plot, pandas
//! code and fio2gnuplot-style scripts read iolab's output unchanged. Integer figures
//! stay integers and rates stay floats, as fio prints them.

use serde_json::{Map, Value, json};

use super::{
    DEPTH_BUCKETS, Direction, DiskUtil, FioReport, JobReport, LAT_MS_LIMITS, LAT_NS_LIMITS, Spread,
    depth_bucket,
};
use crate::fio::reporting::{ReportOptions, Unified};
use iolab_core::civil::UtcTime;

/// The whole report as fio's JSON document.
pub fn render(report: &FioReport, plus: bool) -> String {
    let mut doc = json!({
        "fio version": report.version,
        "timestamp": report.timestamp_ms / 1000,
        "timestamp_ms": report.timestamp_ms,
        "time": ctime(report.timestamp_ms),
    });
    // As fio: only when globals were given, before the jobs.
    if !report.global_options.is_empty() {
        doc["global options"] = Value::Object(
            report
                .global_options
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect(),
        );
    }
    doc["jobs"] = json!(report.jobs.iter().map(|j| job(j, plus)).collect::<Vec<_>>());
    doc["disk_util"] = json!(report.disks.iter().map(disk).collect::<Vec<_>>());
    doc["iolab notes"] = json!(report.notes);
    let mut text = serde_json::to_string_pretty(&doc).expect("a JSON value always serializes");
    text.push('\n');
    text
}

/// fio's `time`: C's ctime() layout ("Tue Nov 24 19:32:06 2026"), in UTC.
pub fn ctime(ms: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = UtcTime::from_ms(ms);
    let weekday = DAYS[ms.div_euclid(86_400_000).rem_euclid(7) as usize];
    let month = MONTHS[(t.month as usize).clamp(1, 12) - 1];
    format!(
        "{weekday} {month} {:2} {:02}:{:02}:{:02} {}",
        t.day, t.hour, t.minute, t.second, t.year
    )
}

fn job(j: &JobReport, plus: bool) -> Value {
    let options: Map<String, Value> = j
        .options
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let per_call = per_call();
    let r = &j.reporting;
    let mut v = json!({
        "jobname": j.name,
        "groupid": j.group,
        "error": j.error,
        "eta": 0,
        "elapsed": j.elapsed_s,
        "job options": options,
    });
    // unified_rw_reporting: fio writes "mixed" in place of the directions (mixed), or
    // after them and "sync" (both).
    if r.unified != Unified::Mixed {
        v["read"] = direction(&j.read, plus, r);
        v["write"] = direction(&j.write, plus, r);
        v["trim"] = direction(&j.trim, plus, r);
        v["sync"] = json!({
            "total_ios": j.sync.n,
            "lat_ns": spread(&j.sync, None),
        });
    }
    if let Some(m) = &j.mixed {
        v["mixed"] = direction(m, plus, r);
    }
    let rest = json!({
        "job_runtime": j.job_runtime_ms,
        "usr_cpu": j.usr_cpu,
        "sys_cpu": j.sys_cpu,
        "ctx": j.ctx,
        "majf": 0,
        "minf": 0,
        "iodepth_level": depth_levels(j.iodepth),
        "iodepth_submit": per_call.clone(),
        "iodepth_complete": per_call,
        "latency_ns": latency_buckets(&LAT_NS_LIMITS, &j.latency.ns, false),
        "latency_us": latency_buckets(&LAT_NS_LIMITS, &j.latency.us, false),
        "latency_ms": latency_buckets(&LAT_MS_LIMITS, &j.latency.ms, true),
        "latency_depth": j.latency_target.map_or(j.iodepth, |l| l.0),
        "latency_target": j.latency_target.map_or(0, |l| l.1),
        "latency_percentile": j.latency_target.map_or(100.0, |l| l.2),
        "latency_window": j.latency_target.map_or(0, |l| l.3),
    });
    if let (Value::Object(head), Value::Object(tail)) = (&mut v, rest) {
        head.extend(tail);
    }
    if let Some(ss) = &j.steady {
        v["steadystate"] = steadystate(ss);
    }
    v
}

/// fio's iodepth_level: all of a job's I/O at the bucket its queue depth falls in.
fn depth_levels(iodepth: u32) -> Map<String, Value> {
    let depth = depth_bucket(iodepth);
    DEPTH_BUCKETS
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let key = if *b == 64 {
                ">=64".to_string()
            } else {
                b.to_string()
            };
            (key, json!(if i == depth { 100.0 } else { 0.0 }))
        })
        .collect()
}

/// Submissions and completions per call: iolab hands the kernel one I/O per call
/// (fio's "4" bucket holds 1 to 4).
fn per_call() -> Map<String, Value> {
    ["0", "4", "8", "16", "32", "64", ">=64"]
        .iter()
        .map(|k| (k.to_string(), json!(if *k == "4" { 100.0 } else { 0.0 })))
        .collect()
}

/// A latency_ns/us/ms object: each limit's share, and with `open` the share of 2000 and
/// more.
fn latency_buckets(limits: &[u64], values: &[f64], open: bool) -> Map<String, Value> {
    let mut m: Map<String, Value> = limits
        .iter()
        .zip(values)
        .map(|(l, v)| (l.to_string(), json!(v)))
        .collect();
    if open {
        m.insert(">=2000".into(), json!(values[limits.len()]));
    }
    m
}

/// fio 3.33's `steadystate` object (stat.c, show_thread_status_json).
fn steadystate(ss: &super::SteadyState) -> Value {
    let pct = if ss.rule.percent { "%" } else { "" };
    json!({
        "ss": format!("{}:{:.6}{pct}", ss.rule.name(), ss.rule.limit as f32),
        "duration": ss.duration,
        "attained": u8::from(ss.attained),
        "criterion": format!("{:.6}{pct}", ss.criterion as f32),
        "max_deviation": ss.max_deviation,
        "slope": ss.slope,
        "data": {
            "bw_mean": ss.bw_mean(),
            "iops_mean": ss.iops_mean(),
            "iops": ss.iops,
            "bw": ss.bw,
        },
    })
}

/// One direction; its latency percentiles under `clat_ns` (fio's default) and/or
/// `lat_ns` (lat_percentiles): iolab's clat is its lat, so both hold the same values.
fn direction(d: &Direction, plus: bool, r: &ReportOptions) -> Value {
    let percentiles: Map<String, Value> = d
        .percentiles
        .iter()
        .map(|(p, v)| (format!("{p:.6}"), json!(v)))
        .collect();
    let some = (!percentiles.is_empty()).then_some(percentiles);
    let mut clat = spread(&d.lat, some.clone().filter(|_| r.clat));
    if plus && !d.bins.is_empty() {
        let bins: Map<String, Value> = d
            .bins
            .iter()
            .map(|(v, c)| (v.to_string(), json!(c)))
            .collect();
        clat["bins"] = Value::Object(bins);
    }
    let mut v = json!({
        "io_bytes": d.io_bytes,
        "io_kbytes": d.io_bytes / 1024,
        "bw_bytes": d.bw_bytes.round() as u64,
        "bw": (d.bw_bytes / 1024.0).round() as u64,
        "iops": d.iops,
        "runtime": if d.total_ios > 0 { d.runtime_ms } else { 0 },
        "total_ios": d.total_ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": spread(&Spread::default(), None),
        "clat_ns": clat,
        "lat_ns": spread(&d.lat, some.filter(|_| r.lat)),
        "bw_min": d.bw_samples.min.round() as u64,
        "bw_max": d.bw_samples.max.round() as u64,
        "bw_agg": d.agg_percent,
        "bw_mean": d.bw_samples.mean,
        "bw_dev": d.bw_samples.stddev,
        "bw_samples": d.bw_samples.n,
        "iops_min": d.iops_samples.min.round() as u64,
        "iops_max": d.iops_samples.max.round() as u64,
        "iops_mean": d.iops_samples.mean,
        "iops_stddev": d.iops_samples.stddev,
        "iops_samples": d.iops_samples.n,
    });
    if !d.prios.is_empty() {
        // fio 3.33 (stat.c): after lat_ns, each priority's latencies under clat_ns
        // (lat_ns with lat_percentiles), with the percentiles when either is asked.
        let name = if r.lat { "lat_ns" } else { "clat_ns" };
        let prios: Vec<Value> = d
            .prios
            .iter()
            .map(|(p, s, list)| {
                let pct: Map<String, Value> = list
                    .iter()
                    .map(|(q, v)| (format!("{q:.6}"), json!(v)))
                    .collect();
                let pct = (!pct.is_empty() && (r.clat || r.lat)).then_some(pct);
                json!({
                    "prioclass": p >> 13,
                    "prio": p & 7,
                    name: spread(s, pct),
                })
            })
            .collect();
        // In fio's place: right after lat_ns.
        if let Value::Object(m) = &mut v {
            let mut out = Map::new();
            for (k, val) in std::mem::take(m) {
                let after = k == "lat_ns";
                out.insert(k, val);
                if after {
                    out.insert("prios".into(), Value::Array(prios.clone()));
                }
            }
            *m = out;
        }
    }
    v
}

/// `{"min", "max", "mean", "stddev", "N"}` with fio's types, and its percentiles.
fn spread(s: &Spread, percentiles: Option<Map<String, Value>>) -> Value {
    let mut v = json!({
        "min": s.min.round() as u64,
        "max": s.max.round() as u64,
        "mean": s.mean,
        "stddev": s.stddev,
        "N": s.n,
    });
    if let Some(p) = percentiles {
        v["percentile"] = Value::Object(p);
    }
    v
}

/// One device of fio's `disk_util` (the keys fio writes for a plain disk; the `aggr_*`
/// keys of a device-mapper or md device are not written).
fn disk(d: &DiskUtil) -> Value {
    json!({
        "name": d.name,
        "read_ios": d.read_ios,
        "write_ios": d.write_ios,
        "read_merges": d.read_merges,
        "write_merges": d.write_merges,
        "read_ticks": d.read_ticks,
        "write_ticks": d.write_ticks,
        "in_queue": d.in_queue,
        "util": d.util,
    })
}
