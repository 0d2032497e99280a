use iolab_core::spec::{BackendKind, CacheMode, Layout, RandomKind, RwKind};
use iolab_core::units::{ByteCount, TimeSpan};

use super::*;
use crate::fio::jobfile::{RawOption, Section};

fn job(name: &str, opts: &[(&str, &str)]) -> FioJob {
    let s = Section {
        globals: 0,
        name: name.into(),
        at: format!("{name}.fio:1"),
        options: opts
            .iter()
            .map(|(k, v)| RawOption {
                key: k.to_string(),
                value: (!v.is_empty()).then(|| v.to_string()),
                at: format!("{name}.fio:2"),
            })
            .collect(),
    };
    FioJob::from_section(&s).unwrap()
}

#[test]
fn s3_job_plans_as_the_study_runs_it() {
    let j = job(
        "mix",
        &[
            ("rw", "randrw"),
            ("rwmixread", "90"),
            ("bs", "4k"),
            ("direct", "1"),
            ("thread", ""),
            ("iodepth", "8"),
            ("numjobs", "8"),
            ("ioengine", "io_uring"),
            ("time_based", ""),
            ("runtime", "2"),
            ("size", "64m"),
            ("directory", "/data"),
        ],
    );
    let p = &plan_jobs(&[j], 7).unwrap()[0];
    let s = &p.spec;
    assert_eq!(
        (s.rw, s.rwmix_read, s.block_size),
        (RwKind::Randrw, 90, ByteCount(4096))
    );
    assert_eq!(
        (s.threads, s.queue_depth, s.backend),
        (8, 8, BackendKind::Uring)
    );
    assert_eq!(s.runtime, Some(TimeSpan::from_secs(2)));
    assert_eq!(s.size, Some(ByteCount(64 << 20)));
    assert_eq!(s.layout, Layout::FilePerThread);
    // fio's random map touches every block once: full coverage, not uniform draws.
    assert_eq!(s.random, RandomKind::FullCoverage);
    assert_eq!(s.cache, CacheMode::Cold);
    assert!(s.direct);
    // fio preallocates what it writes (fallocate=native) unless told not to.
    assert!(s.preallocate);
    assert_eq!(p.target.dir.as_deref(), Some(std::path::Path::new("/data")));
    assert!(p.notes.is_empty(), "{:?}", p.notes);
}

#[test]
fn engines_depths_and_cache_map_as_fio_runs_them() {
    let p = &plan_jobs(
        &[job(
            "a",
            &[
                ("size", "1m"),
                ("iodepth", "8"),
                ("invalidate", "0"),
                ("norandommap", ""),
                ("runtime", "5"),
            ],
        )],
        0,
    )
    .unwrap()[0];
    assert_eq!(
        (p.spec.backend, p.spec.queue_depth),
        (BackendKind::Psync, 1)
    );
    assert!(
        p.notes[0].contains("iodepth=8 has no effect with the psync engine"),
        "{:?}",
        p.notes
    );
    assert_eq!(p.spec.cache, CacheMode::Keep);
    assert_eq!(p.spec.random, RandomKind::Uniform);
    // runtime without time_based caps a size-based job: iolab's stonewall.
    assert_eq!(
        (p.spec.runtime, p.spec.stonewall),
        (None, Some(TimeSpan::from_secs(5)))
    );
    let p = &plan_jobs(
        &[job(
            "b",
            &[
                ("size", "1m"),
                ("ioengine", "libaio"),
                ("iodepth", "4"),
                ("fdatasync", "1"),
            ],
        )],
        0,
    )
    .unwrap()[0];
    assert_eq!(
        (p.spec.backend, p.spec.queue_depth, p.spec.fsync_every),
        (BackendKind::Uring, 4, Some(1))
    );
    assert_eq!(
        p.notes,
        [
            "ioengine=libaio runs on io_uring (the same queue depth in flight)",
            "fdatasync is issued as fsync"
        ]
    );
}

#[test]
fn a_shared_filename_is_one_file_of_every_jobs_size() {
    let p = &plan_jobs(
        &[job(
            "s",
            &[
                ("filename", "/dev/nvme0n1"),
                ("numjobs", "4"),
                ("size", "1g"),
            ],
        )],
        0,
    )
    .unwrap()[0];
    assert_eq!(p.spec.layout, Layout::Shared);
    assert_eq!(p.spec.total_size, Some(ByteCount(4 << 30)));
    assert_eq!(
        p.target.device.as_deref(),
        Some(std::path::Path::new("/dev/nvme0n1"))
    );
    assert!(p.notes[0].contains("own segment"), "{:?}", p.notes);
}

