//! AU where the wait is known (a FUSE file system that stalls every read): one run, the
//! accelerator search on a throttled target, and /metrics while a run goes.

use super::{json_of, stalled_dataset};
use crate::common::{path, run};

#[test]
fn au_is_compute_over_time_when_every_read_waits() {
    // Each read stalls 100 ms; each step computes 50 ms on one sample: with one reader
    // that prefetches one batch, a step takes 100 ms, so AU is 50 % (the first step,
    // which waits for two reads' worth, is left out as DLIO leaves it out). One reader:
    // --exact-read-threads, as v3.0 DLIO would size a 1 to the host's CPUs.
    let Some((_fs, common)) = stalled_dataset(&["read:stall=100ms"], "8") else {
        return;
    };
    let common: Vec<&str> = common.iter().map(String::as_str).collect();
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.json");
    let json = dir.path().join("run.json");
    let mut args = vec!["train", "run"];
    args.extend(common);
    args.extend([
        "--batch-size",
        "1",
        "--read-threads",
        "1",
        "--exact-read-threads",
        "--prefetch",
        "1",
        "--computation-time",
        "50ms",
        "--summary-json",
        path(&summary),
        "--json",
        path(&json),
        "--no-store",
    ]);
    let r = run(&args).expect(0);
    let s = json_of(&summary);
    let au = s["metric"]["train_au_mean_percentage"].as_f64().unwrap();
    assert!((40.0..60.0).contains(&au), "AU {au}%:\n{}", r.stdout);
    assert_eq!(s["num_accelerators"], 1);
    assert_eq!(s["metric"]["train_au_meet_expectation"], "fail");
    // Samples/s: 8 samples over about 0.1 s each.
    let tp = s["metric"]["train_throughput_mean_samples_per_second"]
        .as_f64()
        .unwrap();
    assert!((6.0..11.0).contains(&tp), "{tp} samples/s");
    // The stored epoch carries the same AU, and every read went through the stall.
    let run_json = json_of(&json);
    let phase = &run_json["phases"][0];
    assert_eq!(phase["figures"]["au_percent"].as_f64().unwrap(), au);
    let reads = phase["ops"][0]["ops"].as_u64().unwrap();
    assert_eq!(reads, 8, "one read per 4 KiB file");
    assert!(phase["ops"][0]["latency"]["p50"].as_u64().unwrap() >= 100_000_000);
}

#[test]
fn search_finds_the_most_accelerators_on_a_throttled_target() {
    // Reads stall 50 ms each on a file system that serves two at a time (iolab-faultfs'
    // two FUSE threads): 40 samples/s for everyone, while each accelerator wants 10 (100
    // ms of compute per sample): one keeps up with room to spare (AU near 100 %), eight
    // cannot (at most 50 %).
    let Some((_fs, common)) = stalled_dataset(&["read:stall=50ms"], "64") else {
        return;
    };
    let common: Vec<&str> = common.iter().map(String::as_str).collect();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    let mut args = vec!["train", "search"];
    args.extend(common);
    args.extend([
        "--batch-size",
        "1",
        "--read-threads",
        "1",
        "--exact-read-threads",
        "--computation-time",
        "100ms",
        "--au-threshold",
        "80",
        "--steps",
        "6",
        "--max",
        "8",
        "--json",
        path(&json),
        "--label",
        "the-search",
    ]);
    let r = run(&args).expect(0);
    assert!(
        r.stdout.contains("most accelerators at AU >= 80%"),
        "{}",
        r.stdout
    );
    let v = json_of(&json);
    let best = v["spec"]["search"]["best"].as_u64();
    let points = v["spec"]["search"]["points"].as_array().unwrap().clone();
    assert!(points.len() >= 3, "{points:?}");
    // One accelerator keeps up; eight cannot (80 samples/s wanted of 40).
    assert!(points[0]["passed"].as_bool().unwrap(), "{points:?}");
    let best = best.expect("one accelerator passed");
    assert!((1..8).contains(&best), "best {best}: {}", r.stdout);
    assert!(points.iter().any(|p| !p["passed"].as_bool().unwrap()));
    // The report charts the curve: a point per count tried, and the threshold.
    let html = dir.path().join("r.html");
    run(&["report", "the-search", "--html", path(&html)]).expect(0);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("data-chart=\"train-search\""),
        "no search chart"
    );
    assert!(
        page.contains(&format!(
            "data-name=\"AU\" data-points=\"{}\"",
            points.len()
        )),
        "the curve has a point per count tried"
    );
    assert!(page.contains("data-name=\"threshold 80 %\" data-points=\"2\""));
}

