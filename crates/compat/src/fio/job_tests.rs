use super::*;
use crate::fio::jobfile::{RawOption, Section};

fn section(opts: &[(&str, Option<&str>)]) -> Section {
    Section {
        globals: 0,
        name: "j".into(),
        at: "j.fio:1".into(),
        options: opts
            .iter()
            .enumerate()
            .map(|(i, (k, v))| RawOption {
                key: k.to_string(),
                value: v.map(str::to_string),
                at: format!("j.fio:{}", i + 2),
            })
            .collect(),
    }
}

#[test]
fn options_resolve_with_fio_defaults() {
    let job = FioJob::from_section(&section(&[
        ("rw", Some("randrw")),
        ("rwmixwrite", Some("30")),
        ("bs", Some("2048k")),
        ("ioengine", Some("libaio")),
        ("iodepth", Some("8")),
        ("numjobs", Some("8")),
        ("direct", Some("1")),
        ("thread", None),
        ("time_based", None),
        ("runtime", Some("15m")),
    ]))
    .unwrap();
    assert_eq!(job.rw, FioRw::RandRw);
    assert_eq!(job.rwmix_read, 70);
    assert_eq!((job.bs_read, job.bs_write), (2 << 20, 2 << 20));
    assert_eq!(job.engine, Engine::Libaio);
    assert_eq!((job.iodepth, job.numjobs), (8, 8));
    assert!(job.direct && job.thread && job.time_based && job.invalidate);
    assert_eq!(job.runtime, Some(TimeSpan::from_secs(900)));
    // fio's "job options" list what was written with a value: not the bare flags.
    assert_eq!(job.given.len(), 8);
    assert!(
        !job.given
            .iter()
            .any(|(k, _)| k == "thread" || k == "time_based")
    );
}

/// The globals in force come first in a section: fio shows them as "global options",
/// not among the job's.
#[test]
fn globals_are_kept_apart_from_the_jobs_options() {
    let mut s = section(&[
        ("directory", Some("/scratch")),
        ("thread", None),
        ("bs", Some("4k")),
        ("rw", Some("read")),
    ]);
    s.globals = 3;
    let job = FioJob::from_section(&s).unwrap();
    assert_eq!(
        job.global_given,
        [
            ("directory".to_string(), "/scratch".to_string()),
            ("bs".to_string(), "4k".to_string())
        ]
    );
    assert_eq!(job.given, [("rw".to_string(), "read".to_string())]);
    assert!(job.thread);
}

#[test]
fn later_options_win_and_split_block_sizes_read() {
    let job =
        FioJob::from_section(&section(&[("bs", Some("4k")), ("bs", Some("4k,64k"))])).unwrap();
    assert_eq!((job.bs_read, job.bs_write), (4096, 65536));
    let job = FioJob::from_section(&section(&[("buffered", Some("0"))])).unwrap();
    assert!(job.direct);
}

#[test]
fn refused_options_name_the_job_option_and_line() {
    let err = |k: &str, v: Option<&str>| {
        FioJob::from_section(&section(&[(k, v)]))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err("blocksizes", Some("4k")),
        "j.fio:2: [j] blocksizes: unknown option 'blocksizes' (nothing was run)"
    );
    assert_eq!(
        err("cgroup", Some("g1")),
        "j.fio:2: [j] cgroup: fio's option 'cgroup' is not supported by iolab fio; remove it (nothing was run)"
    );
    assert_eq!(
        err("zonemode", Some("zbd")),
        "j.fio:2: [j] zonemode: zbd (zoned block devices) is not supported: use none or strided"
    );
    assert_eq!(
        err("flow", Some("1001")),
        "j.fio:2: [j] flow: 1001 is over fio's largest weight, 1000"
    );
    // Any option fio 3.33 lists (--cmdhelp=all) is fio's, not unknown.
    assert_eq!(
        err("exec_prerun", Some("true")),
        "j.fio:2: [j] exec_prerun: fio's option 'exec_prerun' is not supported by iolab fio; remove it (nothing was run)"
    );
    assert_eq!(
        err("size", Some("110%")),
        "j.fio:2: [j] size: '110%' is not a percentage from 1% to 100%"
    );
    assert_eq!(
        err("offset", Some("101%")),
        "j.fio:2: [j] offset: '101%' is not a percentage from 0% to 100%"
    );
    assert_eq!(
        err("rw", Some("randread:x")),
        "j.fio:2: [j] rw: 'x' after ':' is not a number of I/Os (1 or more)"
    );
    assert_eq!(
        err("kb_base", Some("512")),
        "j.fio:2: [j] kb_base: '512' is not a kb_base: use 1024 or 1000"
    );
    assert_eq!(
        err("rw", Some("randtrimx")),
        "j.fio:2: [j] rw: 'randtrimx' is not a workload iolab runs: use read, write, randread, randwrite, rw, randrw, trim, randtrim, trimwrite or randtrimwrite"
    );
    assert_eq!(
        err("bs", Some("4q")),
        "j.fio:2: [j] bs: '4q' has an unknown unit 'q': use k, m, g, t or p (powers of 1024)"
    );
    assert_eq!(
        err("ioengine", Some("posixaio")),
        "j.fio:2: [j] ioengine: 'posixaio' is not an engine iolab runs: use psync, pvsync, sync, io_uring, libaio or null"
    );
    assert_eq!(
        err("rwmixread", Some("101")),
        "j.fio:2: [j] rwmixread: 101 is not a percentage from 0 to 100"
    );
    assert_eq!(
        err("size", None),
        "j.fio:2: [j] size: needs a value (key=value)"
    );
    assert_eq!(
        err("random_distribution", Some("zipf:1")),
        "j.fio:2: [j] random_distribution: zipf's theta 1 must be above 0 and not 1"
    );
}

#[test]
fn modifiers_percentages_and_kb_base() {
    let job = FioJob::from_section(&section(&[
        ("rw", Some("read:-8k")),
        ("size", Some("100%")),
    ]))
    .unwrap();
    assert_eq!((job.rw, job.seq_add, job.seq_nr), (FioRw::Read, -8192, 1));
    assert_eq!((job.size, job.size_percent), (None, Some(100)));
    let job = FioJob::from_section(&section(&[("rw", Some("randwrite:16"))])).unwrap();
    assert_eq!((job.rw, job.seq_add, job.seq_nr), (FioRw::RandWrite, 0, 16));
    // A later rw without a modifier drops the earlier one's.
    let job =
        FioJob::from_section(&section(&[("rw", Some("write:4k")), ("rw", Some("write"))])).unwrap();
    assert_eq!(job.seq_add, 0);
    let job = FioJob::from_section(&section(&[
        ("kb_base", Some("1000")),
        ("size", Some("1m")),
        ("bs", Some("4KiB")),
    ]))
    .unwrap();
    assert_eq!((job.size, job.bs_read), (Some(1_000_000), 4096));
    // Accepted with a word, said once.
    let job = FioJob::from_section(&section(&[
        ("gtod_reduce", Some("1")),
        ("nice", Some("-5")),
        ("prio", Some("2")),
    ]))
    .unwrap();
    assert_eq!(job.words.len(), 3);
}
