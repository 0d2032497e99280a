//! What ends a fio job besides its size and runtime: `number_ios` (fio 3.33's
//! backend.c `exceeds_number_ios`: I/Os per loop, from the end of a ramp) and `exitall`,
//! `exitall_on_error` with `exit_what` (`fio_terminate_threads(groupid, exit_what)` when
//! a job ends). The expected figures are fio 3.33's on the same jobs; with fio on PATH
//! (scripts/test.sh installs it) each job also runs under fio and must agree.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{Ran, iolab, path};

/// Each report entry: (name, groupid, read I/Os, write I/Os, job_runtime ms, error).
type Entry = (String, u64, u64, u64, u64, u64);

fn entries(v: &Value) -> Vec<Entry> {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["groupid"].as_u64().unwrap(),
                j["read"]["total_ios"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
                j["job_runtime"].as_u64().unwrap(),
                j["error"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// fio's JSON from standard output: fio prints its `fio: pid=...` error lines before it.
fn json_of(stdout: &str) -> Value {
    let at = stdout
        .find('{')
        .unwrap_or_else(|| panic!("no JSON: {stdout}"));
    serde_json::from_str(&stdout[at..]).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn has_fio() -> bool {
    let ok = Command::new("fio").arg("--version").output().is_ok();
    if !ok {
        eprintln!("SKIPPED the comparison with real fio: fio is not on PATH");
    }
    ok
}

/// Runs `args` (a job file, or `--name=...` options) in `dir` under iolab, and under
/// fio too when `fio` is true: each one's entries, after checking its exit status.
fn run_both(dir: &Path, args: &[&str], code: i32, fio: bool) -> (Vec<Entry>, Option<Vec<Entry>>) {
    let d = format!("--directory={}", path(dir));
    let ours = Ran::from(
        iolab()
            .current_dir(dir)
            .args(["fio", "--no-store", "--output-format=json", &d])
            .args(args)
            .output()
            .unwrap(),
    )
    .expect(code);
    let ours = entries(&json_of(&ours.stdout));
    let theirs = fio.then(|| {
        // Bounded: fio 3.33 can hang on exitall (see exitall_stops_the_jobs_exit_what_names).
        let out = Command::new("timeout")
            .args(["-s", "KILL", "120", "fio"])
            .current_dir(dir)
            .args(["--output-format=json", &d])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "fio: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        entries(&json_of(&String::from_utf8_lossy(&out.stdout)))
    });
    (ours, theirs)
}

/// number_ios ends a size-based job like its size does, times its loops, whichever comes
/// first; a ramp's I/Os do not count; a time-based job ignores it. I/O counts as fio
/// 3.33's on the same jobs (1 MiB of 4 KiB blocks: 256 per pass).
#[test]
fn number_ios_ends_a_job_as_fios_does() {
    let fio = has_fio();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let cases: [(&[&str], u64, u64); 8] = [
        (&["--rw=read", "--number_ios=100"], 100, 0),
        (&["--rw=read", "--number_ios=100", "--loops=3"], 300, 0),
        // The second pass goes on from the file's start until 2 x 200.
        (&["--rw=read", "--number_ios=200", "--loops=2"], 400, 0),
        // The size comes first: two whole passes.
        (&["--rw=randread", "--number_ios=300", "--loops=2"], 512, 0),
        (&["--rw=read", "--number_ios=1000"], 256, 0),
        (
            &[
                "--rw=randwrite",
                "--number_ios=100",
                "--ioengine=io_uring",
                "--iodepth=8",
            ],
            0,
            100,
        ),
        // Two clones, each its own 100.
        (
            &[
                "--rw=read",
                "--number_ios=100",
                "--numjobs=2",
                "--group_reporting",
            ],
            200,
            0,
        ),
        // Counted from the end of the ramp (fio's reset_all_stats), paced so that the
        // ramp's reads are not the whole file.
        (
            &[
                "--rw=read",
                "--number_ios=100",
                "--ramp_time=1",
                "--rate_iops=200",
            ],
            100,
            0,
        ),
    ];
    for (extra, reads, writes) in cases {
        let mut args = vec!["--name=j", "--bs=4k", "--size=1m"];
        args.extend(extra);
        let (ours, theirs) = run_both(dir.path(), &args, 0, fio);
        assert_eq!(ours.len(), 1, "{args:?}");
        assert_eq!((ours[0].2, ours[0].3), (reads, writes), "iolab: {args:?}");
        if let Some(t) = theirs {
            assert_eq!((t[0].2, t[0].3), (reads, writes), "fio 3.33: {args:?}");
        }
    }
    // A time-based job runs its runtime whatever number_ios says, and iolab says so.
    let r = Ran::from(
        iolab()
            .args(["fio", "--no-store", "--output-format=json", "--name=t"])
            .arg(format!("--directory={}", path(dir.path())))
            .args(["--rw=read", "--bs=4k", "--size=1m", "--number_ios=10"])
            .args(["--time_based", "--runtime=1", "--rate_iops=100"])
            .output()
            .unwrap(),
    )
    .expect(0);
    assert!(
        r.stderr
            .contains("number_ios has no effect on a time-based job")
    );
    let e = entries(&json_of(&r.stdout));
    assert!(e[0].2 > 50, "{e:?}");
    // A malformed count is one line naming the option.
    let r = Ran::from(
        iolab()
            .args([
                "fio",
                "--no-store",
                "--name=x",
                "--size=1m",
                "--number_ios=ten",
            ])
            .arg(format!("--directory={}", path(dir.path())))
            .output()
            .unwrap(),
    )
    .expect(2);
    assert!(r.stderr.contains("number_ios"), "{}", r.stderr);
    assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
}

/// A job file with exitall where `short` ends after 200 paced reads, among jobs that
/// would run longer; `EXIT` is short's exit_what, `WAITER` a job that waits for short.
const EXITALL: &str = "[global]\nbs=4k\nsize=1m\nexitall=1\n\
    [long]\nrw=randread\ntime_based\nruntime=3\nrate_iops=2000\n\
    [short]\nNEW_GROUP\nrw=read\nthinktime=1000\nnumber_ios=200\nexit_what=EXIT\n\
    WAITER\
    [later]\nstonewall\nrw=read\ntime_based\nruntime=1\nrate_iops=1000\n";

const WAITER: &str = "[waiter]\nwait_for=short\nrw=read\ntime_based\nruntime=1\nrate_iops=1000\n";

/// exitall stops, when `short` ends, what fio 3.33 stops (checked with fio on the same
/// file): exit_what=group the jobs of its reporting group, a waiting one never starting;
/// stonewall the running ones of every group, the waiting one running after; all every
/// job, the later stonewall's too. The others run their whole runtime.
#[test]
fn exitall_stops_the_jobs_exit_what_names() {
    let fio = has_fio();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let job = dir.path().join("exitall.fio");
    // (exit_what, short in a group of its own, a waiter, compared with fio,
    // [long stopped, waiter runs, later runs]). fio 3.33 is not run where it stops a
    // job that waits for another: with short in long's group it hangs (SIGTERM does
    // not end it), and in a group of its own it then skips the later stonewall
    // (docs/fio.md).
    let cases = [
        ("group", false, false, true, [true, false, true]),
        ("group", true, false, true, [false, false, true]),
        ("stonewall", true, true, true, [true, true, true]),
        ("all", false, false, true, [true, false, false]),
        ("group", true, true, false, [false, false, true]),
    ];
    for (what, own_group, waiter, compare, [long_stops, waiter_runs, later_runs]) in cases {
        let text = EXITALL
            .replace("EXIT", what)
            .replace("NEW_GROUP", if own_group { "new_group" } else { "" })
            .replace("WAITER", if waiter { WAITER } else { "" });
        std::fs::write(&job, &text).unwrap();
        let (ours, theirs) = run_both(dir.path(), &[path(&job)], 0, fio && compare);
        for (tool, e) in [("iolab", Some(ours)), ("fio 3.33", theirs)] {
            let Some(e) = e else { continue };
            let case = format!("{tool}, exit_what={what}, new_group={own_group}: {e:?}");
            let find = |n: &str| e.iter().find(|x| x.0 == n);
            let (long, short) = (find("long").unwrap(), find("short").unwrap());
            let later = find("later").unwrap();
            assert_eq!(e.len(), 3 + usize::from(waiter), "{case}");
            assert_eq!(short.2, 200, "{case}");
            // long's runtime is 3 s unless short's end (after 0.2 s or so) stops it.
            assert_eq!(long.4 < 2800, long_stops, "{case}");
            if long_stops {
                assert!(long.4 < short.4 + 1000, "{case}");
            } else {
                assert!(long.4 >= 2999, "{case}");
            }
            // A job stopped before it starts reports nothing done, as in fio.
            if let Some(w) = find("waiter") {
                assert_eq!(w.2 > 0, waiter_runs, "{case}");
                assert_eq!(w.4 > 0, waiter_runs, "{case}");
            }
            assert_eq!(later.2 > 0, later_runs, "{case}");
            assert!(e.iter().all(|x| x.5 == 0), "{case}");
        }
    }
}

/// exitall_on_error: a job failing its rate_iops_min stops its group when it fails (and
/// only then), with fio's error 5; a job of another group runs its whole runtime; the
/// exit status is 1 in both tools.
#[test]
fn exitall_on_error_stops_the_group_of_a_failed_job() {
    let fio = has_fio();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let job = dir.path().join("on-error.fio");
    std::fs::write(
        &job,
        "[global]\nbs=4k\nsize=1m\n\
         [long]\nrw=randread\ntime_based\nruntime=8\nrate_iops=1000\n\
         [bad]\nrw=read\ntime_based\nruntime=8\nthinktime=1000\nrate_iops_min=100000\nexitall_on_error=1\n\
         [other]\nnew_group\nrw=read\ntime_based\nruntime=5\nrate_iops=1000\n",
    )
    .unwrap();
    let (ours, theirs) = run_both(dir.path(), &[path(&job)], 1, fio);
    for (tool, e) in [("iolab", Some(ours)), ("fio 3.33", theirs)] {
        let Some(e) = e else { continue };
        let case = format!("{tool}: {e:?}");
        let [long, bad, other] = [&e[0], &e[1], &e[2]];
        assert_eq!(bad.5, 5, "{case}");
        // bad fails at its first check (about 3 s in); long stops with it.
        assert!(bad.4 < 7000, "{case}");
        assert!(long.4 < bad.4 + 1000, "{case}");
        assert_eq!((long.5, other.5), (0, 0), "{case}");
        assert!(other.4 >= 4999, "{case}");
    }
}