#[test]
fn stonewalls_make_phases_and_groups_and_wait_for_orders_a_phase() {
    let a = job("a", &[("size", "1m")]);
    let b = job("b", &[("size", "1m"), ("stonewall", "")]);
    let c = job("c", &[("size", "1m"), ("wait_for", "b")]);
    let d = job("d", &[("size", "1m"), ("new_group", ""), ("wait_for", "a")]);
    let plans = plan_jobs(&[a.clone(), b, c, d], 0).unwrap();
    let of = |f: fn(&FioPlan) -> u32| plans.iter().map(f).collect::<Vec<_>>();
    assert_eq!(of(|p| p.group), [0, 1, 1, 2]);
    // b, c and d run at the same time, c once b is done; a has ended before d starts.
    assert_eq!(of(|p| p.phase), [0, 1, 1, 1]);
    assert_eq!(
        plans.iter().map(|p| p.after).collect::<Vec<_>>(),
        [None, None, Some(1), None]
    );
    let e = plan_jobs(
        &[a.clone(), job("x", &[("size", "1m"), ("wait_for", "z")])],
        0,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "x.fio:2: [x] wait_for: no job named [z] comes before [x]"
    );
    // Two jobs of one phase on the same files: fio would share them.
    let e = plan_jobs(&[a.clone(), a], 0).unwrap_err().to_string();
    assert!(
        e.contains("[a] and [a] run at the same time on the same files (a.{worker}.{file})"),
        "{e}"
    );
}

#[test]
fn files_offsets_loops_and_ramps_plan_as_fio_runs_them() {
    let p = &plan_jobs(
        &[job(
            "f",
            &[
                ("filesize", "64k"),
                ("nrfiles", "3"),
                ("offset", "8k"),
                ("loops", "2"),
                ("ramp_time", "2"),
                ("startdelay", "1"),
                ("filename_format", "$jobname/d$jobnum.f$filenum"),
            ],
        )],
        0,
    )
    .unwrap()[0];
    // filesize is per file: the job's size is nrfiles of them.
    assert_eq!(p.spec.size, Some(ByteCount::kib(192)));
    assert_eq!((p.files_per_job, p.loops), (3, 2));
    assert_eq!(p.offset, FioOffset::Bytes(8192));
    assert_eq!(p.ramp, Some(TimeSpan::from_secs(2)));
    assert_eq!(p.start_delay, Some(TimeSpan::from_secs(1)));
    assert_eq!(p.file_names, "f/d{worker}.f{file}");
    assert_eq!(p.at_target(None).unwrap().1, 8192);
    // A percentage of a device: aligned up to the block, the rest of it the size.
    let p = &plan_jobs(&[job("d", &[("filename", "/dev/x"), ("offset", "33%")])], 0).unwrap()[0];
    let (spec, offset, _) = p.at_target(Some(1_000_000)).unwrap();
    assert_eq!(offset, 331_776);
    assert_eq!(
        spec.total_size,
        Some(ByteCount((1_000_000 - 331_776) / 4096 * 4096))
    );
    // New files in a directory have no size yet: the offset is 0, as fio's.
    let p = &plan_jobs(&[job("n", &[("size", "1m"), ("offset", "50%")])], 0).unwrap()[0];
    assert_eq!(p.at_target(None).unwrap().1, 0);
}

