//! fio's offset_increment, io_size and file options, planned as fio runs them.

use iolab_core::spec::CacheMode;
use iolab_core::units::ByteCount;

use super::tests::job;
use super::*;
use crate::fio::jobfile::{RawOption, Section};
use iolab_core::spec::{FileChoice, FileService};

#[test]
fn offset_increment_gives_each_clone_its_region_as_fio_does() {
    let at = |opts: &[(&str, &str)], size: Option<u64>| {
        plan_jobs(&[job("o", opts)], 0)
            .and_then(|p| p[0].at_target(size))
            .map_err(|e| e.to_string())
    };
    let (spec, offset, inc) = at(
        &[
            ("size", "1m"),
            ("numjobs", "4"),
            ("offset", "4k"),
            ("offset_increment", "2m"),
        ],
        None,
    )
    .unwrap();
    assert_eq!(
        (offset, inc, spec.size),
        (4096, 2 << 20, Some(ByteCount::mib(1)))
    );
    // A share of a device: 25% each, one quarter after another, as fio's
    // `size=25% offset_increment=25%` on 4 clones.
    let dev = [
        ("filename", "/dev/x"),
        ("numjobs", "4"),
        ("size", "25%"),
        ("offset_increment", "25%"),
    ];
    let (spec, offset, inc) = at(&dev, Some(64 << 20)).unwrap();
    assert_eq!((offset, inc), (0, 16 << 20));
    assert_eq!(spec.total_size, Some(ByteCount::mib(64)));
    // New files have no size yet: a percentage is 0, as fio's.
    assert_eq!(
        at(&[("size", "1m"), ("offset_increment", "10%")], None)
            .unwrap()
            .2,
        0
    );
    for (opts, size, says) in [
        (
            &[("size", "1m"), ("offset_increment", "6k")][..],
            None,
            "[o] offset_increment: 6144 is not a multiple of the block size 4096",
        ),
        (
            &[
                ("filename", "/dev/x"),
                ("numjobs", "2"),
                ("offset_increment", "1m"),
            ][..],
            Some(8 << 20),
            "without size each clone would run to the end of /dev/x",
        ),
        (
            &[
                ("filename", "/dev/x"),
                ("numjobs", "4"),
                ("size", "30%"),
                ("offset_increment", "25%"),
            ][..],
            Some(64 << 20),
            "the last clone's 30% from 50331648 passes the end of /dev/x",
        ),
    ] {
        let e = at(opts, size).unwrap_err();
        assert!(e.contains(says), "{e}");
    }
}

/// fio's passes as the plain loop counts them, one pass at a time (what
/// `FioPlan::passes` counts whole passes at once to match).
fn passes_one_by_one(io: u64, loops: u64, bs: u64, region: u64) -> (u64, u64) {
    let region = region / bs * bs;
    let limit = io.saturating_mul(loops).div_ceil(bs).saturating_mul(bs);
    let (mut issued, mut passes, mut left) = (0u64, 0u64, loops);
    loop {
        if left > 0 {
            left -= 1;
        } else if issued >= io || io - issued < bs {
            break;
        }
        let n = region.min(limit.saturating_sub(issued));
        if n == 0 {
            if left == 0 {
                break;
            }
            continue;
        }
        issued += n;
        passes += 1;
    }
    (passes.max(1), issued / bs)
}

#[test]
fn io_size_passes_counted_at_once_are_those_of_one_by_one() {
    let plan = |opts: &[(&str, &str)]| plan_jobs(&[job("i", opts)], 0).map(|p| p[0].clone());
    for io in [1u64, 3, 4, 5, 7, 8, 12, 13, 40, 41, 100] {
        for loops in [1u64, 2, 3, 5] {
            for bs in [1u64, 2, 4] {
                let p = plan(&[
                    ("rw", "randread"),
                    ("size", "1m"),
                    ("bs", &(bs * 512).to_string()),
                    ("io_size", &(io * 512).to_string()),
                    ("loops", &loops.to_string()),
                ])
                .unwrap();
                for region in [0u64, 1, 2, 3, 4, 5, 8, 9, 16, 33, 64, 200] {
                    let (passes, ios) = p.passes(&p.spec, region * 512).unwrap();
                    let (want_passes, want_ios) =
                        passes_one_by_one(io * 512, loops, bs * 512, region * 512);
                    assert_eq!(
                        (u64::from(passes), ios.unwrap()),
                        (want_passes, want_ios),
                        "io_size={io} loops={loops} bs={bs} region={region} (x 512)"
                    );
                }
            }
        }
    }
    // An io_size of 2^64 - 1 over 1 MiB: 2^44 passes, counted at once and refused (it
    // ran the loop for hours), naming the option.
    let p = plan(&[("size", "1m"), ("io_size", "18446744073709551615")]).unwrap();
    let e = p.passes(&p.spec, 1 << 20).unwrap_err().to_string();
    assert!(
        e.contains("[i] io_size") && e.contains("17592186044416 passes"),
        "{e}"
    );
    // Billions of loops with io_size (io_size x loops in all): counted at once too.
    let p = plan(&[("size", "1m"), ("io_size", "1m"), ("loops", "4000000000")]).unwrap();
    assert_eq!(
        p.passes(&p.spec, 1 << 20).unwrap(),
        (4_000_000_000, Some(1_024_000_000_000))
    );
}

