//! The names a study file may use and where they are: every option of a phase kind (its
//! spec's fields and flags), the nearest known name to a typo, and the line of a key in
//! the file's text, for one-line errors that name the line.

use serde_json::Value;

use crate::spec::{DataSpec, MetaSpec, S3Spec};

/// The known name nearest to `key` by edit distance, when it is near enough to be a typo.
pub(super) fn closest<'a>(key: &str, known: &'a [String]) -> Option<&'a str> {
    let limit = (key.chars().count() / 3).max(2);
    known
        .iter()
        .map(|k| (edit_distance(key, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// Levenshtein distance over characters.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The 1-based line of byte offset `at` in `text`.
pub(super) fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// The line where `key` is assigned (`key = ...`, also inside inline tables).
pub(super) fn find_key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            !l.starts_with('#')
                && l.match_indices(key).any(|(i, _)| {
                    let before = l[..i].chars().last();
                    let after = l[i + key.len()..].trim_start();
                    before.is_none_or(|c| c == '{' || c == ',' || c == ' ')
                        && after.starts_with('=')
                })
        })
        .map(|i| i + 1)
}

/// Option names of one phase kind.
pub(super) fn options_of(kind: &str) -> Vec<String> {
    let (value, flags) = match kind {
        "meta" => (
            serde_json::to_value(MetaSpec::default()),
            <MetaSpec as clap::Args>::augment_args(clap::Command::new("iolab")),
        ),
        "s3" => (
            serde_json::to_value(S3Spec::default()),
            <S3Spec as clap::Args>::augment_args(clap::Command::new("iolab")),
        ),
        _ => (
            serde_json::to_value(DataSpec::default()),
            <DataSpec as clap::Args>::augment_args(clap::Command::new("iolab")),
        ),
    };
    // A default spec leaves out the options that are not set (skip_serializing_if):
    // the flags name those.
    let mut keys: Vec<String> = match value.unwrap_or_default() {
        Value::Object(m) => m.keys().cloned().collect(),
        _ => Vec::new(),
    };
    for a in flags.get_arguments() {
        let id = a.get_id().to_string();
        if !keys.contains(&id) {
            keys.push(id);
        }
    }
    keys
}

/// Option names some phase kind accepts.
pub(super) fn known_options() -> Vec<String> {
    let mut keys = options_of("data");
    keys.extend(options_of("meta"));
    keys.extend(options_of("s3"));
    keys
}
