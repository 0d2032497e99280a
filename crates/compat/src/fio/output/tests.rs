use std::collections::BTreeMap;

use iolab_core::LatencyHistogram;
use iolab_core::result::{CpuUsage, OpCount, OpResult, OpSeries, PhaseKind, Timeline};
use iolab_core::units::Nanos;
use serde_json::Value;

use super::*;
use crate::fio::jobfile::{RawOption, Section};
use crate::fio::{FioJob, plan_jobs};

/// A 2 s randrw phase: 700 reads of 40-80 µs and 300 writes of 2-10 ms.
fn phase() -> PhaseResult {
    let mut reads = LatencyHistogram::new();
    let mut writes = LatencyHistogram::new();
    for i in 0..700u64 {
        reads.record(40_000 + i * 57);
    }
    for i in 0..300u64 {
        writes.record(2_000_000 + i * 26_000);
    }
    let elapsed = Nanos::from_secs(2);
    let op = |op, n: u64, h| {
        let c = OpCount {
            ops: n,
            bytes: n * 4096,
        };
        OpResult::whole(op, c, elapsed, 0, h)
    };
    PhaseResult {
        figures: None,
        name: "mix".into(),
        kind: PhaseKind::Data,
        params: BTreeMap::new(),
        repetition: 0,
        spec: Value::Null,
        started_at_ms: 1_795_548_726_519,
        ranks: 1,
        workers: 1,
        elapsed,
        first_done: elapsed,
        ops: vec![op(OpKind::Read, 700, reads), op(OpKind::Write, 300, writes)],
        timeline: Timeline {
            interval: Nanos::from_secs(1),
            series: vec![
                OpSeries {
                    op: OpKind::Read,
                    ops: vec![300, 400],
                    bytes: vec![300 * 4096, 400 * 4096],
                    latency_sum: vec![0, 0],
                },
                OpSeries {
                    op: OpKind::Write,
                    ops: vec![100, 200],
                    bytes: vec![100 * 4096, 200 * 4096],
                    latency_sum: vec![0, 0],
                },
            ],
            ..Default::default()
        },
        cpu: CpuUsage {
            user: Nanos::from_millis(100),
            system: Nanos::from_millis(500),
            wall: elapsed,
            cpus: 2,
        },
        per_rank: Vec::new(),
        errors: Vec::new(),
        error_count: 0,
        verify_failures: 0,
        extra: BTreeMap::new(),
        warnings: Vec::new(),
        interrupted: false,
        telemetry: None,
    }
}

fn plan() -> FioPlan {
    let options = [
        ("rw", "randrw"),
        ("rwmixread", "70"),
        ("bs", "4k"),
        ("size", "16M"),
    ]
    .iter()
    .map(|(k, v)| RawOption {
        key: k.to_string(),
        value: Some(v.to_string()),
        at: "c".into(),
    })
    .collect();
    let job = FioJob::from_section(&Section {
        globals: 0,
        name: "mix".into(),
        at: "c".into(),
        options,
    })
    .unwrap();
    plan_jobs(&[job], 0).unwrap().remove(0)
}

fn vda() -> DiskUtil {
    DiskUtil {
        name: "vda".into(),
        read_ios: 13791,
        write_ios: 3422,
        read_merges: 1,
        write_merges: 2,
        read_ticks: 627,
        write_ticks: 565,
        in_queue: 1192,
        util: 64.048338,
    }
}

fn report_with(disks: Vec<DiskUtil>) -> FioReport {
    let (p, r) = (plan(), phase());
    let entry = FioEntry {
        plan: &p,
        phase: &r,
        jobs: 1,
        context_switches: 15847,
        job_runtime_ms: 2000,
        clones: Vec::new(),
        verify: None,
        prios: &Default::default(),
    };
    FioReport::new("iolab 0.1.0", &[entry], disks)
}

fn report() -> FioReport {
    report_with(vec![vda()])
}

