//! No `too_many_arguments` allowance anywhere in the workspace's Rust (sources, tests,
//! benches) and no clippy.toml raising its threshold: a function that takes more than
//! clippy's seven values takes an argument struct instead (issue #51).

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
    for name in ["clippy.toml", ".clippy.toml"] {
        let text = std::fs::read_to_string(root.join(name)).unwrap_or_default();
        if text.contains("too-many-arguments-threshold") {
            found.push(format!(
                "{name} sets too-many-arguments-threshold: keep clippy's 7"
            ));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn an_allowance_is_seen_in_code_and_not_in_comments_or_strings() {
    let code = code_of(
        "// #[allow(clippy::too_many_arguments)]\nlet s = \"clippy::too_many_arguments\";\n\
         fn no_too_many_arguments() {}\n#[allow(clippy::too_many_arguments)]\nfn f() {}\n",
    );
    assert_eq!(allowances(&code), vec![4]);
}
