//! fio's file_service_type and its random sequences over loops (randrepeat), against
//! real fio 3.33
//! (on PATH; scripts/test.sh installs it, and strace): the same job run by fio and by
//! `iolab fio` (psync, threads) under strace, each clone's I/Os in the order it issued
//! them, by file and block. Small scale.

use std::path::Path;
use std::process::Command;

use crate::common::{fio_or_iolab, path, peer_on_path, run, strace_threads};

/// Each thread's reads and writes on the job's files (named `j.N.F`), in order, as
/// `F.N@block:r` (or `:w`) of `bs` 4 KiB; threads with more than `least` of them, sorted.
fn sequences(cmd: &Command, work: &Path, least: usize) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for text in strace_threads(cmd, work, "openat,close,pread64,pwrite64") {
        let mut fds: Vec<(String, String)> = Vec::new();
        let mut ios = Vec::new();
        for line in text.lines() {
            let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
            let Some((call, rest)) = line.split_once('(') else {
                continue;
            };
            let result = line.rsplit_once(" = ").map(|(_, r)| r.to_string());
            match call {
                "openat" => {
                    let name = rest.split('"').nth(1).unwrap_or_default();
                    let base = name.rsplit('/').next().unwrap_or_default();
                    if let (Some(f), Some(fd)) = (base.strip_prefix("j."), result) {
                        fds.retain(|(d, _)| *d != fd);
                        fds.push((fd, f.to_string()));
                    }
                }
                "close" => fds.retain(|(fd, _)| !rest.starts_with(&format!("{fd})"))),
                "pread64" | "pwrite64" => {
                    let args: Vec<&str> = rest.split(", ").collect();
                    if let Some((_, name)) = fds.iter().find(|(fd, _)| fd == args[0]) {
                        let offset: u64 = args[3].split(')').next().unwrap().parse().unwrap();
                        let dir = if call == "pread64" { 'r' } else { 'w' };
                        ios.push(format!("{name}@{}:{dir}", offset / 4096));
                    }
                }
                _ => {}
            }
        }
        if ios.len() > least {
            out.push(ios);
        }
    }
    out.sort();
    out
}

/// `job` run by fio and by `iolab fio` in fresh directories: each clone's I/Os in order
/// (threads with more than `least`); None (said) where fio or strace is missing.
fn both(job: &[&str], least: usize) -> Option<[Vec<Vec<String>>; 2]> {
    if !peer_on_path("fio", "--version") || !peer_on_path("strace", "-V") {
        return None;
    }
    let run = |tool: &str| {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let work = tempfile::tempdir().unwrap();
        let mut cmd = fio_or_iolab(tool, &[]);
        cmd.current_dir(dir.path())
            .arg(format!("--directory={}", path(dir.path())))
            .args(["--name=j", "--bs=4k"])
            .args(job)
            .args(["--thread", "--ioengine=psync", "--minimal"]);
        let seqs = sequences(&cmd, work.path(), least);
        assert!(!seqs.is_empty(), "{tool} {job:?}: no I/O traced");
        seqs
    };
    Some([run("fio"), run("iolab")])
}

/// Files only: `F.N` of each `F.N@block`.
fn files_of(seqs: &[Vec<String>]) -> Vec<Vec<String>> {
    seqs.iter()
        .map(|s| {
            s.iter()
                .map(|io| io.split('@').next().unwrap().to_string())
                .collect()
        })
        .collect()
}

/// Each I/O's file as fio chooses it (io_u.c `__get_next_file`): the same files in the
/// same order as fio's, at the same blocks for sequential jobs. `random` draws from
/// fio's own generator and seeds (thread numbers, randseed), `:N` keeps a file N I/Os,
/// a file is found done when chosen (a draw spent), and each loop draws again from the
/// start under randrepeat (fio reseeds) or goes on without it.
#[test]
fn file_service_type_chooses_each_ios_file_as_fio() {
    let exact: [&[&str]; 5] = [
        &[
            "--rw=read",
            "--size=48k",
            "--nrfiles=3",
            "--file_service_type=random",
        ],
        &[
            "--rw=write",
            "--size=48k",
            "--nrfiles=3",
            "--file_service_type=sequential",
            "--numjobs=2",
            "--loops=2",
        ],
        &[
            "--rw=read",
            "--size=48k",
            "--nrfiles=3",
            "--file_service_type=roundrobin:3",
            "--loops=2",
        ],
        // Without randrepeat a loop goes on drawing where the last ended, after the
        // draws that found each file done.
        &[
            "--rw=read",
            "--size=32k",
            "--nrfiles=2",
            "--file_service_type=random:2",
            "--loops=3",
            "--randrepeat=0",
            "--randseed=7",
        ],
        &[
            "--rw=read",
            "--size=32k",
            "--nrfiles=2",
            "--file_service_type=random",
            "--loops=2",
            "--numjobs=2",
        ],
    ];
    for job in exact {
        let Some([fio, ours]) = both(job, 3) else {
            return;
        };
        assert_eq!(ours, fio, "{job:?}");
    }
    // Random offsets are iolab's own: the files in fio's order.
    let files: [&[&str]; 2] = [
        &[
            "--rw=randread",
            "--size=48k",
            "--nrfiles=3",
            "--file_service_type=random",
            "--loops=2",
            "--numjobs=2",
        ],
        // Without a map no file is ever done: fio's draws alone.
        &[
            "--rw=randread",
            "--norandommap",
            "--size=96k",
            "--nrfiles=3",
            "--file_service_type=random:2",
        ],
    ];
    for job in files {
        let Some([fio, ours]) = both(job, 3) else {
            return;
        };
        assert_eq!(files_of(&ours), files_of(&fio), "{job:?}");
    }
}

