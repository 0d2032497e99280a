//! `iolab io500` running the suite: a short run end to end, bad input refused before
//! any phase, and the result directory: its own for every run, made before the first
//! phase, never written over another, and a run stored even when its result is lost.

use std::process::Command;

use crate::common::{Ran, error_line, iolab, path, run};

/// What a short suite may write per rank: ior-easy's 2 s behind the page cache are
/// gigabytes on a fast disk, more than a small CI disk may have beside the build and the
/// other tests. The stonewall still ends the phases that reach it first.
pub const BOUNDED: [&str; 4] = ["--ior-easy-block", "128MiB", "--ior-hard-segments", "2000"];

#[test]
fn run_bad_input_is_one_line() {
    // The last level is created, as IO500 creates its datadir; the parent must exist.
    let r = run(&["io500", "run", "--dir", "/nonexistent/io500"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        error_line(&r),
        "iolab: error: --dir /nonexistent does not exist; create it first or choose another directory"
    );
    let tmp = tempfile::tempdir().unwrap();
    let r = run(&[
        "io500",
        "run",
        "--dir",
        path(tmp.path()),
        "--stonewall",
        "soon",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        error_line(&r).contains("invalid duration 'soon'"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    let r = run(&["io500"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        error_line(&r),
        "iolab: error: io500: give --dir DIR to run the suite (or plan, score: see iolab io500 --help)"
    );
}

#[test]
fn a_short_suite_runs_every_phase_scores_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    // Not created beforehand: iolab io500 makes it, as IO500 makes its datadir.
    let work = dir.path().join("work");
    let results = dir.path().join("results");
    let db = dir.path().join("r.db");
    let r = crate::common::Ran::from(
        crate::common::iolab()
            // The short form: `iolab io500 --dir D` is `iolab io500 run --dir D`.
            .args([
                "io500",
                "--dir",
                crate::common::path(&work),
                "--stonewall",
                "2s",
                "--files-per-rank",
                "3000",
            ])
            .args(BOUNDED)
            .args([
                "--result-dir",
                crate::common::path(&results),
                "--label",
                "mini-io500",
            ])
            .env("IOLAB_DB", &db)
            .output()
            .unwrap(),
    )
    .expect(0);
    let lines: Vec<&str> = r.stdout.lines().collect();
    let results_lines: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("[RESULT]") || l.starts_with("[      ]"))
        .collect();
    assert_eq!(results_lines.len(), 13, "{}", r.stdout);
    for (line, name) in results_lines.iter().zip([
        "ior-easy-write",
        "mdtest-easy-write",
        "ior-hard-write",
        "mdtest-hard-write",
        "find",
        "ior-easy-read",
        "mdtest-easy-stat",
        "ior-hard-read",
        "mdtest-hard-stat",
        "mdtest-easy-delete",
        "mdtest-hard-read",
        "mdtest-hard-delete",
        "ior-rnd4K-easy-read",
    ]) {
        assert!(line.contains(&format!(" {name} ")), "{line} is {name}");
    }
    assert!(r.stdout.contains("[SCORE ] Bandwidth "), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("invalid for submission: the stonewall was 2 s"),
        "{}",
        r.stdout
    );
    // The result directory scores the same when read back.
    let check = crate::common::run(&["io500", "score", crate::common::path(&results)]);
    assert!(
        check.stdout.contains("[SCORE ]"),
        "{}\n{}",
        check.stdout,
        check.stderr
    );
    for f in ["result.txt", "config.json", "phases.json", "hash.txt"] {
        assert!(results.join(f).exists(), "{f}");
    }
    // The lines printed as each phase ended are result.txt's, [INVALID] marks included:
    // with a 2 s stonewall the write phases are too short for a submission.
    let written = std::fs::read_to_string(results.join("result.txt")).unwrap();
    let written: Vec<&str> = written
        .lines()
        .filter(|l| l.starts_with("[RESULT]") || l.starts_with("[      ]"))
        .collect();
    let printed: Vec<&str> = results_lines.iter().map(|l| **l).collect();
    assert_eq!(printed, written);
    assert!(printed[0].ends_with(" [INVALID]"), "{}", printed[0]);
    // Stored as an io500 run; iolab's work directory is gone.
    let show = crate::common::Ran::from(
        crate::common::iolab()
            .args(["results", "show", "mini-io500", "--format", "json"])
            .env("IOLAB_DB", &db)
            .output()
            .unwrap(),
    )
    .expect(0);
    let j: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(j["kind"], "io500");
    assert_eq!(j["phases"].as_array().unwrap().len(), 13);
    // The score is stored with the run, as printed.
    let total = j["spec"]["score"]["total"].as_f64().unwrap();
    assert!(
        r.stdout.contains(&format!("TOTAL {total:.6}")),
        "{total}\n{}",
        r.stdout
    );
    assert_eq!(j["spec"]["score"]["valid"], false);
    assert_eq!(
        std::fs::read_dir(&work).unwrap().count(),
        0,
        "the suite cleaned up"
    );
}

/// The default result directory's name for a time, as `iolab io500` names it.
fn default_result_name(ms: i64) -> String {
    let t = iolab_core::civil::UtcTime::from_ms(ms);
    format!(
        "{:04}.{:02}.{:02}-{:02}.{:02}.{:02}",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

#[test]
fn a_run_whose_default_result_dir_is_taken_writes_a_numbered_one() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    // Another run holds the default name of every second around this run's start.
    let results = tmp.path().join("io500-results");
    let now = iolab_core::civil::now_ms();
    let taken: Vec<String> = (-5..120)
        .map(|s| default_result_name(now + s * 1000))
        .collect();
    for name in &taken {
        std::fs::create_dir_all(results.join(name)).unwrap();
        std::fs::write(results.join(name).join("result.txt"), "another run\n").unwrap();
    }
    let r = Ran::from(
        iolab()
            .current_dir(tmp.path())
            .args(["io500", "--dir", path(&work), "--stonewall", "1s"])
            .args(["--files-per-rank", "200", "--no-store"])
            .args(BOUNDED)
            .output()
            .unwrap(),
    )
    .expect(0);
    let new: Vec<String> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !taken.contains(n))
        .collect();
    assert_eq!(new.len(), 1, "{new:?}\n{}", r.stdout);
    let mine = &new[0];
    assert!(
        taken.contains(&mine.strip_suffix("-2").unwrap_or("").to_string()),
        "{mine}"
    );
    assert!(
        r.stdout
            .contains(&format!("result in io500-results/{mine}\n")),
        "{}",
        r.stdout
    );
    assert!(results.join(mine).join("hash.txt").exists());
    for name in &taken {
        let dir = results.join(name);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "{name}");
        assert_eq!(
            std::fs::read_to_string(dir.join("result.txt")).unwrap(),
            "another run\n"
        );
    }
}

#[test]
fn a_result_dir_holding_files_or_unwritable_is_refused_before_any_phase() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let results = tmp.path().join("results");
    std::fs::create_dir(&results).unwrap();
    std::fs::write(results.join("result.txt"), "an earlier run\n").unwrap();
    let held = format!(
        "iolab: error: --result-dir {} already holds files; give a new or empty directory (iolab never writes a result over another)",
        results.display()
    );
    for (dir, expect) in [
        (path(&results), held.as_str()),
        (
            "/proc/nope",
            "iolab: error: --result-dir /proc/nope: cannot create it: ",
        ),
    ] {
        let r = run(&[
            "io500",
            "--dir",
            path(&work),
            "--stonewall",
            "1s",
            "--files-per-rank",
            "200",
            "--result-dir",
            dir,
            "--no-store",
        ]);
        assert_eq!(r.code, 2, "{}", r.stdout);
        let line = error_line(&r);
        assert!(line.starts_with(expect), "{line}");
        assert!(r.stdout.is_empty(), "no phase ran:\n{}", r.stdout);
        assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
    }
    // The earlier result is untouched.
    assert_eq!(std::fs::read_dir(&results).unwrap().count(), 1);
    assert_eq!(
        std::fs::read_to_string(results.join("result.txt")).unwrap(),
        "an earlier run\n"
    );
}

#[test]
fn a_suite_whose_result_cannot_be_written_is_still_stored_complete() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let results = tmp.path().join("results");
    let db = tmp.path().join("r.db");
    let child = iolab()
        .args(["io500", "--dir", path(&work), "--stonewall", "1s"])
        .args(["--files-per-rank", "200", "--label", "lost-result"])
        .args(BOUNDED)
        .args(["--result-dir", path(&results)])
        .env("IOLAB_DB", &db)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The result directory is made before the first phase; take it away while the
    // suite runs (four write phases of at least 1 s each).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !results.is_dir() {
        assert!(std::time::Instant::now() < deadline, "no result directory");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::fs::remove_dir(&results).unwrap();
    let r = Ran::from(child.wait_with_output().unwrap());
    assert_eq!(r.code, 2, "{}", r.stdout);
    let line = error_line(&r);
    assert!(
        line.starts_with(&format!(
            "iolab: error: writing the result to {}: ",
            results.display()
        )),
        "{line}"
    );
    assert!(r.stdout.contains("[SCORE ]"), "{}", r.stdout);
    let show = Ran::from(
        iolab()
            .args(["results", "show", "lost-result", "--format", "json"])
            .env("IOLAB_DB", &db)
            .output()
            .unwrap(),
    )
    .expect(0);
    let j: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(j["status"], "complete");
    assert_eq!(j["phases"].as_array().unwrap().len(), 13);
}

