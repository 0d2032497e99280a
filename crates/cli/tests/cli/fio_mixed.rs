//! fio's percentage_random against real fio 3.33 (on PATH; scripts/test.sh installs it,
//! and strace): each clone's reads and writes in order, each one random or following
//! the direction's last one, as fio chooses them.

use std::path::Path;
use std::process::Command;

use crate::common::{fio_or_iolab, iolab, path, peer_on_path, strace_threads};

/// Each thread's reads and writes of files under `dir`, in order: (call, offset, length).
fn thread_ios(cmd: &Command, dir: &Path, work: &Path) -> Vec<Vec<(String, u64, u64)>> {
    let prefix = format!("\"{}/", path(dir));
    let mut out = Vec::new();
    for text in strace_threads(cmd, work, "openat,close,pread64,pwrite64") {
        let mut fds: Vec<String> = Vec::new();
        let mut ios = Vec::new();
        for line in text.lines() {
            let Some((call, rest)) = line.split_once('(') else {
                continue;
            };
            let result = line.rsplit_once(" = ").map(|(_, r)| r.trim().to_string());
            match call {
                // Not iolab's own files beside them (its lock, records: dot files).
                "openat" if rest.contains(&prefix) => {
                    let name = rest.split('"').nth(1).unwrap_or_default();
                    if !name.rsplit('/').next().unwrap_or_default().starts_with('.') {
                        fds.extend(result);
                    }
                }
                "close" => fds.retain(|fd| !rest.starts_with(&format!("{fd})"))),
                "pread64" | "pwrite64" => {
                    let args: Vec<&str> = rest.split(", ").collect();
                    if fds.iter().any(|fd| fd == args[0]) {
                        let len: u64 = args[2].parse().unwrap();
                        let offset: u64 = args[3].split(')').next().unwrap().parse().unwrap();
                        ios.push((call.to_string(), offset, len));
                    }
                }
                _ => {}
            }
        }
        if !ios.is_empty() {
            out.push(ios);
        }
    }
    out
}

/// One thread's I/Os of `call` as a string: `s` where one starts where the thread's
/// last one of that call ended, `r` elsewhere (the first at 0 is `s`).
fn choices(ios: &[(String, u64, u64)], call: &str) -> String {
    let mut end = 0;
    ios.iter()
        .filter(|(c, ..)| c == call)
        .map(|(_, at, len)| {
            let c = if *at == end { 's' } else { 'r' };
            end = at + len;
            c
        })
        .collect()
}

/// `args` run by fio and by `iolab fio` (psync, threads) on a sparse 1 GiB file `f`
/// each (so a random place lands after the last I/O by chance once in 2^18): each
/// thread's (reads, writes) as [`choices`], sorted.
fn both(args: &[&str]) -> Option<[Vec<(String, String)>; 2]> {
    if !peer_on_path("fio", "--version") || !peer_on_path("strace", "-V") {
        return None;
    }
    let run = |tool: &str| {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let work = tempfile::tempdir().unwrap();
        std::fs::File::create(dir.path().join("f"))
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let mut cmd = fio_or_iolab(tool, &["--allow-destroy"]);
        cmd.current_dir(dir.path())
            .arg(format!("--directory={}", path(dir.path())))
            .arg("--filename=f")
            .args(args)
            .args(["--thread", "--ioengine=psync", "--output-format=json"])
            .arg(format!("--output={}", path(&work.path().join("out.json"))));
        let mut seen: Vec<(String, String)> = thread_ios(&cmd, dir.path(), work.path())
            .iter()
            .map(|ios| (choices(ios, "pread64"), choices(ios, "pwrite64")))
            .collect();
        seen.sort();
        seen
    };
    Some([run("fio"), run("iolab")])
}

/// fio's percentage_random: a random read job at 50 % and, after it in the job file, a
/// randrw job of two clones at 30 % for reads and 70 % for writes. Every clone's
/// sequence of random and sequential reads, and of writes, is fio's I/O for I/O (fio's
/// own generator and seeds, its thread numbers 1, 2 and 3), and so is the mixed job's
/// choice of read or write (see fio_service.rs).
#[test]
fn percentage_random_chooses_each_io_as_fio() {
    let job = [
        "--name=a",
        "--rw=randread",
        "--percentage_random=50",
        "--io_size=320k",
        "--name=b",
        "--rw=randrw",
        "--numjobs=2",
        "--percentage_random=30,70",
        "--io_size=800k",
    ];
    let Some([fio, ours]) = both(&job) else {
        return;
    };
    assert_eq!(fio.len(), 3, "fio's threads: {fio:?}");
    assert_eq!(ours, fio);
    // Job a: 80 reads, no writes; job b's clones 200 I/Os each.
    let only_reads: Vec<_> = fio.iter().filter(|(_, w)| w.is_empty()).collect();
    assert_eq!(only_reads.len(), 1);
    assert_eq!(only_reads[0].0.len(), 80);
    let mixed: Vec<_> = fio.iter().filter(|(_, w)| !w.is_empty()).collect();
    assert_eq!(mixed.len(), 2);
    for (r, w) in &mixed {
        assert_eq!(r.len() + w.len(), 200);
    }
    // The shares: reads 30 % random, writes 70 % (over both clones' I/Os).
    let share = |s: &str| s.matches('r').count() as f64 / s.len() as f64;
    let reads: String = mixed.iter().map(|(r, _)| r.as_str()).collect();
    let writes: String = mixed.iter().map(|(_, w)| w.as_str()).collect();
    assert!((share(&reads) - 0.3).abs() < 0.1, "{reads}");
    assert!((share(&writes) - 0.7).abs() < 0.1, "{writes}");
}

