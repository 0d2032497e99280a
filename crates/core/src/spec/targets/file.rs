//! Targets files: [`parse_targets`] reads a list of [`TargetEntry`] from TOML
//! (`[[target]]` tables) or CSV (a header line naming the columns id, node, path and
//! optionally rated_mbps or rated_iops). Every error is one line naming the file and
//! line: "targets.csv:7: rated_mbps 'fast' is not a number".

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::{Rated, RatedUnit, TargetEntry};
use crate::error::SpecError;

/// Parses the text of a targets file; `name` (the file's name as the user gave it) picks
/// the format by its extension (.toml or .csv, else by content) and prefixes errors.
pub fn parse_targets(name: &str, text: &str) -> Result<Vec<TargetEntry>, SpecError> {
    // Excel's "CSV UTF-8" (and some editors) open the file with a byte-order mark.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lower = name.to_ascii_lowercase();
    let toml = if lower.ends_with(".toml") {
        true
    } else if lower.ends_with(".csv") {
        false
    } else {
        // A TOML targets file opens with a [[target]] table or a key = value line.
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .is_some_and(|l| l.starts_with('[') || l.contains('='))
    };
    let rows = if toml {
        parse_toml(name, text)?
    } else {
        parse_csv(name, text)?
    };
    check_rows(name, rows)
}

/// One row as read, with the line it came from.
struct Row {
    line: usize,
    id: String,
    node: String,
    path: String,
    rated_mbps: Option<f64>,
    rated_iops: Option<f64>,
}

fn at(name: &str, line: usize, reason: impl Into<String>) -> SpecError {
    SpecError::new(format!("{name}:{line}"), reason)
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// A target id in TOML may be written as a string or a whole number (`id = 19`); anything
/// else is refused in one line naming `id`.
fn toml_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    struct Id;
    impl serde::de::Visitor<'_> for Id {
        type Value = String;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("id as a string (id = \"nvme0\") or a whole number (id = 19)")
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<String, E> {
            Err(E::custom(format!(
                "id {v} is not a whole number; write the id as a string (id = \"{v}\") or a whole number (id = 19)"
            )))
        }
    }
    d.deserialize_any(Id)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlTarget {
    #[serde(deserialize_with = "toml_id")]
    id: String,
    #[serde(default)]
    node: String,
    path: String,
    rated_mbps: Option<f64>,
    rated_iops: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlFile {
    #[serde(default)]
    target: Vec<toml::Spanned<TomlTarget>>,
}

fn parse_toml(name: &str, text: &str) -> Result<Vec<Row>, SpecError> {
    let file: TomlFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        at(
            name,
            line,
            e.message().replace('\n', " ").trim().to_string(),
        )
    })?;
    Ok(file
        .target
        .into_iter()
        .map(|t| {
            let line = line_of(text, t.span().start);
            let t = t.into_inner();
            Row {
                line,
                id: t.id,
                node: t.node,
                path: t.path,
                rated_mbps: t.rated_mbps,
                rated_iops: t.rated_iops,
            }
        })
        .collect())
}

const COLUMNS: [&str; 5] = ["id", "node", "path", "rated_mbps", "rated_iops"];

fn parse_csv(name: &str, text: &str) -> Result<Vec<Row>, SpecError> {
    let mut header: Option<Vec<&'static str>> = None;
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields = split_csv(trimmed).map_err(|why| at(name, line, why))?;
        let Some(columns) = &header else {
            header = Some(csv_header(name, line, &fields)?);
            continue;
        };
        if fields.len() > columns.len() {
            return Err(at(
                name,
                line,
                format!(
                    "{} fields but the header names {} columns ({})",
                    fields.len(),
                    columns.len(),
                    columns.join(",")
                ),
            ));
        }
        let mut row = Row {
            line,
            id: String::new(),
            node: String::new(),
            path: String::new(),
            rated_mbps: None,
            rated_iops: None,
        };
        for (column, value) in columns.iter().zip(fields) {
            match *column {
                "id" => row.id = value,
                "node" => row.node = value,
                "path" => row.path = value,
                "rated_mbps" => row.rated_mbps = number(name, line, column, &value)?,
                _ => row.rated_iops = number(name, line, column, &value)?,
            }
        }
        rows.push(row);
    }
    Ok(rows)
}

fn csv_header(name: &str, line: usize, fields: &[String]) -> Result<Vec<&'static str>, SpecError> {
    let mut columns = Vec::new();
    for f in fields {
        let key = f.to_ascii_lowercase();
        let Some(known) = COLUMNS.iter().find(|c| **c == key) else {
            return Err(at(
                name,
                line,
                format!(
                    "unknown column '{f}'; the first line names the columns: id,node,path and optionally rated_mbps or rated_iops"
                ),
            ));
        };
        if columns.contains(known) {
            return Err(at(name, line, format!("column '{known}' is named twice")));
        }
        columns.push(*known);
    }
    for needed in ["id", "path"] {
        if !columns.contains(&needed) {
            return Err(at(
                name,
                line,
                format!(
                    "the header has no '{needed}' column; the first line names the columns, e.g. id,node,path,rated_mbps"
                ),
            ));
        }
    }
    Ok(columns)
}

