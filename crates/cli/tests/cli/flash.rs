//! Flash workloads: trims on loop devices and files (the backing file's allocation is
//! the proof a discard happened), the guard on trims, fio's trim jobs.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use crate::common::{Ran, error_line, json_of, loop_image, path, run};

/// Bytes the file system has allocated for `file` (st_blocks, 512-byte units).
fn allocated(file: &Path) -> u64 {
    fs::metadata(file).unwrap().blocks() * 512
}

/// The `op` entry of the first phase of a `--json` document.
fn op<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["phases"][0]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == name)
        .unwrap_or_else(|| panic!("no {name} in {doc}"))
}

#[test]
fn randtrim_on_a_loop_device_gives_the_backing_files_blocks_back() {
    let dir = tempfile::tempdir().unwrap();
    let Some((img, dev)) = loop_image(dir.path(), "flash.img", 64) else {
        return;
    };
    let device = Path::new(&dev.0);
    let write = [
        "run",
        "--no-store",
        "--device",
        &dev.0,
        "--rw",
        "write",
        "--block-size",
        "1MiB",
        "--size",
        "64MiB",
        "--direct",
    ];
    run(&write).expect(0);
    let full = allocated(&img);
    assert!(full >= 63 << 20, "the write filled the image: {full}");
    // Half of the device, each 64 KiB block once.
    let json = dir.path().join("trim.json");
    run(&[
        "run",
        "--no-store",
        "--device",
        path(device),
        "--rw",
        "randtrim",
        "--block-size",
        "64KiB",
        "--size",
        "32MiB",
        "--random",
        "full-coverage",
        "--json",
        path(&json),
    ])
    .expect(0);
    let doc = json_of(&json);
    let trim = op(&doc, "trim");
    assert_eq!(trim["ops"], 512);
    assert_eq!(trim["bytes"], 32 << 20);
    assert!(trim["latency"]["max"].as_u64().unwrap() > 0, "{trim}");
    drop(dev);
    let after = allocated(&img);
    let freed = full - after;
    // The loop device punches the trimmed ranges out of its backing file.
    assert!(
        (31 << 20..=33 << 20).contains(&freed),
        "a 32 MiB trim freed {freed} bytes of the image ({full} -> {after})"
    );
}

#[test]
fn trim_in_a_directory_punches_holes_and_keeps_the_size() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    fs::create_dir(&work).unwrap();
    run(&[
        "run",
        "--no-store",
        "--dir",
        path(&work),
        "--rw",
        "trim",
        "--block-size",
        "1MiB",
        "--size",
        "8MiB",
        "--keep",
    ])
    .expect(0);
    let file = work.join("iolab-work/data.r0.t0");
    assert_eq!(fs::metadata(&file).unwrap().len(), 8 << 20);
    // Laid out first (fio lays files out for trims too), then every block punched out.
    assert_eq!(allocated(&file), 0, "every block was trimmed");
}

#[test]
fn a_trim_on_a_device_holding_a_file_system_is_refused_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let Some((img, dev)) = loop_image(dir.path(), "flash.img", 64) else {
        return;
    };
    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F", &dev.0])
        .output();
    if !mkfs.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: mkfs.ext4 is not available");
        return;
    }
    let before = fs::read(&img).unwrap();
    for rw in ["trim", "randtrim", "trimwrite"] {
        let r = run(&[
            "run",
            "--no-store",
            "--device",
            &dev.0,
            "--rw",
            rw,
            "--size",
            "1MiB",
        ]);
        let line = error_line(&r.expect(2));
        assert!(line.contains("ext4 signature"), "{rw}: {line}");
        assert!(line.contains("--allow-destroy"), "{rw}: {line}");
    }
    // fio's trim job meets the same guard.
    let f = format!("--filename={}", dev.0);
    let r = run(&[
        "fio",
        "--no-store",
        "--name=t",
        "--rw=trim",
        "--bs=64k",
        "--size=1m",
        &f,
    ]);
    assert!(error_line(&r.expect(2)).contains("ext4 signature"));
    drop(dev);
    assert!(fs::read(&img).unwrap() == before, "not one byte trimmed");
}

