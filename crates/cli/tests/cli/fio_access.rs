//! Sizes drawn per I/O, skewed offsets and pacing against real fio (on PATH;
//! scripts/test.sh installs Debian's fio 3.33 and strace): the same job run by fio and by
//! `iolab fio` under strace, their reads compared by size and by where they fall; paced
//! runs measured by their own stored figures; bad input refused in one line.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Ran, fio_or_iolab, iolab, path, peer_on_path, run};

/// The (length, offset) of every pread64 on a file under `dir` (iolab's own files in
/// its work directory left out).
fn reads(cmd: &Command, dir: &Path, work: &Path) -> Vec<(u64, u64)> {
    crate::fio_more::file_ios(cmd, dir, work)
        .into_iter()
        .filter(|(call, ..)| call == "pread64")
        .map(|(_, _, at, len)| (len, at))
        .collect()
}

/// A job run by fio and by `iolab fio` on fresh directories under strace: their reads.
fn both(job: &[&str]) -> Option<[Vec<(u64, u64)>; 2]> {
    if !peer_on_path("fio", "--version") || !peer_on_path("strace", "-V") {
        return None;
    }
    let mut out = [Vec::new(), Vec::new()];
    for (i, tool) in ["fio", "iolab"].iter().enumerate() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let work = tempfile::tempdir().unwrap();
        let mut cmd = fio_or_iolab(tool, &[]);
        cmd.args(job)
            .args(["--thread", "--ioengine=psync", "--output-format=json"])
            .arg(format!("--directory={}", path(dir.path())));
        out[i] = reads(&cmd, dir.path(), work.path());
        assert!(!out[i].is_empty(), "{tool}: no reads traced");
    }
    Some(out)
}

/// Each length's share of the reads.
fn length_shares(ios: &[(u64, u64)]) -> BTreeMap<u64, f64> {
    let mut m = BTreeMap::new();
    for (len, _) in ios {
        *m.entry(*len).or_insert(0.0) += 1.0 / ios.len() as f64;
    }
    m
}

/// The share of the reads on the busiest `fraction` of the `blocks` 4 KiB blocks.
fn hot_share(ios: &[(u64, u64)], blocks: u64, fraction: f64) -> f64 {
    let mut hits = vec![0u64; blocks as usize];
    for (_, at) in ios {
        hits[(at / 4096) as usize] += 1;
    }
    hits.sort_unstable_by(|a, b| b.cmp(a));
    let top = (blocks as f64 * fraction) as usize;
    hits[..top].iter().sum::<u64>() as f64 / ios.len() as f64
}

/// A split read over fio's random map: the same bytes (every block once), every offset
/// on 4 KiB, and each length in the same share of the reads (the split's, and the
/// shorter ones the map cuts) within 4 points of fio's (about 2000 reads each).
#[test]
fn a_split_reads_fios_sizes_at_fios_offsets() {
    let Some([fio, ours]) = both(&[
        "--name=split",
        "--rw=randread",
        "--bssplit=4k/10:64k/50:32k/40",
        "--size=64m",
    ]) else {
        return;
    };
    for (tool, ios) in [("fio", &fio), ("iolab", &ours)] {
        assert_eq!(ios.iter().map(|(l, _)| l).sum::<u64>(), 64 << 20, "{tool}");
        assert!(
            ios.iter().all(|(l, at)| at % 4096 == 0 && l % 4096 == 0),
            "{tool}"
        );
    }
    let (f, o) = (length_shares(&fio), length_shares(&ours));
    for len in [4096, 32768, 65536] {
        let (a, b) = (f[&len], o[&len]);
        assert!((a - b).abs() < 0.04, "{len}: fio {a:.3}, iolab {b:.3}");
    }
    let cut = |m: &BTreeMap<u64, f64>| -> f64 {
        m.iter()
            .filter(|(l, _)| ![4096, 32768, 65536].contains(*l))
            .map(|(_, s)| s)
            .sum()
    };
    assert!(
        (cut(&f) - cut(&o)).abs() < 0.04,
        "cut: {} vs {}",
        cut(&f),
        cut(&o)
    );
}