fn number(name: &str, line: usize, column: &str, value: &str) -> Result<Option<f64>, SpecError> {
    if value.is_empty() {
        return Ok(None);
    }
    match value.parse::<f64>() {
        Ok(v) => Ok(Some(v)),
        Err(_) => Err(at(
            name,
            line,
            format!("{column} '{value}' is not a number"),
        )),
    }
}

/// Splits one CSV line into trimmed fields; a field may be "quoted" ("" is a quote).
fn split_csv(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err("a quoted field is not closed".to_string()),
                }
            }
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            if chars.peek().is_some_and(|c| *c != ',') {
                return Err("text after a quoted field; put the whole field in quotes".into());
            }
        } else {
            while let Some(c) = chars.peek().copied() {
                if c == ',' {
                    break;
                }
                field.push(c);
                chars.next();
            }
            field = field.trim().to_string();
        }
        fields.push(field);
        if chars.next().is_none() {
            return Ok(fields);
        }
    }
}

fn rated_of(name: &str, row: &Row) -> Result<Option<Rated>, SpecError> {
    let (value, unit, column) = match (row.rated_mbps, row.rated_iops) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(at(
                name,
                row.line,
                "rated_mbps and rated_iops are both given; rate a target by one of them",
            ));
        }
        (Some(v), None) => (v, RatedUnit::MegabytesPerSec, "rated_mbps"),
        (None, Some(v)) => (v, RatedUnit::Iops, "rated_iops"),
    };
    if !(value.is_finite() && value > 0.0) {
        return Err(at(
            name,
            row.line,
            format!("{column} {value} must be a positive number"),
        ));
    }
    Ok(Some(Rated { value, unit }))
}

