//! suites::fio's own tests: fio command lines planned by compat and run by [`run_fio`]
//! (or its steps) on the null and psync backends in a temporary directory, with hooks
//! that record what the run said and gave to cleanup ([`harness`]); the files a run
//! makes are [`made`]'s.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use iolab_comm::SingleProcess;
use iolab_compat::fio::{FioJob, OutputFormat, Sources, parse_args, plan_jobs};
use iolab_engine::{JobsExit, finish_target};

use super::*;

mod made;

/// No environment, host values or includes: the command lines here need none.
struct NoSources;

impl Sources for NoSources {
    fn env(&self, _: &str) -> Option<String> {
        None
    }
    fn host_value(&self, _: &str) -> Option<u64> {
        None
    }
    fn include(&mut self, from: &str, path: &str) -> Result<String, FioError> {
        Err(FioError::at(from, format!("include {path}: not here")))
    }
}

/// fio's command line planned as `iolab fio` plans it.
fn plans(args: &[&str]) -> Vec<FioPlan> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let inv = parse_args(&args, &NoSources).expect("fio's arguments");
    let jobs: Vec<FioJob> = inv
        .jobs
        .iter()
        .map(FioJob::from_section)
        .collect::<Result<_, _>>()
        .expect("jobs");
    plan_jobs(&jobs, 1).expect("plans")
}

/// What a run did besides its entries: the lines it said, the files each cleanup was
/// given, and the entries' names at each phase's end.
#[derive(Default)]
struct Seen {
    said: Mutex<Vec<String>>,
    cleaned: Mutex<Vec<Vec<PathBuf>>>,
    phases: Vec<Vec<String>>,
}

impl Seen {
    fn said(&self) -> Vec<String> {
        self.said.lock().unwrap().clone()
    }

    fn cleaned(&self) -> Vec<Vec<PathBuf>> {
        self.cleaned.lock().unwrap().clone()
    }
}

/// Calls `f` with the plans' jobs on one rank and hooks that record into `seen`, run a
/// phase with no settle time and clean up with the engine's `finish_target`.
fn harness<T>(
    plans: &[FioPlan],
    keep: bool,
    seen: &Seen,
    f: impl FnOnce(&FioJobs<'_>, &FioHooks<'_>) -> T,
) -> T {
    let comm = SingleProcess::new();
    let interrupt = AtomicBool::new(false);
    let reporter = Reporter::new(plans, &[OutputFormat::Json], 1);
    let run_in = |_: &[&Path], run: PhaseRun<'_>| {
        run(&Env::new(&comm, &interrupt).with_settle(Duration::ZERO))
    };
    let cleanup = |t: PreparedTarget, files: &[PathBuf]| -> Result<(), HookError> {
        seen.cleaned.lock().unwrap().push(files.to_vec());
        Ok(finish_target(&comm, t, files, keep)?)
    };
    let say = |line: &str| seen.said.lock().unwrap().push(line.to_string());
    let hooks = FioHooks {
        run_in: &run_in,
        status: &|_| {},
        cleanup: &cleanup,
        say: &say,
    };
    let jobs = FioJobs {
        comm: &comm,
        interrupt: &interrupt,
        plans,
        reporter: &reporter,
        status_interval: None,
        keep,
    };
    f(&jobs, &hooks)
}

/// [`run_fio`] in the [`harness`]; each phase's entry names kept in `seen.phases`.
fn run(plans: &[FioPlan], keep: bool, seen: &mut Seen) -> Result<FioRun, FioRunError> {
    let mut phases = Vec::new();
    let done = harness(plans, keep, seen, |jobs, hooks| {
        let mut ended = |entries: &[Entry], _: &[PhaseResult]| {
            phases.push(entries.iter().map(|e| e.phase.name.clone()).collect());
        };
        run_fio(jobs, hooks, &mut ended)
    });
    seen.phases = phases;
    done
}

fn dir_arg(dir: &Path) -> String {
    format!("--directory={}", dir.display())
}

/// [`plans`] of jobs in `dir` (fio's --directory first).
fn plans_in(dir: &Path, args: &[&str]) -> Vec<FioPlan> {
    let d = dir_arg(dir);
    plans(&[&[d.as_str()], args].concat())
}

