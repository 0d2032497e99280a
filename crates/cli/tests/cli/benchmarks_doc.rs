//! BENCHMARKS.md opens with one table of where iolab stands against each peer: every row
//! has its ratio, a date, the command that measured it and a link to a section of the
//! file that exists (the investigations below stay the record).

use std::collections::BTreeSet;

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

#[test]
fn benchmarks_opens_with_a_table_of_latest_ratios_linked_to_their_sections() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../BENCHMARKS.md");
    let text = std::fs::read_to_string(path).expect("BENCHMARKS.md");
    let headings: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("## ") || l.starts_with("### "))
        .map(|l| l.trim_start_matches('#').trim())
        .collect();
    assert_eq!(headings[0], "Where iolab stands today", "the first section");
    let anchors: BTreeSet<String> = headings.iter().map(|h| anchor(h)).collect();
    let rows: Vec<Vec<String>> = text
        .lines()
        .skip_while(|l| !l.starts_with("## Where iolab stands today"))
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            // Cells split on pipes that are not escaped (`\|` inside a command).
            let l = l.replace("\\|", "\u{0}");
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().replace('\u{0}', "|"))
                .collect()
        })
        .collect();
    assert!(rows.len() >= 20, "{} rows", rows.len());
    for row in &rows {
        assert_eq!(row.len(), 7, "{row:?}");
        let (ratio, date, command, section) = (&row[2], &row[4], &row[5], &row[6]);
        assert!(ratio.chars().any(|c| c.is_ascii_digit()), "{row:?}");
        let d: Vec<&str> = date.split('-').collect();
        assert!(
            d.len() == 3 && d.iter().all(|p| p.parse::<u32>().is_ok()),
            "date {date}: {row:?}"
        );
        assert!(
            command.contains("bench/") || command == "the same",
            "command: {row:?}"
        );
        let target = section
            .split("](#")
            .nth(1)
            .and_then(|s| s.strip_suffix(')'))
            .unwrap_or_else(|| panic!("no link to a section: {row:?}"));
        assert!(anchors.contains(target), "#{target} is no section: {row:?}");
    }
}
