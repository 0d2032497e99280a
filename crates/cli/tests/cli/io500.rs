//! `iolab io500`: scoring IO500's own results and iolab's, importing them into the store,
//! planning a run, and one-line errors for bad input (running the suite: io500_run).

use std::path::{Path, PathBuf};

use iolab_suites::io500::{Io500Config, Io500Spec, PHASES, PhaseFigure, write_result_dir};

use crate::common::{Ran, error_line, iolab, path, run};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../compat/tests/fixtures/io500")
        .join(rel)
}

fn with_db(db: &Path, args: &[&str]) -> Ran {
    Ran::from(iolab().args(args).env("IOLAB_DB", db).output().unwrap())
}

#[test]
fn an_io500_result_is_scored_like_io500() {
    let dir = fixture("lustre-isc24");
    let r = run(&["io500", "score", path(&dir)]).expect(0);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(
        lines[0].ends_with("IO500 result.txt, io500-isc24_v3, 80 ranks"),
        "{}",
        r.stdout
    );
    assert_eq!(
        lines[1],
        "[RESULT]       ior-easy-write       38.417295 GiB/s : time 331.482 seconds"
    );
    assert!(r.stdout.contains(
        "\n[SCORE ] Bandwidth 14.878886 GiB/s : IOPS 82.573123 kiops : TOTAL 35.051335\n"
    ));
    assert!(
        r.stdout
            .contains("IO500's score hash CB8B5215 matches the file's values")
    );
    assert!(r.stdout.ends_with("valid for submission\n"), "{}", r.stdout);
}

#[test]
fn an_invalid_result_exits_1_with_its_reasons() {
    let file = fixture("debug-60s/result.txt");
    let r = run(&["io500", "score", path(&file)]).expect(1);
    assert!(r.stdout.contains("[INVALID]"));
    assert!(r.stdout.contains("invalid for submission (fine for testing):\n  - the stonewall was 60 s; IO500 requires 300 s\n"), "{}", r.stdout);
    assert!(r.stderr.is_empty(), "{}", r.stderr);

    let find = fixture("find-failed/result_summary.txt");
    let r = run(&["io500", "score", path(&find)]).expect(1);
    assert!(
        r.stdout
            .contains("  - find measured 0; it is left out of its group's mean")
    );
}

#[test]
fn an_edited_result_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("lustre-isc24/result_summary.txt")).unwrap();
    let file = dir.path().join("result_summary.txt");
    std::fs::write(&file, text.replace("52.903631", "62.903631")).unwrap();
    let r = run(&["io500", "score", path(&file)]).expect(1);
    assert!(
        r.stdout
            .contains("problem: line 16 says Bandwidth 14.878886 GiB/s"),
        "{}",
        r.stdout
    );
}

#[test]
fn json_output_carries_figures_and_check() {
    let r = run(&["io500", "score", "--json", path(&fixture("script-2019"))]);
    // The directory holds no result.txt or result_summary.txt.
    assert_eq!(r.code, 2);
    let file = fixture("script-2019/io500-output.txt");
    let r = run(&["io500", "score", "--json", path(&file)]).expect(1);
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["result"]["format"], "script");
    assert_eq!(j["result"]["phases"][0]["name"], "ior-easy-write");
    assert_eq!(j["check"]["file_score_agrees"], true);
    assert!((j["check"]["score"]["total"].as_f64().unwrap() - 4.90678).abs() < 1e-4);
    assert_eq!(j["check"]["score"]["reasons"][0]["reason"], "short-write");
}

