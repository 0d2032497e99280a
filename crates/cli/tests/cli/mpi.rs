//! End to end under `mpirun --oversubscribe -np 4` (MPI build only): one consolidated
//! result with per-rank rows, per-rank paths, and failures that stop every rank instead
//! of hanging: a rank that cannot set up, ranks that disagree, a rank that is killed.

use std::fs;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Ran, path};

pub(crate) fn mpirun_available() -> bool {
    let ok = Command::new("mpirun")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED: mpirun is not on PATH (install openmpi-bin; scripts/test.sh does)");
    }
    ok
}

pub(crate) fn mpirun(np: u32) -> Command {
    let mut c = Command::new("mpirun");
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &np.to_string(),
    ]);
    c.arg(env!("CARGO_BIN_EXE_iolab"));
    c.env("IOLAB_DB", crate::common::test_db());
    c.env_remove("RUST_BACKTRACE");
    c
}

/// Runs with a time limit: a hang fails the test instead of the whole suite.
/// The job failed with exit code 2 and its error was said once (by rank 0): that line.
pub(crate) fn the_one_error(r: &Ran) -> String {
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    let lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("iolab:"))
        .collect();
    assert_eq!(lines.len(), 1, "said once, by rank 0:\n{}", r.stderr);
    lines[0].to_string()
}

pub(crate) fn run_limited(mut c: Command, limit: Duration) -> Ran {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun starts");
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return Ran::from(child.wait_with_output().unwrap());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "mpirun hung for {limit:?}:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn four_ranks_give_one_consolidated_result() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let mut c = mpirun(4);
    c.args([
        "run",
        "--dir",
        path(dir.path()),
        "--rw",
        "write",
        "--size",
        "1MiB",
        "--threads",
        "2",
        "--block-size",
        "64KiB",
        "--json",
        path(&out),
    ]);
    let r = run_limited(c, Duration::from_secs(120)).expect(0);
    assert_eq!(
        r.stdout.matches("write-64KiB").count(),
        1,
        "only rank 0 prints:\n{}",
        r.stdout
    );
    assert!(r.stdout.contains("4 ranks"), "{}", r.stdout);
    let j: serde_json::Value = serde_json::from_str(&fs::read_to_string(&out).unwrap()).unwrap();
    let phase = &j["phases"][0];
    assert_eq!(phase["ranks"], 4);
    assert_eq!(phase["workers"], 8);
    assert_eq!(phase["ops"][0]["bytes"], 8 << 20);
    let ranks = phase["per_rank"].as_array().unwrap();
    assert_eq!(ranks.len(), 4);
    for (i, r) in ranks.iter().enumerate() {
        assert_eq!(r["rank"], i);
        assert!(!r["host"].as_str().unwrap().is_empty());
        assert_eq!(r["ops"]["write"]["bytes"], 2 << 20);
    }
    assert_eq!(j["provenance"]["ranks"], 4);
    assert!(
        !dir.path().join("iolab-work").exists(),
        "cleaned up by all ranks"
    );
}

#[test]
fn per_rank_directories_and_a_rank_that_cannot_set_up() {
    if !mpirun_available() {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    for r in [0, 1, 3] {
        fs::create_dir(base.path().join(r.to_string())).unwrap();
    }
    // Rank 2's directory is somewhere nobody may create files.
    std::os::unix::fs::symlink("/sys", base.path().join("2")).unwrap();
    let dir = format!("{}/{{rank}}", path(base.path()));
    let mut c = mpirun(4);
    c.args(["run", "--dir", &dir, "--rw", "write", "--size", "1MiB"]);
    let r = run_limited(c, Duration::from_secs(120));
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("iolab: error: rank 2 on "),
        "rank 0 names the failing rank:\n{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("/2/iolab-work: Operation not permitted"),
        "{}",
        r.stderr
    );
    for rank in [0, 1, 3] {
        assert!(
            !base
                .path()
                .join(rank.to_string())
                .join("iolab-work")
                .exists(),
            "rank {rank} left nothing behind"
        );
    }
    // With every directory usable, per-rank paths work.
    fs::remove_file(base.path().join("2")).unwrap();
    fs::create_dir(base.path().join("2")).unwrap();
    let mut c = mpirun(4);
    c.args([
        "run", "--dir", &dir, "--rw", "write", "--size", "1MiB", "--keep",
    ]);
    run_limited(c, Duration::from_secs(120)).expect(0);
    for rank in 0..4 {
        let f = base
            .path()
            .join(rank.to_string())
            .join(format!("iolab-work/data.r{rank}.t0"));
        assert_eq!(fs::metadata(&f).unwrap().len(), 1 << 20, "{}", f.display());
    }
}

