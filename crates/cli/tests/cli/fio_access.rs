//! Sizes drawn per I/O, skewed offsets and pacing against real fio (on PATH;
//! scripts/test.sh installs Debian's fio 3.33 and strace): the same job run by fio and by
//! `iolab fio` under strace, their reads compared by size and by where they fall; paced
//! runs measured by their own stored figures; bad input refused in one line.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Ran, iolab, path, peer_on_path, run, strace_threads};

/// The (length, offset) of every pread64 on a file under `dir`, per traced thread in
/// order: a file's descriptor is followed from its openat to its close.
fn reads(cmd: &Command, dir: &Path, work: &Path) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let prefix = format!("\"{}/", path(dir));
    for text in strace_threads(cmd, work, "openat,close,pread64") {
        let mut fds: Vec<String> = Vec::new();
        for line in text.lines() {
            let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
            let Some((call, rest)) = line.split_once('(') else {
                continue;
            };
            let result = line.rsplit_once(" = ").map(|(_, r)| r.to_string());
            match call {
                "openat" if rest.contains(&prefix) => fds.extend(result),
                "close" => fds.retain(|fd| !rest.starts_with(&format!("{fd})"))),
                "pread64" => {
                    let args: Vec<&str> = rest.split(", ").collect();
                    if fds.iter().any(|fd| fd == args[0]) {
                        let len: u64 = args[2].parse().unwrap();
                        let offset: u64 = args[3].split(')').next().unwrap().parse().unwrap();
                        out.push((len, offset));
                    }
                }
                _ => {}
            }
        }
    }
    out
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
        let mut cmd = if *tool == "fio" {
            Command::new("fio")
        } else {
            let mut c = iolab();
            c.args(["fio", "--no-store"]);
            c
        };
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

/// fio's flow control: two jobs of one flow group keep the ratio of their weights in
/// I/Os (flow=8 against flow=1: 8 to 1, as fio 3.33's flow.c), where each alone would
/// run as fast as it can; with fio on PATH, fio's ratio for the same job file is 8 too.
#[test]
fn jobs_of_a_flow_group_keep_the_ratio_of_their_weights() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let job = "[global]\nioengine=null\nsize=16m\ntime_based\nruntime=1\n\
               [fast]\nrw=randread\nflow=8\n[slow]\nrw=read\nflow=1\n\
               [apart]\nrw=read\nflow=1\nflow_id=2\nflow_sleep=100\n";
    let file = dir.path().join("flow.fio");
    std::fs::write(&file, job).unwrap();
    let ratios = |out: &str| -> (f64, Option<u64>) {
        let v: Value = serde_json::from_str(out).unwrap();
        let ios = |j: usize| v["jobs"][j]["read"]["total_ios"].as_u64();
        let ratio = ios(0).unwrap() as f64 / ios(1).unwrap() as f64;
        (ratio, ios(2))
    };
    let r = Ran::from(
        iolab()
            .args(["fio", "--no-store", "--output-format=json", path(&file)])
            .output()
            .unwrap(),
    )
    .expect(0);
    let (ratio, apart) = ratios(&r.stdout);
    // Within 3 %: at the deadline one job may stop a moment before the other.
    assert!((ratio - 8.0).abs() < 0.25, "iolab: {ratio}");
    // A group of one is never held back: it runs far more than the held pair's slow job.
    assert!(apart.unwrap() > 1000, "{apart:?}");
    if peer_on_path("fio", "--version") {
        // fio's held-back jobs spin (flow_sleep=0), so a third spinning job on a
        // machine of two cores starves the pair: fio runs the pair alone.
        let pair = job.split("[apart]").next().unwrap();
        std::fs::write(&file, pair).unwrap();
        let out = Command::new("fio")
            .args(["--output-format=json", path(&file)])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success());
        let (fio, _) = ratios(&String::from_utf8_lossy(&out.stdout));
        // And a job that outlives the other at the end runs unheld meanwhile (millions
        // of null I/Os per second): fio's ratio strays further on a busy machine (a CI
        // machine running other tests beside it), so fio is held only to the weights'
        // meaning (8 to 1, not 1 to 1), iolab to 3 % above.
        assert!((fio / 8.0 - 1.0).abs() < 0.5, "fio: {fio}, iolab: {ratio}");
    } else {
        eprintln!("fio is not on PATH: iolab's ratio checked alone");
    }
}

