//! `iolab pts` (SNIA PTS 2.0 IOPS) on loop devices at a tiny scale: the purge, the
//! preconditioning's bytes, the rounds, the steady-state verdict recomputed from the
//! stored rounds by PTS's rule, the report, and the device guard.

use std::fs;
use std::os::unix::fs::MetadataExt;

use crate::common::{error_line, json_of, loop_image, path, run};

fn extra(p: &serde_json::Value, k: &str) -> Option<f64> {
    p["extra"][k].as_f64()
}

/// PTS 2.0's rule, written again here: over five rounds, max - min within 20 % of the
/// average, and the least-squares line's rise over the window within 10 %.
fn pts_steady(w: &[f64]) -> bool {
    let n = w.len() as f64;
    let avg = w.iter().sum::<f64>() / n;
    let mx = (n - 1.0) / 2.0;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in w.iter().enumerate() {
        sxy += (i as f64 - mx) * (y - avg);
        sxx += (i as f64 - mx) * (i as f64 - mx);
    }
    let slope = sxy / sxx;
    let range =
        w.iter().copied().fold(f64::MIN, f64::max) - w.iter().copied().fold(f64::MAX, f64::min);
    range <= 0.2 * avg && slope.abs() * (n - 1.0) <= 0.1 * avg
}

#[test]
fn a_pts_iops_run_on_a_loop_device_preconditions_rounds_and_reports() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let Some((_img, dev)) = loop_image(dir.path(), "pts.img", 64) else {
        return;
    };
    let (json, html) = (dir.path().join("pts.json"), dir.path().join("pts.html"));
    let r = run(&[
        "pts",
        "--device",
        &dev.0,
        "--scale",
        "0.01",
        "--block-sizes",
        "64KiB,4KiB",
        "--mixes",
        "65/35,0/100",
        "--max-rounds",
        "5",
        "-t",
        "2",
        "-q",
        "4",
        "--no-store",
        "--json",
        path(&json),
        "--html",
        path(&html),
    ])
    .expect(0);
    assert!(
        r.stderr.contains("purge: 64.0 MiB discarded (BLKDISCARD)"),
        "{}",
        r.stderr
    );
    let doc = json_of(&json);
    let phases = doc["phases"].as_array().unwrap();
    // Preconditioning: twice the active range (64 MiB) in 128 KiB sequential writes.
    let wipc = &phases[0];
    assert_eq!(wipc["name"], "pts-wipc");
    let write = wipc["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "write")
        .unwrap();
    assert_eq!(write["bytes"].as_u64(), Some(128 << 20));
    assert_eq!(write["ops"].as_u64(), Some(1024));
    // Five rounds of the four cells, in PTS's order, each with its IOPS.
    let rounds: Vec<&serde_json::Value> = phases[1..].iter().collect();
    assert_eq!(rounds.len(), 20);
    assert_eq!(rounds[0]["name"], "pts-r1-64KiB-r65");
    assert_eq!(rounds[3]["name"], "pts-r1-4KiB-r0");
    assert_eq!(rounds[0]["spec"]["rw"], "randrw");
    assert_eq!(rounds[3]["spec"]["rw"], "randwrite");
    assert_eq!(rounds[3]["spec"]["direct"], true);
    let series = |tag: &str| -> Vec<f64> {
        rounds
            .iter()
            .filter(|p| p["name"].as_str().unwrap().ends_with(tag))
            .map(|p| extra(p, "pts_iops").unwrap())
            .collect()
    };
    let (w4k, m64k) = (series("-4KiB-r0"), series("-64KiB-r65"));
    assert_eq!((w4k.len(), m64k.len()), (5, 5));
    assert!(w4k.iter().all(|v| *v > 0.0));
    // The verdict is PTS's rule over the five rounds, recomputed here.
    let steady = pts_steady(&w4k) && pts_steady(&m64k);
    let last4k = rounds
        .iter()
        .find(|p| p["name"] == "pts-r5-4KiB-r0")
        .unwrap();
    assert_eq!(
        extra(last4k, "pts_steady"),
        Some(f64::from(u8::from(pts_steady(&w4k))))
    );
    let avg4k = w4k.iter().sum::<f64>() / 5.0;
    assert!((extra(last4k, "pts_window_average_iops").unwrap() - avg4k).abs() < 1e-6 * avg4k);
    let said = if steady {
        "STEADY: rounds 1-5"
    } else {
        "NOT STEADY after 5 rounds"
    };
    assert!(r.stdout.contains(said), "{}", r.stdout);
    // The report: both plots, the window's bands, the IOPS table with the 4 KiB write
    // average in its place, the device.
    let page = fs::read_to_string(&html).unwrap();
    assert!(page.contains("data-chart=\"pts-convergence\""));
    assert_eq!(page.matches("data-chart=\"pts-window\"").count(), 2);
    assert!(page.contains("+20 %") && page.contains("least-squares fit"));
    assert!(
        page.contains(&format!("<td>{avg4k:.0}</td>")),
        "4 KiB 0/100 average {avg4k:.0}"
    );
    assert!(page.contains("loop/backing_file") || page.contains("backing file"));
}