#[test]
fn an_io_error_on_one_rank_is_said_once_with_its_rank_and_host() {
    if !mpirun_available() || !crate::common::can_mount() {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    for r in [0, 1] {
        fs::create_dir(base.path().join(r.to_string())).unwrap();
    }
    // Rank 1 writes to a 2 MiB file system: it runs out of space mid-phase.
    let mut c = Command::new("unshare");
    c.args(["-m", "sh", "-c"]);
    c.arg(format!(
        "mount -t tmpfs -o size=2m tmpfs '{}/1' && exec mpirun --allow-run-as-root --oversubscribe -np 2 '{}' run --dir '{}/{{rank}}' --rw write --size 8MiB --no-store",
        path(base.path()),
        env!("CARGO_BIN_EXE_iolab"),
        path(base.path())
    ));
    c.env_remove("RUST_BACKTRACE");
    let r = run_limited(c, Duration::from_secs(120));
    let line = the_one_error(&r);
    assert!(line.starts_with("iolab: error: rank 1 on "), "{line}");
    assert!(line.contains("No space left on device"), "{line}");
}

#[test]
fn a_directory_the_ranks_do_not_share_is_named_once() {
    if !mpirun_available() {
        return;
    }
    // {rank} gives each rank a directory of its own, as node-local storage would.
    let base = tempfile::tempdir().unwrap();
    for r in [0, 1] {
        fs::create_dir(base.path().join(r.to_string())).unwrap();
    }
    let dir = format!("{}/{{rank}}", path(base.path()));
    for (extra, option, advice) in [
        (
            &["--rw", "read", "--read-shift", "1"][..],
            "--read-shift",
            "--read-shift 0",
        ),
        (
            &["--rw", "write", "--layout", "shared"][..],
            "--dir",
            "a shared file needs",
        ),
    ] {
        let mut c = mpirun(2);
        c.args(["run", "--dir", &dir, "--size", "1MiB", "--no-store"]);
        c.args(extra);
        let r = run_limited(c, Duration::from_secs(120));
        let line = the_one_error(&r);
        assert!(line.contains(option), "{line}");
        assert!(line.contains("do not share this directory"), "{}", line);
        assert!(line.contains(advice), "{}", line);
        for r in [0, 1] {
            let left = base.path().join(r.to_string()).join("iolab-work");
            assert!(!left.exists(), "{} left behind", left.display());
        }
    }
}

#[test]
fn ranks_with_different_options_are_refused() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_iolab");
    let mut c = Command::new("mpirun");
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        "2",
        bin,
        "run",
        "--dir",
        path(dir.path()),
        "--size",
        "1MiB",
        "--threads",
        "1",
    ]);
    c.args([
        ":",
        "-np",
        "2",
        bin,
        "run",
        "--dir",
        path(dir.path()),
        "--size",
        "1MiB",
        "--threads",
        "2",
    ]);
    let r = run_limited(c, Duration::from_secs(120));
    assert_eq!(r.code, 2);
    let lines: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("iolab: error"))
        .collect();
    assert_eq!(lines.len(), 1, "said once, by rank 0:\n{}", r.stderr);
    assert!(
        lines[0].contains("ranks disagree on the workload: rank 0 has threads = 1, rank 2 on "),
        "{}",
        lines[0]
    );
}

#[test]
fn a_killed_rank_ends_the_job_instead_of_hanging() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut c = mpirun(4);
    c.args([
        "run",
        "--dir",
        path(dir.path()),
        "--rw",
        "randread",
        "--size",
        "1MiB",
        "--runtime",
        "120s",
    ]);
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the phase runs on every rank (all four files laid out), then kill one.
    let files = |n: usize| {
        (0..4)
            .filter(|r| dir.path().join(format!("iolab-work/data.r{r}.t0")).exists())
            .count()
            == n
    };
    let start = Instant::now();
    while !files(4) && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    let pids = Command::new("pgrep")
        .args(["-f", path(dir.path())])
        .output()
        .unwrap();
    let victim = String::from_utf8_lossy(&pids.stdout)
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .rfind(|p| *p != child.id())
        .expect("an iolab rank is running");
    Command::new("kill")
        .args(["-9", &victim.to_string()])
        .status()
        .unwrap();
    let killed_at = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            killed_at.elapsed() < Duration::from_secs(60),
            "the job hung after rank {victim} was killed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("signal 9") || err.contains("Killed") || err.contains("exited on signal"),
        "{err}"
    );
}

