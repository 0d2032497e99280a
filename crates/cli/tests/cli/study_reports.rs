//! The reference studies' own tables end to end, on the null backend: S3's run against
//! rated figures (`study run --rated`, recomputed by `report`, replaced by `report
//! --rated`), S5's matrix tables and sync-against-async charts, and the decimal units of
//! `compare` and `report`; bad rated files and units refused in one line.

use std::fs;
use std::path::Path;

use crate::common::{Ran, error_line, iolab, path};

fn with_db(db: &Path, args: &[&str]) -> Ran {
    Ran::from(iolab().args(args).env("IOLAB_DB", db).output().unwrap())
}

/// S3 with the 100/0 mix and two devices rated 1M IOPS each (on any node).
#[test]
fn a_study_run_against_rated_figures_ends_with_percent_of_rated() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let rated = dir.path().join("rated.csv");
    fs::write(
        &rated,
        "id,node,path,rated_iops\nnvme0,,/dev/nvme0n1,1000000\nnvme1,,/dev/nvme1n1,1000000\n",
    )
    .unwrap();
    let work = dir.path().join("w");
    fs::create_dir(&work).unwrap();
    let r = with_db(
        &db,
        &[
            "study",
            "run",
            "hci",
            "--scale",
            "0.001",
            "--set",
            "backend=null",
            "--set",
            "rwmix_read=[100,90,70]",
            "--rated",
            path(&rated),
            "--dir",
            path(&work),
            "--label",
            "hci",
        ],
    )
    .expect(0);
    let out = &r.stdout;
    // Reads and writes together per block size and read share...
    let total = &out[out
        .find("randrw total IOPS (rows: block size; columns: read share)")
        .expect("a total IOPS matrix")..];
    let header = total.lines().nth(1).unwrap();
    assert!(
        header.contains("70% reads") && header.contains("100% reads"),
        "{header}"
    );
    // ...and the 4 KiB phases against the 2M IOPS the devices are rated for.
    let rated_rows: Vec<&str> = out[out.find("against the rated maximum").unwrap()..]
        .lines()
        .filter(|l| l.starts_with("randrw  4KiB"))
        .collect();
    assert_eq!(rated_rows.len(), 3, "{out}");
    for row in &rated_rows {
        assert!(
            row.contains("all (1 node)") && row.contains("2.00M IOPS"),
            "{row}"
        );
        assert!(row.trim_end().ends_with('%'), "{row}");
    }
    // The report recomputes it from what the run stored...
    let md = dir.path().join("r.md");
    with_db(&db, &["report", "hci", "--markdown", path(&md)]).expect(0);
    let text = fs::read_to_string(&md).unwrap();
    assert!(text.contains("\nAgainst the rated maximum:\n"), "{text}");
    assert!(text.contains("| 2.00M IOPS |"), "{text}");
    // ...or against other figures given to it.
    fs::write(
        &rated,
        "id,node,path,rated_iops\nnvme0,,/dev/nvme0n1,5000000\n",
    )
    .unwrap();
    with_db(
        &db,
        &[
            "report",
            "hci",
            "--markdown",
            path(&md),
            "--rated",
            path(&rated),
        ],
    )
    .expect(0);
    let text = fs::read_to_string(&md).unwrap();
    // The Rated column (not Measured: a null backend's rate may read 2.00M too).
    let rated_column: Vec<&str> = text[text.find("Against the rated maximum").unwrap()..]
        .lines()
        .filter(|l| l.starts_with("| randrw"))
        .map(|l| l.split('|').nth(5).unwrap_or("").trim())
        .collect();
    assert_eq!(rated_column, ["5.00M IOPS"; 3], "{text}");
}