#[test]
fn fio_trimwrite_trims_and_writes_each_block_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some((_img, dev)) = loop_image(dir.path(), "flash.img", 64) else {
        return;
    };
    let f = format!("--filename={}", dev.0);
    for rw in ["trimwrite", "randtrimwrite"] {
        let r = run(&[
            "fio",
            "--no-store",
            "--name=t",
            &format!("--rw={rw}"),
            "--bs=64k",
            "--size=1m",
            "--output-format=json",
            &f,
        ])
        .expect(0);
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let job = &doc["jobs"][0];
        // As fio 3.33 reports the same jobs: 1 MiB trimmed and 1 MiB written, 16 I/Os
        // each (randtrimwrite too: every block once, at random).
        for dir in ["trim", "write"] {
            assert_eq!(job[dir]["io_bytes"], 1 << 20, "{rw} {dir}: {job}");
            assert_eq!(job[dir]["total_ios"], 16, "{rw} {dir}");
        }
        assert_eq!(job["read"]["io_bytes"], 0);
        assert_eq!(job["job options"]["rw"], rw);
    }
}

/// How `data` compresses with the zstd command line (level 3), record by record as a
/// compressing file system stores it (ZFS's 128 KiB records): bytes in over bytes out.
/// None (said loudly) without zstd.
pub(crate) fn zstd_ratio(data: &[u8]) -> Option<f64> {
    zstd_ratio_in(data, 128 << 10)
}

/// As [`zstd_ratio`], in records of `record` bytes (ZFS's recordsize).
fn zstd_ratio_in(data: &[u8], record: usize) -> Option<f64> {
    use std::io::Write;
    let mut stored = 0usize;
    for record in data.chunks(record) {
        let child = Command::new("zstd")
            .args(["-3", "-q", "-c", "--no-check"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn();
        let Ok(mut child) = child else {
            eprintln!("SKIPPED: the zstd command is not installed (scripts/test.sh installs it)");
            return None;
        };
        child.stdin.take().unwrap().write_all(record).unwrap();
        stored += child.wait_with_output().unwrap().stdout.len();
    }
    Some(data.len() as f64 / stored as f64)
}

/// 4 KiB units over the distinct ones among them, by SHA-256.
fn dedupe_ratio(data: &[u8]) -> f64 {
    units_over_distinct(data, 4096)
}

/// `unit`-byte pieces of `data` over the distinct ones among them, by SHA-256.
pub(crate) fn units_over_distinct(data: &[u8], unit: usize) -> f64 {
    use sha2::Digest;
    let units: Vec<_> = data.chunks(unit).map(sha2::Sha256::digest).collect();
    let distinct: std::collections::HashSet<_> = units.iter().collect();
    units.len() as f64 / distinct.len() as f64
}

/// Runs fio's job `args` on `file`; its stderr if it fails.
fn fio_writes<S: AsRef<std::ffi::OsStr>>(args: &[S], file: &Path) {
    let mut fio = Command::new("fio");
    fio.args(args).arg(format!("--filename={}", file.display()));
    Ran::from(fio.output().unwrap()).expect(0);
}

/// What fio, then `iolab fio`, write for the same job (`args`, fio's options but the
/// file), each into a new file under `dir` that is read and removed.
pub(crate) fn written_by_both(dir: &Path, args: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let fio_file = dir.join("by-fio");
    let iolab_file = dir.join("by-iolab");
    fio_writes(args, &fio_file);
    let file = format!("--filename={}", iolab_file.display());
    let mut iolab = vec!["fio", "--no-store", "--keep"];
    iolab.extend(args);
    iolab.push(&file);
    run(&iolab).expect(0);
    let both = (fs::read(&fio_file).unwrap(), fs::read(&iolab_file).unwrap());
    fs::remove_file(&fio_file).unwrap();
    fs::remove_file(&iolab_file).unwrap();
    both
}

fn within(got: f64, want: f64, share: f64) -> bool {
    (got - want).abs() <= want * share
}

/// The default data: every 4 KiB unit distinct, and nothing zstd can shrink in ZFS's
/// 1 MiB records (zstd -3 sees the whole record), sequential or random. A write takes its
/// data from its offset's place in the 1 MiB write window: a window stepped through
/// per write instead let sequential 4 KiB writes on a 512-byte-aligned file system
/// overlap (1.73 here) and random ones land on the same place twice in a record (1.07).
#[test]
fn default_data_is_distinct_and_incompressible_in_1mib_records() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    for rw in ["write", "randwrite"] {
        // Random, distinct units to start from: what a run leaves unwritten passes, and
        // what it writes must not repeat or compress.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let fill: Vec<u8> = (0..(8 << 20) / 8)
            .flat_map(|_| {
                x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                (z ^ (z >> 31)).to_le_bytes()
            })
            .collect();
        fs::write(&f, &fill).unwrap();
        run(&[
            "run",
            "--no-store",
            "-Q",
            "--device",
            path(&f),
            "--allow-destroy",
            "--rw",
            rw,
            "--block-size",
            "4KiB",
            "--size",
            "8MiB",
            "--cache",
            "keep",
        ])
        .expect(0);
        let data = fs::read(&f).unwrap();
        assert_eq!(data.len(), 8 << 20);
        let changed = data
            .chunks(4096)
            .zip(fill.chunks(4096))
            .filter(|(a, b)| a != b)
            .count();
        assert!(changed >= 1024, "{rw}: only {changed} units written");
        assert_eq!(dedupe_ratio(&data), 1.0, "{rw}: repeated 4 KiB units");
        let Some(z) = zstd_ratio_in(&data, 1 << 20) else {
            return;
        };
        assert!(z < 1.002, "{rw}: zstd shrinks 1 MiB records by {z}");
    }
}

#[test]
fn asked_ratios_are_what_zstd_and_hashes_find_in_the_written_file() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    fs::create_dir(&work).unwrap();
    let json = dir.path().join("r.json");
    for (flags, compress, dedupe) in [
        (
            ["--compress-ratio", "2", "--block-size", "128KiB"],
            2.0,
            1.0,
        ),
        (
            ["--compress-ratio", "4", "--block-size", "128KiB"],
            4.0,
            1.0,
        ),
        (["--dedupe-ratio", "2", "--block-size", "4KiB"], 1.0, 2.0),
        (["--dedupe-ratio", "3", "--block-size", "4KiB"], 1.0, 3.0),
    ] {
        let mut args = vec![
            "run",
            "--no-store",
            "--dir",
            path(&work),
            "--rw",
            "write",
            "--size",
            "16MiB",
            "--keep",
            "--json",
            path(&json),
        ];
        args.extend(flags);
        run(&args).expect(0);
        let data = fs::read(work.join("iolab-work/data.r0.t0")).unwrap();
        assert_eq!(data.len(), 16 << 20);
        // Copies of a block inside one record compress too: zstd judges the compress
        // ratio of writes without copies.
        if dedupe == 1.0 {
            let Some(z) = zstd_ratio(&data) else { return };
            assert!(within(z, compress, 0.05), "{flags:?}: zstd finds {z}");
        }
        let h = dedupe_ratio(&data);
        assert!(within(h, dedupe, 0.05), "{flags:?}: SHA-256 finds {h}");
        // iolab's own measure, reported beside the asked ratio: a sample of some 500
        // writes here, so a sample's spread (a few percent) on top.
        let doc = json_of(&json);
        let extra = &doc["phases"][0]["extra"];
        let (key, want) = if compress > 1.0 {
            ("compress_ratio", compress)
        } else {
            ("dedupe_ratio", dedupe)
        };
        assert_eq!(extra[key], want, "{extra}");
        let measured = extra[format!("{key}_measured")].as_f64().unwrap();
        assert!(
            within(measured, want, 0.10),
            "{flags:?}: measured {measured}"
        );
    }
}

