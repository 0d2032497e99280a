//! `iolab pts` (SNIA PTS 2.0 IOPS) on loop devices at a tiny scale: the purge, the
//! preconditioning's bytes, the rounds, the steady-state verdict recomputed from the
//! stored rounds by PTS's rule, the report, and the device guard.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::common::{Loop, error_line, path, run};

fn json_of(file: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap()
}

/// A sparse image of `mib` MiB behind a loop device, or None (said loudly).
fn loop_image(dir: &Path, mib: u64) -> Option<(std::path::PathBuf, Loop)> {
    let img = dir.join("pts.img");
    fs::File::create(&img).unwrap().set_len(mib << 20).unwrap();
    match Loop::attach(&img) {
        Some(dev) => Some((img, dev)),
        None => {
            eprintln!("SKIPPED: no loop device here (needs root and /dev/loop-control)");
            None
        }
    }
}

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
    let Some((_img, dev)) = loop_image(dir.path(), 64) else {
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
    let Some((img, dev)) = loop_image(dir.path(), 16) else {
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
