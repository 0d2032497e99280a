//! No function in crates/*/src over 100 lines but the listed ones, each with its reason
//! and its length as a ceiling that may only come down (DESIGN.md: split a function near
//! 60 lines).

use std::collections::BTreeMap;

use super::{code_of, crate_names, crates_dir, ident_at, matching_brace, rust_files};

/// Every function of `code` (comments and literals removed) by name, with its length in
/// lines from `fn` to its closing brace; a bodiless declaration has none.
pub(super) fn function_lengths(code: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        if at > 0 && code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name = ident_at(&code[at + 3..]);
        if name.is_empty() {
            continue;
        }
        let rest = &code[at..];
        let Some(open) = rest.find(['{', ';']) else {
            continue;
        };
        if rest[open..].starts_with(';') {
            continue;
        }
        let Some(close) = matching_brace(code, at + open) else {
            continue;
        };
        let lines = code[at..=close].matches('\n').count() + 1;
        out.push((name.to_string(), lines));
    }
    out
}

/// Functions over 100 lines today (crate-relative file, name, lines now, why): each may
/// shrink, none may grow past its figure, and one that is 100 lines or fewer leaves the
/// list. Tables (a fixture machine, a case list, a command table) are listed as such.
pub(super) const LONG_FUNCTIONS: &[(&str, &str, usize, &str)] = &[
    (
        "compat/src/io500/commands.rs",
        "command_line",
        184,
        "a table: io500's command lines, one per phase",
    ),
    (
        "compat/src/fio/output/text.rs",
        "job",
        161,
        "fio's normal output of a job, line by line",
    ),
    (
        "compat/src/ior_plan.rs",
        "plan_ior",
        148,
        "a table of IOR's options",
    ),
    (
        "compat/src/fio/access.rs",
        "apply",
        144,
        "a table of fio's access options",
    ),
    (
        "core/src/checkpoint.rs",
        "of",
        141,
        "a table: MLPerf's checkpoint shapes per model",
    ),
    (
        "compat/src/fio/plan_options_tests.rs",
        "file_options_are_taken_said_or_refused_in_one_line",
        131,
        "a test table of fio's file options",
    ),
    (
        "host/src/testing.rs",
        "machine",
        128,
        "a table: the fixture machine's inventory",
    ),
    (
        "compat/src/mdtest_front.rs",
        "plan_mdtest",
        126,
        "a table of mdtest's options",
    ),
    (
        "host/src/audit/tests.rs",
        "cases",
        112,
        "a test table of tuning cases",
    ),
    (
        "compat/src/io500/parse_ini.rs",
        "parse_ini",
        107,
        "a table of io500's ini keys",
    ),
];

/// Every function of crates/*/src over `limit` lines, by (crate-relative file, name), the
/// longest of a name in a file.
pub(super) fn functions_over(limit: usize) -> BTreeMap<(String, String), usize> {
    let mut long = BTreeMap::new();
    for name in crate_names() {
        let src = crates_dir().join(&name).join("src");
        for f in rust_files(&src) {
            let code = code_of(&std::fs::read_to_string(src.join(&f)).expect("source"));
            for (function, lines) in function_lengths(&code) {
                if lines > limit {
                    let file = format!("{name}/src/{}", f.display());
                    let at = long.entry((file, function)).or_insert(0);
                    *at = lines.max(*at);
                }
            }
        }
    }
    long
}

/// What is wrong between the functions found `long` (over `limit` lines) and the ones a
/// list allows with their ceilings: one unlisted, one grown past its ceiling, one listed
/// that is no longer that long (`list` names the list to edit).
pub(super) fn against_ceilings(
    long: &BTreeMap<(String, String), usize>,
    allowed: &[(&str, &str, usize)],
    limit: usize,
    list: &str,
) -> Vec<String> {
    let mut wrong = Vec::new();
    for ((file, function), lines) in long {
        match allowed.iter().find(|(f, n, _)| f == file && n == function) {
            None => wrong.push(format!(
                "crates/{file}: {function} is {lines} lines (at most {limit}; split it at its steps)"
            )),
            Some((_, _, most)) if lines > most => wrong.push(format!(
                "crates/{file}: {function} grew to {lines} lines from {most}"
            )),
            Some(_) => {}
        }
    }
    for (file, function, most) in allowed {
        if !long.contains_key(&(file.to_string(), function.to_string())) {
            wrong.push(format!(
                "crates/{file}: {function} (listed at {most} lines) is {limit} lines or fewer \
                 now, or gone: remove it from {list}"
            ));
        }
    }
    wrong
}

#[test]
fn no_function_in_crates_src_is_over_100_lines_but_the_listed_ones() {
    let allowed: Vec<(&str, &str, usize)> = LONG_FUNCTIONS
        .iter()
        .map(|(f, n, l, _)| (*f, *n, *l))
        .collect();
    let wrong = against_ceilings(&functions_over(100), &allowed, 100, "LONG_FUNCTIONS");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn function_lengths_count_from_fn_to_the_closing_brace() {
    let code = code_of(
        "fn a() {\n    let s = \"}\";\n    let c = '}';\n}\n\ntrait T {\n    fn b(&self);\n}\n\
         pub(crate) fn c<'a>(x: &'a str) -> &'a str {\n    // }\n    x\n}\n",
    );
    assert_eq!(
        function_lengths(&code),
        vec![("a".to_string(), 4), ("c".to_string(), 4)]
    );
}
