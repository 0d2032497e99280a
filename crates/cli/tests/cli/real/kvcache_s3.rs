//! `iolab kvcache` with its storage tier in an S3 bucket on SeaweedFS
//! (scripts/seaweedfs.sh): the objects are laid out as the files would be (keys
//! `conv_user_..._turn_N.npy`, sizes adding up to the bytes written, one write per entry
//! and the header first in a multipart upload too), nothing of iolab's
//! is left at the end (a bucket it made is removed, another's keeps its own objects), and
//! a bad endpoint is one line, exit 2, nothing stored; objects demoted from the CPU tier
//! or written directly hold iolab's data.

use std::path::Path;
use std::process::Command;

use iolab_backend::object::ObjectOp;

use super::Cluster;
use super::s3::{json, keys, make_bucket, request};
use crate::common::{Ran, iolab, path};

/// `iolab kvcache` on the cluster's bucket: tiny-1b, three users, no CPU tier; its work
/// directory in `dir` (none without: the S3 tier needs no --dir), run from `cwd`.
fn kvcache(c: &Cluster, (dir, cwd): (Option<&Path>, &Path), args: &[&str]) -> Ran {
    let mut cmd = iolab();
    cmd.args(["kvcache", "--model", "tiny-1b", "--users", "3"]);
    if let Some(d) = dir {
        cmd.args(["--dir", path(d)]);
    }
    let out = cmd
        .current_dir(cwd)
        .args(["--generation-mode", "none"])
        .args(["--s3-endpoint", c.var("AWS_ENDPOINT_URL")])
        .env("AWS_ACCESS_KEY_ID", c.var("AWS_ACCESS_KEY_ID"))
        .env("AWS_SECRET_ACCESS_KEY", c.var("AWS_SECRET_ACCESS_KEY"))
        .env("AWS_CONFIG_FILE", "/nonexistent")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        .env_remove("AWS_PROFILE")
        .args(args)
        .output()
        .expect("iolab runs");
    Ran::from(out)
}

/// Every file under the filer's `path` (recursively): its name and size.
fn filer_files(c: &Cluster, path: &str) -> Vec<(String, u64)> {
    let url = format!("http://{}{path}?limit=10000", c.var("SEAWEEDFS_FILER"));
    let out = Command::new("curl")
        .args(["-sf", "-H", "Accept: application/json", &url])
        .output()
        .expect("curl runs");
    assert!(out.status.success(), "listing {url}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut files = Vec::new();
    for e in v["Entries"].as_array().cloned().unwrap_or_default() {
        let full = e["FullPath"].as_str().unwrap().to_string();
        // A directory's mode has Go's ModeDir bit.
        if e["Mode"].as_u64().unwrap() & (1 << 31) != 0 {
            files.extend(filer_files(c, &format!("{full}/")));
        } else {
            files.push((full, e["FileSize"].as_u64().unwrap()));
        }
    }
    files
}

fn written(run: &serde_json::Value) -> (u64, u64) {
    super::s3::op(run, 0, "write")
}

#[test]
fn kvcache_storage_tier_on_seaweedfs() {
    let c = Cluster::up("seaweedfs", &["--no-mount"]);
    let dir = tempfile::tempdir().unwrap();

    // Kept: the objects the run wrote are named as the files would be, and the bucket
    // holds the bytes written (no evictions: the capacity is ample).
    let out = tempfile::tempdir().unwrap();
    let recorded = out.path().join("run.json");
    make_bucket(&c, "kv-kept");
    let r = kvcache(
        &c,
        (Some(dir.path()), dir.path()),
        &[
            "--bucket",
            "kv-kept",
            "--s3-part-size",
            "8MiB",
            "--duration",
            "3s",
            "--keep",
            "--json",
            path(&recorded),
        ],
    )
    .expect(0);
    assert!(
        r.stderr.contains("--keep: the storage tier's objects"),
        "{}",
        r.stderr
    );
    let files = filer_files(&c, "/buckets/kv-kept/");
    let entries: Vec<_> = files
        .iter()
        .filter(|(p, _)| !p.ends_with(".iolab-run"))
        .collect();
    assert!(!entries.is_empty(), "{files:?}");
    for (p, _) in &entries {
        let name = p.rsplit('/').next().unwrap();
        assert!(name.ends_with(".npy") && p.contains("/rank_0/"), "{p}");
    }
    // Each object opens with its .npy header, as the file does.
    let url = format!("http://{}{}", c.var("SEAWEEDFS_FILER"), entries[0].0);
    let head = Command::new("curl")
        .args(["-sf", "-r", "0-127", &url])
        .output()
        .expect("curl runs")
        .stdout;
    assert_eq!(&head[..8], b"\x93NUMPY\x01\x00", "{url}");
    let text = String::from_utf8_lossy(&head[10..]);
    assert!(
        text.starts_with("{'descr': '<f2'") && text.ends_with(" \n"),
        "{text}"
    );
    let held: u64 = entries.iter().map(|(_, s)| s).sum();
    let (puts, bytes) = written(&json(&recorded));
    assert!(puts > 0);
    assert_eq!(held, bytes, "the bucket holds what the run wrote");
    // Entries over --s3-part-size went up in parts: each still one write of the run,
    // its header first.
    assert_eq!(
        puts,
        entries.len() as u64,
        "one write per entry: {entries:?}"
    );
    let (largest, size) = entries.iter().max_by_key(|(_, s)| *s).unwrap();
    assert!(
        *size > 8 << 20,
        "no entry took more than one part: {entries:?}"
    );
    let url = format!("http://{}{largest}", c.var("SEAWEEDFS_FILER"));
    let head = Command::new("curl")
        .args(["-sf", "-r", "0-7", &url])
        .output()
        .expect("curl runs")
        .stdout;
    assert_eq!(&head[..], b"\x93NUMPY\x01\x00", "{url}");

    // Evicting (a capacity of two entries or so), in a bucket iolab makes: gone after.
    kvcache(
        &c,
        (Some(dir.path()), dir.path()),
        &[
            "--bucket",
            "kv-made",
            "--create-bucket",
            "--duration",
            "3s",
            "--storage-capacity",
            "1GiB",
        ],
    )
    .expect(0);
    assert_eq!(
        keys(&c, "kv-made"),
        Err(404),
        "the bucket iolab made is removed"
    );

    // Someone else's bucket: their object stays, none of iolab's does. Without --dir:
    // the directory it runs in stays empty.
    make_bucket(&c, "kv-theirs");
    let theirs = ObjectOp::Put {
        size: 1000,
        data_offset: 0,
    };
    assert!(
        request(&c, "kv-theirs", theirs, "theirs.bin")
            .error
            .is_none()
    );
    let cwd = tempfile::tempdir().unwrap();
    let r = kvcache(
        &c,
        (None, cwd.path()),
        &["--bucket", "kv-theirs", "--duration", "2s", "--no-store"],
    )
    .expect(0);
    assert!(r.stdout.contains("cache hit rate"), "{}", r.stdout);
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0);
    let left = filer_files(&c, "/buckets/kv-theirs/");
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].0.ends_with("/theirs.bin"), "{left:?}");
}