/// Every key path of `fio` with the JSON type of its value (integer, float, string,
/// object, array), leaving out the values under the given keys whose entries depend on
/// the run (percentiles, bins).
fn shape(v: &Value, path: &str, out: &mut BTreeMap<String, &'static str>) {
    let kind = match v {
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Null => "null",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    out.insert(path.to_string(), kind);
    match v {
        Value::Object(m)
            if !path.ends_with("percentile")
                && !path.ends_with("job options")
                && !path.ends_with("bins") =>
        {
            for (k, x) in m {
                shape(x, &format!("{path}/{k}"), out);
            }
        }
        Value::Array(a) if path == "/jobs" || path == "/disk_util" => {
            shape(&a[0], &format!("{path}/0"), out)
        }
        _ => {}
    }
}

#[test]
fn json_has_every_key_real_fio_writes_with_the_same_type() {
    let theirs: Value = serde_json::from_str(include_str!(
        "../../../tests/fixtures/fio/randrw-psync.json"
    ))
    .unwrap();
    let ours: Value = serde_json::from_str(&json::render(&report(), false)).unwrap();
    let (mut t, mut o) = (BTreeMap::new(), BTreeMap::new());
    shape(&theirs, "", &mut t);
    shape(&ours, "", &mut o);
    for (path, kind) in &t {
        assert_eq!(
            o.get(path),
            Some(kind),
            "{path}: fio writes {kind}, iolab {:?}",
            o.get(path)
        );
    }
}

/// json+ of a group_reporting job with disk statistics, against real fio's json+ of
/// the same job (two clones, randrw 70/30, on a disk).
#[test]
fn json_plus_has_every_key_real_fio_writes_with_the_same_type() {
    let theirs: Value = serde_json::from_str(include_str!(
        "../../../tests/fixtures/fio/randrw-group-jsonplus.json"
    ))
    .unwrap();
    let ours: Value = serde_json::from_str(&json::render(&report(), true)).unwrap();
    let (mut t, mut o) = (BTreeMap::new(), BTreeMap::new());
    shape(&theirs, "", &mut t);
    shape(&ours, "", &mut o);
    for (path, kind) in &t {
        assert_eq!(
            o.get(path),
            Some(kind),
            "{path}: fio writes {kind}, iolab {:?}",
            o.get(path)
        );
    }
    assert!(t.contains_key("/disk_util/0/in_queue") && t.contains_key("/jobs/0/ctx"));
}

/// What a terse field looks like: a whole number, a decimal, a percentage, a
/// percentile pair (`99.000000%=123`) or text.
fn terse_kind(f: &str) -> &'static str {
    if f.contains("%=") {
        "percentile"
    } else if f.ends_with('%') {
        "percent"
    } else if f.parse::<i64>().is_ok() {
        "integer"
    } else if f.parse::<f64>().is_ok() {
        "decimal"
    } else {
        "text"
    }
}

#[test]
fn terse_fields_have_the_kinds_real_fio_writes() {
    let theirs = include_str!("../../../tests/fixtures/fio/randrw-group.terse");
    let theirs: Vec<&str> = theirs.trim_end().split(';').collect();
    let line = terse::render(&report());
    let ours: Vec<&str> = line.trim_end().split(';').collect();
    assert_eq!(ours.len(), theirs.len());
    for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(
            terse_kind(o),
            terse_kind(t),
            "field {i}: iolab {o}, fio {t}"
        );
    }
}

