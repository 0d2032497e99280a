//! The results store from the command line: list, show, export, compare, report, and a
//! study killed mid-way leaving a readable incomplete run.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{Ran, error_line, iolab, path, run};

pub(crate) fn with_db(db: &Path, args: &[&str]) -> Ran {
    Ran::from(iolab().args(args).env("IOLAB_DB", db).output().unwrap())
}

/// A stored 16 MiB random read on the null backend with `threads` threads.
pub(crate) fn null_run(db: &Path, label: &str, threads: &str) {
    null_run_with(db, label, &["--rw", "randread", "--threads", threads]);
}

/// A stored 16 MiB run on the null backend with `args` (its workload) added.
pub(crate) fn null_run_with(db: &Path, label: &str, args: &[&str]) {
    let mut all = vec!["run", "--backend", "null", "--size", "16MiB"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--label", label, "-Q"]);
    with_db(db, &all).expect(0);
}

#[test]
fn stored_runs_are_listed_shown_exported_compared_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    null_run(&db, "v1", "1");
    null_run(&db, "v2", "2");
    let list = with_db(&db, &["results", "list"]).expect(0);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", list.stdout);
    assert!(
        lines[1].starts_with("r2     v2"),
        "newest first:\n{}",
        list.stdout
    );
    let only = with_db(&db, &["results", "list", "--label", "v1"]).expect(0);
    assert_eq!(only.stdout.lines().count(), 2);

    let show = with_db(&db, &["results", "show", "v2", "--format", "json"]).expect(0);
    let j: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(j["id"], "r2");
    assert_eq!(j["phases"][0]["ops"][0]["ops"], 8192);
    assert!(
        j["provenance"]["inventory"]["memory_bytes"]
            .as_u64()
            .unwrap()
            > 0,
        "the inventory is stored with the run"
    );

    let csv = dir.path().join("all.csv");
    with_db(
        &db,
        &[
            "results",
            "export",
            "--label",
            "v*",
            "--format",
            "csv",
            "-o",
            path(&csv),
        ],
    )
    .expect(0);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        text.lines().count(),
        3,
        "a header and one row per phase and op:\n{text}"
    );

    let cmp = with_db(&db, &["compare", "v1", "v2"]).expect(0);
    assert!(
        cmp.stdout.contains("randread-4KiB read IOPS"),
        "{}",
        cmp.stdout
    );
    assert!(cmp.stdout.contains("v2 against v1"), "{}", cmp.stdout);
    let md = with_db(&db, &["compare", "r1", "r2", "--format", "markdown"]).expect(0);
    assert!(md.stdout.contains("| Metric"), "{}", md.stdout);

    let html = dir.path().join("r.html");
    with_db(&db, &["report", "v2", "--vs", "v1", "--html", path(&html)]).expect(0);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("data-chart="), "charts in the page");
    // The headline table of each run opens the report, before the detail.
    let summary = page
        .find("<section id=\"summary\">")
        .expect("a summary section");
    assert!(summary < page.find("<section id=\"results\">").unwrap());
    assert!(page.contains("<table class=\"summary\">"));
    for external in [
        "src=\"http",
        "href=\"http",
        "<link",
        "@import",
        "<script src",
    ] {
        assert!(
            !page.contains(external),
            "self-contained, but has {external}"
        );
    }

    with_db(&db, &["results", "delete", "r1"]).expect(0);
    let r = with_db(&db, &["results", "show", "r1"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: no run with id r1; `iolab results list` shows the runs"
    );
    let r = with_db(&db, &["compare", "v9", "v2"]).expect(2);
    assert!(
        error_line(&r).contains("no run labelled 'v9'"),
        "{}",
        r.stderr
    );
}