/// The 4 KiB units of `a` and `b` together over the distinct ones, and how many
/// distinct units the two files share.
fn units_shared(a: &Path, b: &Path) -> (f64, usize) {
    use sha2::Digest;
    use std::collections::HashSet;
    let units = |p: &Path| -> Vec<_> {
        std::fs::read(p)
            .unwrap()
            .chunks(4096)
            .map(sha2::Sha256::digest)
            .collect()
    };
    let (ua, ub) = (units(a), units(b));
    let (sa, sb): (HashSet<_>, HashSet<_>) = (ua.iter().collect(), ub.iter().collect());
    let all: HashSet<_> = sa.union(&sb).collect();
    (
        (ua.len() + ub.len()) as f64 / all.len() as f64,
        sa.intersection(&sb).count(),
    )
}

/// fio's dedupe_mode=working_set: duplicates copy the first unique writes, the job's
/// own, or with dedupe_global every job's (fio's dedupe-global.fio): the written files
/// dedupe as fio's do, and share units across jobs only with dedupe_global.
#[test]
fn a_dedupe_working_set_dedupes_and_shares_as_fios() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = dir.path();
    // Without fio, iolab's files are checked alone.
    let fio = peer_on_path("fio", "--version");
    for global in [1, 0] {
        let mut got = Vec::new();
        for tool in ["iolab", "fio"]
            .into_iter()
            .filter(|t| fio || *t == "iolab")
        {
            let (a, b) = (d.join(format!("{tool}-a")), d.join(format!("{tool}-b")));
            let job = format!(
                "[global]\nsize=8m\nbs=4k\nrw=write\ndedupe_percentage=50\n\
                 dedupe_mode=working_set\ndedupe_working_set_percentage=50\n\
                 dedupe_global={global}\n[a]\nfilename={}\n[b]\nfilename={}\n",
                path(&a),
                path(&b)
            );
            let file = d.join("ws.fio");
            std::fs::write(&file, job).unwrap();
            let out = if tool == "fio" {
                Command::new("fio").arg(path(&file)).output().unwrap()
            } else {
                iolab()
                    .args(["fio", "--no-store", "--keep", path(&file)])
                    .output()
                    .unwrap()
            };
            assert!(out.status.success(), "{tool}: {out:?}");
            got.push(units_shared(&a, &b));
            std::fs::remove_file(&a).unwrap();
            std::fs::remove_file(&b).unwrap();
        }
        let (ratio, shared) = got[0];
        // Half the writes are copies of the first unique ones: 2 units per distinct one.
        assert!((ratio - 2.0).abs() < 0.1, "global={global}: iolab {ratio}");
        if global == 0 {
            assert_eq!(shared, 0, "each job copies its own writes only");
        } else {
            // About half the copies are of the other job's first writes.
            assert!(shared > 400, "global: {shared} units shared");
        }
        if let Some(&(fio_ratio, fio_shared)) = got.get(1) {
            assert!((ratio / fio_ratio - 1.0).abs() < 0.05, "{got:?}");
            let s = shared as f64 / (fio_shared as f64).max(1.0);
            assert!(
                global == 0 && fio_shared == 0 || (s - 1.0).abs() < 0.15,
                "{got:?}"
            );
        }
    }
}

/// The latency_* figures of a fio JSON job and its read I/Os and runtime (ms).
fn latency_keys(out: &str) -> (Vec<(String, Value)>, u64, u64, i64) {
    let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let j = &v["jobs"][0];
    let keys = [
        "latency_depth",
        "latency_target",
        "latency_percentile",
        "latency_window",
    ]
    .iter()
    .map(|k| (k.to_string(), j[k].clone()))
    .collect();
    let ios = j["read"]["total_ios"].as_u64().unwrap();
    (
        keys,
        ios,
        j["job_runtime"].as_u64().unwrap(),
        j["error"].as_i64().unwrap(),
    )
}