/// The values fio refuses or where iolab cannot run it: one line naming the option,
/// exit 2, nothing run.
#[test]
fn percentage_random_refusals_name_the_option() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--rw=randread", "--percentage_random=101"][..],
            "percentage_random",
        ),
        (
            &["--rw=randtrim", "--percentage_random=50"][..],
            "percentage_random",
        ),
        (
            &[
                "--rw=randwrite",
                "--verify=crc32c",
                "--percentage_random=50",
            ][..],
            "percentage_random",
        ),
        (
            &["--rw=randread", "--percentage_sequential=20"][..],
            "percentage_sequential",
        ),
    ] {
        let out = iolab()
            .current_dir(dir.path())
            .args(["fio", "--no-store", "--name=j", "--size=1m"])
            .arg(format!("--directory={}", path(dir.path())))
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }
}

/// allrandrepeat=1: fio seeds every stream from the clone's number alone, so with
/// randrepeat=0 and a randseed the choices are still the fixed ones, in both tools.
#[test]
fn allrandrepeat_fixes_the_choices_whatever_randseed_says() {
    let job = [
        "--name=a",
        "--rw=randwrite",
        "--percentage_random=40",
        "--io_size=400k",
        "--randrepeat=0",
        "--randseed=7",
        "--allrandrepeat=1",
    ];
    let Some([fio, ours]) = both(&job) else {
        return;
    };
    assert_eq!(fio.len(), 1);
    assert_eq!(fio[0].1.len(), 100);
    assert_eq!(ours, fio);
    // Without allrandrepeat the seed is randseed's: another sequence.
    let Some([other, _]) = both(&job[..6]) else {
        return;
    };
    assert_ne!(other, fio);
}

/// percentage_random on a `filename` longer than the job's region: fio's
/// `get_next_offset` fails where a sequential I/O reaches the region's end, so the file
/// is done and the job ends there, short of its size; at the file's own end (a file as
/// long as the region) the I/O goes to a random place and the job moves all its size.
/// The random places are each tool's own, so where a run ends differs; the rule is
/// checked in both tools over six seeds: a run reads its 64 blocks, or fewer with the
/// region's last block last; some runs end short on the longer file, none on the other.
/// Over several passes of such a file iolab refuses it (fio ends each pass there).
#[test]
fn percentage_random_ends_at_the_regions_end_in_a_longer_file_as_fio() {
    if !peer_on_path("fio", "--version") || !peer_on_path("strace", "-V") {
        return;
    }
    let reads = |tool: &str, file_len: u64, seed: u32| -> Vec<u64> {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let work = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(dir.path().join("f")).unwrap();
        f.set_len(file_len).unwrap();
        let mut cmd = fio_or_iolab(tool, &[]);
        cmd.current_dir(dir.path())
            .arg(format!("--directory={}", path(dir.path())))
            .args(["--name=j", "--filename=f", "--rw=randread", "--bs=4k"])
            .args(["--size=256k", "--percentage_random=50"])
            .arg(format!("--randseed={seed}"))
            .args(["--thread", "--ioengine=psync", "--minimal"]);
        let threads = thread_ios(&cmd, dir.path(), work.path());
        let ios: Vec<&Vec<(String, u64, u64)>> = threads.iter().filter(|t| t.len() > 3).collect();
        assert_eq!(ios.len(), 1, "{tool}: {threads:?}");
        ios[0].iter().map(|(_, at, _)| at / 4096).collect()
    };
    for tool in ["fio", "iolab"] {
        for (file_len, ends) in [(1u64 << 20, true), (256 << 10, false)] {
            let mut short = 0;
            for seed in 1..=6 {
                let blocks = reads(tool, file_len, seed);
                assert!(blocks.len() <= 64, "{tool} {file_len} {seed}: {blocks:?}");
                if blocks.len() < 64 {
                    assert_eq!(blocks.last(), Some(&63), "{tool} {seed}: {blocks:?}");
                    short += 1;
                }
            }
            assert_eq!(short > 0, ends, "{tool}: file of {file_len} bytes");
        }
    }
    // Two passes over the longer file: refused in one line, nothing run.
    let dir = tempfile::tempdir().unwrap();
    let f = std::fs::File::create(dir.path().join("f")).unwrap();
    f.set_len(1 << 20).unwrap();
    let out = iolab()
        .current_dir(dir.path())
        .args([
            "fio",
            "--no-store",
            "--name=j",
            "--filename=f",
            "--rw=randread",
        ])
        .args(["--size=256k", "--percentage_random=50", "--loops=2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("percentage_random") && err.contains("passes"),
        "{err}"
    );
}