#[test]
fn an_imported_result_is_stored_as_an_io500_run() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    let dir = fixture("lustre-isc24");
    let r = with_db(
        &db,
        &[
            "io500",
            "score",
            path(&dir),
            "--import",
            "--label",
            "helios-like",
        ],
    )
    .expect(0);
    assert!(
        r.stdout.ends_with("stored as r1 (kind io500)\n"),
        "{}",
        r.stdout
    );
    let list = with_db(&db, &["results", "list", "--kind", "io500"]).expect(0);
    assert!(list.stdout.contains("helios-like"), "{}", list.stdout);
    let show = with_db(&db, &["results", "show", "helios-like", "--format", "json"]).expect(0);
    let j: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(j["kind"], "io500");
    assert_eq!(j["status"], "complete");
    let phases = j["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 13);
    assert_eq!(phases[0]["name"], "ior-easy-write");
    assert_eq!(phases[0]["kind"], "data");
    assert_eq!(phases[0]["extra"]["io500-value"], 38.417295);
    assert_eq!(phases[4]["name"], "find");
    assert_eq!(phases[4]["kind"], "find");

    let r = with_db(
        &db,
        &["io500", "score", path(&fixture("debug-60s")), "--import"],
    )
    .expect(1);
    assert!(r.stdout.ends_with("stored as r2 (kind io500)\n"));
    let show = with_db(&db, &["results", "show", "r2", "--format", "json"]).expect(0);
    let j: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    // A 60 s stonewall is invalid for submission (exit 1 above), not a failed run.
    assert_eq!(j["status"], "complete");
    assert_eq!(j["spec"]["score"]["valid"], false);
    assert!(j["spec"]["score"]["total"].as_f64().unwrap() > 0.0);

    let other = tmp.path().join("other.db");
    run(&[
        "io500",
        "score",
        path(&dir),
        "--import",
        "--db",
        path(&other),
    ])
    .expect(0);
    let list = run(&["results", "list", "--db", path(&other)]).expect(0);
    assert_eq!(list.stdout.lines().count(), 2, "{}", list.stdout);
}

#[test]
fn iolab_result_directories_are_checked_with_their_hashes() {
    let tmp = tempfile::tempdir().unwrap();
    let config = Io500Config {
        tool: "iolab 0.1.0".into(),
        ranks: 2,
        target: "/scratch".into(),
        spec: Io500Spec::default(),
    };
    let figures: Vec<PhaseFigure> = PHASES
        .iter()
        .map(|d| {
            let t = if d.is_write() { 301.0 } else { 12.5 };
            let mut f = PhaseFigure::new(d.name, if d.name == "timestamp" { 0.0 } else { 3.0 }, t);
            if d.name == "find" {
                f.found = Some(7);
            }
            f
        })
        .collect();
    write_result_dir(tmp.path(), &config, &figures).unwrap();
    let r = run(&["io500", "score", path(tmp.path())]).expect(0);
    assert!(
        r.stdout
            .contains("hash.txt matches config.json, phases.json, result.txt")
    );
    assert!(r.stdout.contains("TOTAL 3.000000\n"), "{}", r.stdout);

    let result = tmp.path().join("result.txt");
    let text = std::fs::read_to_string(&result).unwrap();
    std::fs::write(&result, text.replace("TOTAL 3.000000", "TOTAL 4.000000")).unwrap();
    let r = run(&["io500", "score", path(tmp.path())]).expect(1);
    assert!(
        r.stdout
            .contains("problem: hash.txt does not match result.txt: changed after the run"),
        "{}",
        r.stdout
    );
}

#[test]
fn malformed_results_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("result_summary.txt");
    // Not a number; and inf or a negative figure, no measurement: malformed, not 0.
    for (figure, why) in [
        ("abc", "is not a number"),
        ("-inf", "is not a finite number of 0 or more"),
    ] {
        std::fs::write(
            &file,
            format!("IO500 version io500-isc24_v3 (standard)\n[RESULT] ior-easy-write {figure} GiB/s : time 300.1 seconds\n"),
        )
        .unwrap();
        let r = run(&["io500", "score", path(&file)]);
        assert_eq!(r.code, 2);
        assert_eq!(
            error_line(&r),
            format!(
                "iolab: error: {}:2: ior-easy-write: '{figure}' {why}",
                file.display()
            )
        );
    }
    let missing = tmp.path().join("nope");
    let r = run(&["io500", "score", path(&missing)]);
    assert_eq!(r.code, 2);
    assert_eq!(
        error_line(&r),
        format!(
            "iolab: error: cannot read {}: No such file or directory",
            missing.display()
        )
    );
    let r = run(&["io500", "score", path(tmp.path()), "--label", "x"]);
    assert_eq!(r.code, 2, "--label needs --import");
    assert!(error_line(&r).contains("--import"), "{}", r.stderr);
}

