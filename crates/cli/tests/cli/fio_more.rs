//! fio options that job files carry and that once made `iolab fio` refuse the whole
//! file: offset_increment, io_size, and the options whose effect is a file's fate
//! (unlink, allow_file_create, ...). Each against real fio 3.33 on the same job (on
//! PATH; scripts/test.sh installs it, and strace): the offsets each file is read or
//! written at, the bytes moved, the files left. Small scale.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{fio_or_iolab, iolab, path, peer_on_path, strace_threads};

/// Every pread64, pwrite64, read or write on a file under `dir`, as (call, file
/// name, offset, length; a read's or write's offset is 0), and every fadvise64 as (its advice, file
/// name, 0, 0), sorted: a descriptor is followed from its openat to its close.
pub(crate) fn file_ios(cmd: &Command, dir: &Path, work: &Path) -> Vec<(String, String, u64, u64)> {
    let mut out = Vec::new();
    let prefix = format!("\"{}/", path(dir));
    for text in strace_threads(
        cmd,
        work,
        "openat,close,pread64,pwrite64,read,write,fadvise64",
    ) {
        let mut fds: Vec<(String, String)> = Vec::new();
        for line in text.lines() {
            let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
            let Some((call, rest)) = line.split_once('(') else {
                continue;
            };
            let result = line.rsplit_once(" = ").map(|(_, r)| r.to_string());
            match call {
                "openat" if rest.contains(&prefix) => {
                    let name = rest.split('"').nth(1).unwrap_or_default();
                    let base = name.rsplit('/').next().unwrap_or_default().to_string();
                    // iolab's own files in its work directory (its lock, records).
                    if !base.starts_with('.') {
                        fds.extend(result.map(|fd| (fd, base)));
                    }
                }
                "close" => fds.retain(|(fd, _)| !rest.starts_with(&format!("{fd})"))),
                // A plain read or write has no offset: its bytes, at offset 0.
                "read" | "write" => {
                    let fd = rest.split(',').next().unwrap_or_default();
                    let n = result.as_deref().and_then(|r| r.parse::<u64>().ok());
                    if let (Some((_, name)), Some(n)) = (fds.iter().find(|(f, _)| f == fd), n) {
                        out.push((call.to_string(), name.clone(), 0, n));
                    }
                }
                "fadvise64" => {
                    let fd = rest.split(',').next().unwrap_or_default();
                    if let Some((_, name)) = fds.iter().find(|(f, _)| f == fd) {
                        let advice = rest.rsplit(", ").next().unwrap_or_default();
                        let advice = advice.split(')').next().unwrap_or_default();
                        out.push((advice.to_string(), name.clone(), 0, 0));
                    }
                }
                "pread64" | "pwrite64" => {
                    let args: Vec<&str> = rest.split(", ").collect();
                    if let Some((_, name)) = fds.iter().find(|(fd, _)| fd == args[0]) {
                        let len: u64 = args[2].parse().unwrap();
                        let offset: u64 = args[3].split(')').next().unwrap().parse().unwrap();
                        out.push((call.to_string(), name.clone(), offset, len));
                    }
                }
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// What one tool did with a job in a fresh directory: its JSON, its reads and writes
/// (`calls`: the ones compared), and the files it left (name and size).
pub(crate) struct Ran2 {
    pub(crate) json: Value,
    pub(crate) ios: Vec<(String, String, u64, u64)>,
    pub(crate) files: BTreeMap<String, u64>,
}

/// The regular files under `dir` and `dir/iolab-work` by name, with their sizes.
fn files_left(dir: &Path) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for d in [dir.to_path_buf(), dir.join("iolab-work")] {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_file() && !name.starts_with('.') {
                m.insert(name, e.metadata().unwrap().len());
            }
        }
    }
    m
}

/// `job` run by fio and by `iolab fio --keep` (psync, threads) in fresh directories,
/// the calls named in `calls` traced; None (said) where fio or strace is missing.
pub(crate) fn both(job: &[&str], calls: &[&str]) -> Option<[Ran2; 2]> {
    if !peer_on_path("fio", "--version") || !peer_on_path("strace", "-V") {
        return None;
    }
    let run = |tool: &str| {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let work = tempfile::tempdir().unwrap();
        let out = work.path().join("out.json");
        let mut cmd = fio_or_iolab(tool, &["--keep"]);
        // fio joins a filename to the directory given before it: the directory first,
        // and the directory as the current one, so nothing lands elsewhere.
        cmd.current_dir(dir.path())
            .arg(format!("--directory={}", path(dir.path())))
            .args(job)
            .args(["--thread", "--ioengine=psync", "--output-format=json"])
            .arg(format!("--output={}", path(&out)));
        let mut ios = file_ios(&cmd, dir.path(), work.path());
        ios.retain(|(c, ..)| calls.contains(&c.as_str()));
        let text = std::fs::read_to_string(&out).unwrap();
        let json = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
        Ran2 {
            json,
            ios,
            files: files_left(dir.path()),
        }
    };
    Some([run("fio"), run("iolab")])
}

/// Each report entry's (jobname, read bytes, write bytes).
fn moved(v: &Value) -> Vec<(String, u64, u64)> {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["read"]["io_bytes"].as_u64().unwrap(),
                j["write"]["io_bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// offset_increment: clone k works from offset + k x increment, in its own files (a
/// sequential write after a 64 KiB offset) or in one file the clones share (a random
/// read of a file that does not exist yet, made first): the same offsets read or
/// written in each file as fio's, the same bytes per clone, files of fio's sizes.
#[test]
fn offset_increment_places_each_clone_where_fio_does() {
    let job = [
        "--name=j",
        "--rw=write",
        "--bs=64k",
        "--size=256k",
        "--numjobs=3",
        "--offset=64k",
        "--offset_increment=1m",
    ];
    let Some([fio, ours]) = both(&job, &["pwrite64"]) else {
        return;
    };
    assert_eq!(ours.ios.len(), 12, "{:?}", ours.ios);
    assert_eq!(ours.ios, fio.ios);
    assert_eq!(moved(&ours.json), moved(&fio.json));
    assert_eq!(ours.files, fio.files);
    assert_eq!(ours.files["j.2.0"], (64 + 2048 + 256) << 10);
    let job = [
        "--name=s",
        "--rw=randread",
        "--bs=4k",
        "--size=128k",
        "--numjobs=3",
        "--filename=shared",
        "--offset_increment=192k",
    ];
    let Some([fio, ours]) = both(&job, &["pread64"]) else {
        return;
    };
    // Every block of each region once: 3 x 32 reads, in 3 regions 64 KiB apart.
    assert_eq!(ours.ios.len(), 96);
    assert_eq!(ours.ios, fio.ios);
    assert_eq!(moved(&ours.json), moved(&fio.json));
    assert_eq!(ours.files, fio.files);
    assert_eq!(ours.files["shared"], (2 * 192 + 128) << 10);
}

/// Each report entry's (read I/Os, write I/Os).
fn ios(v: &Value) -> Vec<(u64, u64)> {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["read"]["total_ios"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// io_size (io_limit): less than the region stops early, more makes passes over it,
/// with loops as fio 3.33's backend.c counts them (the first pass runs to io_size x
/// loops). Bytes and I/Os per direction as fio's, and a random read of 2.5 regions
/// reads every block twice and half of them a third time, as fio's.
#[test]
fn io_size_moves_what_fio_moves_over_the_region() {
    for (rw, size, io, loops) in [
        ("read", "1m", "256k", "1"),
        ("randread", "1m", "2560k", "1"),
        ("write", "512k", "1280k", "1"),
        ("read", "1m", "256k", "2"),
        ("randwrite", "512k", "768k", "2"),
        ("randread", "1m", "10k", "1"),
        ("randrw", "512k", "1536k", "1"),
    ] {
        let (s, i, l) = (
            format!("--size={size}"),
            format!("--io_size={io}"),
            format!("--loops={l}", l = loops),
        );
        let job = ["--name=j", "--bs=4k", &format!("--rw={rw}"), &s, &i, &l];
        let calls: &[&str] = if rw == "randread" && io == "2560k" {
            &["pread64"]
        } else {
            &[]
        };
        let Some([fio, ours]) = both(&job, calls) else {
            return;
        };
        let what = format!("{job:?}");
        if rw == "randrw" {
            // The mix is drawn: the I/Os in all, 384 of 4 KiB, as fio's.
            let sum = |v: &Value| ios(v).iter().map(|(r, w)| r + w).sum::<u64>();
            assert_eq!((sum(&ours.json), sum(&fio.json)), (384, 384), "{what}");
        } else {
            assert_eq!(moved(&ours.json), moved(&fio.json), "{what}");
            assert_eq!(ios(&ours.json), ios(&fio.json), "{what}");
        }
        assert_eq!(ours.files, fio.files, "{what}");
        if !calls.is_empty() {
            for ran in [&fio, &ours] {
                let mut times: BTreeMap<u64, u64> = BTreeMap::new();
                for (_, _, at, _) in &ran.ios {
                    *times.entry(*at).or_default() += 1;
                }
                let thrice = times.values().filter(|n| **n == 3).count();
                assert_eq!(times.len(), 256, "{what}");
                assert!(times.values().all(|n| (2..=3).contains(n)), "{what}");
                assert_eq!(thrice, 128, "{what}");
            }
        }
    }
}

/// The bytes of the calls named `call` in `ios`, and how many there are.
fn sum_of(ios: &[(String, String, u64, u64)], calls: &[&str]) -> (u64, usize) {
    let hits: Vec<_> = ios
        .iter()
        .filter(|(c, ..)| calls.contains(&c.as_str()))
        .collect();
    (hits.iter().map(|(.., n)| n).sum(), hits.len())
}

/// pre_read: the file is read into the page cache before the job, and not dropped
/// from it when the job opens it (fio clears invalidate): in both tools the file is
/// read twice over (fio's pre-read in reads, iolab's in preads) and one
/// POSIX_FADV_DONTNEED fewer is issued than without pre_read (fio still drops what it
/// has just laid out, before it reads it in again).
#[test]
fn pre_read_reads_the_file_in_and_keeps_it_cached_as_fio() {
    let calls = ["pread64", "read", "POSIX_FADV_DONTNEED"];
    let mut drops = BTreeMap::new();
    for pre in ["1", "0"] {
        let p = format!("--pre_read={pre}");
        let job = ["--name=p", "--rw=randread", "--bs=4k", "--size=512k", &p];
        let Some([fio, ours]) = both(&job, &calls) else {
            return;
        };
        for (tool, ran) in [("fio", &fio), ("iolab", &ours)] {
            let read = sum_of(&ran.ios, &["pread64", "read"]).0;
            let times = if pre == "1" { 2 } else { 1 };
            assert_eq!(read, times * (512 << 10), "{tool} {p}");
            drops.insert((tool, pre), sum_of(&ran.ios, &["POSIX_FADV_DONTNEED"]).1);
        }
        assert_eq!(moved(&ours.json), moved(&fio.json));
    }
    for tool in ["fio", "iolab"] {
        assert_eq!(
            drops[&(tool, "1")] + 1,
            drops[&(tool, "0")],
            "{tool}: {drops:?}"
        );
    }
}

/// Options a job file carries that change nothing in what fio does here, or that iolab
/// does alike: the job runs and writes what fio writes, at the same offsets of the
/// same files; and allow_file_create=0 on a missing file makes nothing in either tool
/// (fio fails the job, iolab refuses it in one line, exit 2).
#[test]
fn file_options_run_as_fios_and_a_forbidden_file_is_not_made() {
    let job = [
        "--name=f",
        "--rw=randwrite",
        "--bs=4k",
        "--size=256k",
        "--nrfiles=2",
        "--file_service_type=roundrobin",
        "--openfiles=2",
        "--allow_file_create=1",
        "--clocksource=clock_gettime",
        "--create_fsync=1",
        "--unlink=0",
        "--unlink_each_loop=0",
        "--stats=1",
    ];
    let Some([fio, ours]) = both(&job, &["pwrite64"]) else {
        return;
    };
    assert_eq!(ours.ios.len(), 64);
    assert_eq!(ours.ios, fio.ios);
    assert_eq!(moved(&ours.json), moved(&fio.json));
    assert_eq!(ours.files, fio.files);
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let args = [
        format!("--directory={}", path(dir.path())),
        "--name=a".into(),
        "--rw=read".into(),
        "--size=64k".into(),
        "--filename=missing".into(),
        "--allow_file_create=0".into(),
    ];
    let fio = Command::new("fio")
        .current_dir(dir.path())
        .args(&args)
        .output()
        .unwrap();
    assert_ne!(fio.status.code(), Some(0));
    let r = crate::common::Ran::from(
        iolab()
            .current_dir(dir.path())
            .args(["fio", "--no-store"])
            .args(&args)
            .output()
            .unwrap(),
    )
    .expect(2);
    assert_eq!(
        crate::common::error_line(&r),
        "iolab: error: job a: command line: --allow_file_create: [a] allow_file_create: 0: DIR/missing does not exist and may not be made (fio fails the job with ENOENT; nothing was run)"
            .replace("DIR", path(dir.path()))
    );
    assert!(files_left(dir.path()).is_empty());
}

/// overwrite=1: a writing job's file is laid out in full before it, so its writes
/// overwrite data: the file is written twice over in both tools (fio's layout in
/// writes, iolab's in pwrites), once without it.
#[test]
fn overwrite_lays_out_a_writing_jobs_file_first_as_fio() {
    for (over, times) in [("1", 2), ("0", 1)] {
        let o = format!("--overwrite={over}");
        let job = ["--name=o", "--rw=randwrite", "--bs=4k", "--size=256k", &o];
        let Some([fio, ours]) = both(&job, &["pwrite64", "write"]) else {
            return;
        };
        for (tool, ran) in [("fio", &fio), ("iolab", &ours)] {
            let written = sum_of(&ran.ios, &["pwrite64", "write"]).0;
            assert_eq!(written, times * (256 << 10), "{tool} {o}");
        }
        assert_eq!(moved(&ours.json), moved(&fio.json));
        assert_eq!(ours.files, fio.files);
    }
}

/// Where fio puts a `filename` given with a `directory`: joined when the directory is
/// in force as the filename is given (command line in order, a job file's section in
/// either order, a `[global]` filename not moved by the job's directory). Both tools
/// on the same five cases: the same paths written.
#[test]
fn filename_joins_the_directory_as_fio_joins_them() {
    if !peer_on_path("fio", "--version") {
        return;
    }
    let write = ["--rw=write", "--size=64k"];
    let cases: [(&[&str], &str); 5] = [
        (&["--name=j", "--filename=x", "--directory=d"], ""),
        (&["--name=j", "--directory=d", "--filename=x"], ""),
        (&["job.fio"], "[j]\nfilename=x\ndirectory=d\n"),
        (&["job.fio"], "[global]\nfilename=x\n[j]\ndirectory=d\n"),
        (&["job.fio"], "[global]\ndirectory=d\n[j]\nfilename=/x\n"),
    ];
    for (args, text) in cases {
        let mut left = Vec::new();
        for tool in ["fio", "iolab"] {
            let dir = tempfile::tempdir_in("/var/tmp").unwrap();
            std::fs::create_dir(dir.path().join("d")).unwrap();
            std::fs::write(
                dir.path().join("job.fio"),
                format!("{text}rw=write\nsize=64k\n"),
            )
            .unwrap();
            let mut cmd = fio_or_iolab(tool, &["--keep"]);
            let out = cmd
                .current_dir(dir.path())
                .args(args)
                .args(if text.is_empty() { &write[..] } else { &[] })
                .output()
                .unwrap();
            assert!(out.status.success(), "{tool} {args:?} {text}: {out:?}");
            let mut files: Vec<String> = Vec::new();
            let mut todo = vec![dir.path().to_path_buf()];
            while let Some(d) = todo.pop() {
                for e in std::fs::read_dir(&d).unwrap().flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if e.file_type().unwrap().is_dir() && name != "iolab-work" {
                        todo.push(e.path());
                    } else if e.file_type().unwrap().is_file() && name != "job.fio" {
                        let at = e.path();
                        let rel = at.strip_prefix(dir.path()).unwrap();
                        files.push(format!("{} {}", rel.display(), e.metadata().unwrap().len()));
                    }
                }
            }
            files.sort();
            left.push(files);
        }
        assert_eq!(left[1], left[0], "{args:?} {text}: iolab's files, fio's");
        assert_eq!(left[0].len(), 1, "{args:?} {text}: {:?}", left[0]);
    }
}

/// create_only=1: the files are made as fio sets them up (the read job's laid out in
/// full, the write job's preallocated, not written) and no I/O runs: the same bytes
/// written to the same files in both tools, nothing read, and report entries with
/// nothing done, a time-based job's too.
#[test]
fn create_only_makes_the_files_and_runs_no_io_as_fio() {
    let job = [
        "--name=r",
        "--rw=randread",
        "--size=1m",
        "--create_only=1",
        "--name=w",
        "--rw=write",
        "--size=512k",
        "--time_based",
        "--runtime=5",
        "--create_only=1",
    ];
    let calls = ["pwrite64", "write", "pread64", "read"];
    let Some([fio, ours]) = both(&job, &calls) else {
        return;
    };
    for (tool, ran) in [("fio", &fio), ("iolab", &ours)] {
        let files = |n: &str| {
            let f: Vec<_> = ran.ios.iter().filter(|i| i.1 == n).cloned().collect();
            (
                sum_of(&f, &["pwrite64", "write"]).0,
                sum_of(&f, &["pread64", "read"]).0,
            )
        };
        assert_eq!(files("r.0.0"), (1 << 20, 0), "{tool}");
        assert_eq!(files("w.0.0"), (0, 0), "{tool}");
        assert_eq!(
            moved(&ran.json),
            vec![("r".to_string(), 0, 0), ("w".to_string(), 0, 0)],
            "{tool}"
        );
    }
    assert_eq!(ours.files, fio.files);
}