/// IO500's cache policy, seen in the system calls: by default nothing is dropped (no
/// drop_caches, no per-file fadvise) and the read phases say they are probably served
/// from memory; with --drop-caches the whole page cache is emptied before each of the
/// 13 phases, after a sync.
#[test]
fn the_page_cache_is_left_alone_unless_drop_caches_empties_all_of_it() {
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("skipped: no strace");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let trace = dir.path().join("trace");
    let suite = |extra: &[&str]| {
        let mut c = Command::new("strace");
        c.args(["-f", "-qq", "-e", "trace=openat,fadvise64,sync", "-o"])
            .arg(&trace)
            .arg(env!("CARGO_BIN_EXE_iolab"))
            .args(["io500", "--dir", crate::common::path(&work)])
            .args(["--stonewall", "1s", "--files-per-rank", "300", "--no-store"])
            .args(["--ior-easy-block", "4MiB", "--ior-hard-segments", "40"])
            .arg("--result-dir")
            .arg(dir.path().join(format!("res{}", extra.len())))
            .args(extra);
        let r = crate::common::Ran::from(c.output().unwrap());
        assert!(r.code == 0 || r.code == 1, "{}\n{}", r.stdout, r.stderr);
        (r, std::fs::read_to_string(&trace).unwrap())
    };
    let count = |t: &str, what: &str| t.lines().filter(|l| l.contains(what)).count();

    let (r, t) = suite(&[]);
    assert_eq!(count(&t, "/proc/sys/vm/drop_caches"), 0);
    assert_eq!(count(&t, "POSIX_FADV_DONTNEED"), 0, "no per-file drop");
    assert!(
        r.stdout.contains(
            "note: IOR read phases: page cache kept (IO500's default) on a single node: reads are probably served from memory"
        ),
        "{}",
        r.stdout
    );

    let (r, t) = suite(&["--drop-caches"]);
    assert_eq!(count(&t, "/proc/sys/vm/drop_caches"), 13);
    assert!(count(&t, "sync()") >= 13);
    assert_eq!(count(&t, "POSIX_FADV_DONTNEED"), 0);
    assert!(!r.stdout.contains("note: IOR read phases"), "{}", r.stdout);
}

