//! `/metrics`' operations and bytes are Prometheus counters: scraped while a run with a
//! ramp, clones and two phases goes on, they only grow, and at the end they equal the
//! stored result, phase by phase and operation by operation.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{iolab, path, run};
use crate::live::{http, spawn_serving, status};

/// Every `*_total` sample of a scrape: (metric and labels but the run's) -> value.
fn totals(text: &str) -> BTreeMap<String, f64> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    scrape
        .samples
        .into_iter()
        .filter(|s| s.metric.ends_with("_total"))
        .map(|s| {
            let prometheus_parse::Value::Counter(v) = s.value else {
                panic!("{} is not typed a counter: {:?}", s.metric, s.value);
            };
            let mut labels: Vec<String> = s
                .labels
                .iter()
                .filter(|(k, _)| !["run", "label", "command"].contains(&k.as_str()))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            labels.sort();
            (format!("{}{{{}}}", s.metric, labels.join(",")), v)
        })
        .collect()
}

#[test]
fn counters_only_grow_while_the_run_goes_on_and_end_equal_to_the_stored_result() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("jobs.fio");
    // Two clones of a mixed job after a ramp longer than its runtime (the ramp's I/O,
    // which the stored result does not count, must not show: it would outnumber what
    // is stored), then a second phase.
    std::fs::write(
        &job,
        "[global]\nioengine=null\nsize=1g\ntime_based\n\n\
         [mix]\nrw=randrw\nnumjobs=2\nramp_time=2\nruntime=1\n\n\
         [seq]\nstonewall\nrw=write\nruntime=2\n",
    )
    .unwrap();
    let mut command = iolab();
    command.args([
        "fio",
        "--label",
        "metrics",
        "--serve",
        "--serve-linger",
        "5s",
    ]);
    command.arg(path(&job));
    let (mut child, addr) = spawn_serving(command);
    let mut last: BTreeMap<String, f64> = BTreeMap::new();
    let mut grew_while_running = 0;
    let start = Instant::now();
    loop {
        let running = status(&addr)["status"] == "running";
        let (code, text) = http(&addr, "GET", "/metrics");
        assert_eq!(code, 200);
        for (metric, ty) in [
            ("iolab_operations_total", "counter"),
            ("iolab_bytes_total", "counter"),
            ("iolab_phase_iops", "gauge"),
        ] {
            if text.contains(&format!("{metric}{{")) {
                assert!(text.contains(&format!("# TYPE {metric} {ty}\n")), "{text}");
            }
        }
        for gone in ["iolab_phase_operations{", "iolab_phase_bytes{"] {
            assert!(
                !text.contains(gone),
                "{gone} is a count, not a gauge:\n{text}"
            );
        }
        let now = totals(&text);
        for (series, v) in &now {
            let before = last.get(series).copied().unwrap_or(0.0);
            assert!(*v >= before, "{series} went back from {before} to {v}");
            if running && *v > before && series.starts_with("iolab_operations_total") {
                grew_while_running += 1;
            }
        }
        last = now;
        if !running {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the run did not end"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(child.wait().unwrap().success());
    assert!(
        grew_while_running >= 4,
        "the counters grew only {grew_while_running} times while the run went on"
    );
    // The stored phases (mix.0, mix.1, seq) add up to the counters of their phases.
    let shown = run(&["results", "show", "metrics", "--format", "json"]).expect(0);
    let stored: Value = serde_json::from_str(&shown.stdout).unwrap();
    let mut expected: BTreeMap<String, f64> = BTreeMap::new();
    for phase in stored["phases"].as_array().unwrap() {
        let name = phase["name"].as_str().unwrap();
        let label = name.split('.').next().unwrap();
        for op in phase["ops"].as_array().unwrap() {
            for (metric, key) in [
                ("iolab_operations_total", "ops"),
                ("iolab_bytes_total", "bytes"),
            ] {
                let series = format!(
                    "{metric}{{op={},phase={label}}}",
                    op["op"].as_str().unwrap()
                );
                *expected.entry(series).or_default() += op[key].as_f64().unwrap();
            }
        }
    }
    assert!(expected.len() >= 6, "{expected:?}");
    let counted: BTreeMap<String, f64> = last
        .into_iter()
        .filter(|(s, _)| {
            s.starts_with("iolab_operations_total") || s.starts_with("iolab_bytes_total")
        })
        .collect();
    assert_eq!(counted, expected);
}