#[test]
fn the_purge_discards_the_whole_device_and_the_guard_refuses_data() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let Some((img, dev)) = loop_image(dir.path(), "pts.img", 16) else {
        return;
    };
    // The device holds data (and an ext4 signature): refused, untouched.
    let mk = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F", &dev.0])
        .output()
        .unwrap();
    assert!(mk.status.success());
    let before = fs::read(&img).unwrap();
    let args = [
        "pts",
        "--device",
        &dev.0,
        "--scale",
        "0.01",
        "--block-sizes",
        "1MiB",
        "--mixes",
        "100/0",
        "--precondition",
        "0",
        "--max-rounds",
        "5",
        "--no-store",
    ];
    let line = error_line(&run(&args).expect(2));
    assert!(line.contains(&dev.0) && line.contains("ext4"), "{line}");
    assert!(
        fs::read(&img).unwrap() == before,
        "a refused device is left byte for byte"
    );
    // Allowed: the purge discards it all; reads alone (1 MiB 100/0) allocate nothing.
    let mut allowed = args.to_vec();
    allowed.push("--allow-destroy");
    run(&allowed).expect(0);
    let blocks = fs::metadata(&img).unwrap().blocks() * 512;
    assert!(
        blocks < 1 << 20,
        "{blocks} bytes still allocated after the purge"
    );
    // Smaller than a round: 4 threads x 2 x 1 MiB do not fit in 4 MiB.
    let small = dir.path().join("small.img");
    fs::File::create(&small).unwrap().set_len(4 << 20).unwrap();
    let r = run(&["pts", "--device", path(&small), "-t", "4", "--no-store"]);
    let line = error_line(&r.expect(2));
    assert!(
        line.contains("less than one round needs") && line.contains("nothing was written"),
        "{line}"
    );
    assert_eq!(fs::metadata(&small).unwrap().blocks(), 0, "nothing written");
    let r = run(&[
        "pts",
        "--device",
        path(&small),
        "--mixes",
        "70/30",
        "--no-store",
    ]);
    assert!(error_line(&r.expect(2)).contains("--mixes"));
}

/// The stored phases whose name ends with `tag`, in order, and their `key` figure.
fn series(phases: &[serde_json::Value], tag: &str, key: &str) -> Vec<f64> {
    phases
        .iter()
        .filter(|p| p["name"].as_str().unwrap().ends_with(tag))
        .map(|p| extra(p, key).unwrap())
        .collect()
}

fn names(phases: &[serde_json::Value]) -> Vec<&str> {
    phases.iter().map(|p| p["name"].as_str().unwrap()).collect()
}

/// Reads and writes of a phase: (ops, sum of mean latency x count, largest max).
fn rw_latency(p: &serde_json::Value) -> (f64, f64, f64) {
    let mut out = (0.0, 0.0, 0.0f64);
    for o in p["ops"].as_array().unwrap() {
        if o["op"] == "read" || o["op"] == "write" {
            let n = o["latency"]["count"].as_f64().unwrap();
            out.0 += n;
            out.1 += n * o["latency"]["mean"].as_f64().unwrap();
            out.2 = out.2.max(o["latency"]["max"].as_f64().unwrap());
        }
    }
    out
}

