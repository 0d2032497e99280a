//! `iolab mdtest`: mdtest command lines run on iolab's engine, printed in mdtest's layout,
//! stored.

use std::path::Path;

use crate::common::{Ran, error_line, iolab, path};

fn mdtest(db: &Path, args: &[&str]) -> Ran {
    Ran::from(
        iolab()
            .env("IOLAB_DB", db)
            .arg("mdtest")
            .args(args)
            .output()
            .unwrap(),
    )
}

/// The figures of a SUMMARY row: max, min, mean, sd.
fn figures(out: &str, name: &str) -> Vec<f64> {
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{out}"));
    line[3 + name.len()..]
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

/// `-n 50 -u -F -i 2`: mdtest's header and SUMMARY table, every file phase measured in
/// both iterations (50 files each), the tree gone afterwards, the run stored.
#[test]
fn an_mdtest_line_runs_prints_mdtests_table_and_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let md = dir.path().join("md");
    let r = mdtest(&db, &["-n", "50", "-u", "-F", "-i", "2", "-d", path(&md)]).expect(0);
    assert!(r.stdout.starts_with("-- started at "), "{}", r.stdout);
    assert!(r.stdout.contains("\n1 tasks, 50 files\n"), "{}", r.stdout);
    assert!(r.stdout.contains(
        "\nSUMMARY rate (in ops/sec): (of 2 iterations)\n   Operation                     Max            Min           Mean        Std Dev\n   ---------                     ---            ---           ----        -------\n"
    ));
    for name in ["File creation", "File stat", "File read", "File removal"] {
        let f = figures(&r.stdout, name);
        assert_eq!(f.len(), 4, "{name}");
        assert!(f[0] >= f[2] && f[2] >= f[1] && f[1] > 0.0, "{name}: {f:?}");
    }
    assert_eq!(figures(&r.stdout, "Tree creation"), [0.0; 4]);
    assert!(r.stdout.trim_end().ends_with(" --"), "{}", r.stdout);
    let work = md.join("iolab-work");
    let left = std::fs::read_dir(&work).map(|d| d.count()).unwrap_or(0);
    assert!(left <= 1, "only iolab's lock may remain in {work:?}");
    let shown = Ran::from(
        iolab()
            .env("IOLAB_DB", &db)
            .args(["results", "show", "r1", "--format", "json"])
            .output()
            .unwrap(),
    )
    .expect(0);
    let j: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(j["kind"], "mdtest");
    let phases = j["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 8, "4 phases in each of 2 iterations");
    for p in phases {
        assert_eq!(p["ops"][0]["ops"], 50, "{}", p["name"]);
    }
}

/// S1's mdtest form (Dell's NFS studies): 3 leaf directories of 20 files per task, files
/// only in the leaves, a tree per task; -y and -t, which change nothing without written
/// bytes, are accepted.
#[test]
fn s1s_mdtest_line_runs_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let md = dir.path().join("md");
    let r = mdtest(
        &db,
        &[
            "-v",
            "-d",
            path(&md),
            "-i",
            "1",
            "-b",
            "3",
            "-z",
            "1",
            "-L",
            "-I",
            "20",
            "-y",
            "-u",
            "-t",
            "-F",
        ],
    )
    .expect(0);
    assert!(r.stdout.contains("\n1 tasks, 60 files\n"), "{}", r.stdout);
    assert!(figures(&r.stdout, "File removal")[0] > 0.0);
    // One iteration: no standard deviation.
    assert_eq!(figures(&r.stdout, "File stat")[3], 0.0);
}

#[test]
fn what_mdtest_options_iolab_does_not_run_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for (args, want) in [
        (
            vec!["-n", "10", "-d", "x"],
            "iolab: error: mdtest -F: directories as items",
        ),
        (
            vec!["-n", "10", "-F", "-T", "-d", "x"],
            "iolab: error: mdtest -T: stat, read or remove of a tree",
        ),
        (vec!["-n", "10", "-F", "-R"], "iolab: error: mdtest -R: "),
        (
            vec!["-F"],
            "iolab: error: mdtest -n: give the items per process",
        ),
    ] {
        let r = mdtest(&db, &args).expect(2);
        assert!(error_line(&r).starts_with(want), "{args:?}: {}", r.stderr);
    }
    assert!(!db.exists(), "nothing ran, nothing stored");
}

/// IO500's mdtest-easy create line (smaller -n) runs unchanged: files only in the leaves
/// of a tree per task, synced at the end of create (-Y), stonewalled (-W), the status
/// file written with the files each task reached, rate and time tables (-P).
#[test]
fn io500s_mdtest_easy_create_line_runs_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let status = dir.path().join("mdtest-easy.stonewall");
    let easy = dir.path().join("mdtest-easy");
    let r = mdtest(
        &db,
        &[
            "--dataPacketType=timestamp",
            "-n",
            "200",
            "-u",
            "-L",
            "-F",
            "-P",
            "-G",
            "27",
            "-N",
            "1",
            "-d",
            path(&easy),
            "-x",
            path(&status),
            "-C",
            "-Y",
            "-W",
            "60",
            "-a",
            "POSIX",
        ],
    )
    .expect(0);
    assert!(figures(&r.stdout, "File creation")[0] > 0.0);
    assert_eq!(figures(&r.stdout, "File stat"), [0.0; 4], "only -C ran");
    assert!(
        r.stdout
            .contains("\nSUMMARY time (in ms/op): (of 1 iterations)\n")
    );
    assert_eq!(std::fs::read_to_string(&status).unwrap(), "200");
}
