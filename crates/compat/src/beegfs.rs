//! Reading BeeGFS StorageBench results: [`parse_storage_bench`] takes the text printed
//! by `beegfs-ctl --storagebench --alltargets --status --verbose` (a status block, a
//! "Write/Read benchmark results:" header with minimum, maximum, average and aggregate,
//! then "List of all targets:" with lines such as
//! `19   2705987  KiB/s   nodeID: node006-numa0-1 [ID: 19]`) into [`BenchSection`]s
//! which iolab-suites' `targets::figures_of` feeds to the same analysis as a measured run.
//! Errors name the file and line; prose outside the target list is ignored, and the list
//! ends at a blank line after its targets or at the first line that is not a target.

use std::collections::BTreeMap;

use iolab_core::SpecError;
use iolab_core::result::OpKind;
use serde::{Deserialize, Serialize};

/// A figure from the header ("Min throughput: ... nodeID: n [ID: 3], targetID: 7").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeaderFigure {
    pub bytes_per_sec: f64,
    pub node: Option<String>,
    pub target: Option<String>,
}

/// The summary beegfs-ctl prints above the list.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchHeader {
    pub min: Option<HeaderFigure>,
    pub max: Option<HeaderFigure>,
    pub average: Option<f64>,
    pub aggregate: Option<f64>,
}

/// One line of the target list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchTarget {
    pub id: String,
    /// The node's alias ("node006-numa0-1").
    pub node: String,
    /// The node's numeric id ("[ID: 19]").
    pub node_num_id: Option<u32>,
    pub bytes_per_sec: f64,
    pub line: usize,
}

/// The results of one benchmark (write or read).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchSection {
    /// Write or read, when the header says.
    pub op: Option<OpKind>,
    pub header: BenchHeader,
    pub targets: Vec<BenchTarget>,
    /// Status counts printed before the results ("Finished": 22, "Running": 0).
    pub status: BTreeMap<String, u32>,
}

impl BenchSection {
    /// Where the file disagrees with itself or the benchmark had not finished.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for (state, n) in &self.status {
            if *n > 0 && state != "Finished" {
                notes.push(format!(
                    "the status shows {state} {n}: figures of targets that had not finished are partial or missing"
                ));
            }
        }
        let sum: f64 = self.targets.iter().map(|t| t.bytes_per_sec).sum();
        if let Some(agg) = self.header.aggregate
            && (agg - sum).abs() > (agg * 0.001).max(1024.0)
        {
            notes.push(format!(
                "the header's aggregate of {:.0} KiB/s differs from the {:.0} KiB/s the listed targets add up to (targets missing from the list?)",
                agg / 1024.0,
                sum / 1024.0
            ));
        }
        notes
    }
}

/// The machine a BeeGFS storage service alias runs on: multi-mode services are named
/// `<host>-numa<N>-<M>` ("node006-numa0-1" runs on node006); other aliases are hosts.
pub fn host_of(alias: &str) -> &str {
    if let Some(i) = alias.rfind("-numa") {
        let tail = &alias[i + "-numa".len()..];
        let numeric = tail
            .split('-')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        if i > 0 && numeric {
            return &alias[..i];
        }
    }
    alias
}

fn at(name: &str, line: usize, reason: impl Into<String>) -> SpecError {
    SpecError::new(format!("{name}:{line}"), reason)
}

const TARGET_LINE: &str = "'<target-id> <throughput> KiB/s nodeID: <node> [ID: <n>]'";

/// Bytes per second in a throughput with its unit ("2705987", "KiB/s").
fn throughput(value: &str, unit: &str) -> Result<f64, String> {
    let v: f64 = value
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("throughput '{value}' is not a number"))?;
    let mult = match unit {
        "B/s" => 1.0,
        "KiB/s" => 1024.0,
        "MiB/s" => 1024.0 * 1024.0,
        "GiB/s" => 1024.0 * 1024.0 * 1024.0,
        "KB/s" | "kB/s" => 1e3,
        "MB/s" => 1e6,
        "GB/s" => 1e9,
        other => {
            return Err(format!(
                "unit '{other}' after throughput {value} is not KiB/s, MiB/s, GiB/s or B/s"
            ));
        }
    };
    Ok(v * mult)
}