/// Each entry's name, fio reporting group, operations and bytes.
fn figures(done: &FioRun) -> Vec<(&str, &str, u64, u64)> {
    done.entries
        .iter()
        .map(|e| {
            let ops = e.phase.ops.iter().map(|o| o.ops).sum();
            let bytes = e.phase.ops.iter().map(|o| o.bytes.get()).sum();
            let group = e.phase.params["fio_group"].as_str();
            (e.phase.name.as_str(), group, ops, bytes)
        })
        .collect()
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn each_stonewall_starts_a_phase_and_each_clone_or_group_has_an_entry() {
    let dir = tempfile::tempdir().unwrap();
    #[rustfmt::skip]
    let p = plans_in(dir.path(), &[
        "--ioengine=null", "--size=64k", "--bs=4k",
        "--name=a", "--rw=write",
        "--name=b", "--stonewall", "--rw=read", "--numjobs=2",
        "--name=c", "--stonewall", "--rw=read", "--numjobs=3", "--group_reporting",
    ]);
    let mut seen = Seen::default();
    let done = run(&p, false, &mut seen).unwrap();
    assert_eq!(seen.phases, [vec!["a"], vec!["b.0", "b.1"], vec!["c"]]);
    // 64 KiB in 4 KiB blocks per clone; c's three clones in one entry.
    assert_eq!(
        figures(&done),
        [
            ("a", "0", 16, 65536),
            ("b.0", "1", 16, 65536),
            ("b.1", "1", 16, 65536),
            ("c", "2", 48, 196608),
        ]
    );
    // The null backend writes no file: each phase's target is cleaned up with none.
    assert_eq!(
        seen.cleaned(),
        [vec![], vec![], vec![]] as [Vec<PathBuf>; 3]
    );
    assert!(seen.said().is_empty());
    assert!(!done.failed() && !done.interrupted());
}

#[test]
fn what_the_jobs_wrote_is_removed_and_nothing_else_unless_kept() {
    for keep in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.txt"), "not iolab's").unwrap();
        #[rustfmt::skip]
        let p = plans_in(dir.path(), &[
            "--size=64k", "--bs=4k",
            "--name=a", "--rw=write",
            "--name=b", "--stonewall", "--rw=read", "--numjobs=2",
        ]);
        let mut seen = Seen::default();
        let done = run(&p, keep, &mut seen).unwrap();
        let work = dir.path().join("iolab-work");
        assert_eq!(
            seen.cleaned(),
            [
                vec![work.join("a.0.0")],
                vec![work.join("b.0.0"), work.join("b.1.0")]
            ]
        );
        assert_eq!(figures(&done)[0], ("a", "0", 16, 65536));
        if keep {
            let data: Vec<String> = names_in(&work)
                .into_iter()
                .filter(|n| !n.starts_with('.'))
                .collect();
            assert_eq!(data, ["a.0.0", "b.0.0", "b.1.0"]);
            assert_eq!(std::fs::metadata(work.join("b.1.0")).unwrap().len(), 65536);
        } else {
            assert_eq!(names_in(dir.path()), ["mine.txt"]);
        }
    }
}

#[test]
fn a_verify_read_back_goes_with_an_entry_that_covers_every_clone() {
    let dir = tempfile::tempdir().unwrap();
    #[rustfmt::skip]
    let p = plans_in(dir.path(), &[
        "--size=64k", "--bs=4k", "--rw=write", "--verify=crc32c",
        "--name=a",
        "--name=b", "--stonewall", "--numjobs=2",
        "--name=c", "--stonewall", "--numjobs=2", "--group_reporting",
    ]);
    let mut seen = Seen::default();
    let done = run(&p, false, &mut seen).unwrap();
    let verified: Vec<(&str, u64)> = done
        .verified
        .iter()
        .map(|v| (v.name.as_str(), v.ops.iter().map(|o| o.ops).sum()))
        .collect();
    assert_eq!(
        verified,
        [("a verify", 16), ("b verify", 32), ("c verify", 32)]
    );
    let attached: Vec<Option<&str>> = done
        .entries
        .iter()
        .map(|e| e.verify.as_ref().map(|v| v.name.as_str()))
        .collect();
    // b's entries are one clone each: fio counts the read-back in the whole job only.
    assert_eq!(attached, [Some("a verify"), None, None, Some("c verify")]);
    // Each job's note is said once, before it runs.
    assert_eq!(seen.said().len(), 3);
    assert!(seen.said()[0].starts_with("[a] verify=crc32c is checked with iolab's"));
}