#[test]
fn fio_buffer_compress_and_dedupe_percentages_compress_as_fios_data_does() {
    if !crate::common::peer_on_path("fio", "--version") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for opts in [
        &["--buffer_compress_percentage=50"][..],
        &[
            "--buffer_compress_percentage=75",
            "--buffer_compress_chunk=4k",
        ],
        &["--dedupe_percentage=50", "--bs=4k"],
    ] {
        let common = ["--name=j", "--size=16m", "--bs=128k", "--rw=write"];
        let args: Vec<&str> = common.iter().chain(opts).copied().collect();
        let (a, b) = written_by_both(dir.path(), &args);
        let (Some(za), Some(zb)) = (zstd_ratio(&a), zstd_ratio(&b)) else {
            return;
        };
        assert!(
            within(zb, za, 0.05),
            "{opts:?}: fio's data {za}, iolab's {zb}"
        );
        let (ha, hb) = (dedupe_ratio(&a), dedupe_ratio(&b));
        assert!(
            within(hb, ha, 0.08),
            "{opts:?}: fio's units {ha}, iolab's {hb}"
        );
    }
}

#[test]
fn a_ratio_below_one_is_one_line_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, value) in [
        ("--compress-ratio", "0.5"),
        ("--dedupe-ratio", "0"),
        ("--compress-ratio", "0.99"),
    ] {
        let r = run(&[
            "run",
            "--no-store",
            "--dir",
            path(dir.path()),
            "--rw",
            "write",
            "--size",
            "1MiB",
            flag,
            value,
        ]);
        let line = error_line(&r.expect(2));
        assert!(line.contains(flag) && line.contains("below 1"), "{line}");
    }
    let r = run(&[
        "run",
        "--no-store",
        "--dir",
        path(dir.path()),
        "--compress-ratio",
        "2",
    ]);
    assert!(error_line(&r.expect(2)).contains("only applies to a workload that writes, not read"));
    assert!(
        !dir.path().join("iolab-work").exists(),
        "nothing was written"
    );
}