/// A time-based job's files: sequential ones end and start again (fio 3.33 wraps a
/// sequence only in a job of one file), random ones never end (their map starts
/// again); the first thousands of I/Os go to fio's files, in fio's order.
#[test]
fn file_service_type_of_a_time_based_job_follows_fios_files() {
    let cases: [&[&str]; 2] = [
        &[
            "--rw=read",
            "--size=32k",
            "--nrfiles=2",
            "--file_service_type=random",
            "--randrepeat=0",
            "--randseed=9",
        ],
        &[
            "--rw=randread",
            "--size=48k",
            "--nrfiles=3",
            "--file_service_type=random",
        ],
    ];
    for job in cases {
        let job = [job, &["--time_based", "--runtime=1"]].concat();
        let Some([fio, ours]) = both(&job, 3) else {
            return;
        };
        let (fio, ours) = (&files_of(&fio)[0], &files_of(&ours)[0]);
        let n = fio.len().min(ours.len());
        assert!(n > 1000, "{job:?}: {n} I/Os");
        assert_eq!(ours[..n], fio[..n], "{job:?}");
    }
}

/// What iolab does not run is one line naming the option and the value, exit 2.
#[test]
fn file_service_type_refusals_name_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let d = format!("--directory={}", path(dir.path()));
    for (value, extra, says) in [
        ("zipf:1.2", "", "'zipf:1.2' is not supported"),
        ("gauss", "", "'gauss' is not supported"),
        (
            "roundrobin:0",
            "",
            "N in roundrobin:N must be a whole number",
        ),
        ("every", "", "'every' is not a file service type"),
        ("random", "--percentage_random=50", "with percentage_random"),
        ("sequential", "--rw=rw", "rw=rw"),
    ] {
        let fst = format!("--file_service_type={value}");
        let mut args = vec![
            "fio",
            "--no-store",
            "--name=r",
            "--rw=randread",
            "--size=64k",
        ];
        args.extend(["--nrfiles=2", &d, &fst]);
        if !extra.is_empty() {
            args.push(extra);
        }
        let r = run(&args).expect(2);
        let line = r.error_line();
        assert!(
            line.contains("file_service_type") && line.contains(says),
            "{value}: {line}"
        );
    }
}

/// randrepeat (fio's default) reseeds at each loop of a size-based job, so every pass
/// reads the first one's random offsets again; so do the passes io_size makes; a
/// randseed turns it off (fio: "randseed overrides randrepeat"), as randrepeat=0 does,
/// and a time-based job starts its map again without reseeding. iolab's orders are its
/// own: what is compared is whether each pass repeats the first, in both tools.
#[test]
fn randrepeat_repeats_each_loops_offsets_as_fio() {
    let cases: [(&[&str], bool); 5] = [
        (&["--rw=randread", "--size=64k", "--loops=3"], true),
        (&["--rw=randread", "--size=64k", "--io_size=128k"], true),
        (
            &["--rw=randwrite", "--size=64k", "--nrfiles=2", "--loops=2"],
            true,
        ),
        (
            &["--rw=randread", "--size=64k", "--loops=2", "--randseed=5"],
            false,
        ),
        (
            &["--rw=randread", "--size=64k", "--loops=2", "--randrepeat=0"],
            false,
        ),
    ];
    for (job, repeats) in cases {
        let Some([fio, ours]) = both(job, 3) else {
            return;
        };
        for (tool, seqs) in [("fio", &fio), ("iolab", &ours)] {
            let ios = &seqs[0];
            assert_eq!(seqs.len(), 1, "{tool} {job:?}");
            let pass = 16;
            assert_eq!(ios.len() % pass, 0, "{tool} {job:?}: {ios:?}");
            let first = &ios[..pass];
            let same = ios.chunks(pass).all(|p| p == first);
            assert_eq!(same, repeats, "{tool} {job:?}: {ios:?}");
        }
    }
}