#[test]
fn bad_rated_files_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none.csv");
    fs::write(&none, "id,node,path\nnvme0,,/dev/nvme0n1\n").unwrap();
    let bad = dir.path().join("bad.csv");
    fs::write(&bad, "id,node,path,rated_iops\nnvme0,,/dev/nvme0n1,fast\n").unwrap();
    let missing = dir.path().join("missing.csv");
    let cases = [
        (&none, "no target has a rated_iops or rated_mbps figure"),
        (&bad, "bad.csv:2: rated_iops 'fast' is not a number"),
        (&missing, "--rated: cannot read"),
    ];
    for (file, why) in cases {
        let r = Ran::from(
            iolab()
                .args(["study", "run", "hci", "--rated", path(file), "--no-store"])
                .args(["--dir", path(dir.path())])
                .output()
                .unwrap(),
        )
        .expect(2);
        let line = error_line(&r);
        assert!(line.starts_with("iolab: error: --rated"), "{line}");
        assert!(line.contains(why), "{line}");
        assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
    }
}

/// S5 on two pool configurations: one table per configuration and operation, and the
/// O_SYNC writes drawn against the plain ones.
#[test]
fn the_zfs_matrix_is_tabled_per_operation_and_charted_sync_against_async() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let work = dir.path().join("w");
    fs::create_dir(&work).unwrap();
    let mut last = String::new();
    for label in ["hdd", "optane"] {
        let r = with_db(
            &db,
            &[
                "study",
                "run",
                "zfs-matrix",
                "--scale",
                "0.001",
                "--set",
                "backend=null",
                "--set",
                "runtime=200ms",
                "--set",
                "threads=[1,2]",
                "--dir",
                path(&work),
                "--label",
                label,
            ],
        )
        .expect(0);
        last = r.stdout;
    }
    for name in [
        "async-seq-write",
        "sync-seq-write",
        "sync-rand-write",
        "rand-read",
    ] {
        let at = last
            .find(&format!("\n{name} (rows: threads; columns: block size)\n"))
            .unwrap_or_else(|| panic!("no matrix of {name}:\n{last}"));
        let header = last[at..].lines().nth(2).unwrap();
        assert!(header.starts_with("Threads"), "{header}");
        assert!(header.contains("4KiB mean latency"), "{header}");
    }
    // The sync phases are labelled so in their headers.
    assert!(
        last.contains("sync-seq-write  (4KiB, sync, 1 thread,"),
        "{last}"
    );
    let html = dir.path().join("z.html");
    with_db(
        &db,
        &["report", "optane", "--vs", "hdd", "--html", path(&html)],
    )
    .expect(0);
    let page = fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("data-chart=\"sync-async\"").count(), 4);
    assert!(page.contains(
        "<title>sync-seq-write against async-seq-write at 4KiB: IOPS vs threads</title>"
    ));
    assert_eq!(page.matches("<table class=\"figures matrix\">").count(), 12);
}

#[test]
fn compare_and_report_speak_decimal_units_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for label in ["a", "b"] {
        with_db(
            &db,
            &[
                "run",
                "--backend",
                "null",
                "--rw",
                "write",
                "--block-size",
                "1MiB",
                "--size",
                "64MiB",
                "--label",
                label,
                "-Q",
            ],
        )
        .expect(0);
    }
    let binary = with_db(&db, &["compare", "a", "b"]).expect(0).stdout;
    assert!(binary.contains("iB/s"), "{binary}");
    let decimal = with_db(&db, &["compare", "a", "b", "--units", "decimal"])
        .expect(0)
        .stdout;
    assert!(!decimal.contains("iB/s"), "{decimal}");
    assert!(
        decimal.contains("GB/s") || decimal.contains("MB/s"),
        "{decimal}"
    );
    let md = dir.path().join("r.md");
    with_db(
        &db,
        &[
            "report",
            "b",
            "--vs",
            "a",
            "--markdown",
            path(&md),
            "--units",
            "decimal",
        ],
    )
    .expect(0);
    let text = fs::read_to_string(&md).unwrap();
    let comparison = &text[text.find("## Comparison").unwrap()..text.find("## Results").unwrap()];
    assert!(!comparison.contains("iB/s"), "{comparison}");
    let r = with_db(&db, &["compare", "a", "b", "--units", "metric"]).expect(2);
    assert_eq!(
        error_line(&r),
        "iolab: error: invalid value 'metric' for '--units <binary|decimal>': unknown units 'metric'; use binary (MiB/s, GiB/s) or decimal (MB/s, GB/s)"
    );
}