#[test]
fn a_pts_throughput_run_tests_each_block_size_sequentially_in_ptss_order() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let Some((_img, dev)) = loop_image(dir.path(), "pts.img", 64) else {
        return;
    };
    let (json, html) = (dir.path().join("tp.json"), dir.path().join("tp.html"));
    let r = run(&[
        "pts",
        "--test",
        "throughput",
        "--device",
        &dev.0,
        "--cell-time",
        "20s",
        "--scale",
        "0.01",
        "--max-rounds",
        "5",
        "--no-store",
        "--json",
        path(&json),
        "--html",
        path(&html),
    ])
    .expect(0);
    // PTS-E: 1024 KiB, then 128 KiB, each with its own purge and preconditioning.
    assert_eq!(
        r.stderr.matches("discarded (BLKDISCARD)").count(),
        2,
        "{}",
        r.stderr
    );
    let doc = json_of(&json);
    let phases = doc["phases"].as_array().unwrap();
    let n = names(phases);
    assert_eq!(n.len(), 22, "{n:?}");
    assert_eq!(
        &n[..3],
        ["pts-wipc-1MiB", "pts-r1-1MiB-r100", "pts-r1-1MiB-r0"]
    );
    assert_eq!(
        &n[11..14],
        ["pts-wipc-128KiB", "pts-r1-128KiB-r100", "pts-r1-128KiB-r0"]
    );
    for wipc in [&phases[0], &phases[11]] {
        let w = &wipc["ops"][0];
        assert_eq!(
            (w["bytes"].as_u64(), w["ops"].as_u64()),
            (Some(128 << 20), Some(1024))
        );
    }
    // Sequential, direct, TC 1 x QD 32.
    assert_eq!(phases[1]["spec"]["rw"], "read");
    assert_eq!(phases[2]["spec"]["rw"], "write");
    assert_eq!(phases[2]["spec"]["direct"], true);
    assert_eq!(
        (
            phases[2]["spec"]["threads"].as_u64(),
            phases[2]["spec"]["queue_depth"].as_u64()
        ),
        (Some(1), Some(32))
    );
    // The tracked figure is the write's MB/s (10^6 bytes/s) as stored in its op.
    let w = &phases[2];
    let bw = w["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "write")
        .unwrap()["bandwidth"]
        .as_f64()
        .unwrap();
    assert!((extra(w, "pts_mbps").unwrap() - bw / 1e6).abs() < 1e-6 * bw);
    let page = fs::read_to_string(&html).unwrap();
    for (bs, tag) in [("1MiB", "-1MiB-r0"), ("128KiB", "-128KiB-r0")] {
        let s = series(phases, tag, "pts_mbps");
        assert_eq!(s.len(), 5);
        assert!(s.iter().all(|v| *v > 0.0));
        let steady = pts_steady(&s);
        let last = phases
            .iter()
            .find(|p| p["name"] == format!("pts-r5{tag}"))
            .unwrap();
        assert_eq!(extra(last, "pts_steady"), Some(f64::from(u8::from(steady))));
        let avg = s.iter().sum::<f64>() / 5.0;
        assert!((extra(last, "pts_window_average_mbps").unwrap() - avg).abs() < 1e-6 * avg);
        let said = if steady {
            format!("steady state ({bs}): STEADY: rounds 1-5")
        } else {
            format!("steady state ({bs}): NOT STEADY after 5 rounds")
        };
        assert!(r.stdout.contains(&said), "{said}\n{}", r.stdout);
        assert!(
            page.contains(&format!("<td>{avg:.1}</td>")),
            "{bs} write average {avg:.1}"
        );
    }
    assert!(page.contains("data-chart=\"pts-convergence\""));
    assert_eq!(page.matches("data-chart=\"pts-window\"").count(), 2);
    assert!(page.contains("Throughput, MB/s") && page.contains("+20 %"));
}

