//! Steady state: `--ss` and fio's `ss` options stop a phase once its window settles.

use crate::common::{error_line, fio_or_iolab, json_of, path, run};
use crate::flash_data::{extra, within};

#[test]
fn steady_state_stops_a_phase_once_its_window_settles_and_says_when_it_did_not() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let base = [
        "run",
        "--no-store",
        "--dir",
        path(dir.path()),
        "--rw",
        "randread",
        "--size",
        "4MiB",
        "--rate-iops",
        "400",
        "--json",
        path(&json),
    ];
    // Paced at 400 IOPS: steady within 10 % as soon as a 2 s window is full after the
    // 1 s ramp, far before the 30 s runtime.
    let mut args = base.to_vec();
    args.extend([
        "--runtime",
        "30s",
        "--ramp",
        "1s",
        "--steady-state",
        "iops:10%",
        "--steady-window",
        "2s",
    ]);
    run(&args).expect(0);
    let doc = json_of(&json);
    assert_eq!(extra(&doc, "steady_attained"), Some(1.0), "{doc}");
    let elapsed = doc["phases"][0]["elapsed"].as_u64().unwrap() as f64 / 1e9;
    assert!(elapsed < 15.0, "stopped at {elapsed} s of a 30 s runtime");
    assert_eq!(extra(&doc, "steady_window_points"), Some(2.0));
    assert_eq!(extra(&doc, "steady_ramp_ns"), Some(1e9));
    let samples: Vec<f64> = (0..2)
        .map(|i| extra(&doc, &format!("steady_iops.{i}")).unwrap())
        .collect();
    assert!(
        samples.iter().all(|s| within(*s, 400.0, 0.1)),
        "{samples:?}"
    );
    let mean = extra(&doc, "steady_mean_iops").unwrap();
    assert!((mean - (samples[0] + samples[1]) / 2.0).abs() < 1e-9);
    // The ramp is not sampled: samples x 1 s fit after it.
    let taken = extra(&doc, "steady_samples").unwrap();
    let at = extra(&doc, "steady_at_ns").unwrap() / 1e9;
    assert!(
        taken >= 2.0 && taken <= at - 1.0 + 1e-9,
        "{taken} samples by {at} s"
    );
    // A limit no run meets (a criterion is never below 0; a paced run's samples can
    // all be equal, so any positive limit could be met): the runtime ends it, and the
    // verdict says so.
    let mut args = base.to_vec();
    args.extend([
        "--runtime",
        "3s",
        "--steady-state",
        "iops:0%",
        "--steady-window",
        "2s",
    ]);
    run(&args).expect(0);
    let doc = json_of(&json);
    assert_eq!(extra(&doc, "steady_attained"), Some(0.0));
    assert!(extra(&doc, "steady_criterion").unwrap() >= 0.0);
    assert!(extra(&doc, "steady_at_ns").is_none());
    assert!(doc["phases"][0]["elapsed"].as_u64().unwrap() >= 3_000_000_000);
}

#[test]
fn fio_ss_stops_the_job_as_fio_does_with_fios_steadystate_object() {
    if !crate::common::peer_on_path("fio", "--version") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let job = |tool: &str, ss: &str, runtime: u32| -> serde_json::Value {
        let file = dir.path().join(format!("{tool}.dat"));
        let mut cmd = fio_or_iolab(tool, &[]);
        let out = cmd
            .args([
                "--name=ss",
                "--rw=randread",
                "--bs=4k",
                "--size=4m",
                "--rate_iops=400",
                "--time_based",
                &format!("--runtime={runtime}"),
                &format!("--ss={ss}"),
                "--ss_dur=3",
                "--output-format=json",
                &format!("--filename={}", file.display()),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["jobs"][0].clone()
    };
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    // Steady from the start: both stop once the 3 s window is full, within one sample
    // (and a tick) of each other.
    let (f, i) = (job("fio", "iops:10%", 20), job("iolab", "iops:10%", 20));
    let (fs_, is_) = (&f["steadystate"], &i["steadystate"]);
    assert_eq!(keys(fs_), keys(is_));
    assert_eq!(keys(&fs_["data"]), keys(&is_["data"]));
    assert_eq!(fs_["ss"], is_["ss"]);
    assert_eq!(is_["ss"], "iops:10.000000%");
    assert_eq!(
        (fs_["attained"].as_u64(), is_["attained"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        (fs_["duration"].as_u64(), is_["duration"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(is_["data"]["iops"].as_array().unwrap().len(), 3);
    assert_eq!(
        is_["slope"].as_f64(),
        Some(0.0),
        "no slope for a deviation rule"
    );
    for s in [fs_, is_] {
        let mean = s["data"]["iops_mean"].as_f64().unwrap();
        assert!(within(mean, 400.0, 0.1), "{s}");
    }
    let (rf, ri) = (
        f["job_runtime"].as_f64().unwrap(),
        i["job_runtime"].as_f64().unwrap(),
    );
    assert!(
        rf < 10_000.0 && ri < 10_000.0 && (rf - ri).abs() <= 1_500.0,
        "fio {rf} ms, iolab {ri} ms"
    );
    // Never steady: both run their 4 s and say so.
    let (f, i) = (job("fio", "iops:0%", 4), job("iolab", "iops:0%", 4));
    assert_eq!(f["steadystate"]["attained"], 0);
    assert_eq!(i["steadystate"]["attained"], 0);
    assert!(
        i["steadystate"]["criterion"]
            .as_str()
            .unwrap()
            .ends_with('%')
    );
    assert!(i["job_runtime"].as_u64().unwrap() >= 4_000);
}

#[test]
fn steady_state_bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (flags, says) in [
        (&["--steady-state", "lat:5%"][..], "not a criterion"),
        (
            &["--steady-state", "iops:5%", "--steady-interval", "10ms"],
            "--steady-interval",
        ),
        (
            &[
                "--steady-state",
                "iops:5%",
                "--steady-window",
                "1s",
                "--steady-interval",
                "1s",
            ],
            "--steady-window",
        ),
        (&["--steady-window", "5s"], "--steady-state"),
    ] {
        let mut args = vec![
            "run",
            "--no-store",
            "--dir",
            path(dir.path()),
            "--runtime",
            "1s",
        ];
        args.extend(flags);
        let line = error_line(&run(&args).expect(2));
        assert!(line.contains(says), "{flags:?}: {line}");
    }
    let r = run(&[
        "fio",
        "--no-store",
        "--name=j",
        "--size=1m",
        "--ss=lat:5%",
        "--ss_dur=2",
    ]);
    assert!(error_line(&r.expect(2)).contains("ss"));
}
