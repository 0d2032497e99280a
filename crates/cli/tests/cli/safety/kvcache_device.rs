//! `iolab kvcache --device`: the KV cache's storage tier on a block device, guarded as
//! `iolab run --device` is. On an empty loop device the entries are runs of blocks (the
//! first at offset 0, its `.npy` header there), and the device stays; a device with a
//! file system, or too small for the model's largest entry, is refused in one line, not
//! one byte written.

use std::fs;

use crate::common::{Loop, error_line, json_of, path, run};

fn kvcache(dev: &str, extra: &[&str]) -> crate::common::Ran {
    let mut args = vec![
        "kvcache",
        "--model",
        "tiny-1b",
        "--users",
        "3",
        "--duration",
        "2s",
        "--generation-mode",
        "none",
        "--device",
        dev,
    ];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn kvcache_on_a_loop_device_writes_entries_at_their_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("kv.img");
    // Sparse: room for tiny-1b's largest entry (25,000 tokens, 586 MiB).
    fs::File::create(&img).unwrap().set_len(1 << 30).unwrap();
    let Some(dev) = Loop::attach(&img) else {
        eprintln!("SKIPPED: no loop device here (needs root and /dev/loop-control)");
        return;
    };
    let out = dir.path().join("run.json");
    kvcache(&dev.0, &["--direct", "--json", path(&out)]).expect(0);
    let run = json_of(&out);
    let write = run["phases"][0]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "write")
        .unwrap()
        .clone();
    assert!(write["bytes"].as_u64().unwrap() > 0, "{write}");
    let mut head = [0u8; 8];
    std::io::Read::read_exact(&mut fs::File::open(&img).unwrap(), &mut head).unwrap();
    assert_eq!(&head, b"\x93NUMPY\x01\x00", "the first entry at offset 0");
    assert_eq!(fs::metadata(&img).unwrap().len(), 1 << 30, "not grown");
    assert!(std::path::Path::new(&dev.0).exists(), "the device stays");
}

#[test]
fn kvcache_refuses_a_device_with_a_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let Some(img) = crate::common::ext4_image(dir.path(), "ext4.img", 64) else {
        return;
    };
    let Some(dev) = Loop::attach(&img) else {
        eprintln!("SKIPPED: no loop device here (needs root and /dev/loop-control)");
        return;
    };
    let before = fs::read(&img).unwrap();
    let r = kvcache(&dev.0, &[]).expect(2);
    let line = error_line(&r);
    assert!(line.contains("ext4 signature"), "{line}");
    assert!(line.contains("--allow-destroy"), "{line}");
    assert_eq!(fs::read(&img).unwrap(), before, "not one byte written");
    // Both a device and a bucket: one line.
    let r = kvcache(
        &dev.0,
        &["--s3-endpoint", "http://127.0.0.1:9", "--bucket", "b"],
    )
    .expect(2);
    assert!(error_line(&r).contains("--device"), "{}", r.stderr);
}

/// A device whose share cannot hold the model's largest entry is refused before
/// anything is written, not at the first entry that does not fit.
#[test]
fn kvcache_refuses_a_device_too_small_for_the_largest_entry() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("small.img");
    fs::File::create(&img).unwrap().set_len(64 << 20).unwrap();
    let Some(dev) = Loop::attach(&img) else {
        eprintln!("SKIPPED: no loop device here (needs root and /dev/loop-control)");
        return;
    };
    let r = kvcache(&dev.0, &["--no-store"]).expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("--device") && line.contains("64.0 MiB") && line.contains("tiny-1b"),
        "{line}"
    );
    assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
    let image = fs::read(&img).unwrap();
    assert!(image.iter().all(|b| *b == 0), "not one byte written");
}