#[test]
fn a_plan_lists_the_phases_in_io500s_order() {
    let r = run(&["io500", "plan", "--ranks", "4"]).expect(0);
    let names: Vec<&str> = r
        .stdout
        .lines()
        .skip(2)
        .take(14)
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    let expected: Vec<&str> = PHASES.iter().map(|p| p.name).collect();
    assert_eq!(names, expected, "{}", r.stdout);
    assert!(r.stdout.contains("47008B transfers"));
    assert!(
        r.stdout
            .contains("find -newer timestamp -size 3901c -name \"*01*\"")
    );

    let r = run(&[
        "io500",
        "plan",
        "--stonewall",
        "60s",
        "--files-per-rank",
        "1000",
    ])
    .expect(0);
    assert!(
        r.stdout
            .lines()
            .next()
            .unwrap()
            .contains("invalid for submission")
    );

    let r = run(&["io500", "plan", "--json", "--ior-easy-transfer", "1MiB"]).expect(0);
    let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["phases"].as_array().unwrap().len(), 14);
    assert_eq!(j["phases"][0]["params"]["transfer"], "1MiB");
    assert_eq!(j["phases"][0]["data_spec"]["block_size"], 1024 * 1024);
    assert_eq!(j["phases"][13]["scored"], false);

    let tmp = tempfile::tempdir().unwrap();
    let r = run(&[
        "io500",
        "plan",
        "--dir",
        path(tmp.path()),
        "--stonewall",
        "1s",
        "--assume-bandwidth",
        "1MiB",
        "--assume-hard-bandwidth",
        "1MiB",
        "--assume-file-rate",
        "10",
    ])
    .expect(0);
    assert!(r.stdout.ends_with("has room for it\n"), "{}", r.stdout);
}

#[test]
fn bad_options_are_one_line_errors() {
    let r = run(&["io500", "plan", "--ior-easy-transfer", "0"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        error_line(&r),
        "iolab: error: --ior-easy-transfer: must be larger than 0"
    );
    let r = run(&["io500", "plan", "--assume-file-rate", "0"]);
    assert_eq!(
        error_line(&r),
        "iolab: error: --assume-file-rate must be more than 0"
    );
    let r = run(&["io500", "plan", "--stonewall", "fast"]);
    assert_eq!(r.code, 2);
    assert!(error_line(&r).contains("--stonewall"));
    let r = run(&["io500", "plan", "--dir", "/nonexistent/io500"]);
    assert_eq!(r.code, 2);
    assert!(error_line(&r).starts_with("iolab: error: --dir /nonexistent/io500"));
}

#[test]
fn files_per_rank_beyond_one_directory_is_refused_before_any_phase() {
    let too_many = "4294967296";
    let expected = "iolab: error: --files-per-rank: 4294967296 is more than the 4294967295 files iolab creates in one directory";
    let r = run(&["io500", "plan", "--files-per-rank", too_many]);
    assert_eq!(r.code, 2);
    assert_eq!(error_line(&r), expected);
    assert!(r.stdout.is_empty(), "{}", r.stdout);

    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let results = tmp.path().join("results");
    let r = run(&[
        "io500",
        "--dir",
        path(&work),
        "--stonewall",
        "1s",
        "--files-per-rank",
        too_many,
        "--result-dir",
        path(&results),
        "--no-store",
    ]);
    assert_eq!(r.code, 2);
    assert_eq!(error_line(&r), expected);
    // No phase ran: nothing printed, nothing written.
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
    assert!(!results.exists());
}