#[test]
fn io_size_makes_fios_passes_and_byte_count() {
    let plan = |opts: &[(&str, &str)]| plan_jobs(&[job("i", opts)], 0).map(|p| p[0].clone());
    // (size, io_size, loops) -> (passes, 4 KiB I/Os), as fio 3.33 moved them here.
    for (size, io, loops, want) in [
        ("8m", "2m", "1", (1, 512)),
        ("4m", "10m", "1", (3, 2560)),
        ("8m", "2m", "2", (1, 1024)),
        ("8m", "3m", "2", (1, 1536)),
        ("4m", "6m", "2", (2, 2048)),
        ("4m", "10k", "1", (1, 3)),
    ] {
        let p = plan(&[
            ("rw", "randread"),
            ("size", size),
            ("io_size", io),
            ("loops", loops),
        ])
        .unwrap();
        let region = p.spec.size.unwrap().get();
        let (passes, ios) = p.passes(&p.spec, region).unwrap();
        assert_eq!(
            (passes, ios.unwrap()),
            want,
            "size={size} io_size={io} loops={loops}"
        );
    }
    // Without io_size: the loops, every pass whole.
    let p = plan(&[("size", "1m"), ("loops", "3")]).unwrap();
    assert_eq!(p.passes(&p.spec, 1 << 20).unwrap(), (3, None));
    // io_limit is its other name; a time-based job ignores it (said).
    let p = plan(&[
        ("size", "1m"),
        ("io_limit", "2m"),
        ("runtime", "1"),
        ("time_based", "1"),
    ])
    .unwrap();
    assert_eq!(p.io_size, None);
    assert!(p.notes.iter().any(|n| n.contains("io_size has no effect")));
    for (opts, says) in [
        (
            &[
                ("size", "1m"),
                ("io_size", "2m"),
                ("bs", "4k,64k"),
                ("rw", "randrw"),
            ][..],
            "with several block sizes",
        ),
        (
            &[
                ("size", "1m"),
                ("io_size", "2m"),
                ("bssplit", "4k/50:8k/50"),
            ][..],
            "with several block sizes",
        ),
        (
            &[("size", "1m"), ("io_size", "2m"), ("number_ios", "10")][..],
            "with number_ios",
        ),
    ] {
        let e = plan(opts).unwrap_err().to_string();
        assert!(e.contains(&format!("[i] io_size: {says}")), "{e}");
    }
    let section = Section {
        name: "i".into(),
        at: "i.fio:1".into(),
        options: vec![RawOption {
            key: "io_size".into(),
            value: Some("50%".into()),
            at: "i.fio:2".into(),
        }],
        globals: 0,
    };
    let e = FioJob::from_section(&section).unwrap_err().to_string();
    assert!(
        e.contains("[i] io_size: '50%' (a share of the files' size) is not supported"),
        "{e}"
    );
}

/// A plan's file_service_type=random: I/Os a file, its first thread's seed and the step.
fn random_service(p: &FioPlan) -> Option<(u32, u64, u64)> {
    let files = &p.settings.modifier.files;
    match files.choice {
        FileChoice::Random { seed, seed_step } => Some((files.per_turn, seed, seed_step)),
        _ => None,
    }
}