#[test]
fn what_iolab_would_run_differently_is_refused() {
    let err = |opts: &[(&str, &str)]| plan_jobs(&[job("x", opts)], 0).unwrap_err().to_string();
    assert!(
        err(&[("filename", "/dev/x"), ("nrfiles", "4")])
            .contains("[x] nrfiles: 4 files with one filename are not supported")
    );
    assert!(
        err(&[("size", "1m"), ("offset", "1000")])
            .contains("[x] offset: 1000 is not a multiple of the block size 4096")
    );
    assert!(
        err(&[("size", "1m"), ("filesize", "64k")])
            .contains("[x] filesize: an I/O size (1048576) other than the files' size")
    );
    assert!(err(&[("size", "1m"), ("filename_format", "../$jobnum")]).contains("no absolute path"));
    assert!(
        err(&[("size", "1m"), ("filename_format", "/tmp/$jobnum")]).contains("no absolute path")
    );
    assert!(err(&[("size", "1m"), ("filename_format", "$clientuid")]).contains("$clientuid"));
    assert!(err(&[("size", "1m"), ("directory", "/a:/b")]).contains("several directories"));
    assert!(err(&[("rw", "write")]).contains("[x] size: is needed for files in a directory"));
    assert_eq!(
        err(&[("size", "1m"), ("rw", "randrw"), ("bs", "4k,6k")]),
        "x.fio:2: [x] bs: 6KiB and the read size 4KiB must divide one another (4KiB and 64KiB, not 4KiB and 6KiB)"
    );
    assert_eq!(
        err(&[
            ("size", "1m"),
            ("rw", "randrw"),
            ("bs", "4k,8k"),
            ("verify", "crc32c")
        ]),
        "x.fio:2: [x] bs: differs from --block-size, and --verify checks blocks of one size"
    );

    assert!(err(&[("size", "1m"), ("time_based", "")]).contains("[x] time_based: needs a runtime"));
    assert_eq!(
        err(&[("size", "1k"), ("bs", "4k")]),
        "x.fio:2: [x] size: 1KiB is smaller than one block of 4KiB"
    );
    assert!(
        plan_jobs(&[], 0)
            .unwrap_err()
            .to_string()
            .contains("no job to run")
    );
}

#[test]
fn a_mixed_jobs_reads_and_writes_keep_their_own_sizes() {
    let plan = |opts: &[(&str, &str)]| plan_jobs(&[job("x", opts)], 0).unwrap()[0].spec.clone();
    let s = plan(&[("size", "1m"), ("rw", "randrw"), ("bs", "4k,64k")]);
    assert_eq!(
        (s.block_size, s.write_block_size, s.unit(), s.largest_io()),
        (ByteCount(4096), Some(ByteCount(65536)), 4096, 65536)
    );
    assert_eq!(s.name(), "randrw-r4KiB-w64KiB");
    assert_eq!(
        s.spans(),
        [1, 16],
        "a write covers 16 units of the read size"
    );
    // Larger reads than writes; a pure job takes its direction's size and nothing else.
    let s = plan(&[("size", "1m"), ("rw", "rw"), ("bs", "64k,4k")]);
    assert_eq!(
        (s.block_size.get(), s.unit(), s.spans()),
        (65536, 4096, [16, 1])
    );
    let s = plan(&[("size", "1m"), ("rw", "write"), ("bs", "4k,64k")]);
    assert_eq!((s.block_size.get(), s.write_block_size), (65536, None));
    let s = plan(&[("size", "1m"), ("rw", "randrw"), ("bs", "8k,8k")]);
    assert_eq!(s.write_block_size, None);
}

#[test]
fn fallocate_none_writes_without_preallocating() {
    let p = &plan_jobs(&[job("n", &[("size", "1m"), ("fallocate", "none")])], 0).unwrap()[0];
    assert!(!p.spec.preallocate);
    let keep = Section {
        globals: 0,
        name: "n".into(),
        at: "n.fio:1".into(),
        options: vec![RawOption {
            key: "fallocate".into(),
            value: Some("keep".into()),
            at: "n.fio:3".into(),
        }],
    };
    let e = FioJob::from_section(&keep).unwrap_err().to_string();
    assert_eq!(
        e,
        "n.fio:3: [n] fallocate: 'keep' is not supported: use native, posix or none"
    );
}

#[test]
fn randrepeat_off_takes_the_callers_seed() {
    let p = &plan_jobs(&[job("r", &[("size", "1m"), ("randrepeat", "0")])], 42).unwrap()[0];
    assert_eq!(p.spec.seed, 42);
    let p = &plan_jobs(&[job("r", &[("size", "1m"), ("randseed", "9")])], 42).unwrap()[0];
    assert_eq!(p.spec.seed, 9);
}