#[test]
fn json_figures_are_the_phase_figures() {
    let v: Value = serde_json::from_str(&json::render(&report(), true)).unwrap();
    let job = &v["jobs"][0];
    assert_eq!(job["jobname"], "mix");
    assert_eq!(job["read"]["io_bytes"], 700 * 4096);
    assert_eq!(job["read"]["total_ios"], 700);
    assert_eq!(job["read"]["iops"], 350.0);
    assert_eq!(job["read"]["bw"], 1400); // 700 * 4 KiB / 2 s
    assert_eq!(job["read"]["runtime"], 2000);
    assert_eq!(job["write"]["lat_ns"]["N"], 300);
    assert_eq!(job["read"]["clat_ns"]["min"], 40_000);
    // Per-second samples: 300 and 400 reads.
    assert_eq!(job["read"]["iops_min"], 300);
    assert_eq!(job["read"]["iops_max"], 400);
    assert_eq!(job["read"]["iops_mean"], 350.0);
    assert_eq!(job["read"]["bw_samples"], 2);
    // usr 100 ms of 2 s on one worker.
    assert_eq!(job["usr_cpu"], 5.0);
    assert_eq!(job["sys_cpu"], 25.0);
    let p50 = job["read"]["clat_ns"]["percentile"]["50.000000"]
        .as_u64()
        .unwrap();
    assert!((59_000..=60_500).contains(&p50), "{p50}");
    // json+ carries the bins, and they add up to the I/Os.
    let bins = job["write"]["clat_ns"]["bins"].as_object().unwrap();
    assert_eq!(bins.values().map(|c| c.as_u64().unwrap()).sum::<u64>(), 300);
    // Reads are 10-100 us (70 %), writes 2-10 ms (30 %).
    let us = &job["latency_us"];
    assert!((us["50"].as_f64().unwrap() + us["100"].as_f64().unwrap() - 70.0).abs() < 0.01);
    let ms = &job["latency_ms"];
    assert!((ms["4"].as_f64().unwrap() + ms["10"].as_f64().unwrap() - 30.0).abs() < 0.01);
    assert_eq!(job["iodepth_level"]["1"], 100.0);
    assert_eq!(v["time"], "Tue Nov 24 19:32:06 2026");
    assert_eq!(job["ctx"], 15847);
    let disk = &v["disk_util"][0];
    assert_eq!(
        (&disk["name"], &disk["read_ios"]),
        (&"vda".into(), &13791.into())
    );
    assert_eq!(
        (&disk["in_queue"], &disk["util"]),
        (&1192.into(), &64.048338.into())
    );
}

#[test]
fn terse_has_fio_v3_fields_in_order() {
    let line = terse::render(&report());
    let f: Vec<&str> = line.trim_end().split(';').collect();
    // 121 fields, then fio's 9 for the one disk.
    assert_eq!(f.len(), 130, "{line}");
    assert_eq!(
        &f[121..],
        [
            "vda", "13791", "3422", "1", "2", "627", "565", "1192", "64.05%"
        ]
    );
    assert_eq!(f[89], "15847"); // ctx
    let no_disk = terse::render(&report_with(Vec::new()));
    assert_eq!(no_disk.trim_end().split(';').count(), 121);
    assert_eq!(&f[..5], ["3", "fio-3.33 (iolab 0.1.0)", "mix", "0", "0"]);
    assert_eq!(f[5], "2800"); // read KiB
    assert_eq!(f[7], "350"); // read IOPS
    assert_eq!(f[8], "2000"); // runtime ms
    assert_eq!(f[13], "40"); // clat min µs
    assert!(f[17].starts_with("1.000000%="), "{}", f[17]);
    assert_eq!(f[34], "0%=0");
    assert_eq!(f[46], "1200"); // write KiB
    assert_eq!(f[87], "5.000000%");
    assert_eq!(f[92], "100.0%"); // depth 1
}

#[test]
fn normal_text_has_fios_lines() {
    let t = text::render(&report());
    assert!(
        t.starts_with("mix: (g=0): rw=randrw, bs=(R) 4096B-4096B"),
        "{t}"
    );
    assert!(
        t.contains("  read: IOPS=350, BW=1400KiB/s (1434kB/s)(2800KiB/2000msec)"),
        "{t}"
    );
    // fio's unit rule (stat.h): usec only once the max passes 100 µs.
    assert!(t.contains("    clat (nsec): min=40000, max=79871,"), "{t}");
    // Writes of 2-9.8 ms: usec.
    assert!(t.contains("    clat (usec): min=1999, max=9781,"), "{t}");
    assert!(t.contains("Run status group 0 (all jobs):"), "{t}");
    assert!(t.contains("   READ: bw=1400KiB/s"), "{t}");
    assert!(
        t.contains("note: lat is measured from issue to completion"),
        "{t}"
    );
    for line in [
        "  cpu          : usr=5.00%, sys=25.00%, ctx=15847, majf=0, minf=0\n",
        "  IO depths    : 1=100.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%\n",
        "     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%\n",
        "     latency   : target=0, window=0, percentile=100.00%, depth=1\n",
        "\nDisk stats (read/write):\n  vda: ios=13791/3422, merge=1/2, ticks=627/565, in_queue=1192, util=64.05%\n",
    ] {
        assert!(t.contains(line), "{line}: {t}");
    }
}

