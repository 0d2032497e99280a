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

/// fio 3.33 sorts a job file section's options by priority before it applies them
/// (`kb_base` first), per part: on this machine `size=1m` then `kb_base=1000` in one
/// section moved 1,000,000 bytes, a `[global]` `size=1m` with the job's `kb_base=1000`
/// 1,048,576 (with bs=1000: 1,048,000), and on the command line `--size=1m
/// --kb_base=1000` 1,048,576 but `--kb_base=1000 --size=1m` 1,000,000.
#[test]
fn kb_base_applies_before_the_sections_other_options_as_fio() {
    let size = |opts: &[(&str, Option<&str>)], globals: usize, at: &str| {
        let mut s = section(opts);
        s.globals = globals;
        for o in &mut s.options {
            o.at = format!("{at}{}", o.key);
        }
        FioJob::from_section(&s).unwrap().size
    };
    let after = [("size", Some("1m")), ("kb_base", Some("1000"))];
    assert_eq!(size(&after, 0, "j.fio:"), Some(1_000_000));
    assert_eq!(size(&after, 1, "j.fio:"), Some(1_048_576));
    assert_eq!(size(&after, 2, "j.fio:"), Some(1_000_000));
    assert_eq!(size(&after, 0, "command line: --"), Some(1_048_576));
    let before = [("kb_base", Some("1000")), ("size", Some("1m"))];
    assert_eq!(size(&before, 0, "command line: --"), Some(1_000_000));
    assert_eq!(size(&before, 1, "j.fio:"), Some(1_000_000));
    // The last kb_base of a part is the one in force, as in fio.
    let twice = [
        ("kb_base", Some("1000")),
        ("size", Some("1m")),
        ("kb_base", Some("1024")),
    ];
    assert_eq!(size(&twice, 0, "j.fio:"), Some(1_048_576));
}

/// The names docs/fio.md's option table gives in its first column (`bs`/`blocksize`,
/// `rw=...:N`: each backquoted name before any `=`, `:` or space).
/// fio 3.33 on this machine: `--filename=x --directory=d` opened ./x, `--directory=d
/// --filename=x` d/x; a job file's section d/x in either order; a `[global]`
/// `filename=x` with the job's `directory=d` ./x.
#[test]
fn filename_joins_the_directory_in_force_as_fio() {
    let dir_of = |opts: &[(&str, Option<&str>)], globals: usize, at: &str| {
        let mut s = section(opts);
        s.globals = globals;
        for o in &mut s.options {
            o.at = format!("{at}{}", o.key);
        }
        FioJob::from_section(&s).unwrap().filename_dir
    };
    let (x, d) = (("filename", Some("x")), ("directory", Some("d")));
    let cli = "command line: --";
    assert_eq!(dir_of(&[x, d], 0, cli), None);
    assert_eq!(dir_of(&[d, x], 0, cli), Some("d".into()));
    assert_eq!(dir_of(&[x, d], 0, "j.fio:"), Some("d".into()));
    assert_eq!(dir_of(&[x, d], 1, "j.fio:"), None);
    assert_eq!(dir_of(&[d, x], 1, "j.fio:"), Some("d".into()));
    assert_eq!(dir_of(&[d], 0, "j.fio:"), None);
}

fn documented_options() -> std::collections::BTreeSet<String> {
    let doc = include_str!("../../../../docs/fio.md");
    let table = doc
        .split("## Options and how they run")
        .nth(1)
        .expect("docs/fio.md has its option table")
        .split("\n## ")
        .next()
        .unwrap();
    let mut names = std::collections::BTreeSet::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let first = row.split(" | ").next().unwrap();
        for (i, quoted) in first.split('`').enumerate() {
            let name = quoted.split(['=', ':', ' ', '(']).next().unwrap();
            let is_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if i % 2 == 1 && is_name {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// Whether the parser takes option `key` (runs it, accepts it with a word, or refuses it
/// for a reason of its own) rather than refusing it as one it does not know.
fn parser_takes(key: &str) -> bool {
    ["1", "0", "4k", "read", "none", "x"].iter().any(|v| {
        let mut job = FioJob::defaults("j", "j.fio:1");
        job.apply(key, Some(v)) != Err(unsupported(key))
    })
}

#[test]
fn docs_fio_md_lists_every_option_the_parser_takes() {
    let documented = documented_options();
    // Every name the parser's match arms spell (values among them too), and fio's options.
    let sources = [
        include_str!("job.rs"),
        include_str!("access.rs"),
        include_str!("logs.rs"),
        include_str!("reporting.rs"),
        include_str!("cmdprio.rs"),
    ];
    let mut candidates: std::collections::BTreeSet<String> = crate::fio::known::FIO_OPTIONS
        .iter()
        .map(|s| s.to_string())
        .collect();
    for src in sources {
        let parts: Vec<&str> = src.split('"').collect();
        for (i, part) in parts.iter().enumerate() {
            let after = parts.get(i + 1).map_or("", |a| a.trim_start());
            let is_name = i % 2 == 1
                && !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if is_name && (after.starts_with("=>") || after.starts_with('|')) {
                candidates.insert((*part).to_string());
            }
        }
    }
    let taken: Vec<&String> = candidates.iter().filter(|k| parser_takes(k)).collect();
    assert!(
        taken.len() > 140,
        "the probe finds the parser's options: {}",
        taken.len()
    );
    let undocumented: Vec<&&String> = taken.iter().filter(|k| !documented.contains(**k)).collect();
    assert!(
        undocumented.is_empty(),
        "options the parser takes that docs/fio.md's table does not list: {undocumented:?}"
    );
    // And the table names no option of fio's that the parser refuses as unknown to it.
    let wrong: Vec<&String> = documented
        .iter()
        .filter(|k| crate::fio::known::is_fio_option(k) && !parser_takes(k))
        .collect();
    assert!(
        wrong.is_empty(),
        "options docs/fio.md lists that the parser refuses as unsupported: {wrong:?}"
    );
    // fio's other options: the doc's list of those refused is exactly them.
    let doc = include_str!("../../../../docs/fio.md");
    let listed: std::collections::BTreeSet<&str> = doc
        .split("fio 3.33's other options are refused")
        .nth(1)
        .expect("docs/fio.md lists fio's options it refuses")
        .split("\n\n")
        .next()
        .unwrap()
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|n| crate::fio::known::is_fio_option(n))
        .collect();
    let refused: std::collections::BTreeSet<&str> = crate::fio::known::FIO_OPTIONS
        .iter()
        .copied()
        .filter(|k| !documented.contains(*k) && !parser_takes(k))
        .collect();
    assert_eq!(listed, refused, "docs/fio.md's list of refused options");
}