/// Splits "node006-numa0-1 [ID: 19], targetID: 19" into alias, numeric id and target.
fn node_part(rest: &str) -> (String, Option<u32>, Option<String>) {
    let (node_text, target) = match rest.split_once("targetID:") {
        Some((n, t)) => (n, Some(t.trim().to_string())),
        None => (rest, None),
    };
    let node_text = node_text.trim().trim_end_matches(',').trim();
    let (alias, num) = match node_text.split_once("[ID:") {
        Some((a, n)) => (a.trim(), n.trim().trim_end_matches(']').trim().parse().ok()),
        None => (node_text, None),
    };
    (alias.to_string(), num, target)
}

fn parse_target(name: &str, line: usize, text: &str) -> Result<BenchTarget, SpecError> {
    let mut parts = text.split_whitespace();
    let (Some(id), Some(value), Some(unit)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(at(
            name,
            line,
            format!("expected a target line like {TARGET_LINE}, found '{text}'"),
        ));
    };
    if !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(at(name, line, format!("target id '{id}' is not a number")));
    }
    let bytes_per_sec = throughput(value, unit).map_err(|why| at(name, line, why))?;
    let Some((_, rest)) = text.split_once("nodeID:") else {
        return Err(at(
            name,
            line,
            format!("target {id} has no 'nodeID: <node>'; expected a line like {TARGET_LINE}"),
        ));
    };
    let (node, node_num_id, _) = node_part(rest);
    if node.is_empty() {
        return Err(at(name, line, format!("target {id} has an empty nodeID")));
    }
    Ok(BenchTarget {
        id: id.to_string(),
        node,
        node_num_id,
        bytes_per_sec,
        line,
    })
}

fn parse_header_figure(name: &str, line: usize, rest: &str) -> Result<HeaderFigure, SpecError> {
    let mut parts = rest.split_whitespace();
    let (Some(value), Some(unit)) = (parts.next(), parts.next()) else {
        return Err(at(
            name,
            line,
            format!("expected a throughput and unit such as '2705987 KiB/s', found '{rest}'"),
        ));
    };
    let bytes_per_sec = throughput(value, unit).map_err(|why| at(name, line, why))?;
    let (node, target) = match rest.split_once("nodeID:") {
        Some((_, r)) => {
            let (n, _, t) = node_part(r);
            (Some(n), t)
        }
        None => (None, None),
    };
    Ok(HeaderFigure {
        bytes_per_sec,
        node,
        target,
    })
}

/// What a line of beegfs-ctl's output is.
enum Line<'a> {
    Section(OpKind),
    Status(&'a str, u32),
    Header(&'a str, &'a str),
    ListStart,
    Target,
    Other,
}

fn classify(text: &str, in_list: bool) -> Line<'_> {
    match text {
        "Write benchmark results:" => return Line::Section(OpKind::Write),
        "Read benchmark results:" => return Line::Section(OpKind::Read),
        "List of all targets:" => return Line::ListStart,
        _ => {}
    }
    for key in ["Min", "Max", "Avg", "Aggregate"] {
        if let Some(rest) = text
            .strip_prefix(key)
            .and_then(|r| r.trim_start().strip_prefix("throughput:"))
        {
            return Line::Header(key, rest);
        }
    }
    if let Some((state, n)) = text.split_once(':')
        && let Ok(n) = n.trim().parse::<u32>()
        && !state.is_empty()
        && state
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == ' ' || c == '\'')
    {
        return Line::Status(state.trim(), n);
    }
    if looks_like_target(text, in_list) {
        return Line::Target;
    }
    Line::Other
}

