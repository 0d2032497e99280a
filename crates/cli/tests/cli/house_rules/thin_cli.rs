//! cli is arguments and output only (issue #51, docs/architecture.md "What cli holds"):
//! a command file parses its arguments, calls one suite or engine entry point and hands
//! the outcome to a renderer in `report`. Two measures keep it so: a ceiling on the
//! production lines under cli/src/commands, which may only come down, and no function
//! there over 60 lines but the listed ones, each with a ceiling of its own.

use std::collections::BTreeMap;

use super::lengths::{against_ceilings, function_lengths};
use super::{code_of, crates_dir, rust_files, without_test_modules};

/// Production lines under cli/src/commands today (code without comments, blank lines and
/// test modules). A change that moves a procedure or a renderer out lowers it; none may
/// raise it. More than [`SLACK`] below it, the test asks for the ceiling to follow.
const COMMAND_LINES: usize = 4697;
const SLACK: usize = 200;

/// Functions under cli/src/commands of 61 lines or more today (crate-relative file, name,
/// lines now): each may shrink, none may grow past its figure, and one of 60 lines or
/// fewer leaves the list.
const OVER_60: &[(&str, &str, usize)] = &[];

/// The production code of every file under cli/src/commands, by crate-relative path.
fn command_files() -> Vec<(String, String)> {
    let dir = crates_dir().join("cli/src/commands");
    rust_files(&dir)
        .into_iter()
        .filter(|f| {
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
            !name.is_some_and(|n| n == "tests.rs" || n.ends_with("_tests.rs"))
        })
        .map(|f| {
            let src = std::fs::read_to_string(dir.join(&f)).expect("a command file");
            let file = format!("cli/src/commands/{}", f.display());
            (file, without_test_modules(&code_of(&src)))
        })
        .collect()
}

fn production_lines(code: &str) -> usize {
    code.lines().filter(|l| !l.trim().is_empty()).count()
}

#[test]
fn cli_commands_stay_under_their_line_ceiling() {
    let lines: usize = command_files()
        .iter()
        .map(|(_, code)| production_lines(code))
        .sum();
    assert!(
        lines <= COMMAND_LINES,
        "cli/src/commands holds {lines} production lines, over its ceiling of {COMMAND_LINES}: \
         move procedures to suites and renderers to report (docs/architecture.md)"
    );
    assert!(
        lines + SLACK >= COMMAND_LINES,
        "cli/src/commands holds {lines} production lines, more than {SLACK} under its \
         ceiling of {COMMAND_LINES}: lower COMMAND_LINES to {lines}"
    );
}

#[test]
fn no_command_function_is_over_60_lines_but_the_listed_ones() {
    let mut long = BTreeMap::new();
    for (file, code) in command_files() {
        for (function, lines) in function_lengths(&code) {
            if lines > 60 {
                let at = long.entry((file.clone(), function)).or_insert(0);
                *at = lines.max(*at);
            }
        }
    }
    let wrong = against_ceilings(&long, OVER_60, 60, "OVER_60");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn production_lines_leave_out_comments_blank_lines_and_tests() {
    let code = without_test_modules(&code_of(
        "//! doc\nfn a() {\n\n    // note\n    1\n}\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n",
    ));
    assert_eq!(production_lines(&code), 3);
}