/// A mixed job's reads and writes as fio 3.33 chooses them (io_u.c `get_rw_ddir`): a
/// draw from fio's own generator and seed (thread number, randseed) once a direction has
/// issued its quota, and each loop drawn again from the start under randrepeat, so
/// every pass repeats the first one's reads and writes at the same blocks, in both
/// tools; without randrepeat the draws go on, with the one fio spends on each file it
/// finds done. The sequence of reads and writes of each clone is fio's, I/O for I/O
/// (`rw=rw`'s blocks too: each direction goes on from its own last one).
#[test]
fn randrw_reads_and_writes_come_in_fios_order_each_loop() {
    let cases: [(&[&str], Option<usize>); 4] = [
        (
            &["--rw=randrw", "--size=256k", "--loops=2", "--rwmixread=70"],
            Some(64),
        ),
        (
            &[
                "--rw=randrw",
                "--size=64k",
                "--loops=2",
                "--rwmixread=10",
                "--numjobs=2",
            ],
            Some(16),
        ),
        (
            &[
                "--rw=randrw",
                "--size=64k",
                "--loops=3",
                "--rwmixread=50",
                "--randseed=7",
                "--nrfiles=2",
            ],
            None,
        ),
        (&["--rw=rw", "--size=64k", "--rwmixread=60"], None),
    ];
    let dirs = |seqs: &[Vec<String>]| -> Vec<String> {
        seqs.iter()
            .map(|s| s.iter().map(|io| io.chars().last().unwrap()).collect())
            .collect()
    };
    for (job, pass) in cases {
        let Some([fio, ours]) = both(job, 3) else {
            return;
        };
        assert_eq!(dirs(&ours), dirs(&fio), "{job:?}");
        assert!(
            dirs(&fio)
                .iter()
                .any(|d| d.contains('r') && d.contains('w'))
        );
        if job[0] == "--rw=rw" {
            assert_eq!(ours, fio, "{job:?}");
        }
        for (tool, seqs) in [("fio", &fio), ("iolab", &ours)] {
            if let Some(pass) = pass {
                for ios in seqs {
                    assert_eq!(ios.len() % pass, 0, "{tool} {job:?}: {ios:?}");
                    let first = &ios[..pass];
                    assert!(ios.chunks(pass).all(|p| p == first), "{tool} {job:?}");
                }
            }
        }
    }
}

/// fio's psync loop ends when its next I/O finds the file done, a read-or-write draw
/// spent on it; its io_uring and libaio end a loop once its bytes are queued (backend.c
/// counts `bytes_issued` for queued I/Os only), without that draw. Without randrepeat
/// the draws go on from loop to loop, so a randrw job of three loops reads a different
/// number of blocks on each engine for some seeds; iolab's counts are fio's on both
/// (the sequences themselves, from fio's write_iolog, are in offsets/rwmix.rs's tests).
#[test]
fn randrw_loops_draw_on_as_fios_engine_ends_them() {
    if !peer_on_path("fio", "--version") {
        return;
    }
    let reads = |tool: &str, engine: &str, seed: u32| -> Option<u64> {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let mut cmd = fio_or_iolab(tool, &[]);
        let out = cmd
            .current_dir(dir.path())
            .arg(format!("--directory={}", path(dir.path())))
            .args([
                "--name=j",
                "--bs=4k",
                "--rw=randrw",
                "--size=64k",
                "--loops=3",
            ])
            .arg(format!("--randseed={seed}"))
            .arg(format!("--ioengine={engine}"))
            .arg("--output-format=json")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !text.contains('{') {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap()..])
            .unwrap_or_else(|e| panic!("{tool} {engine}: {e}: {text}"));
        assert_eq!(
            v["jobs"][0]["write"]["total_ios"].as_u64().unwrap()
                + v["jobs"][0]["read"]["total_ios"].as_u64().unwrap(),
            48,
            "{tool} {engine}"
        );
        v["jobs"][0]["read"]["total_ios"].as_u64()
    };
    let mut differ = 0;
    for seed in 1..=8 {
        let Some(fio_uring) = reads("fio", "io_uring", seed) else {
            eprintln!("skipped: fio's io_uring engine does not run here");
            return;
        };
        let fio = [reads("fio", "psync", seed).unwrap(), fio_uring];
        let ours = ["psync", "io_uring"].map(|e| reads("iolab", e, seed).unwrap());
        assert_eq!(ours, fio, "seed {seed}: reads with psync, io_uring");
        differ += usize::from(fio[0] != fio[1]);
    }
    assert!(differ > 0, "the engines read alike for every seed");
}
