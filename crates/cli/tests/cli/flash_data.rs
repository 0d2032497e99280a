//! The data iolab writes: distinct and incompressible by default, the compression and
//! dedupe ratios asked for (zstd and hashes over the written file), fio's buffer options.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{Ran, error_line, json_of, path, run};

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

/// The phase's stored figure `key`.
pub(crate) fn extra(doc: &serde_json::Value, key: &str) -> Option<f64> {
    doc["phases"][0]["extra"][key].as_f64()
}

pub(crate) fn within(got: f64, want: f64, share: f64) -> bool {
    (got - want).abs() <= want * share
}

/// The default data: every 4 KiB unit distinct, and nothing zstd can shrink in ZFS's
/// 1 MiB records (zstd -3 sees the whole record), sequential or random, over a device
/// whose unwritten blocks hold other random data (data_reduction.rs checks whole files
/// under every compressor).
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
        // fio's copies repeat its last unique buffer, so a record holds a copy and its
        // source and compresses by the dedupe ratio too; iolab's are drawn among all of
        // a worker's earlier units (issue 47) and leave records as they are.
        let want = if opts[0].starts_with("--dedupe") {
            1.0
        } else {
            za
        };
        assert!(
            within(zb, want, 0.05),
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
            .matches("compress ratio measured (lz4 per write, sampled writes): ")
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