/// fio's latency target (io_u.c lat_target_*): where every I/O meets the target the
/// depth doubles from 1 to the iodepth, settles, runs one more window counted afresh and
/// the job ends long before its runtime, with fio's latency_* keys; with a target no
/// I/O meets at percentile 100 the job fails at a depth of one with ETIMEDOUT (110), as
/// fio's does.
#[test]
fn a_latency_target_searches_the_depth_and_ends_as_fios() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let met = dir.path().join("met.fio");
    std::fs::write(
        &met,
        "[j]\nioengine=null\nsize=1g\nrw=randread\niodepth=16\ntime_based\nruntime=30\n\
         latency_target=10s\nlatency_window=50ms\nlatency_percentile=99.5\n",
    )
    .unwrap();
    let missed = dir.path().join("missed.fio");
    std::fs::write(
        &missed,
        format!(
            "[j]\ndirectory={}\nsize=4m\nrw=randread\nioengine=psync\ndirect=1\n\
             time_based\nruntime=5\nlatency_target=1\n",
            path(dir.path())
        ),
    )
    .unwrap();
    let ran = |tool: &str, file: &Path, code: i32| {
        let mut cmd = if tool == "fio" {
            Command::new("fio")
        } else {
            let mut c = iolab();
            c.args(["fio", "--no-store"]);
            c
        };
        let out = cmd
            .args(["--output-format=json", path(file)])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{tool} {file:?}: {out:?}");
        // fio prints its latency error before the JSON on stdout.
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let start = text.find('{').unwrap_or(0);
        (
            latency_keys(&text[start..]),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let ((keys, ios, runtime, error), _) = ran("iolab", &met, 0);
    let want: Vec<(String, Value)> = [
        ("latency_depth", Value::from(16)),
        ("latency_target", Value::from(10_000_000_000u64)),
        ("latency_percentile", Value::from(99.5)),
        ("latency_window", Value::from(50_000)),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.clone()))
    .collect();
    assert_eq!(keys, want);
    assert_eq!(error, 0);
    // Only the final window is counted: its 50 ms, not the 30 s runtime.
    assert!(ios > 0 && runtime < 5_000, "{ios} I/Os in {runtime} ms");
    let ((_, ios, _, error), stderr) = ran("iolab", &missed, 1);
    assert_eq!((error, ios), (110, 1), "{stderr}");
    assert!(
        stderr.contains("latency_target of 1.00 µs at a depth of 1"),
        "{stderr}"
    );
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let f = f.unwrap().path();
        if f.extension().is_none_or(|e| e != "fio") {
            std::fs::remove_file(f).unwrap();
        }
    }
    if !peer_on_path("fio", "--version") {
        return;
    }
    let ((fio_keys, _, fio_runtime, _), _) = ran("fio", &met, 0);
    assert_eq!(fio_keys, want);
    assert!(fio_runtime < 5_000, "fio: {fio_runtime} ms");
    let ((_, _, _, fio_error), _) = ran("fio", &missed, 1);
    assert_eq!(fio_error, 110);
}

/// Each priority's share of a fio JSON entry's reads: (class, level, share of I/Os).
fn prio_shares(out: &str) -> Vec<(u64, u64, f64)> {
    let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let read = &v["jobs"][0]["read"];
    let total = read["total_ios"].as_u64().unwrap() as f64;
    read["prios"]
        .as_array()
        .unwrap_or_else(|| panic!("no prios: {read}"))
        .iter()
        .map(|p| {
            (
                p["prioclass"].as_u64().unwrap(),
                p["prio"].as_u64().unwrap(),
                p["clat_ns"]["N"].as_u64().unwrap() as f64 / total,
            )
        })
        .collect()
}

