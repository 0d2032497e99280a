//! Flash workloads: trims on loop devices and files (the backing file's allocation is
//! the proof a discard happened), the guard on trims, fio's trim jobs.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use crate::common::{error_line, json_of, loop_image, path, run};

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