/// Whether a line is a target line, or one gone wrong that must be named. In the list,
/// a target id followed by a number, a rate unit or a nodeID is one ("12 3O45974 KiB/s
/// ...", "1 100"); elsewhere only a target id with a nodeID is, so prose such as
/// "3 nodes were benchmarked" is not.
fn looks_like_target(text: &str, in_list: bool) -> bool {
    let mut parts = text.split_whitespace();
    let Some(id) = parts.next() else {
        return false;
    };
    if !id.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    if text.contains("nodeID:") {
        return true;
    }
    let value = parts.next();
    let unit = parts.next();
    in_list
        && (value.is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
            || unit.is_some_and(|u| u.ends_with("/s")))
}

/// The state of reading one file.
#[derive(Default)]
struct Reader {
    sections: Vec<BenchSection>,
    current: BenchSection,
    status: BTreeMap<String, u32>,
    /// In "List of all targets:", until a blank line after its targets or a line that is
    /// not a target.
    in_list: bool,
    /// Whether the list being read has listed a target yet.
    list_has_target: bool,
    /// Where each (node, target) of the current section was listed.
    first_line: BTreeMap<(String, String), usize>,
}

impl Reader {
    fn close_section(&mut self) {
        if self.current.op.is_some() || !self.current.targets.is_empty() {
            self.sections.push(std::mem::take(&mut self.current));
            self.first_line.clear();
        }
    }

    /// A blank line ends the list, unless it comes before the list's first target.
    fn blank(&mut self) {
        if self.list_has_target {
            self.in_list = false;
        }
    }

    fn line(&mut self, name: &str, line: usize, text: &str) -> Result<(), SpecError> {
        let kind = classify(text, self.in_list);
        if !matches!(kind, Line::Target) {
            // Whatever is not a target ends the list: a separator, a shell prompt.
            self.in_list = false;
        }
        match kind {
            Line::Section(op) => {
                self.close_section();
                self.current.op = Some(op);
                self.current.status = self.status.clone();
            }
            Line::Status(state, n) => {
                self.status.insert(state.to_string(), n);
                self.current.status.insert(state.to_string(), n);
            }
            Line::Header(key, rest) => {
                let f = parse_header_figure(name, line, rest)?;
                let h = &mut self.current.header;
                match key {
                    "Min" => h.min = Some(f),
                    "Max" => h.max = Some(f),
                    "Avg" => h.average = Some(f.bytes_per_sec),
                    _ => h.aggregate = Some(f.bytes_per_sec),
                }
            }
            Line::ListStart => {
                self.in_list = true;
                self.list_has_target = false;
            }
            Line::Target => {
                let t = parse_target(name, line, text)?;
                let key = (t.node.clone(), t.id.clone());
                if let Some(first) = self.first_line.insert(key, line) {
                    return Err(at(
                        name,
                        line,
                        format!(
                            "target {} on {} is listed twice (first at line {first})",
                            t.id, t.node
                        ),
                    ));
                }
                self.current.targets.push(t);
                if self.in_list {
                    self.list_has_target = true;
                }
            }
            Line::Other => {}
        }
        Ok(())
    }
}

/// Parses beegfs-ctl StorageBench output. `name` prefixes errors ("bench.txt:27: ...").
pub fn parse_storage_bench(name: &str, text: &str) -> Result<Vec<BenchSection>, SpecError> {
    let mut reader = Reader::default();
    for (i, raw) in text.lines().enumerate() {
        let text = raw.trim();
        if text.is_empty() {
            reader.blank();
        } else {
            reader.line(name, i + 1, text)?;
        }
    }
    reader.close_section();
    let mut sections = reader.sections;
    sections.retain(|s| !s.targets.is_empty());
    if sections.is_empty() {
        return Err(SpecError::new(
            name,
            "lists no target; save the output of `beegfs-ctl --storagebench --alltargets --status --verbose` (--verbose prints every target)",
        ));
    }
    Ok(sections)
}
