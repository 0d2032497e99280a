use iolab_core::spec::{BackendKind, CacheMode, Layout, RandomKind, RwKind};
use iolab_core::units::{ByteCount, TimeSpan};

use super::*;
use crate::fio::jobfile::{RawOption, Section};

pub(super) fn job(name: &str, opts: &[(&str, &str)]) -> FioJob {
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
    assert_eq!((p.settings.files_per_worker, p.settings.loops), (3, 2));
    assert_eq!(p.offset, FioOffset::Bytes(8192));
    assert_eq!(p.settings.ramp, Some(TimeSpan::from_secs(2)));
    assert_eq!(p.settings.start_delay, Some(TimeSpan::from_secs(1)));
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
        assert!(p.settings.verify_existing, "{rw}");
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
    assert!(!p.settings.verify_existing && !p.spec.verify);
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