#[test]
fn delete_by_label_only_when_one_run_carries_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    null_run(&db, "a", "1");
    null_run(&db, "a", "1");
    null_run(&db, "b", "1");
    let r = with_db(&db, &["results", "delete", "a"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: label 'a' names 2 runs (r1, r2); delete one by its id"
    );
    let list = with_db(&db, &["results", "list"]).expect(0);
    assert_eq!(
        list.stdout.lines().count(),
        4,
        "nothing deleted:\n{}",
        list.stdout
    );
    // A label one run carries names it; an id always does.
    let r = with_db(&db, &["results", "delete", "b"]).expect(0);
    assert_eq!(r.stdout, "deleted r3\n");
    with_db(&db, &["results", "delete", "r2"]).expect(0);
    let r = with_db(&db, &["results", "delete", "a"]).expect(0);
    assert_eq!(r.stdout, "deleted r1\n");
    with_db(&db, &["results", "show", "r1"]).expect(2);
}

#[test]
fn a_study_killed_mid_way_is_running_then_abandoned_and_readable() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let study = dir.path().join("long.toml");
    std::fs::write(
        &study,
        "name = \"long\"\n[[sweep]]\nname = \"s\"\nover = { threads = [1, 2, 3, 4, 5, 6] }\nphase = [{ name = \"p\", backend = \"null\", rw = \"randread\", size = \"1GiB\", runtime = \"1s\" }]\n",
    )
    .unwrap();
    let work = dir.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let mut child = iolab()
        .args(["study", "run", path(&study), "--dir", path(&work)])
        .env("IOLAB_DB", &db)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for two phases to be stored, then kill it without warning.
    let start = Instant::now();
    loop {
        let r = with_db(&db, &["results", "show", "r1", "--format", "json"]);
        if r.code == 0 {
            let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
            if j["phases"].as_array().unwrap().len() >= 2 {
                assert_eq!(j["status"], "running", "its process is alive");
                break;
            }
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the study ended before two phases were stored"
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the study never stored two phases"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The null backend lays nothing out, even in a study with a directory.
    let data: Vec<String> = std::fs::read_dir(work.join("iolab-work"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("data."))
        .collect();
    assert!(data.is_empty(), "null phases wrote {data:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    let r = with_db(&db, &["results", "show", "r1", "--format", "json"]).expect(0);
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["status"], "abandoned", "its process is gone");
    assert_eq!(j["provenance"]["process"]["pid"], child.id());
    let phases = j["phases"].as_array().unwrap().len();
    assert!((2..6).contains(&phases), "{phases} phases kept");
    let list = with_db(&db, &["results", "list"]).expect(0);
    assert!(
        list.stdout
            .lines()
            .any(|l| l.starts_with("r1") && l.contains(" abandoned ")),
        "{}",
        list.stdout
    );
}

#[test]
fn results_list_speaks_json_csv_markdown_and_html() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    null_run(&db, "v1", "1");
    null_run(&db, "v,2", "2");
    let json = with_db(&db, &["results", "list", "--format", "json"]).expect(0);
    let j: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let runs = j.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["id"], "r2");
    assert_eq!(runs[0]["label"], "v,2");
    assert_eq!(runs[1]["label"], "v1");
    assert_eq!(runs[1]["kind"], "run");
    assert_eq!(runs[1]["status"], "complete");
    assert_eq!(runs[1]["phases"], 1);
    assert_eq!(runs[1]["imported"], false);

    let csv = with_db(&db, &["results", "list", "--format", "csv"]).expect(0);
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "id,label,kind,status,started_utc,started_at_ms,finished_at_ms,imported,phases,target"
    );
    assert_eq!(lines.len(), 3, "{}", csv.stdout);
    assert!(
        lines[1].starts_with("r2,\"v,2\",run,complete,"),
        "{}",
        lines[1]
    );
    assert!(lines[2].starts_with("r1,v1,run,complete,"), "{}", lines[2]);

    let md = with_db(&db, &["results", "list", "--format", "markdown"]).expect(0);
    let lines: Vec<&str> = md.stdout.lines().collect();
    assert!(
        lines[0].starts_with("| id | label | kind |"),
        "{}",
        md.stdout
    );
    assert!(
        lines[2].starts_with("| r2 | v,2 | run | complete |"),
        "{}",
        md.stdout
    );
    assert_eq!(lines.len(), 4);

    let html = with_db(&db, &["results", "list", "--format", "html"]).expect(0);
    assert!(
        html.stdout.contains("<td>r1</td><td>v1</td><td>run</td>"),
        "{}",
        html.stdout
    );

    let bad = with_db(&db, &["results", "list", "--format", "yaml"]);
    assert_eq!(bad.code, 2);
    assert!(error_line(&bad).contains("--format"), "{}", bad.stderr);
}