fn check_rows(name: &str, rows: Vec<Row>) -> Result<Vec<TargetEntry>, SpecError> {
    if rows.is_empty() {
        return Err(SpecError::new(
            name,
            "lists no target; add [[target]] tables (TOML) or lines after the header (CSV)",
        ));
    }
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut entries = Vec::with_capacity(rows.len());
    for row in rows {
        if row.id.trim().is_empty() {
            return Err(at(name, row.line, "the target has no id"));
        }
        if row.path.trim().is_empty() {
            return Err(at(name, row.line, format!("target {} has no path", row.id)));
        }
        let key = (row.node.trim().to_string(), row.id.trim().to_string());
        if let Some(first) = seen.insert(key.clone(), row.line) {
            let on = if key.0.is_empty() {
                String::new()
            } else {
                format!(" on node {}", key.0)
            };
            return Err(at(
                name,
                row.line,
                format!(
                    "target {}{on} is listed twice (first at line {first})",
                    key.1
                ),
            ));
        }
        let rated = rated_of(name, &row)?;
        entries.push(TargetEntry {
            id: key.1,
            node: key.0,
            path: PathBuf::from(row.path.trim()),
            rated,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The examples docs/targets.md shows parse as it says: four targets each, rated.
    #[test]
    fn the_documented_examples_parse() {
        let doc = include_str!("../../../../../docs/targets.md");
        for (fence, name) in [("```toml\n", "targets.toml"), ("```csv\n", "targets.csv")] {
            let start = doc.find(fence).expect("an example") + fence.len();
            let text = &doc[start..start + doc[start..].find("```").unwrap()];
            let t = parse_targets(name, text).unwrap();
            assert_eq!(t.len(), 4, "{name}");
            assert!(t[0].rated.is_some(), "{name}");
        }
    }

    fn err(name: &str, text: &str) -> String {
        parse_targets(name, text).unwrap_err().to_string()
    }

    #[test]
    fn csv_with_header_comments_and_rated_figures() {
        let text = "# storage targets\nid,node,path,rated_mbps\n1,node001,/data/t1,5000\n\n2, node001 , \"/data/t 2\",\n";
        let t = parse_targets("targets.csv", text).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].id, "1");
        assert_eq!(t[0].node, "node001");
        assert_eq!(
            t[0].rated,
            Some(Rated {
                value: 5000.0,
                unit: RatedUnit::MegabytesPerSec
            })
        );
        assert_eq!(t[1].path, PathBuf::from("/data/t 2"));
        assert_eq!(t[1].rated, None);
        let iops =
            parse_targets("t.csv", "path,id,rated_iops\n/dev/nvme0n1,nvme0,750000\n").unwrap();
        assert_eq!(iops[0].rated.unwrap().unit, RatedUnit::Iops);
        assert_eq!(iops[0].node, "");
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_first_line() {
        let csv = parse_targets("j.csv", "\u{feff}id,node,path\n1,n1,/a\n").unwrap();
        assert_eq!((csv[0].id.as_str(), csv[0].node.as_str()), ("1", "n1"));
        let toml = "\u{feff}[[target]]\nid = 1\npath = \"/a\"\n";
        assert_eq!(parse_targets("j.toml", toml).unwrap()[0].id, "1");
        // Without an extension the content still decides.
        assert_eq!(parse_targets("j", toml).unwrap()[0].id, "1");
        assert_eq!(
            err("j.csv", "\u{feff}id,node,path\n1,n1,/a\n1,n1,/b\n"),
            "j.csv:3: target 1 on node n1 is listed twice (first at line 2)"
        );
    }

    #[test]
    fn csv_errors_name_file_and_line() {
        assert_eq!(
            err(
                "targets.csv",
                "id,node,path,rated_mbps\n1,n1,/a,1\n2,n1,/b,2\n3,n1,/c,3\n4,n1,/d,4\n5,n1,/e,5\n7,n1,/f,fast\n"
            ),
            "targets.csv:7: rated_mbps 'fast' is not a number"
        );
        assert_eq!(
            err("t.csv", "id,node,dir\n"),
            "t.csv:1: unknown column 'dir'; the first line names the columns: id,node,path and optionally rated_mbps or rated_iops"
        );
        assert!(
            err("t.csv", "id,node\n1,n\n").starts_with("t.csv:1: the header has no 'path' column")
        );
        assert_eq!(
            err("t.csv", "id,node,path\n1,n,/a,extra\n"),
            "t.csv:2: 4 fields but the header names 3 columns (id,node,path)"
        );
        assert_eq!(
            err("t.csv", "id,node,path\n1,n,/a\n1,n,/b\n"),
            "t.csv:3: target 1 on node n is listed twice (first at line 2)"
        );
        assert_eq!(
            err("t.csv", "id,path\n1,\n"),
            "t.csv:2: target 1 has no path"
        );
        assert_eq!(
            err("t.csv", "id,path,rated_mbps,rated_iops\n1,/a,5,6\n"),
            "t.csv:2: rated_mbps and rated_iops are both given; rate a target by one of them"
        );
        assert_eq!(
            err("t.csv", "id,path,rated_mbps\n1,/a,-5\n"),
            "t.csv:2: rated_mbps -5 must be a positive number"
        );
        assert_eq!(
            err("t.csv", "id,path\n1,\"/a\n"),
            "t.csv:2: a quoted field is not closed"
        );
        assert!(err("t.csv", "# nothing\nid,path\n").starts_with("t.csv: lists no target"));
    }

    #[test]
    fn toml_targets_with_numeric_or_string_ids() {
        let text = "[[target]]\nid = 19\nnode = \"node006\"\npath = \"/data/t19\"\nrated_mbps = 5000\n\n[[target]]\nid = \"nvme0\"\npath = \"/dev/nvme0n1\"\nrated_iops = 750000\n";
        let t = parse_targets("targets.toml", text).unwrap();
        assert_eq!(t[0].id, "19");
        assert_eq!(t[0].node, "node006");
        assert_eq!(t[1].node, "");
        assert_eq!(t[1].rated.unwrap().value, 750000.0);
        // Without an extension the content decides.
        assert_eq!(parse_targets("targets", text).unwrap(), t);
    }

    #[test]
    fn toml_errors_name_the_line() {
        let e = err(
            "t.toml",
            "[[target]]\nid = 1\npath = \"/a\"\n\n[[target]]\nid = 2\npath = \"/b\"\nrated = 5\n",
        );
        assert!(e.starts_with("t.toml:8: unknown field `rated`"), "{e}");
        assert!(!e.contains('\n'));
        let e = err(
            "t.toml",
            "[[target]]\nid = 1\npath = \"/a\"\nrated_mbps = \"fast\"\n",
        );
        assert!(e.starts_with("t.toml:4: "), "{e}");
        let e = err(
            "t.toml",
            "[[target]]\nid = 1\npath = \"/a\"\n[[target]]\nid = 1\npath = \"/b\"\n",
        );
        assert_eq!(e, "t.toml:4: target 1 is listed twice (first at line 1)");
        // An id is a string or a whole number, said in one line at the id's line.
        let e = err("d.toml", "[[target]]\nid = 1.5\npath = \"/a\"\n");
        assert_eq!(
            e,
            "d.toml:2: id 1.5 is not a whole number; write the id as a string (id = \"1.5\") or a whole number (id = 19)"
        );
        let e = err("d.toml", "[[target]]\nid = true\npath = \"/a\"\n");
        assert_eq!(
            e,
            "d.toml:2: invalid type: boolean `true`, expected id as a string (id = \"nvme0\") or a whole number (id = 19)"
        );
        let e = err("t.toml", "[[target]]\nid = 1\n");
        assert!(e.starts_with("t.toml:1: missing field `path`"), "{e}");
    }
}