/// `--dry-run` runs nothing and prints, per phase, IO500's command line for the same
/// settings, with the config.ini that gives them.
#[test]
fn dry_run_prints_io500s_command_lines_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    let r = run(&[
        "io500",
        "--dir",
        d,
        "--dry-run",
        "--timestamp",
        "2026.11.25-06.19.26",
        "--stonewall",
        "3s",
        "--ior-easy-transfer",
        "1MiB",
        "--ior-easy-block",
        "4GiB",
        "--files-per-rank",
        "5000",
        "--drop-caches",
    ])
    .expect(0);
    let exe: Vec<&str> = r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("exe             = "))
        .collect();
    assert_eq!(exe.len(), 13, "{}", r.stdout);
    let data = format!("{d}/2026.11.25-06.19.26");
    assert!(
        exe[0].starts_with("./ior --dataPacketType=timestamp -g -G ")
            && exe[0].contains(&format!(" -o {data}/ior-easy/ior_file_easy -C -Q 1 "))
            && exe[0].contains(" -t 1m -b 4g -F -w -D 3 -O stoneWallingWearOut=1 -a POSIX "),
        "{}",
        exe[0]
    );
    assert!(exe[1].starts_with("./mdtest --dataPacketType=timestamp -n 5000 -u -L -F -P -G "));
    assert!(exe[4].starts_with(&format!(
        "./pfind {data} -newer ./results/2026.11.25-06.19.26/timestampfile"
    )));
    for line in [
        "#   drop-caches = TRUE",
        "#   stonewall-time = 3",
        "#   blockSize = 4g",
    ] {
        assert!(r.stdout.lines().any(|l| l == line), "{line}\n{}", r.stdout);
    }
    // Nothing ran: no work directory, no result directory.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