#[test]
fn exit_what_all_stops_every_later_phase_and_group_does_not() {
    let dir = tempfile::tempdir().unwrap();
    for (what, b_ops) in [("all", 0), ("group", 16)] {
        let exit = format!("--exit_what={what}");
        #[rustfmt::skip]
        let p = plans_in(dir.path(), &[
            "--ioengine=null", "--size=64k", "--bs=4k", "--rw=read",
            "--name=a", "--exitall", &exit,
            "--name=b", "--stonewall",
        ]);
        let done = run(&p, false, &mut Seen::default()).unwrap();
        // fio reports a job that never started with nothing done.
        assert_eq!(
            figures(&done),
            [("a", "0", 16, 65536), ("b", "1", b_ops, b_ops * 4096)],
            "exit_what={what}"
        );
    }
}

#[test]
fn exitall_stops_the_group_the_running_jobs_or_all() {
    #[rustfmt::skip]
    let p = plans(&[
        "--directory=/nonexistent", "--ioengine=null", "--size=64k", "--rw=read", "--exitall",
        "--name=a",
        "--name=b", "--new_group", "--exit_what=stonewall",
        "--name=c", "--exit_what=all",
    ]);
    let jobs = [0, 1, 2];
    let exit = |k| phase::exit_of(&p, &jobs, k).unwrap();
    let stops = |jobs: Vec<usize>, running_only| JobsExit {
        on_error_only: false,
        jobs,
        running_only,
    };
    // a's group is a alone; b and c are group 1.
    assert_eq!(exit(0), stops(vec![0], false));
    assert_eq!(exit(1), stops(vec![0, 1, 2], true));
    assert_eq!(exit(2), stops(vec![0, 1, 2], false));
    #[rustfmt::skip]
    let p = plans(&[
        "--directory=/nonexistent", "--ioengine=null", "--size=64k", "--rw=read",
        "--name=a", "--exitall_on_error",
        "--name=b",
    ]);
    let on_error = phase::exit_of(&p, &[0, 1], 0).unwrap();
    assert_eq!((on_error.on_error_only, on_error.jobs), (true, vec![0, 1]));
    assert_eq!(phase::exit_of(&p, &[0, 1], 1), None);
}

#[test]
fn clone_numbers_count_every_ranks_clones_in_job_order() {
    #[rustfmt::skip]
    let p = plans(&[
        "--directory=/nonexistent", "--ioengine=null", "--size=64k", "--rw=read",
        "--name=a", "--numjobs=2",
        "--name=b", "--numjobs=3",
        "--name=c",
    ]);
    assert_eq!(logs::first_numbers(&p, 1), [0, 2, 5]);
    assert_eq!(logs::first_numbers(&p, 2), [0, 4, 10]);
}

#[test]
fn jobs_on_one_target_and_backend_share_one_prepared_target() {
    let dir = tempfile::tempdir().unwrap();
    #[rustfmt::skip]
    let p = plans_in(dir.path(), &[
        "--size=64k", "--rw=write",
        "--name=a",
        "--name=b",
        "--name=c", "--ioengine=null",
    ]);
    let seen = Seen::default();
    harness(&p, false, &seen, |jobs, hooks| {
        let run = Run::new(jobs, hooks);
        let targets = phase::prepare_targets(&run, &[0, 1, 2]).unwrap();
        assert_eq!(targets.of_job, [0, 0, 1]);
        assert_eq!(targets.list.len(), 2);
        for (_, _, t) in targets.list {
            (hooks.cleanup)(t, &[]).unwrap();
        }
    });
    assert_eq!(names_in(dir.path()), [] as [String; 0]);
}

#[test]
fn a_run_failed_on_an_error_or_a_verify_mismatch_and_was_interrupted_by_a_phase() {
    let dir = tempfile::tempdir().unwrap();
    #[rustfmt::skip]
    let p = plans_in(dir.path(), &[
        "--size=16k", "--rw=write", "--verify=crc32c", "--name=a",
    ]);
    let done = run(&p, false, &mut Seen::default()).unwrap();
    assert!(!done.failed() && !done.interrupted());
    let mut errored = FioRun {
        entries: Vec::new(),
        verified: done.verified.clone(),
    };
    errored.verified[0].verify_failures = 1;
    assert!(errored.failed());
    let mut done = done;
    done.entries[0].phase.error_count = 1;
    assert!(done.failed());
    done.entries[0].phase.interrupted = true;
    assert!(done.interrupted());
}