/// fio's per-I/O priorities (engines/cmdprio.c): cmdprio_percentage=20 gives a fifth of
/// the reads class 1 (RT), the rest the job's prioclass=3; cmdprio_bssplit gives 64 KiB
/// reads 1/1 a quarter of the time and 3/2 the rest, 1 MiB reads none. fio's `prios`
/// JSON (a class, a level and clat_ns per priority, the default first) and the shares,
/// against fio's where fio is on PATH; on a psync job the options are refused.
#[test]
fn per_io_priorities_keep_their_shares_and_report_as_fios() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = path(dir.path());
    let jobs = [
        (
            "perc.fio",
            "prioclass=3\ncmdprio_percentage=20\ncmdprio_class=1\nbs=16k\n",
            vec![(3, 0, 0.8), (1, 0, 0.2)],
        ),
        (
            "split.fio",
            "bssplit=64k/40:1024k/60\ncmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0\n",
            // Not 60/10/30: with the random map a 1 MiB read that does not fit before
            // the next done block is cut or becomes 64 KiB, in fio 3.33 too (fio: 0.52,
            // 0.12, 0.36 here).
            vec![(0, 0, 0.52), (1, 1, 0.12), (3, 2, 0.36)],
        ),
    ];
    let fio = peer_on_path("fio", "--version");
    for (name, opts, want) in jobs {
        let file = dir.path().join(name);
        std::fs::write(
            &file,
            format!(
                "[j]\ndirectory={d}\nfilename=prio.dat\nsize=64m\nrw=randread\ndirect=1\n\
                 ioengine=libaio\niodepth=8\ntime_based\nruntime=2\n{opts}"
            ),
        )
        .unwrap();
        for tool in ["iolab", "fio"] {
            if tool == "fio" && !fio {
                eprintln!("SKIPPED the fio side: fio is not on PATH");
                continue;
            }
            let mut cmd = if tool == "fio" {
                Command::new("fio")
            } else {
                let mut c = iolab();
                c.args(["fio", "--no-store"]);
                c
            };
            let out = cmd
                .args(["--output-format=json", path(&file)])
                .output()
                .unwrap();
            assert!(out.status.success(), "{tool} {name}: {out:?}");
            let got = prio_shares(&String::from_utf8_lossy(&out.stdout));
            assert_eq!(got.len(), want.len(), "{tool} {name}: {got:?}");
            for ((c, l, share), (wc, wl, ws)) in got.iter().zip(&want) {
                assert_eq!((c, l), (wc, wl), "{tool} {name}: {got:?}");
                // Hundreds of I/Os at least: a share within 6 points.
                assert!((share - ws).abs() < 0.06, "{tool} {name}: {got:?}");
            }
            // iolab removes the file it made; fio leaves it.
            let _ = std::fs::remove_file(dir.path().join("prio.dat"));
        }
    }
    let r = run(&[
        "fio",
        "--name=a",
        "--size=1m",
        "--ioengine=psync",
        "--cmdprio_percentage=20",
        &format!("--directory={d}"),
    ])
    .expect(2);
    assert!(
        r.error_line()
            .contains("[a] cmdprio_percentage: is an option of fio's io_uring and libaio engines, not of ioengine=psync"),
        "{}",
        r.stderr
    );
}

/// A fixed pattern (buffer_pattern, zero_buffers) with sizes drawn per I/O: every byte
/// written holds the pattern, also when a write follows a longer read in the same buffer
/// (the slot is filled again in full after a read), and zero_buffers with bsrange runs
/// (it was refused as if it were IOR's pattern).
#[test]
fn a_fixed_pattern_with_drawn_sizes_writes_only_the_pattern() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    for (option, byte) in [("--buffer_pattern=0xab", 0xabu8), ("--zero_buffers", 0)] {
        let f = dir.path().join("p");
        let out = iolab()
            .args([
                "fio",
                "--no-store",
                "--keep",
                "--output-format=json",
                "--name=p",
            ])
            .args([
                "--rw=rw",
                "--rwmixread=50",
                "--bsrange=4k-64k",
                "--size=4m",
                option,
            ])
            .arg(format!("--filename={}", path(&f)))
            .output()
            .unwrap();
        assert!(out.status.success(), "{option}: {out:?}");
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        let written = json["jobs"][0]["write"]["io_bytes"].as_u64().unwrap();
        let read = json["jobs"][0]["read"]["io_bytes"].as_u64().unwrap();
        assert!(
            written > 1 << 20 && read > 1 << 20,
            "{option}: {written} / {read}"
        );
        // The file's one random map gives each block to one I/O: the reads' blocks hold
        // the layout's random data, the writes' (4 KiB multiples at 4 KiB offsets) only
        // the pattern. Before the fix a write after a longer read wrote 13 % of its
        // bytes from the read (2,105,344 of 2,416,640 patterned).
        let data = std::fs::read(&f).unwrap();
        let patterned = data
            .chunks(4096)
            .filter(|c| c.iter().all(|&b| b == byte))
            .count() as u64
            * 4096;
        assert_eq!(patterned, written, "{option}: bytes holding the pattern");
        std::fs::remove_file(&f).unwrap();
    }
}