#[test]
fn kvcache_on_a_bad_endpoint_is_one_line_and_exit_2() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let db = out.path().join("results.db");
    let out = iolab()
        .args([
            "kvcache",
            "--model",
            "tiny-1b",
            "--users",
            "2",
            "--duration",
            "1s",
        ])
        .args(["--dir", path(dir.path()), "--s3-endpoint", &endpoint])
        .args(["--bucket", "kv-none"])
        .env("IOLAB_DB", &db)
        .env("AWS_ACCESS_KEY_ID", "k")
        .env("AWS_SECRET_ACCESS_KEY", "s")
        .env("AWS_CONFIG_FILE", "/nonexistent")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        .output()
        .unwrap();
    let r = Ran::from(out).expect(2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains(&endpoint), "{}", r.stderr);
    assert!(!db.exists(), "nothing stored");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// With a CPU tier (384 MiB: seed 42's users' entries fill it in a few requests), entries are demoted to the bucket and large ones written there
/// directly: every object is its `.npy` header and iolab's data (docs/kvcache.md, "The
/// data"), no 512-byte unit repeated across the trial's objects (the client's payload or
/// a stamped buffer would repeat them), its size the header's tokens' bytes.
#[test]
fn kvcache_objects_demoted_or_written_hold_iolabs_data() {
    let c = Cluster::up("seaweedfs", &["--no-mount"]);
    let dir = tempfile::tempdir().unwrap();
    make_bucket(&c, "kv-data");
    let r = kvcache(
        &c,
        (None, dir.path()),
        &[
            "--bucket",
            "kv-data",
            "--cpu-memory",
            "384MiB",
            "--s3-part-size",
            "8MiB",
            "--duration",
            "8s",
            "--keep",
            "--no-store",
        ],
    )
    .expect(0);
    let demoted: u64 = r
        .stdout
        .lines()
        .find_map(|l| {
            l.split(" entries demoted")
                .next()
                .filter(|_| l.contains(" entries demoted"))
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(demoted > 0, "{}", r.stdout);
    let files = filer_files(&c, "/buckets/kv-data/");
    let entries: Vec<_> = files.iter().filter(|(p, _)| p.ends_with(".npy")).collect();
    assert!(entries.len() as u64 >= demoted, "{files:?}");
    let mut units = std::collections::HashSet::new();
    for (p, size) in entries {
        let url = format!("http://{}{p}", c.var("SEAWEEDFS_FILER"));
        let out = Command::new("curl").args(["-sf", &url]).output().unwrap();
        let bytes = out.stdout;
        assert_eq!(bytes.len() as u64, *size, "{p}");
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "{p}");
        // tiny-1b: (12, 2, tokens, 4, 128) float16 after a 128-byte header.
        let dict = String::from_utf8_lossy(&bytes[10..128]).into_owned();
        let tokens: u64 = dict
            .split("(12, 2, ")
            .nth(1)
            .and_then(|t| t.split(',').next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("{dict}"));
        assert_eq!(*size, 128 + tokens * 24_576, "{p}");
        for u in bytes[512..].chunks_exact(512) {
            // A 64-bit hash of each unit: a collision among a million is 1 in 10^7.
            let mut h = std::hash::DefaultHasher::new();
            std::hash::Hasher::write(&mut h, u);
            let h = std::hash::Hasher::finish(&h);
            assert!(units.insert(h), "{p}: a 512-byte unit repeats");
        }
    }
}