#[test]
fn filters_matching_nothing_are_not_an_empty_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let empty = with_db(&db, &["results", "list"]).expect(0);
    assert!(
        empty.stdout.starts_with("no runs stored in "),
        "{}",
        empty.stdout
    );
    null_run(&db, "v1", "1");
    let kind = with_db(&db, &["results", "list", "--kind", "io500"]).expect(0);
    assert!(
        kind.stdout
            .starts_with("no run matches --kind io500 (1 run stored in "),
        "{}",
        kind.stdout
    );
    let since = with_db(
        &db,
        &["results", "list", "--since", "2099-01-01", "--label", "v*"],
    )
    .expect(0);
    assert!(
        since
            .stdout
            .starts_with("no run matches --label v*, --since 2099-01-01 (1 run stored in "),
        "{}",
        since.stdout
    );
    // Other formats print an empty document and say why on standard error.
    let json = with_db(
        &db,
        &["results", "list", "--kind", "io500", "--format", "json"],
    )
    .expect(0);
    assert_eq!(json.stdout.trim(), "[]");
    assert!(
        json.stderr.contains("no run matches --kind io500"),
        "{}",
        json.stderr
    );
}

#[test]
fn an_imported_io500_result_shows_no_made_up_latency_or_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let result =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../compat/tests/fixtures/io500/lustre-isc24");
    with_db(&db, &["io500", "score", path(&result), "--import"]).expect(0);
    let show = with_db(&db, &["results", "show", "r1"]).expect(0);
    assert!(show.stdout.contains("ior-easy-write"), "{}", show.stdout);
    assert!(!show.stdout.contains("lat min"), "{}", show.stdout);
    assert!(!show.stdout.contains("cpu:"), "{}", show.stdout);
    let md = with_db(&db, &["results", "show", "r1", "--format", "markdown"]).expect(0);
    assert!(!md.stdout.contains("Latency of"), "{}", md.stdout);
}

#[test]
fn repeated_study_phases_show_mean_sd_cv_and_ci() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let study = dir.path().join("rep.toml");
    std::fs::write(
        &study,
        "name = \"rep\"\nrepeat = 3\n[[sweep]]\nname = \"s\"\nover = { threads = [1] }\nphase = [{ name = \"p\", backend = \"null\", rw = \"randread\", size = \"4MiB\" }]\n",
    )
    .unwrap();
    let work = dir.path().join("w");
    std::fs::create_dir(&work).unwrap();
    with_db(
        &db,
        &["study", "run", path(&study), "--dir", path(&work), "-Q"],
    )
    .expect(0);
    let show = with_db(&db, &["results", "show", "r1"]).expect(0);
    let table: Vec<&str> = show
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("repetitions ("))
        .collect();
    assert!(table.len() >= 3, "{}", show.stdout);
    let header: Vec<&str> = table[1].split_whitespace().collect();
    assert_eq!(
        header,
        ["phase", "op", "n", "mean", "SD", "CV", "95%", "CI"]
    );
    assert!(table[2].starts_with("p      read  3  "), "{}", show.stdout);

    let json = with_db(&db, &["results", "show", "r1", "--format", "json"]).expect(0);
    let j: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let s = &j["statistics"][0];
    assert_eq!(s["n"], 3);
    let mean = s["mean"].as_f64().unwrap();
    let sd = s["stddev"].as_f64().unwrap();
    assert!(mean > 0.0);
    assert!((s["cv"].as_f64().unwrap() - sd / mean).abs() < 1e-9);
    // t(2) = 4.303: the half-width of the 95% CI of a mean of three.
    assert!((s["ci95"].as_f64().unwrap() - 4.303 * sd / 3f64.sqrt()).abs() <= 1e-6 * mean);
}

