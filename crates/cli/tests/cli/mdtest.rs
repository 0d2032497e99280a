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
    assert!(
        !md.exists(),
        "the call made -d and removes it again, as mdtest does"
    );
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

/// IO500's four mdtest-hard lines, one call each as io500 runs them: -C leaves the shared
/// directory's files (and the status file), -T stats them, -E -X reads and checks them (a
/// file changed behind iolab's back fails the check), -r removes them and the tree; a
/// later call finds no tree and says where it looked.
#[test]
fn io500s_mdtest_hard_lines_run_one_call_after_another() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let status = dir.path().join("mdtest-hard.stonewall");
    let hard = dir.path().join("mdtest-hard");
    let csv = dir.path().join("mdtest-hard.csv");
    let line = |phase: &[&str]| -> Vec<String> {
        let mut a: Vec<String> =
            "--dataPacketType=timestamp -n 300 -t -w 3901 -e 3901 -P -G=-1571475901 -N 1 -F"
                .split(' ')
                .map(String::from)
                .collect();
        a.extend([
            "-d".into(),
            path(&hard).into(),
            "-x".into(),
            path(&status).into(),
        ]);
        a.push(format!("--saveRankPerformanceDetails={}", path(&csv)));
        a.extend(phase.iter().map(|s| s.to_string()));
        a.extend(["-a".into(), "POSIX".into()]);
        a
    };
    let run = |phase: &[&str]| {
        let args = line(phase);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        mdtest(&db, &args)
    };
    let r = run(&["-C", "-Y", "-W", "60"]).expect(0);
    assert!(figures(&r.stdout, "File creation")[0] > 0.0);
    assert_eq!(std::fs::read_to_string(&status).unwrap(), "300");
    let files: Vec<std::path::PathBuf> = walk(&hard)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("file.mdtest.")
        })
        .collect();
    assert_eq!(files.len(), 300, "-C leaves the files to the later calls");
    assert!(
        files
            .iter()
            .all(|f| std::fs::metadata(f).unwrap().len() == 3901)
    );

    let r = run(&["-T"]).expect(0);
    assert!(figures(&r.stdout, "File stat")[0] > 0.0);
    // mdtest's rank details, appended per call: "all" and one line per rank; the stat
    // call's pair is the seventh test (after 5 directory tests and file create).
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "two calls, two lines each:\n{text}");
    let stat: Vec<&str> = lines[2].split(',').collect();
    assert_eq!((stat[0], stat[1], stat.len()), ("all", "300", 24), "{text}");
    assert!(
        stat[14].parse::<f64>().unwrap() > 0.0 && stat[12].is_empty(),
        "{text}"
    );
    assert_eq!(figures(&r.stdout, "File creation"), [0.0; 4]);
    let r = run(&["-E", "-X"]).expect(0);
    assert!(figures(&r.stdout, "File read")[0] > 0.0);
    // One file's bytes changed: the checked read fails (exit 1) and says which.
    let mut bytes = std::fs::read(&files[17]).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&files[17], &bytes).unwrap();
    let r = run(&["-E", "-X"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    std::fs::write(&files[17], {
        bytes[100] ^= 0xff;
        &bytes
    })
    .unwrap();

    let r = run(&["-r"]).expect(0);
    assert!(figures(&r.stdout, "File removal")[0] > 0.0);
    assert!(
        walk(&hard)
            .iter()
            .all(|p| !p.to_string_lossy().contains("file.mdtest")),
        "-r removes every file: {:?}",
        walk(&hard)
    );
    let r = run(&["-T"]);
    assert_eq!(r.code, 2, "a refusal before any work");
    let e = error_line(&r);
    assert!(
        e.contains("mdtest -T: no tree in ") && e.contains("run the -C call first"),
        "{e}"
    );
}

/// Every path below `dir`.
pub(crate) fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

/// mdtest -D: directories as items, made, stat'ed and removed, with mdtest's directory
/// rows; without -D or -F both tests run (directories first), as mdtest does.
#[test]
fn directory_items_run_as_mdtests_directory_test() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let md = dir.path().join("md");
    let r = mdtest(&db, &["-n", "40", "-D", "-d", path(&md)]).expect(0);
    assert!(
        r.stdout.contains("\n1 tasks, 40 directories\n"),
        "{}",
        r.stdout
    );
    for row in ["Directory creation", "Directory stat", "Directory removal"] {
        assert!(figures(&r.stdout, row)[0] > 0.0, "{row}: {}", r.stdout);
    }
    assert_eq!(figures(&r.stdout, "Directory rename"), [0.0; 4]);
    assert!(!r.stdout.contains("File creation"), "{}", r.stdout);
    let r = mdtest(&db, &["-n", "40", "-d", path(&md)]).expect(0);
    assert!(r.stdout.contains(" files/directories\n"), "{}", r.stdout);
    let rows: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.contains("Directory") || l.contains("File "))
        .collect();
    assert_eq!(rows.len(), 8, "{}", r.stdout);
    assert!(figures(&r.stdout, "File read")[0] > 0.0);
    assert!(walk(&md).is_empty(), "nothing left: {:?}", walk(&md));
}

/// Under mpirun each rank is an mdtest task: "2 tasks", every phase over both tasks'
/// files (2 x 30), a tree per task with -u, and the run stored once, by rank 0, with
/// every file counted; then compared and reported as any other run.
#[cfg(feature = "mpi")]
#[test]
fn two_ranks_are_two_mdtest_tasks() {
    use crate::mpi::{mpirun, mpirun_available, run_limited};
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let md = dir.path().join("md");
    for _ in 0..2 {
        let mut c = mpirun(2);
        c.env("IOLAB_DB", &db);
        c.args(["mdtest", "-n", "30", "-u", "-F", "-d", path(&md)]);
        let r = run_limited(c, std::time::Duration::from_secs(120));
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains("\n2 tasks, 60 files\n"), "{}", r.stdout);
        assert!(figures(&r.stdout, "File creation")[0] > 0.0, "{}", r.stdout);
    }
    let shown = mdtest_results(&db, &["results", "show", "r1", "--format", "json"]);
    let j: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(j["kind"], "mdtest");
    for p in j["phases"].as_array().unwrap() {
        assert_eq!(p["ops"][0]["ops"], 60, "{}", p["name"]);
    }
    let compared = mdtest_results(&db, &["compare", "r1", "r2"]);
    assert!(compared.contains("create"), "{compared}");
    assert!(!md.exists(), "every call made -d and removed it again");
}

#[cfg(feature = "mpi")]
fn mdtest_results(db: &Path, args: &[&str]) -> String {
    Ran::from(iolab().env("IOLAB_DB", db).args(args).output().unwrap())
        .expect(0)
        .stdout
}