#[test]
fn file_options_are_taken_said_or_refused_in_one_line() {
    let plan = |opts: &[(&str, &str)]| plan_jobs(&[job("f", opts)], 0).map(|p| p[0].clone());
    let p = plan(&[
        ("size", "1m"),
        ("nrfiles", "2"),
        ("openfiles", "2"),
        ("file_service_type", "roundrobin"),
        ("clocksource", "cpu"),
        ("create_fsync", "0"),
        ("unlink", "1"),
        ("stats", "1"),
        ("pre_read", "1"),
    ])
    .unwrap();
    // pre_read: read into the page cache first, not dropped (fio clears invalidate).
    assert_eq!(p.spec.cache, CacheMode::Hot);
    for says in [
        "clocksource:",
        "create_fsync=0:",
        "unlink:",
        "pre_read: the files are read once",
    ] {
        assert!(
            p.notes.iter().any(|n| n.starts_with(says)),
            "{says}: {:?}",
            p.notes
        );
    }
    assert_eq!(p.settings.modifier.files, FileService::default());
    // file_service_type: the kind, N, and fio's step of the clones' seeds of its choice.
    let p = plan(&[
        ("size", "1m"),
        ("nrfiles", "2"),
        ("file_service_type", "random:3"),
    ])
    .unwrap();
    let step = (0..9).fold(0x89u64, |s, _| s.wrapping_mul(0x9e37_0001));
    assert_eq!(random_service(&p), Some((3, step + 5, step)));
    let p = plan(&[("size", "1m"), ("file_service_type", "sequential")]).unwrap();
    assert_eq!(p.settings.modifier.files, FileService::default());
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("no effect on a job of one file"))
    );
    let p = plan(&[("rw", "write"), ("size", "1m"), ("pre_read", "1")]).unwrap();
    assert_eq!(p.spec.cache, CacheMode::Cold);
    assert!(p.notes.iter().any(|n| n.contains("pre_read has no effect")));
    let refused = |opts: &[(&str, &str)]| plan(opts).unwrap_err().to_string();
    for (opts, says) in [
        (
            &[("size", "1m"), ("nrfiles", "4"), ("openfiles", "2")][..],
            "[f] openfiles: 2 open at once with 4 files is not supported",
        ),
        (
            &[("size", "1m"), ("allow_file_create", "0")][..],
            "[f] allow_file_create: 0 with files in a directory is not supported",
        ),
        (
            &[("size", "1m"), ("loops", "2"), ("unlink_each_loop", "1")][..],
            "[f] unlink_each_loop: with loops is not supported",
        ),
        (
            &[
                ("size", "1m"),
                ("nrfiles", "2"),
                ("rw", "read:8k"),
                ("file_service_type", "sequential"),
            ][..],
            "[f] file_service_type: with rw=read:N is not supported",
        ),
    ] {
        let e = refused(opts);
        assert!(e.contains(says), "{e}");
    }
    // Refused as they are read.
    for (key, value, says) in [
        (
            "file_service_type",
            "zipf:1.1",
            "'zipf:1.1' is not supported",
        ),
        (
            "file_service_type",
            "random:x",
            "'random:x': N in random:N must be a whole number of I/Os from 1",
        ),
        ("clocksource", "tsc", "'tsc' is not a clock source"),
        (
            "stats",
            "0",
            "stats=0 (a job left out of the report) is not supported",
        ),
    ] {
        let section = Section {
            name: "f".into(),
            at: "f.fio:1".into(),
            options: vec![RawOption {
                key: key.into(),
                value: Some(value.into()),
                at: "f.fio:2".into(),
            }],
            globals: 0,
        };
        let e = FioJob::from_section(&section).unwrap_err().to_string();
        assert!(e.contains(&format!("[f] {key}: {says}")), "{e}");
    }
    // iodepth_low at or above iodepth (or 0) is fio's default; below it is refused.
    for low in ["0", "16", "32"] {
        let opts = [
            ("size", "1m"),
            ("ioengine", "io_uring"),
            ("iodepth", "16"),
            ("iodepth_low", low),
        ];
        assert!(plan(&opts).is_ok(), "{low}");
    }
    let e = refused(&[
        ("size", "1m"),
        ("ioengine", "libaio"),
        ("iodepth", "16"),
        ("iodepth_low", "4"),
    ]);
    assert!(
        e.contains("[f] iodepth_low: 4 below iodepth=16 is not supported"),
        "{e}"
    );
    assert!(plan(&[("size", "1m"), ("iodepth", "16"), ("iodepth_low", "4")]).is_ok());
    // allow_file_create=0 with a filename is fine (a missing one is refused when run).
    assert!(plan(&[("filename", "/dev/x"), ("allow_file_create", "0")]).is_ok());
}