/// A run whose process is alive cannot be deleted; once it has ended, it can.
#[test]
fn a_running_run_is_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let mut child = iolab()
        .env("IOLAB_DB", &db)
        .args(["run", "--backend", "null", "--runtime", "30s", "-Q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !with_db(&db, &["results", "list"])
        .stdout
        .contains("running")
    {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the run never showed as running"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let r = with_db(&db, &["results", "delete", "r1"]).expect(2);
    assert_eq!(
        r.error_line(),
        "iolab: error: run r1 is still running (its process is alive); delete it once it has ended, or stop it first"
    );
    // Ctrl-C ends it (interrupted, stored); then it goes.
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    child.wait().unwrap();
    with_db(&db, &["results", "delete", "r1"]).expect(0);
}

/// Control characters in a target path or label are written out in tables and headers,
/// never sent to the terminal.
#[test]
fn control_characters_in_paths_and_labels_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let odd = dir.path().join("we\u{1b}[31mird");
    std::fs::create_dir(&odd).unwrap();
    with_db(
        &db,
        &[
            "run",
            "--backend",
            "null",
            "--size",
            "1MiB",
            "-Q",
            "--dir",
            path(&odd),
            "--label",
            "bad\nlabel",
        ],
    )
    .expect(0);
    for args in [&["results", "list"][..], &["results", "show", "r1"][..]] {
        let r = with_db(&db, args).expect(0);
        assert!(!r.stdout.contains('\u{1b}'), "{args:?}: {}", r.stdout);
        assert!(
            r.stdout.contains("we\\u{1b}[31mird"),
            "{args:?}: {}",
            r.stdout
        );
        assert!(r.stdout.contains("bad\\nlabel"), "{args:?}: {}", r.stdout);
    }
}

/// Regression: the tests' databases piled up in /tmp (`iolab-test-<pid>.db`). Each test's
/// database now lives in a directory that goes when the test ends, failed or not.
#[test]
fn a_tests_database_goes_with_the_test_passed_or_failed() {
    for fails in [false, true] {
        let (tx, rx) = std::sync::mpsc::channel();
        let test = std::thread::spawn(move || {
            let db = crate::common::test_db();
            let ran = crate::common::run(&["run", "--backend", "null", "--size", "1MiB", "-Q"]);
            tx.send((db.clone(), db.exists(), ran.code)).unwrap();
            assert!(!fails, "the test fails after storing its run");
        });
        let joined = test.join();
        let (db, existed, code) = rx.recv().unwrap();
        assert_eq!(joined.is_err(), fails);
        assert_eq!(code, 0);
        assert!(existed, "the run was stored in {}", db.display());
        let dir = db.parent().unwrap();
        assert!(dir.starts_with(std::env::temp_dir()), "{}", dir.display());
        assert!(
            !dir.exists(),
            "{} left behind (fails: {fails})",
            dir.display()
        );
    }
}

/// A --db that is not there (a typo) was created empty by the commands that only read
/// it, which then listed nothing and exited 0.
#[test]
fn a_missing_db_is_named_and_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("resluts.db");
    let md = dir.path().join("r.md");
    for args in [
        vec!["results", "list"],
        vec!["results", "show", "r1"],
        vec!["results", "export"],
        vec!["results", "delete", "r1"],
        vec!["compare", "r1", "r2"],
        vec!["report", "r1", "--markdown", path(&md)],
        vec!["endurance", "--rated", "1PB", "--from-run", "r1"],
    ] {
        let mut args = args.clone();
        args.extend(["--db", path(&typo)]);
        let r = run(&args).expect(2);
        assert_eq!(
            error_line(&r),
            format!(
                "iolab: error: --db {0}: no such results database; check the path (runs are stored there by a command given --db {0})",
                typo.display()
            ),
            "{args:?}"
        );
        assert!(!typo.exists(), "{args:?} created {}", typo.display());
    }
    assert!(!md.exists());
}