/// Skewed offsets: zipf, pareto and normal put the same share of the reads on the
/// busiest 1 % and 10 % of the blocks as fio does (within 3 points), and zones take their
/// shares of the reads in their places (within 2 points of the asked shares and of fio).
#[test]
fn skewed_offsets_put_fios_shares_on_the_busiest_blocks() {
    let blocks = 8192;
    for dist in ["zipf:1.2", "pareto:0.2", "normal:5"] {
        let d = format!("--random_distribution={dist}");
        let Some([fio, ours]) = both(&["--name=skew", "--rw=randread", "--size=32m", &d]) else {
            return;
        };
        assert_eq!(
            fio.len(),
            ours.len(),
            "{dist}: one read per block of the size"
        );
        for fraction in [0.01, 0.10] {
            let (a, b) = (
                hot_share(&fio, blocks, fraction),
                hot_share(&ours, blocks, fraction),
            );
            assert!(
                (a - b).abs() < 0.03,
                "{dist} {fraction}: fio {a:.3}, iolab {b:.3}"
            );
        }
    }
    let Some([fio, ours]) = both(&[
        "--name=zones",
        "--rw=randread",
        "--size=32m",
        "--random_distribution=zoned:60/10:30/20:10/70",
    ]) else {
        return;
    };
    let zone = |ios: &[(u64, u64)], from: f64, to: f64| {
        let (a, b) = (
            (from * 32.0 * 1048576.0) as u64,
            (to * 32.0 * 1048576.0) as u64,
        );
        ios.iter().filter(|(_, at)| (a..b).contains(at)).count() as f64 / ios.len() as f64
    };
    for (from, to, share) in [(0.0, 0.1, 0.6), (0.1, 0.3, 0.3), (0.3, 1.0, 0.1)] {
        let (a, b) = (zone(&fio, from, to), zone(&ours, from, to));
        assert!(
            (a - share).abs() < 0.02 && (b - share).abs() < 0.02,
            "{from}: {a} {b}"
        );
    }
}

fn iops_of(file: &Path) -> f64 {
    let j: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    j["phases"][0]["ops"][0]["iops"].as_f64().unwrap()
}

/// A paced run's rate, as its stored figures give it, is the rate asked for: iolab's
/// --rate-iops over all its workers, and fio's rate_iops for each job clone.
#[test]
fn a_paced_run_holds_its_rate_in_its_stored_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    run(&[
        "run",
        "--backend",
        "null",
        "--rw",
        "randread",
        "--threads",
        "4",
        "--rate-iops",
        "400",
        "--runtime",
        "2s",
        "--no-store",
        "--json",
        path(&out),
    ])
    .expect(0);
    let iops = iops_of(&out);
    assert!((iops / 400.0 - 1.0).abs() < 0.03, "{iops}");
    // fio: rate_iops per clone; two clones reported together do twice as many.
    let r = Ran::from(
        iolab()
            .args(["fio", "--no-store", "--output-format=json", "--name=paced"])
            .args([
                "--ioengine=null",
                "--rw=randread",
                "--size=16m",
                "--rate_iops=150",
            ])
            .args([
                "--numjobs=2",
                "--group_reporting",
                "--time_based",
                "--runtime=2",
            ])
            .output()
            .unwrap(),
    )
    .expect(0);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let iops = v["jobs"][0]["read"]["iops"].as_f64().unwrap();
    assert!((iops / 300.0 - 1.0).abs() < 0.05, "{iops}");
}

