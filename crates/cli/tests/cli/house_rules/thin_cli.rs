//! cli is arguments and output only (issue #51, docs/architecture.md "What cli holds"):
//! a command file parses its arguments, calls one suite or engine entry point and hands
//! the outcome to a renderer in `report`. Two measures keep it so: a ceiling on the
//! production lines under cli/src/commands, which may only come down, and no function
//! there over 60 lines (DESIGN.md: split a function near 60 lines).

use super::lengths::function_lengths;
use super::{code_of, crates_dir, rust_files, without_test_modules};

/// Production lines under cli/src/commands today (code without comments, blank lines and
/// test modules). A change that moves a procedure or a renderer out lowers it; none may
/// raise it. More than [`SLACK`] below it, the test asks for the ceiling to follow.
const COMMAND_LINES: usize = 4682;
const SLACK: usize = 200;

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

/// No command function is over 60 lines: the last exceptions, once listed here with
/// ceilings of their own, were split under #51, and none may come back.
#[test]
fn no_command_function_is_over_60_lines() {
    let mut long = Vec::new();
    for (file, code) in command_files() {
        for (function, lines) in function_lengths(&code) {
            if lines > 60 {
                long.push(format!(
                    "{file}: fn {function} is {lines} lines, over 60: split it at its natural \
                     steps, or move the procedure to suites (docs/architecture.md)"
                ));
            }
        }
    }
    assert!(long.is_empty(), "{}", long.join("\n"));
}

#[test]
fn production_lines_leave_out_comments_blank_lines_and_tests() {
    let code = without_test_modules(&code_of(
        "//! doc\nfn a() {\n\n    // note\n    1\n}\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n",
    ));
    assert_eq!(production_lines(&code), 3);
}
