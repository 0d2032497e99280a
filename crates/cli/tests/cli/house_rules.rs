//! The house rules of /work/shared/DESIGN.md that a reading of the source can check, run
//! by every `cargo test`: no import circle among a crate's top-level modules, the engine's
//! public items as docs/architecture.md lists them, no function in crates/*/src over
//! 100 lines, and a thin command layer (cli/src/commands: a line ceiling, no function over
//! 60 lines). Each known exception is listed with its reason and may only shrink.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn crates_dir() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).to_path_buf()
}

/// Every crate's name (its directory under crates/) with a src/ directory.
fn crate_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(crates_dir())
        .expect("crates/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("src").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The .rs files under `dir`, sorted, relative to it.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("a source directory").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Rust source without its comments, string and character literals (each replaced by an
/// empty one), newlines kept: what is left are the code's words, paths and braces.
fn code_of(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !(b[i - 1].is_alphanumeric() || b[i - 1] == '_'))
            && raw_string_end(&b, i).is_some()
        {
            let end = raw_string_end(&b, i).expect("checked");
            out.push_str("\"\"");
            out.extend(b[i..end].iter().filter(|c| **c == '\n'));
            i = end;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if b.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' && char_literal_len(&b, i).is_some() {
            out.push_str("' '");
            i += char_literal_len(&b, i).expect("checked");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The index after a raw string starting at `i` (`r"..."`, `r#"..."#`), if it is one.
fn raw_string_end(b: &[char], i: usize) -> Option<usize> {
    let mut j = i + 1;
    let mut hashes = 0;
    while b.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if b.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < b.len() {
        if b[j] == '"' && (1..=hashes).all(|k| b.get(j + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    None
}

/// The length of a character literal at `i` ('x', '\n', '\u{..}'), None for a lifetime.
fn char_literal_len(b: &[char], i: usize) -> Option<usize> {
    if b.get(i + 1) == Some(&'\\') {
        (i + 2..b.len().min(i + 12))
            .find(|&j| b[j] == '\'')
            .map(|j| j + 1 - i)
    } else if b.get(i + 2) == Some(&'\'') {
        Some(3)
    } else {
        None
    }
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first name of each item of a path that follows a `crate::` or root `super::`:
/// `worker` of `worker::Flow`, `a` and `b` of `{a::X, b}`.
fn first_names(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident_at(rest).to_string()];
    };
    let (mut depth, mut names, mut at_item) = (0, Vec::new(), true);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item = true,
            c if at_item && (c.is_alphanumeric() || c == '_') => {
                names.push(ident_at(&group[i..]).to_string());
                at_item = false;
            }
            _ => {}
        }
    }
    names
}

/// The top-level modules of a crate's src/ (files and directories beside lib.rs or
/// main.rs) and which of them each one names, through `crate::` or a `super::` that
/// reaches the crate root. Test code (`*tests.rs`, `#[cfg(test)] mod`) is left out: it
/// may reach anywhere.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files: Vec<PathBuf> = rust_files(src)
        .into_iter()
        .filter(|f| !f.starts_with("bin"))
        .collect();
    let top = |f: &Path| -> String {
        let first = f.components().next().expect("a path");
        let name = first.as_os_str().to_string_lossy();
        name.strip_suffix(".rs").unwrap_or(&name).to_string()
    };
    let mut graph: BTreeMap<String, BTreeSet<String>> = files
        .iter()
        .map(|f| top(f))
        .filter(|m| m != "lib" && m != "main")
        .map(|m| (m, BTreeSet::new()))
        .collect();
    for f in &files {
        let name = f
            .file_name()
            .expect("a file")
            .to_string_lossy()
            .into_owned();
        let module = top(f);
        if module == "lib" || module == "main" || name.ends_with("tests.rs") {
            continue;
        }
        let code = without_test_modules(&code_of(
            &std::fs::read_to_string(src.join(f)).expect("a source file"),
        ));
        // Levels below the crate root: src/a.rs is 0, src/a/b.rs 1, src/a/mod.rs 0.
        let depth = f.components().count() - 1 - usize::from(name == "mod.rs");
        let root_super = "super::".repeat(depth + 1);
        let mut named = BTreeSet::new();
        for (i, _) in code.match_indices("crate::") {
            if i > 0 && code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            named.extend(first_names(&code[i + "crate::".len()..]));
        }
        for (i, _) in code.match_indices(&root_super) {
            let before = &code[..i];
            let after = &code[i + root_super.len()..];
            if before.ends_with("::") || after.starts_with("super::") {
                continue;
            }
            named.extend(first_names(after));
        }
        let edges = graph.get_mut(&module).expect("a module");
        edges.extend(
            named
                .into_iter()
                .filter(|n| *n != module && n != "lib" && n != "main"),
        );
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for edges in graph.values_mut() {
        edges.retain(|n| modules.contains(n));
    }
    graph
}

/// `code` without the bodies of `#[cfg(test)] mod name { ... }` (a `mod name;` of a test
/// file is skipped with the file).
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let after = &out[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let skipped = after.len() - trimmed.len();
        let Some(body) = trimmed
            .strip_prefix("mod ")
            .and_then(|m| m.find(['{', ';']))
        else {
            out.replace_range(at..at + "#[cfg(test)]".len(), "");
            continue;
        };
        let start = at + "#[cfg(test)]".len() + skipped + "mod ".len() + body;
        let end = if out[start..].starts_with(';') {
            start + 1
        } else {
            matching_brace(&out, start).map_or(out.len(), |e| e + 1)
        };
        let newlines = out[at..end].matches('\n').count();
        out.replace_range(at..end, &"\n".repeat(newlines));
    }
    out
}

/// The index of the brace closing the one at `open`.
fn matching_brace(code: &str, open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The circles of `graph`: its strongly connected parts of more than one module.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| -> BTreeSet<String> {
        let (mut seen, mut stack) = (BTreeSet::new(), vec![from.clone()]);
        while let Some(m) = stack.pop() {
            for n in &graph[&m] {
                if seen.insert(n.clone()) {
                    stack.push(n.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for m in graph.keys() {
        let part: BTreeSet<String> = reached[m]
            .iter()
            .filter(|n| *n == m || reached[*n].contains(m))
            .cloned()
            .collect();
        if part.len() > 1 && !out.contains(&part) {
            out.push(part);
        }
    }
    out
}

/// Import circles known today, by crate, each with why it is still there. A circle must
/// be one of these or part of one; an entry whose circle is gone must be removed.
const KNOWN_CIRCLES: &[(&str, &[&str], &str)] = &[];

#[test]
fn no_crate_has_an_import_circle_among_its_modules() {
    let mut found = Vec::new();
    for name in crate_names() {
        let graph = module_graph(&crates_dir().join(&name).join("src"));
        for circle in circles(&graph) {
            let known = KNOWN_CIRCLES.iter().find(|(c, modules, _)| {
                *c == name && circle.iter().all(|m| modules.contains(&m.as_str()))
            });
            match known {
                Some(k) => found.push(k.1),
                None => panic!(
                    "an import circle among crates/{name}/src's modules {circle:?}: \
                     {:?}",
                    circle
                        .iter()
                        .map(|m| format!("{m} -> {:?}", graph[m].intersection(&circle)))
                        .collect::<Vec<_>>()
                ),
            }
        }
    }
    for (name, modules, why) in KNOWN_CIRCLES {
        assert!(
            found.contains(modules),
            "crates/{name}'s circle {modules:?} ({why}) is gone: remove it from KNOWN_CIRCLES"
        );
    }
}

#[test]
fn the_circle_finder_sees_a_circle_through_crate_and_super_paths() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", code_of("use crate::{b::X, c};\n// crate::d\n")),
        (
            "b",
            code_of("fn f() { let s = \"crate::d\"; crate::a::g() }"),
        ),
        ("c", String::new()),
        ("d", String::new()),
    ]
    .iter()
    .map(|(m, code)| {
        let named: BTreeSet<String> = code
            .match_indices("crate::")
            .flat_map(|(i, _)| first_names(&code[i + 7..]))
            .collect();
        (m.to_string(), named)
    })
    .collect();
    assert_eq!(graph["a"], BTreeSet::from(["b".into(), "c".into()]));
    assert_eq!(graph["b"], BTreeSet::from(["a".into()]));
    let found = circles(&graph);
    assert_eq!(
        found,
        vec![BTreeSet::from(["a".to_string(), "b".to_string()])]
    );
    let src = crates_dir().join("engine/src");
    let engine = module_graph(&src);
    assert!(engine["worker"].contains("plan"), "{:?}", engine["worker"]);
    assert!(
        engine["worker"].contains("recorder"),
        "{:?}",
        engine["worker"]
    );
    // The plan holds core's fio settings, no worker type (#51's circle).
    assert!(!engine["plan"].contains("worker"), "{:?}", engine["plan"]);
}

/// `pub mod x;` and `pub use a::{B, C};` of a lib.rs as "mod x", "use a::B", "use a::C".
fn public_items(decls: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for d in decls.split(';') {
        let d = d.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(m) = d.strip_prefix("mod ") {
            out.insert(format!("mod {m}"));
        } else if let Some(path) = d.strip_prefix("use ") {
            match path.split_once("::{") {
                Some((head, rest)) => {
                    for item in rest.trim_end_matches('}').split(',') {
                        let item = item.trim();
                        if !item.is_empty() {
                            out.insert(format!("use {head}::{item}"));
                        }
                    }
                }
                None => {
                    out.insert(format!("use {path}"));
                }
            }
        }
    }
    out
}

#[test]
fn the_engines_public_items_are_the_ones_docs_architecture_lists() {
    let lib = std::fs::read_to_string(crates_dir().join("engine/src/lib.rs")).expect("lib.rs");
    let code = code_of(&lib);
    // Declarations may span lines (`pub use data::{` ... `};`): each is taken whole,
    // from its line's start to its semicolon.
    let decls: String = code
        .split(';')
        .filter_map(|d| {
            let d = d.trim_start();
            (d.starts_with("pub mod ") || d.starts_with("pub use "))
                .then(|| format!("{};", d.trim_start_matches("pub ")))
        })
        .collect();
    let in_lib = public_items(&decls);
    assert!(in_lib.contains("use error::EngineError"), "{in_lib:?}");
    let doc = std::fs::read_to_string(crates_dir().join("../docs/architecture.md"))
        .expect("docs/architecture.md");
    let listed: String = doc
        .lines()
        .skip_while(|l| *l != "## The engine's public items")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| l.strip_prefix("- `"))
        .filter_map(|l| l.split('`').next())
        .map(|item| format!("{item};"))
        .collect();
    let in_doc = public_items(&listed);
    assert_eq!(
        in_lib.difference(&in_doc).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "public in crates/engine/src/lib.rs, not listed in docs/architecture.md's \
         \"The engine's public items\""
    );
    assert_eq!(
        in_doc.difference(&in_lib).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "listed in docs/architecture.md, not public in crates/engine/src/lib.rs"
    );
}

mod allowances;
mod lengths;
mod over_80;
mod thin_cli;
