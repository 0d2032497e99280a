//! fio's terse output, version 3 (`--minimal`, `--output-format=terse`): one line of
//! semicolon-separated fields per job, in fio 3.33's order: header (5), read (41),
//! write (41), cpu (5), IO depths (7), latency in µs (10) and ms (12): 121 fields, then
//! 9 for each disk fio has statistics of (name, ios, merges, ticks, in_queue, util), as
//! fio appends them to every line. Latencies are in microseconds, bandwidths in KiB/s.

use super::{DEPTH_BUCKETS, Direction, DiskUtil, FioReport, JobReport, depth_bucket};

pub fn render(report: &FioReport) -> String {
    let mut out = String::new();
    for j in &report.jobs {
        let mut fields = line(&report.version, j);
        for d in &report.disks {
            fields.extend(disk(d));
        }
        out.push_str(&fields.join(";"));
        out.push('\n');
    }
    out
}

/// fio's nine disk fields.
fn disk(d: &DiskUtil) -> [String; 9] {
    [
        d.name.clone(),
        d.read_ios.to_string(),
        d.write_ios.to_string(),
        d.read_merges.to_string(),
        d.write_merges.to_string(),
        d.read_ticks.to_string(),
        d.write_ticks.to_string(),
        d.in_queue.to_string(),
        format!("{:.2}%", d.util),
    ]
}

/// The fields of one job's line.
pub fn line(version: &str, j: &JobReport) -> Vec<String> {
    let mut f = vec![
        "3".to_string(),
        version.to_string(),
        j.name.clone(),
        j.group.to_string(),
        j.error.to_string(),
    ];
    direction(&mut f, &j.read);
    direction(&mut f, &j.write);
    f.push(format!("{:.6}%", j.usr_cpu));
    f.push(format!("{:.6}%", j.sys_cpu));
    f.push(j.ctx.to_string());
    f.extend(["0", "0"].map(String::from));
    let depth = depth_bucket(j.iodepth);
    for i in 0..DEPTH_BUCKETS.len() {
        f.push(if i == depth { "100.0%" } else { "0.0%" }.to_string());
    }
    // The microsecond line takes what fio's nanosecond line would below 1 µs.
    let below_us: f64 = j.latency.ns.iter().sum();
    for (i, v) in j.latency.us.iter().enumerate() {
        let v = if i == 0 { v + below_us } else { *v };
        f.push(format!("{v:.2}%"));
    }
    for v in &j.latency.ms {
        f.push(format!("{v:.2}%"));
    }
    f
}

fn direction(f: &mut Vec<String>, d: &Direction) {
    let us = |ns: f64| ns / 1_000.0;
    f.push((d.io_bytes / 1024).to_string());
    f.push(((d.bw_bytes / 1024.0).round() as u64).to_string());
    f.push((d.iops.round() as u64).to_string());
    f.push(if d.total_ios > 0 { d.runtime_ms } else { 0 }.to_string());
    // slat: not measured.
    f.extend(["0", "0", "0.000000", "0.000000"].map(String::from));
    let lat = [
        (us(d.lat.min).round() as u64).to_string(),
        (us(d.lat.max).round() as u64).to_string(),
        format!("{:.6}", us(d.lat.mean)),
        format!("{:.6}", us(d.lat.stddev)),
    ];
    f.extend(lat.iter().cloned());
    for i in 0..20 {
        f.push(match d.percentiles.get(i) {
            Some((p, v)) => format!("{p:.6}%={}", (*v as f64 / 1_000.0).round() as u64),
            None => "0%=0".to_string(),
        });
    }
    f.extend(lat);
    f.push((d.bw_samples.min.round() as u64).to_string());
    f.push((d.bw_samples.max.round() as u64).to_string());
    f.push(format!("{:.6}%", d.agg_percent));
    f.push(format!("{:.6}", d.bw_samples.mean));
    f.push(format!("{:.6}", d.bw_samples.stddev));
}