/// A clone's timeline: `reads` 4 KiB reads in each second.
fn clone_timeline(reads: &[u64]) -> Timeline {
    Timeline {
        interval: Nanos::from_secs(1),
        series: vec![OpSeries {
            op: OpKind::Read,
            ops: reads.to_vec(),
            bytes: reads.iter().map(|r| r * 4096).collect(),
            latency_sum: vec![0; reads.len()],
        }],
        ..Default::default()
    }
}

#[test]
fn group_reported_samples_are_each_clones_as_fio_pools_them() {
    let (p, r) = (plan(), phase());
    // Two clones: 300 then 400 reads per second, and 100 then 0 (it stopped early).
    let a = clone_timeline(&[300, 400]);
    let b = clone_timeline(&[100, 0]);
    let entry = FioEntry {
        plan: &p,
        phase: &r,
        jobs: 2,
        context_switches: 0,
        job_runtime_ms: 3000,
        clones: vec![(&a, Nanos::from_secs(2)), (&b, Nanos::from_millis(1500))],
        verify: None,
        prios: &Default::default(),
    };
    let report = FioReport::new("iolab", &[entry], Vec::new());
    let read = &report.jobs[0].read;
    // a's two whole seconds and b's one: 300, 400, 100 reads per second.
    assert_eq!(read.iops_samples.n, 3);
    assert_eq!(read.iops_samples.mean, 800.0 / 3.0);
    assert_eq!(
        (read.iops_samples.min, read.iops_samples.max),
        (100.0, 400.0)
    );
    // The mean sample (1066.7 KiB/s) of the group's 1400 KiB/s (2800 KiB in 2 s).
    assert!(
        (read.agg_percent - 76.19).abs() < 0.01,
        "{}",
        read.agg_percent
    );
    // CPU over the clones' 3 s added up: 100 ms user.
    assert!((report.jobs[0].usr_cpu - 100.0 / 30.0).abs() < 1e-9);
    let g = report.groups[0].read.as_ref().unwrap();
    assert_eq!((g.bytes, g.max_run_ms), (2800 * 1024, 2000));
    assert_eq!(g.agg_bw, 1400.0 * 1024.0);
}

#[test]
fn io_u_error_lines_say_each_kept_error_as_fio_then_the_rest() {
    use iolab_core::result::ErrorRecord;
    let error = |op, offset, errno: Option<i32>, message: &str| ErrorRecord {
        rank: 0,
        host: "h".into(),
        op,
        path: "/d/f.0".into(),
        offset,
        errno,
        message: message.into(),
    };
    let mut p = phase();
    p.errors = vec![
        error(OpKind::Write, Some(8192), Some(5), "EIO"),
        error(OpKind::Read, None, None, "rate below its minimum"),
        error(OpKind::Trim, Some(0), None, "trim refused"),
    ];
    p.error_count = 5;
    let lines = crate::fio::io_u_error_lines(&p, 4096);
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(
        lines[0].starts_with("fio: io_u error on file /d/f.0: ")
            && lines[0].ends_with(": write offset=8192, buflen=4096"),
        "{}",
        lines[0]
    );
    assert_eq!(lines[1], "iolab fio: rate below its minimum");
    assert_eq!(
        lines[2],
        "fio: io_u error on file /d/f.0: trim refused: trim offset=0, buflen=4096"
    );
    assert_eq!(lines[3], "iolab fio: and 2 more I/O errors");
}

#[test]
fn disk_util_is_busy_time_over_measured_time_capped_at_100() {
    // 700 ms busy in 2000 ms.
    assert_eq!(DiskUtil::util_percent(700, 2000.0), 35.0);
    assert_eq!(DiskUtil::util_percent(9000, 3000.0), 100.0);
    assert_eq!(DiskUtil::util_percent(500, 0.0), 0.0);
}