#[test]
fn io500_runs_under_four_ranks_with_a_short_stonewall() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    fs::create_dir(&work).unwrap();
    let results = dir.path().join("results");
    let mut c = mpirun(4);
    c.args([
        "io500",
        "run",
        "--dir",
        path(&work),
        "--stonewall",
        "2s",
        "--files-per-rank",
        "2000",
        "--result-dir",
        path(&results),
    ]);
    c.args(crate::io500_run::BOUNDED);
    let r = run_limited(c, Duration::from_secs(300)).expect(0);
    assert_eq!(
        r.stdout.matches("[SCORE ]").count(),
        1,
        "rank 0 prints once:\n{}",
        r.stdout
    );
    let text = fs::read_to_string(results.join("result.txt")).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("[RESULT]")).count(),
        12,
        "{text}"
    );
    let phases: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(results.join("phases.json")).unwrap()).unwrap();
    let find = phases["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "find")
        .unwrap();
    assert!(
        find["found"].as_u64().unwrap() > 0,
        "find matched the mdtest-hard files: {find}"
    );
    assert_eq!(
        fs::read_dir(&work).unwrap().count(),
        0,
        "all ranks cleaned up"
    );
}

/// pfind's walk across four ranks trading work by MPI messages from the walking thread:
/// every entry counted once (the ranks' counts add up to the tree), the matches all
/// found, and ranks that stole little or nothing end as well as the rest (exit 0 on
/// every rank: a rank judges nothing from its own share alone).
#[test]
fn pfind_walk_shares_a_tree_between_four_ranks() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let mut matching = 0;
    for d in 0..12 {
        let sub = tree.join(format!("d{d}"));
        fs::create_dir_all(&sub).unwrap();
        for i in 0..250 {
            let name = format!("file.{d}.{i}");
            matching += u64::from(name.contains("01"));
            fs::write(sub.join(name), b"").unwrap();
        }
    }
    let json = dir.path().join("find.json");
    let mut c = mpirun(4);
    c.args([
        "find",
        "--walk",
        "pfind",
        "--name",
        "*01*",
        "--no-store",
        "--json",
    ])
    .arg(&json)
    .arg("--dir")
    .arg(&tree);
    let r = run_limited(c, Duration::from_secs(120)).expect(0);
    let doc: serde_json::Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let phase = &doc["phases"][0];
    assert_eq!(
        phase["extra"]["matched"].as_f64(),
        Some(matching as f64),
        "{}",
        r.stdout
    );
    let scans: u64 = phase["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["ops"]["scan"]["ops"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(scans, 12 * 250, "{phase}");
    assert_eq!(phase["per_rank"].as_array().unwrap().len(), 4);
}

/// IOR's -Z and -Z -Z under four tasks: each task reads the task IOR's rand() draws for
/// it and -R checks every word against that task's timestamp data (a task reading its
/// own file where another's data was expected would fail the check).
#[test]
fn ior_random_task_reordering_reads_and_checks_other_tasks_data() {
    if !mpirun_available() {
        return;
    }
    for z in [&["-Z"][..], &["-Z", "-Z", "-X", "7"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let mut c = mpirun(4);
        c.args([
            "ior",
            "--no-store",
            "-a",
            "POSIX",
            "-w",
            "-r",
            "-R",
            "-F",
            "-G",
            "99",
        ])
        .args(["-b", "1m", "-t", "256k", "-o"])
        .arg(dir.path().join("f"))
        .args(z);
        let r = run_limited(c, Duration::from_secs(120)).expect(0);
        let read = r
            .stdout
            .lines()
            .skip_while(|l| !l.starts_with("Summary of all tests:"))
            .find(|l| l.starts_with("read"))
            .unwrap_or_else(|| panic!("{}", r.stdout));
        assert!(
            read.split_whitespace()
                .nth(1)
                .unwrap()
                .parse::<f64>()
                .unwrap()
                > 0.0
        );
        assert!(!r.stderr.contains("did not hold"), "{z:?}: {}", r.stderr);
    }
}
