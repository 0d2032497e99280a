//! Comparing stored runs from the command line: `compare` and `report --vs` on one
//! baseline in every format, labels, and targets runs exported without a comparison.

use std::path::Path;

use crate::common::path;
use crate::results::{null_run, null_run_with, with_db};

#[test]
fn a_report_compares_labels_as_compare_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    // qb reads; qa read once, then wrote (its newest run).
    null_run(&db, "qb", "1");
    null_run(&db, "qa", "1");
    null_run_with(&db, "qa", &["--rw", "randwrite"]);
    let cmp = with_db(&db, &["compare", "qb", "qa", "--format", "markdown"]).expect(0);
    let md = dir.path().join("r.md");
    with_db(
        &db,
        &["report", "qa", "--vs", "qb", "--markdown", path(&md)],
    )
    .expect(0);
    let page = std::fs::read_to_string(&md).unwrap();
    let start = page.find("## Comparison").expect("a comparison section");
    let end = start + page[start..].find("\n## Results").unwrap();
    assert_eq!(
        &page[start + 1..end],
        cmp.stdout,
        "the report's comparison is compare's"
    );
    // Both runs of qa are pooled: its older read run is compared with qb's read run.
    let rows: Vec<&str> = cmp
        .stdout
        .lines()
        .filter(|l| l.starts_with("| rand"))
        .collect();
    assert_eq!(rows.len(), 2, "{}", cmp.stdout);
    assert!(
        rows[0].starts_with("| randread-4KiB read IOPS "),
        "{}",
        rows[0]
    );
    assert!(!rows[0].contains("only in"), "{}", rows[0]);
    assert!(rows[1].contains("only in qa"), "{}", rows[1]);
}

fn paced_run(db: &Path, label: &str, iops: &str) {
    null_run_with(
        db,
        label,
        &[
            "--rw",
            "randread",
            "--rate-iops",
            iops,
            "--runtime",
            "1500ms",
        ],
    );
}

/// One convention everywhere: `compare A B` and `report B --vs A` both take A as the
/// baseline, so a run paced at half the IOPS of its baseline is -50 % ("50 % lower") in
/// text, Markdown, CSV, JSON and HTML alike (the report used to show +100 %).
#[test]
fn compare_and_report_use_one_baseline_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    paced_run(&db, "fast", "4000");
    paced_run(&db, "slow", "2000");
    let cmp = |format: &str| {
        with_db(&db, &["compare", "fast", "slow", "--format", format])
            .expect(0)
            .stdout
    };
    let text = cmp("text");
    let row = text
        .lines()
        .find(|l| l.starts_with("randread-4KiB read IOPS"))
        .unwrap();
    assert!(row.contains("-50%"), "{text}");
    assert!(
        text.contains("randread-4KiB read IOPS peak: 50% lower"),
        "{text}"
    );
    assert!(cmp("markdown").contains("|   -50% |"));
    let csv = cmp("csv");
    let change: f64 = csv
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(17)
        .unwrap()
        .parse()
        .unwrap();
    assert!((-50.5..=-49.5).contains(&change), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&cmp("json")).unwrap();
    let change = json["rows"][0]["change_percent"].as_f64().unwrap();
    assert!((-50.5..=-49.5).contains(&change), "{json}");
    let html = dir.path().join("r.html");
    let md = dir.path().join("r.md");
    with_db(
        &db,
        &[
            "report",
            "slow",
            "--vs",
            "fast",
            "--html",
            path(&html),
            "--markdown",
            path(&md),
        ],
    )
    .expect(0);
    let html = std::fs::read_to_string(html).unwrap();
    assert!(html.contains("<td class=\"num\">-50%</td>"), "{html}");
    assert!(html.contains("randread-4KiB read IOPS peak: 50% lower"));
    assert!(!html.contains("+100%"));
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.contains("randread-4KiB read IOPS peak: 50% lower"),
        "{md}"
    );
}

/// `results export` of several runs shows them side by side and never compares them on
/// its own (that is `compare` or `report --vs`); a targets run's summary phase shows its
/// named figures (it was an empty table), each recomputable: total bytes over wall time.
#[test]
fn exporting_targets_runs_shows_their_figures_without_a_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    for _ in 0..2 {
        with_db(&db, &["targets", path(&a), path(&b), "--size", "4MiB"]).expect(0);
    }
    let md = with_db(
        &db,
        &[
            "results", "export", "--kind", "targets", "--format", "markdown",
        ],
    )
    .expect(0)
    .stdout;
    assert!(!md.contains("Comparison"), "{md}");
    assert!(!md.contains("only in"), "{md}");
    let row = |name: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("| {name} ")))
            .unwrap_or_else(|| panic!("no row {name}:\n{md}"))
            .to_string()
    };
    assert!(row("sum of per-target rates (StorageBench's aggregate)").contains("/s"));
    assert_eq!(
        row("total bytes moved").matches("8.00 MiB").count(),
        2,
        "{}",
        row("total bytes moved")
    );
    let html = with_db(&db, &["results", "export", "r1", "--format", "html"])
        .expect(0)
        .stdout;
    assert!(
        html.contains("<td>total bytes over wall time</td>"),
        "{html}"
    );
    let json: serde_json::Value = serde_json::from_str(
        &with_db(&db, &["results", "show", "r1", "--format", "json"])
            .expect(0)
            .stdout,
    )
    .unwrap();
    let x = &json["phases"][0]["extra"];
    let wall =
        x["total_bytes"].as_f64().unwrap() / json["phases"][0]["elapsed"].as_f64().unwrap() * 1e9;
    let stored = x["wall_bytes_per_sec"].as_f64().unwrap();
    assert!((wall / stored - 1.0).abs() < 1e-6, "{wall} vs {stored}");
}

/// A report or export to a directory that is not there (a typo) said only "writing
/// PATH: No such file or directory", without the option, after writing the outputs
/// named before it: every output is checked first, nothing is written and no directory
/// is made.
#[test]
fn an_output_in_a_missing_directory_is_refused_by_option() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    null_run(&db, "qa", "1");
    let html = dir.path().join("r.html");
    let typo = dir.path().join("reprots");
    let md = typo.join("r.md");
    let json = typo.join("all.json");
    let r = with_db(
        &db,
        &[
            "report",
            "qa",
            "--html",
            path(&html),
            "--markdown",
            path(&md),
        ],
    )
    .expect(2);
    assert_eq!(
        crate::common::error_line(&r),
        format!(
            "iolab: error: --markdown {}: the directory {} does not exist; create it first or choose another file",
            md.display(),
            typo.display()
        )
    );
    let r = with_db(&db, &["results", "export", "qa", "-o", path(&json)]).expect(2);
    assert_eq!(
        crate::common::error_line(&r),
        format!(
            "iolab: error: --output {}: the directory {} does not exist; create it first or choose another file",
            json.display(),
            typo.display()
        )
    );
    // A file where the directory should be.
    std::fs::write(&typo, "").unwrap();
    let r = with_db(&db, &["report", "qa", "--csv", path(&md)]).expect(2);
    assert_eq!(
        crate::common::error_line(&r),
        format!(
            "iolab: error: --csv {}: {} is not a directory",
            md.display(),
            typo.display()
        )
    );
    assert!(!html.exists(), "the report wrote --html before refusing");
    assert!(typo.is_file());
}
