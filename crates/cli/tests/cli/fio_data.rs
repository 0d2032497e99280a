//! What `iolab fio` writes, against fio 3.33 writing the same job: fio's default buffers
//! (filled once, stamped per 512 bytes before every write), scramble_buffers=0 and
//! refill_buffers=1, judged by zstd in ZFS's 128 KiB records and by SHA-256 units.

use std::collections::HashSet;
use std::fs;
use std::process::Command;

use crate::common::run;
use crate::flash::zstd_ratio;

/// `unit`-byte pieces of `data` over the distinct ones among them.
fn repeats(data: &[u8], unit: usize) -> f64 {
    use sha2::Digest;
    let units: Vec<_> = data.chunks(unit).map(sha2::Sha256::digest).collect();
    let distinct: HashSet<_> = units.iter().collect();
    units.len() as f64 / distinct.len() as f64
}

/// fio's own figures, measured with fio 3.33 on 16 MiB (zstd -3 in 128 KiB records):
/// default 4k write 26.7, 4k randwrite 14.8, 128k write 1.13, scramble_buffers=0 4k
/// write 31.8 (every 4 KiB the same), refill_buffers=1 1.00; iolab wrote its own
/// incompressible data (1.00) for all of them before it wrote fio's.
#[test]
fn fio_default_buffers_compress_in_iolab_fio_as_in_fio() {
    if !crate::common::on_path("fio", "--version") {
        eprintln!("SKIPPED: fio is not installed (scripts/test.sh installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (opts, compresses) in [
        (&["--rw=write", "--bs=4k"][..], true),
        (&["--rw=randwrite", "--bs=4k"][..], true),
        (&["--rw=write", "--bs=128k"][..], false),
        (&["--rw=write", "--bs=4k", "--scramble_buffers=0"][..], true),
        (
            &["--rw=randwrite", "--bs=4k", "--refill_buffers=1"][..],
            false,
        ),
    ] {
        let fio_file = dir.path().join("by-fio");
        let iolab_file = dir.path().join("by-iolab");
        let common = ["--name=j", "--size=8m"];
        let out = Command::new("fio")
            .args(common)
            .args(opts)
            .arg(format!("--filename={}", fio_file.display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut args = vec!["fio", "--no-store", "--keep"];
        args.extend(common);
        args.extend(opts);
        let f = format!("--filename={}", iolab_file.display());
        args.push(&f);
        run(&args).expect(0);
        let (a, b) = (fs::read(&fio_file).unwrap(), fs::read(&iolab_file).unwrap());
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
        fs::remove_file(&fio_file).unwrap();
        fs::remove_file(&iolab_file).unwrap();
    }
}