/// The phase's stored figure `key`.
fn extra(doc: &serde_json::Value, key: &str) -> Option<f64> {
    doc["phases"][0]["extra"][key].as_f64()
}

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
        let mut cmd = if tool == "fio" {
            Command::new("fio")
        } else {
            let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
            c.args(["fio", "--no-store"]);
            c
        };
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

/// S5 (the ZFS study, whose pool compresses with lz4) with `--set compress_ratio=2`: every
/// write phase writes data of that ratio and shows the ratio measured; the reads run.
#[test]
fn the_zfs_preset_runs_with_compress_ratio_2_and_shows_the_measured_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s5.json");
    let work = dir.path().join("w");
    fs::create_dir(&work).unwrap();
    let r = run(&[
        "study",
        "run",
        "zfs-matrix",
        "--scale",
        "0.001",
        "--set",
        "compress_ratio=2",
        "--set",
        "runtime=300ms",
        "--set",
        "threads=[1]",
        "--dir",
        path(&work),
        "--no-store",
        "--json",
        path(&json),
    ])
    .expect(0);
    let doc = json_of(&json);
    let phases = doc["phases"].as_array().unwrap();
    let (mut writes, mut reads) = (0, 0);
    for p in phases {
        let asked = p["extra"]["compress_ratio"].as_f64();
        let measured = p["extra"]["compress_ratio_measured"].as_f64();
        if p["spec"]["rw"].as_str().unwrap().contains("write") {
            writes += 1;
            assert_eq!(asked, Some(2.0), "{}", p["name"]);
            assert!(
                within(measured.unwrap(), 2.0, 0.05),
                "{}: {measured:?}",
                p["name"]
            );
        } else {
            reads += 1;
            assert_eq!((asked, measured), (None, None), "{}", p["name"]);
        }
    }
    assert_eq!((writes, reads), (8, 4));
    assert_eq!(
        r.stdout
            .matches("compress ratio measured (lz4, sampled writes): 1.9")
            .count(),
        8,
        "{}",
        r.stdout
    );
}

/// fio's buffer_pattern: every block the pattern repeated from its first byte; the file
/// fio 3.33 writes and the one `iolab fio` writes are the same bytes.
#[test]
fn fio_buffer_pattern_writes_the_same_bytes_as_fio() {
    let dir = tempfile::tempdir().unwrap();
    let have_fio = crate::common::peer_on_path("fio", "--version");
    for pattern in ["0xdeadbeef", "\"ab\"0x00"] {
        let (by_fio, by_iolab) = (dir.path().join("fio.dat"), dir.path().join("iolab.dat"));
        let common = [
            "--name=j".to_string(),
            "--size=1m".into(),
            "--bs=64k".into(),
            "--rw=randwrite".into(),
            format!("--buffer_pattern={pattern}"),
        ];
        let f = format!("--filename={}", by_iolab.display());
        let mut args: Vec<&str> = vec!["fio", "--no-store", "--keep", &f];
        args.extend(common.iter().map(String::as_str));
        run(&args).expect(0);
        let mine = fs::read(&by_iolab).unwrap();
        assert_eq!(mine.len(), 1 << 20);
        // Every 64 KiB block starts the pattern anew.
        let p: &[u8] = if pattern.starts_with('0') {
            &[0xde, 0xad, 0xbe, 0xef]
        } else {
            b"ab\0"
        };
        for block in mine.chunks(64 << 10) {
            assert!(
                block.chunks(p.len()).all(|c| c == &p[..c.len()]),
                "{pattern}"
            );
        }
        if have_fio {
            fio_writes(&common, &by_fio);
            assert!(
                fs::read(&by_fio).unwrap() == mine,
                "{pattern}: fio's file differs"
            );
            fs::remove_file(&by_fio).unwrap();
        }
        fs::remove_file(&by_iolab).unwrap();
    }
    // Bad input: one line naming the option, nothing written.
    let r = run(&[
        "fio",
        "--no-store",
        "--name=j",
        "--size=1m",
        "--rw=write",
        "--buffer_pattern=0xZZ",
        &format!("--directory={}", path(dir.path())),
    ]);
    assert!(error_line(&r.expect(2)).contains("buffer_pattern"));
    let r = run(&[
        "run",
        "--no-store",
        "--dir",
        path(dir.path()),
        "--rw",
        "read",
        "--buffer-pattern",
        "0xff",
    ]);
    assert!(error_line(&r.expect(2)).contains("only applies to a workload that writes"));
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing written"
    );
}