/// fio's verify_only: a verifying write job becomes its read-back alone (a read in the
/// write's order and size, checked against kept files), a read job with verify checks
/// kept files too; what cannot have left iolab's record is refused by name.
#[test]
fn verify_only_plans_the_write_jobs_read_back_alone() {
    let verifying = [("size", "1m"), ("verify", "crc32c"), ("verify_only", "1")];
    for (rw, read) in [
        ("randwrite", RwKind::Randread),
        ("write", RwKind::Read),
        ("randread", RwKind::Randread),
    ] {
        let j = job("v", &[&verifying[..], &[("rw", rw), ("bs", "8k")]].concat());
        let p = &plan_jobs(&[j], 7).unwrap()[0];
        assert!(p.verify_only, "{rw}");
        assert_eq!((p.spec.rw, p.spec.block_size), (read, ByteCount(8192)));
        assert!(p.spec.verify);
        assert!(
            p.notes
                .iter()
                .any(|n| n.starts_with("verify_only: nothing"))
        );
    }
    // A read job without verify: no effect, as in fio.
    let j = job("v", &[("size", "1m"), ("verify_only", "1")]);
    let p = &plan_jobs(&[j], 7).unwrap()[0];
    assert!(!p.verify_only && !p.spec.verify);
    let refused = |extra: &[(&str, &str)]| {
        let j = job("v", &[&verifying[..], &[("rw", "write")], extra].concat());
        plan_jobs(&[j], 7).unwrap_err().to_string()
    };
    for (extra, says) in [
        (&[("verify", "0")][..], "verify_only: needs verify="),
        (&[("do_verify", "0")][..], "verify_only: needs verify="),
        (
            &[("time_based", ""), ("runtime", "1")][..],
            "does not run with time_based",
        ),
        (
            &[("rw", "randrw")][..],
            "a job that only writes or only reads",
        ),
        (
            &[("nrfiles", "2")][..],
            "with nrfiles, offset or offset_increment",
        ),
        (
            &[("offset", "4k")][..],
            "with nrfiles, offset or offset_increment",
        ),
        (
            &[("offset_increment", "1m")][..],
            "with nrfiles, offset or offset_increment",
        ),
    ] {
        let e = refused(extra);
        assert!(e.contains(says), "{extra:?}: {e}");
    }
}

#[test]
fn fio_buffer_options_choose_the_written_data_as_fio_does() {
    use iolab_core::spec::DataPattern::{Fio, FioUnscrambled, Iolab, Zeros};
    let write = [("rw", "randwrite"), ("size", "1m")];
    for (extra, want) in [
        (&[][..], Fio),
        (&[("scramble_buffers", "1")][..], Fio),
        (&[("scramble_buffers", "0")][..], FioUnscrambled),
        (&[("refill_buffers", "")][..], Iolab),
        (
            &[("refill_buffers", "1"), ("scramble_buffers", "0")][..],
            Iolab,
        ),
        (&[("refill_buffers", "0")][..], Fio),
        (&[("zero_buffers", "")][..], Zeros),
        (&[("buffer_compress_percentage", "100")][..], Zeros),
        (&[("buffer_compress_percentage", "50")][..], Iolab),
        (&[("dedupe_percentage", "50")][..], Iolab),
        (&[("buffer_pattern", "0xab")][..], Iolab),
        (&[("verify", "crc32c")][..], Iolab),
    ] {
        let opts: Vec<_> = write.iter().chain(extra).copied().collect();
        let p = &plan_jobs(&[job("d", &opts)], 7).unwrap()[0];
        assert_eq!(p.spec.pattern, want, "{extra:?}");
    }
    // A job that only reads writes nothing: no buffers of fio's to build.
    let p = &plan_jobs(&[job("r", &[("rw", "randread"), ("size", "1m")])], 7).unwrap()[0];
    assert_eq!(p.spec.pattern, Iolab);
    // zero_buffers with an explicit scramble_buffers=1: fio stamps its zeros; said.
    let opts = [("zero_buffers", ""), ("scramble_buffers", "1")];
    let opts: Vec<_> = write.iter().chain(&opts).copied().collect();
    let p = &plan_jobs(&[job("z", &opts)], 7).unwrap()[0];
    assert_eq!(p.spec.pattern, Zeros);
    assert!(
        p.notes.iter().any(|n| n.contains("scramble_buffers=1")),
        "{:?}",
        p.notes
    );
}

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
        let (passes, ios) = p.passes(&p.spec, region);
        assert_eq!(
            (passes, ios.unwrap()),
            want,
            "size={size} io_size={io} loops={loops}"
        );
    }
    // Without io_size: the loops, every pass whole.
    let p = plan(&[("size", "1m"), ("loops", "3")]).unwrap();
    assert_eq!(p.passes(&p.spec, 1 << 20), (3, None));
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
    ] {
        let e = refused(opts);
        assert!(e.contains(says), "{e}");
    }
    // Refused as they are read.
    for (key, value, says) in [
        ("file_service_type", "random", "'random' is not supported"),
        (
            "file_service_type",
            "roundrobin:4",
            "roundrobin:4 is not supported",
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
