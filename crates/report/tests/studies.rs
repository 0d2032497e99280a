//! Golden tests of three reference studies' own tables, on fixed stored runs
//! (fixtures/studies.rs): for S1 (NFS, version against version), S3 (HCI IOPS record)
//! and S5 (ZFS + Optane matrix) the text summary a user reads at the end of the study
//! (or of `iolab compare`) and the Markdown report, with the cells the publications
//! print checked one by one.

mod fixtures;

use fixtures::studies::{hci, nfs, zfs};
use iolab_report::{
    ReportOptions, Units, compare, render_comparison_text, render_markdown_with, text,
};

/// The line of a text table that starts with `start`, its cells split on runs of two
/// spaces or more.
fn row(table: &str, start: &str) -> Vec<String> {
    let line = table
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line {start}:\n{table}"));
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn s1_comparison_text_gives_the_change_per_thread_count() {
    let c = compare(&nfs("v7.3"), &nfs("v7.4"));
    let text = render_comparison_text(&c, Units::Decimal);
    // Peak against peak: the two seq-read peaks sit at different thread counts.
    assert_eq!(
        row(&text, "seq-read read bandwidth "),
        [
            "seq-read read bandwidth",
            "7.00 GB/s",
            "32 threads",
            "7.10 GB/s",
            "16 threads",
            "+1.4%",
            "noise unknown"
        ]
    );
    // Thread count by thread count, the change reads otherwise.
    let points = &text[text.find("change at every point").unwrap()..];
    assert_eq!(
        row(points, "seq-read read bandwidth    32 threads"),
        [
            "seq-read read bandwidth",
            "32 threads",
            "7.00 GB/s",
            "6.90 GB/s",
            "-1.4%",
            "noise unknown"
        ]
    );
    assert!(
        text.contains("rand-read read IOPS peak: 42% lower"),
        "{text}"
    );
    // Metadata stops at 32 threads on both sides: a row at every thread count to 32,
    // none at 64 (the data phases have theirs).
    let md_threads: Vec<String> = points
        .lines()
        .filter(|l| l.starts_with("md-create create ops/s "))
        .map(|l| row(l, "md-create")[1].clone())
        .collect();
    assert_eq!(
        md_threads,
        [
            "1 thread",
            "2 threads",
            "4 threads",
            "8 threads",
            "16 threads",
            "32 threads"
        ]
    );
    assert!(
        points
            .lines()
            .any(|l| l.starts_with("seq-read ") && l.contains(" 64 threads "))
    );
    insta::assert_snapshot!(text);
}

/// The end of an nfs study: one line per phase, bandwidth for the 1 MiB phases, IOPS for
/// the 4 KiB ones, a rate per metadata operation, in the units asked for.
#[test]
fn s1_text_summary_gives_every_phase_its_headline() {
    let summary = text::render_summary(&nfs("v7.4"), Units::Decimal);
    let lines: Vec<&str> = summary.lines().collect();
    assert!(
        lines[0].starts_with("#   phase ") && lines[0].ends_with(" result"),
        "{summary}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("seq-read") && l.ends_with("read 7.10 GB/s")),
        "{summary}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("rand-read") && l.contains(" IOPS")),
        "{summary}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("md-create") && l.contains("create ") && l.ends_with("/s")),
        "{summary}"
    );
    insta::assert_snapshot!(summary);
}

#[test]
fn s1_markdown_report() {
    let runs = [nfs("v7.4"), nfs("v7.3")];
    let opts = ReportOptions {
        comparison: Some(compare(&runs[1], &runs[0])),
        units: Units::Decimal,
        ..ReportOptions::default()
    };
    let md = render_markdown_with(&runs, &opts);
    assert!(
        md.contains("\n### Change at every point of the sweep\n"),
        "{md}"
    );
    assert!(
        md.contains(
            "| seq-read read bandwidth   | 16 threads |   6.60 GB/s |   7.10 GB/s |  +7.6% |"
        ),
        "{md}"
    );
    insta::assert_snapshot!(md);
}

#[test]
fn s3_text_summary_gives_total_iops_and_percent_of_rated() {
    let run = hci();
    let summary = text::render_summary(&run, Units::Binary);
    // Reads and writes together, as the record is quoted.
    assert!(
        summary.contains("total 5.54M IOPS, read 4.99M IOPS, write 554k IOPS"),
        "{summary}"
    );
    let rated = &summary[summary.find("against the rated maximum").unwrap()..];
    assert_eq!(
        row(rated, "randrw  4KiB, 100% reads  all"),
        [
            "randrw",
            "4KiB, 100% reads",
            "all (3 nodes)",
            "6.67M IOPS",
            "6.60M IOPS",
            "12",
            "101%"
        ]
    );
    assert_eq!(
        row(rated, "randrw  4KiB, 100% reads  node n03")[2..],
        ["node n03", "2.07M IOPS", "2.20M IOPS", "4", "94%"]
    );
    assert_eq!(
        row(rated, "randrw  4KiB, 70% reads   all")[3..],
        ["4.90M IOPS", "6.60M IOPS", "12", "74%"]
    );
    // The total IOPS matrix: block size down, read share across.
    let total = &summary[summary.find("randrw total IOPS").unwrap()..];
    assert_eq!(
        row(total, "4KiB"),
        ["4KiB", "4.90M IOPS", "5.54M IOPS", "6.67M IOPS"]
    );
    insta::assert_snapshot!(summary);
}

#[test]
fn s3_markdown_report() {
    let md = render_markdown_with(&[hci()], &ReportOptions::default());
    assert!(md.contains("\nAgainst the rated maximum:\n"), "{md}");
    assert!(
        md.contains("| randrw | 4KiB, 90% reads  | node n01      |"),
        "{md}"
    );
    insta::assert_snapshot!(md);
}

#[test]
fn s5_text_summary_gives_the_matrix_per_operation() {
    for label in ["hdd-only", "optane-ssd"] {
        let summary = text::render_summary(&zfs(label), Units::Binary);
        let sync = &summary[summary.find("\nsync-seq-write (rows").unwrap()..];
        // 128 KiB at 64 processes: 3,000 x 6 operations of 128 KiB a second, slowed by
        // O_SYNC to 12 % on disks alone, 80 % with the ZIL on Optane.
        let cell = if label == "hdd-only" {
            "270 MiB/s"
        } else {
            "1.76 GiB/s"
        };
        assert_eq!(row(sync, "64")[3], cell, "{label}:\n{summary}");
        insta::assert_snapshot!(label, summary);
    }
}

#[test]
fn s5_markdown_report() {
    let runs = [zfs("optane-ssd"), zfs("hdd-only")];
    let md = render_markdown_with(&runs, &ReportOptions::default());
    // One table per configuration and operation, processes down, block sizes across.
    assert!(md.contains("\nsync-rand-write · hdd-only:\n"), "{md}");
    let tables = md
        .lines()
        .filter(|l| l.starts_with("| Threads") && l.contains("mean latency"))
        .count();
    assert_eq!(tables, 12, "{md}");
    assert!(
        !md.contains("[block_size="),
        "no table per block size:\n{md}"
    );
    insta::assert_snapshot!(md);
}
