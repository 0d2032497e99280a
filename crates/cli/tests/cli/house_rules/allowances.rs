//! No `too_many_arguments` allowance anywhere in the workspace's Rust (sources, tests,
//! benches), and the workspace's clippy.toml holds clippy's threshold at six: a function
//! that takes more than six values takes an argument struct instead (issue #51).

use super::{code_of, crates_dir, rust_files};

/// Where `code` (comments and literals removed) names the lint, by line.
fn allowances(code: &str) -> Vec<usize> {
    code.lines()
        .enumerate()
        .filter(|(_, l)| l.contains("clippy::too_many_arguments"))
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn no_function_is_allowed_too_many_arguments() {
    let mut found = Vec::new();
    let crates = crates_dir();
    for f in rust_files(&crates) {
        if f.components().any(|c| c.as_os_str() == "target") {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(crates.join(&f)).expect("source"));
        for line in allowances(&code) {
            found.push(format!(
                "crates/{}:{line}: allows clippy::too_many_arguments; pass an argument struct",
                f.display()
            ));
        }
    }
    let root = crates.join("..");
    if let Ok(text) = std::fs::read_to_string(root.join(".clippy.toml")) {
        // clippy reads .clippy.toml before clippy.toml: it would hide the threshold.
        if text.contains("too-many-arguments-threshold") {
            found.push(
                ".clippy.toml sets too-many-arguments-threshold: set it in clippy.toml".into(),
            );
        }
    }
    let text = std::fs::read_to_string(root.join("clippy.toml")).unwrap_or_default();
    match threshold(&text) {
        Some(n) if n <= MOST_ARGUMENTS => {}
        Some(n) => found.push(format!(
            "clippy.toml: too-many-arguments-threshold = {n}; keep it at {MOST_ARGUMENTS} or below"
        )),
        None => found.push(format!(
            "clippy.toml sets no too-many-arguments-threshold: clippy's own 7 lets a function take seven values; set it to {MOST_ARGUMENTS}"
        )),
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The most values a function may take (issue #51).
const MOST_ARGUMENTS: u64 = 6;

/// The `too-many-arguments-threshold` a clippy.toml sets, if it sets one.
fn threshold(toml: &str) -> Option<u64> {
    toml.lines()
        .map(|l| l.split('#').next().unwrap_or_default())
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == "too-many-arguments-threshold")
        .and_then(|(_, v)| v.trim().parse().ok())
}

#[test]
fn the_threshold_is_read_from_clippy_toml() {
    assert_eq!(threshold("too-many-arguments-threshold = 6\n"), Some(6));
    assert_eq!(threshold("# too-many-arguments-threshold = 6\n"), None);
    assert_eq!(
        threshold("msrv = \"1.85\"\ntoo-many-arguments-threshold=7 # wider\n"),
        Some(7)
    );
    assert_eq!(threshold(""), None);
}

#[test]
fn an_allowance_is_seen_in_code_and_not_in_comments_or_strings() {
    let code = code_of(
        "// #[allow(clippy::too_many_arguments)]\nlet s = \"clippy::too_many_arguments\";\n\
         fn no_too_many_arguments() {}\n#[allow(clippy::too_many_arguments)]\nfn f() {}\n",
    );
    assert_eq!(allowances(&code), vec![4]);
}
