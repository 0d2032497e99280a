//! What `iolab fio` writes, against fio 3.33 writing the same job: fio's default buffers
//! (filled once, stamped per 512 bytes before every write), scramble_buffers=0 and
//! refill_buffers=1, judged by zstd in ZFS's 128 KiB records and by SHA-256 units;
//! dedupe_mode=working_set, and fixed patterns with sizes drawn per I/O.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{iolab, path, peer_on_path, run};
use crate::flash_data::{units_over_distinct as repeats, written_by_both, zstd_ratio};

/// fio's own figures, measured with fio 3.33 on 16 MiB (zstd -3 in 128 KiB records):
/// default 4k write 26.7, 4k randwrite 14.8, 128k write 1.13, bsrange=4k-64k randwrite
/// 2.68, scramble_buffers=0 4k write 31.8 (every 4 KiB the same), refill_buffers=1
/// 1.00; iolab wrote its own incompressible data (1.00) for all of them before it wrote
/// fio's.
#[test]
fn fio_default_buffers_compress_in_iolab_fio_as_in_fio() {
    if !crate::common::peer_on_path("fio", "--version") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (opts, compresses) in [
        (&["--rw=write", "--bs=4k"][..], true),
        (&["--rw=randwrite", "--bs=4k"][..], true),
        (&["--rw=write", "--bs=128k"][..], false),
        (&["--rw=randwrite", "--bsrange=4k-64k"][..], false),
        (&["--rw=write", "--bs=4k", "--scramble_buffers=0"][..], true),
        (
            &["--rw=randwrite", "--bs=4k", "--refill_buffers=1"][..],
            false,
        ),
    ] {
        let args: Vec<&str> = ["--name=j", "--size=8m"]
            .iter()
            .chain(opts)
            .copied()
            .collect();
        let (a, b) = written_by_both(dir.path(), &args);
        assert_eq!((a.len(), b.len()), (8 << 20, 8 << 20), "{opts:?}");
        // Every 512 bytes distinct (fio stamps each with its offset), unless the
        // buffer goes out unstamped: then every write the same.
        let (ua, ub) = (repeats(&a, 512), repeats(&b, 512));
        if opts.contains(&"--scramble_buffers=0") {
            let (wa, wb) = (repeats(&a, 4096), repeats(&b, 4096));
            assert_eq!((wa, wb), (2048.0, 2048.0), "{opts:?}: 4 KiB units");
        } else if opts.iter().any(|o| o.starts_with("--refill")) {
            assert_eq!(repeats(&b, 4096), 1.0, "{opts:?}: 4 KiB units");
        } else {
            assert_eq!((ua, ub), (1.0, 1.0), "{opts:?}: 512-byte units");
        }
        let (Some(za), Some(zb)) = (zstd_ratio(&a), zstd_ratio(&b)) else {
            return;
        };
        assert!(
            (zb - za).abs() <= za * 0.05,
            "{opts:?}: fio's data {za}, iolab's {zb}"
        );
        assert_eq!(za > 5.0, compresses, "{opts:?}: fio's data {za}");
    }
}

/// `iolab run --pattern fio`: the written file is stamped per 512 bytes (none repeats)
/// and compresses as fio's does; `fio-unscrambled` repeats one buffer; neither can be
/// verified or combined with a ratio (one line, exit 2, nothing written).
#[test]
fn run_pattern_fio_writes_stamped_reused_buffers_and_refuses_verify() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let write = |pattern: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--no-store",
            "--dir",
            path(&work),
            "--rw",
            "write",
            "--block-size",
            "4KiB",
            "--size",
            "4MiB",
            "--keep",
            "--pattern",
            pattern,
        ];
        args.extend(extra);
        run(&args)
    };
    let file = work.join("iolab-work/data.r0.t0");
    write("fio", &[]).expect(0);
    let data = std::fs::read(&file).unwrap();
    assert_eq!(data.len(), 4 << 20);
    assert_eq!(repeats(&data, 512), 1.0);
    if let Some(z) = zstd_ratio(&data) {
        // fio's 4k sequential write: 26.7 (above).
        assert!(z > 15.0, "zstd {z}");
    }
    write("fio-unscrambled", &[]).expect(0);
    let data = std::fs::read(&file).unwrap();
    assert_eq!(repeats(&data, 4096), 1024.0);
    for (extra, names) in [
        (&["--verify"][..], "--pattern"),
        (&["--compress-ratio", "2"][..], "--compress-ratio"),
    ] {
        std::fs::remove_dir_all(&work).unwrap();
        std::fs::create_dir(&work).unwrap();
        let r = write("fio", extra).expect(2);
        assert!(r.error_line().contains(names), "{extra:?}: {}", r.stderr);
        assert!(!file.exists(), "{extra:?}: wrote");
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
