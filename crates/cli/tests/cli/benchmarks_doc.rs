//! BENCHMARKS.md opens with one table of where iolab stands against each peer, one short
//! line per comparison (what, ratio, spread, date, a link to a section of the file that
//! exists), and a chart of every ratio; both are drawn by bench/summary.py from
//! bench/summary.json, and what the files hold is what the script draws from the data
//! (the investigations below stay the record).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// GitHub's anchor for a heading: lower case, spaces to hyphens, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// What bench/summary.py prints for `--print WHAT`.
fn drawn(what: &str) -> String {
    let out = Command::new("python3")
        .arg(repo().join("bench/summary.py"))
        .args(["--print", what])
        .output()
        .expect("python3 runs bench/summary.py");
    assert!(
        out.status.success(),
        "bench/summary.py --print {what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The lines between the script's markers in BENCHMARKS.md.
fn table_block(text: &str) -> String {
    let begin = "<!-- summary.py: table begins -->\n";
    let end = "<!-- summary.py: table ends -->";
    let start = text.find(begin).expect("the table's begin marker") + begin.len();
    let stop = text.find(end).expect("the table's end marker");
    text[start..stop].to_string()
}

#[test]
fn benchmarks_opens_with_a_table_of_latest_ratios_linked_to_their_sections() {
    let text = std::fs::read_to_string(repo().join("BENCHMARKS.md")).expect("BENCHMARKS.md");
    let headings: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("## ") || l.starts_with("### "))
        .map(|l| l.trim_start_matches('#').trim())
        .collect();
    assert_eq!(headings[0], "Where iolab stands today", "the first section");
    let anchors: BTreeSet<String> = headings.iter().map(|h| anchor(h)).collect();
    let block = table_block(&text);
    // Reference links below the table: `[key]: #anchor`.
    let targets: BTreeMap<&str, &str> = block
        .lines()
        .filter_map(|l| l.strip_prefix('[')?.split_once("]: #"))
        .collect();
    let rows: Vec<&str> = block
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2)
        .collect();
    assert!(rows.len() >= 20, "{} rows", rows.len());
    for row in &rows {
        assert!(
            row.chars().count() <= 100,
            "a row longer than a screen: {row}"
        );
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 4, "{row}");
        let (what, ratio, date) = (cells[0], cells[1], cells[3]);
        assert!(ratio.chars().any(|c| c.is_ascii_digit()), "{row}");
        let d: Vec<&str> = date.split('-').collect();
        assert!(
            d.len() == 3 && d.iter().all(|p| p.parse::<u32>().is_ok()),
            "date {date}: {row}"
        );
        let key = what
            .rsplit_once("][")
            .and_then(|(_, k)| k.strip_suffix(']'))
            .unwrap_or_else(|| panic!("no link to a section: {row}"));
        let target = targets
            .get(key)
            .unwrap_or_else(|| panic!("[{key}] has no target: {row}"));
        assert!(anchors.contains(*target), "#{target} is no section: {row}");
    }
    assert!(
        text.contains("![every ratio, its range and the tools' spread](bench/summary.svg)"),
        "the chart is shown under the heading"
    );
}

#[test]
fn the_summary_table_and_chart_are_what_the_script_draws_from_the_data() {
    let text = std::fs::read_to_string(repo().join("BENCHMARKS.md")).expect("BENCHMARKS.md");
    assert_eq!(
        table_block(&text),
        drawn("table"),
        "BENCHMARKS.md's table is not bench/summary.json's: run bench/summary.py"
    );
    let chart = std::fs::read_to_string(repo().join("bench/summary.svg")).expect("summary.svg");
    assert_eq!(
        chart,
        drawn("svg"),
        "bench/summary.svg is not bench/summary.json's: run bench/summary.py"
    );
    // One row and one dot or bar per entry of the data file.
    let entries = std::fs::read_to_string(repo().join("bench/summary.json")).expect("json");
    let n = entries.matches("\"what\":").count();
    let rows = table_block(&text)
        .lines()
        .filter(|l| l.starts_with("| ["))
        .count();
    assert_eq!(rows, n, "a table row per entry");
    assert!(
        chart.matches("text-anchor=\"end\"").count() == n,
        "a chart row per entry"
    );
}