#[test]
fn a_pts_latency_run_is_one_outstanding_io_with_mean_five_nines_and_max() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let Some((_img, dev)) = loop_image(dir.path(), "pts.img", 64) else {
        return;
    };
    let (json, html) = (dir.path().join("lat.json"), dir.path().join("lat.html"));
    let args = [
        "pts",
        "--test",
        "latency",
        "--device",
        &dev.0,
        "--cell-time",
        "20s",
        "--scale",
        "0.01",
        "--block-sizes",
        "4KiB,512B",
        "--mixes",
        "65/35,0/100",
        "--max-rounds",
        "5",
        "--precondition",
        "1",
        "--no-store",
    ];
    // PTS's latency test is TC 1 x QD 1: anything else is refused before writing.
    let mut deeper = args.to_vec();
    deeper.extend(["-q", "4"]);
    let line = error_line(&run(&deeper).expect(2));
    assert!(
        line.contains("--threads/--queue-depth") && line.contains("QD 1"),
        "{line}"
    );
    let mut full = args.to_vec();
    full.extend(["--json", path(&json), "--html", path(&html)]);
    let r = run(&full).expect(0);
    let doc = json_of(&json);
    let phases = doc["phases"].as_array().unwrap();
    let n = names(phases);
    // The mixes are the outer loop, the block sizes (largest first) the inner one.
    assert_eq!(n.len(), 21, "{n:?}");
    assert_eq!(
        &n[..5],
        [
            "pts-wipc",
            "pts-r1-4KiB-r65",
            "pts-r1-512B-r65",
            "pts-r1-4KiB-r0",
            "pts-r1-512B-r0"
        ]
    );
    assert_eq!(phases[0]["ops"][0]["bytes"].as_u64(), Some(64 << 20));
    for p in &phases[1..] {
        assert_eq!(
            (
                p["spec"]["threads"].as_u64(),
                p["spec"]["queue_depth"].as_u64()
            ),
            (Some(1), Some(1))
        );
        // The mean response time is every read's and write's, in ms; the maximum is the
        // largest; the five nines lie between.
        let (ops, sum, max) = rw_latency(p);
        let mean = extra(p, "pts_latency_ms").unwrap();
        assert!(
            (mean - sum / ops / 1e6).abs() < 1e-9 + 1e-6 * mean,
            "{mean}"
        );
        assert_eq!(extra(p, "pts_latency_max_ms"), Some(max / 1e6));
        let nines = extra(p, "pts_latency_p99999_ms").unwrap();
        assert!(nines <= max / 1e6 && nines >= mean * 0.5, "{nines}");
    }
    assert_eq!(phases[3]["spec"]["rw"], "randwrite");
    assert_eq!(phases[1]["spec"]["rw"], "randrw");
    let s = series(phases, "-4KiB-r0", "pts_latency_ms");
    assert_eq!(s.len(), 5);
    let steady = pts_steady(&s);
    let last = phases
        .iter()
        .find(|p| p["name"] == "pts-r5-4KiB-r0")
        .unwrap();
    assert_eq!(extra(last, "pts_steady"), Some(f64::from(u8::from(steady))));
    let said = if steady {
        "STEADY: rounds 1-5"
    } else {
        "NOT STEADY after 5 rounds"
    };
    assert!(r.stdout.contains(said), "{}", r.stdout);
    // The report: the mean in the main table, then the five nines, the maximum (the
    // largest of the window's rounds) and the IOPS.
    let avg = s.iter().sum::<f64>() / 5.0;
    let max4k = series(phases, "-4KiB-r0", "pts_latency_max_ms")
        .into_iter()
        .fold(0.0, f64::max);
    let page = fs::read_to_string(&html).unwrap();
    assert!(page.contains("Mean response time, ms"));
    assert!(
        page.contains(&format!("<td>{avg:.3}</td>")),
        "mean {avg:.3}"
    );
    assert!(page.contains("99.999th percentile response time"));
    assert!(
        page.contains(&format!("<td>{max4k:.3}</td>")),
        "max {max4k:.3}"
    );
    assert!(page.contains("data-chart=\"pts-window\""));
}
