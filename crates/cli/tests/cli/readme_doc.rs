//! The README's command table reads at a glance: one short line per command, each linking
//! to its section of docs/commands.md, where the options it is used with are listed
//! (with links to the documents that tell more, which must exist).

use std::path::Path;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

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
fn readme_command_table_has_one_short_line_per_command_linked_to_its_options() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let commands = std::fs::read_to_string(repo().join("docs/commands.md")).expect("commands");
    let sections: Vec<String> = commands
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(anchor)
        .collect();
    let rows: Vec<&str> = readme
        .lines()
        .skip_while(|l| *l != "| command | what it does |")
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect();
    assert!(rows.len() >= 20, "{} commands", rows.len());
    for row in &rows {
        assert!(row.chars().count() <= 120, "a long row: {row}");
        let target = row
            .split("](docs/commands.md#")
            .nth(1)
            .and_then(|s| s.split(')').next())
            .unwrap_or_else(|| panic!("no link to docs/commands.md: {row}"));
        assert!(sections.iter().any(|s| s == target), "#{target}: {row}");
    }
    assert_eq!(sections.len(), rows.len(), "a section per command");
    // The options the table used to list are in the sections, and their links resolve.
    for option in [
        "--rw",
        "--rate-iops",
        "--files-per-dir",
        "--slo",
        "--ops",
        "--rated",
    ] {
        assert!(commands.contains(option), "{option} in docs/commands.md");
    }
    for link in commands.split("](").skip(1) {
        let file = link.split([')', '#']).next().unwrap_or_default();
        if file.ends_with(".md") {
            assert!(repo().join("docs").join(file).exists(), "docs/{file}");
        }
    }
}