/// The train gauges of one `/metrics` scrape: (epoch, step, AU %, samples/s).
fn train_gauges(text: &str) -> Option<(f64, f64, f64, f64)> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    let gauge = |name: &str| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name)
            .map(|s| match s.value {
                prometheus_parse::Value::Gauge(v) => v,
                ref other => panic!("{name} is not typed a gauge: {other:?}"),
            })
    };
    Some((
        gauge("iolab_train_epoch")?,
        gauge("iolab_train_step")?,
        gauge("iolab_train_au_percent")?,
        gauge("iolab_train_samples_per_second")?,
    ))
}

#[test]
fn metrics_show_au_as_the_run_goes_and_end_at_the_stored_epoch() {
    // The AU test's split (every read stalls 100 ms, each step computes 50 ms, one
    // reader prefetching one sample: AU 50 %), watched through --serve: the gauges climb
    // step by step, AU stays near 50 % while it runs, and the last scrape's AU is the
    // stored epoch's.
    let Some((_fs, common)) = stalled_dataset(&["read:stall=100ms"], "16") else {
        return;
    };
    let common: Vec<&str> = common.iter().map(String::as_str).collect();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let mut command = crate::common::iolab();
    command.args(["train", "run"]).args(common).args([
        "--batch-size",
        "1",
        "--read-threads",
        "1",
        "--exact-read-threads",
        "--prefetch",
        "1",
        "--computation-time",
        "50ms",
        "--epochs",
        "2",
        "--json",
        path(&json),
        "--serve",
        "--serve-linger",
        "4s",
        "-Q",
    ]);
    let (mut child, addr) = crate::live::spawn_serving(command);
    let mut seen: Vec<(f64, f64, f64, f64)> = Vec::new();
    let start = std::time::Instant::now();
    loop {
        let running = crate::live::status(&addr)["status"] == "running";
        let (code, text) = crate::live::http(&addr, "GET", "/metrics");
        assert_eq!(code, 200);
        if let Some(g) = train_gauges(&text) {
            if running {
                seen.push(g);
            } else {
                seen.push(g);
                break;
            }
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "the run did not end; seen {seen:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(40));
    }
    assert!(child.wait().unwrap().success());
    // (epoch, step) only moves forward, through both epochs.
    for w in seen.windows(2) {
        assert!((w[1].0, w[1].1) >= (w[0].0, w[0].1), "{seen:?}");
    }
    let distinct: std::collections::BTreeSet<(u64, u64)> =
        seen.iter().map(|g| (g.0 as u64, g.1 as u64)).collect();
    assert!(distinct.len() >= 6, "too few steps seen: {seen:?}");
    assert!(distinct.iter().any(|g| g.0 == 1) && distinct.iter().any(|g| g.0 == 2));
    // While it runs, past the first steps: AU near the 50 % of the split, samples/s
    // near 10 (one sample per 100 ms step).
    for g in seen.iter().filter(|g| g.1 >= 4.0) {
        assert!((30.0..70.0).contains(&g.2), "AU {} at {g:?}", g.2);
        assert!((4.0..14.0).contains(&g.3), "samples/s {} at {g:?}", g.3);
    }
    // The end: the last step of epoch 2, its AU the stored epoch's (the live figure
    // stops at the last step, the stored one at the epoch's end: a few ms apart).
    let last = seen.last().unwrap();
    assert_eq!((last.0, last.1), (2.0, 16.0), "{seen:?}");
    let stored = json_of(&json);
    let epoch2 = &stored["phases"][1];
    assert_eq!(epoch2["name"], "train-epoch-2");
    let au = epoch2["figures"]["au_percent"].as_f64().unwrap();
    assert!(
        (last.2 - au).abs() < 3.0,
        "live {} against stored {au}",
        last.2
    );
}
