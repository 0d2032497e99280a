//! What `iolab fio` writes, against fio 3.33 writing the same job: fio's default buffers
//! (filled once, stamped per 512 bytes before every write), scramble_buffers=0 and
//! refill_buffers=1, judged by zstd in ZFS's 128 KiB records and by SHA-256 units.

use crate::common::{path, run};
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