/// A worker paced to one I/O a minute still answers Ctrl-C at once, keeping what it did.
#[test]
fn ctrl_c_ends_a_slow_paced_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let child = iolab()
        .args([
            "run",
            "--backend",
            "null",
            "--threads",
            "2",
            "--rate-iops",
            "1",
        ])
        .args(["--runtime", "120s", "--no-store", "--json", path(&out)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let sent = std::time::Instant::now();
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let r = Ran::from(child.wait_with_output().unwrap()).expect(130);
    // Well before the next I/O would be due (a liveness bound, not a speed figure).
    assert!(sent.elapsed().as_secs() < 20, "{:?}", sent.elapsed());
    assert!(r.stdout.contains("[interrupted]"), "{}", r.stdout);
}

/// A rate below the minimum fails the run (exit 1), as fio's rate_iops_min does.
#[test]
fn a_rate_below_its_minimum_fails_the_run() {
    let r = run(&[
        "run",
        "--backend",
        "null",
        "--rate-iops",
        "100",
        "--rate-iops-min",
        "100",
        "--think-time",
        "20ms",
        "--runtime",
        "5s",
        "--no-store",
    ])
    .expect(1);
    assert!(
        r.stdout
            .contains("below this worker's part (100.0) of --rate-iops-min 100"),
        "{}",
        r.stdout
    );
}

#[test]
fn bad_sizes_offsets_and_rates_are_one_line_exit_2_and_run_nothing() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = path(dir.path());
    let cases: [(&[&str], &str); 10] = [
        (
            &["run", "--dir", d, "--block-sizes", "4KiB/150:8KiB"],
            "4KiB has a share of 150%, over 100%",
        ),
        (
            &["run", "--dir", d, "--block-sizes", "4KiB/50:6KiB/50"],
            "--block-sizes: 6KiB is not a multiple of 4KiB, the smallest size",
        ),
        (
            &["run", "--dir", d, "--rate", "1KiB"],
            "--rate: 1KiB per second is less than one I/O of 4KiB per second",
        ),
        (
            &[
                "run",
                "--dir",
                d,
                "--rw",
                "randread",
                "--distribution",
                "zipf:1",
            ],
            "zipf's theta 1 must be above 0 and not 1",
        ),
        (
            &[
                "fio",
                "--name=a",
                "--size=1m",
                "--bssplit=4k/10:8k/10:16k/90",
            ],
            "[a] bssplit: the shares add up to 110%, over 100%",
        ),
        (
            &["fio", "--name=a", "--size=1m", "--bssplit=4k/50:6k/50"],
            "[a] bssplit: 6KiB is not a multiple of 4KiB",
        ),
        (
            &["fio", "--name=a", "--size=1m", "--rate=1k"],
            "[a] rate: 1KiB per second is less than one I/O of 4KiB per second",
        ),
        (
            &["fio", "--name=a", "--size=1m", "--bssplit=4k/x:8k"],
            "[a] bssplit: 'x' in '4k/x' is not a share in percent",
        ),
        (
            &["fio", "--name=a", "--size=1m", "--flow=1001"],
            "[a] flow: 1001 is over fio's largest weight, 1000",
        ),
        (
            &[
                "fio",
                "--name=a",
                "--size=1m",
                "--latency_target=1ms",
                "--latency_percentile=101",
            ],
            "[a] latency_percentile: '101' is not a percentile from 0 to 100",
        ),
    ];
    for (args, want) in cases {
        let mut args = args.to_vec();
        let dd = format!("--directory={d}");
        if args[0] == "fio" {
            args.push(&dd);
        }
        let r = run(&args).expect(2);
        assert!(r.error_line().contains(want), "{args:?}: {}", r.stderr);
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing ran"
    );
}

/// Drawn sizes (bsrange, bssplit) come from fio's own generator and seeds (io_u.c
/// `get_next_buflen`, `bsrange_state` seeded per direction and clone), reseeded at each
/// loop under randrepeat: a sequential job's calls, files, offsets and sizes are fio's,
/// I/O for I/O, for reads, writes (two loops), a split over two clones, a mixed job
/// and a randseed without reseeding.
#[test]
fn drawn_sizes_are_fios_io_for_io_in_a_sequence() {
    if !peer_on_path("fio", "--version") || !peer_on_path("strace", "-V") {
        return;
    }
    let cases: [&[&str]; 5] = [
        &["--rw=read", "--bsrange=1k-4k", "--size=64k"],
        &["--rw=write", "--bsrange=4k-16k", "--size=128k", "--loops=2"],
        &[
            "--rw=write",
            "--bssplit=4k/30:16k/70",
            "--size=256k",
            "--numjobs=2",
        ],
        &["--rw=rw", "--bsrange=2k-8k", "--size=64k"],
        &[
            "--rw=read",
            "--bsrange=1k-8k",
            "--size=64k",
            "--loops=2",
            "--randseed=3",
        ],
    ];
    for job in cases {
        let mut seen = Vec::new();
        for tool in ["fio", "iolab"] {
            let dir = tempfile::tempdir_in("/var/tmp").unwrap();
            let work = tempfile::tempdir().unwrap();
            let mut cmd = crate::common::fio_or_iolab(tool, &[]);
            cmd.arg("--name=j")
                .args(job)
                .args(["--thread", "--ioengine=psync", "--minimal"])
                .arg(format!("--directory={}", path(dir.path())));
            // The job's I/Os, not a layout's larger writes.
            let mut ios: Vec<(String, String, u64, u64)> =
                crate::fio_more::file_ios(&cmd, dir.path(), work.path())
                    .into_iter()
                    .filter(|(call, _, _, len)| call.starts_with('p') && *len <= 16384)
                    .collect();
            ios.sort_by(|a, b| a.1.cmp(&b.1));
            assert!(ios.len() > 8, "{tool} {job:?}: {ios:?}");
            seen.push(ios);
        }
        assert_eq!(seen[1], seen[0], "{job:?}: iolab's against fio's");
    }
}
