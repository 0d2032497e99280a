//! IO500's `[RESULT]` line formats, with any whitespace between fields:
//! - isc21 on: `[RESULT]       ior-easy-write      352.803032 GiB/s : time 386.698 seconds`,
//!   `[      ]` for unscored phases, ` [INVALID]` after a phase or the score, and
//!   `[SCORE ] Bandwidth X GiB/s : IOPS Y kiops : TOTAL Z` (`[SCOREX]` in extended mode);
//! - isc20/sc20: `[RESULT-invalid]` and `[SCORE-invalid]` (and `GB/s` in the score line);
//! - the 2017-2019 script: `[RESULT] BW   phase 1   ior_easy_write   8.581 GB/s : time
//!   58.27 seconds` and `[SCORE] Bandwidth X GB/s : IOPS Y kiops : TOTAL Z`.
//!
//! Lines that are none of these (IO500's other output) are skipped.

use std::collections::BTreeMap;
use std::path::Path;

use super::error::Io500Error;
use super::parse::{FileScore, ParsedResult, SourceFormat, decimals, figure};
use super::score::PhaseFigure;

const RESULT_SHAPE: &str = "expected NAME VALUE UNIT : time SECONDS seconds after the tag";
const SCORE_SHAPE: &str = "expected Bandwidth X GiB/s : IOPS Y kiops : TOTAL Z after the tag";

pub(crate) fn parse_summary(path: &Path, text: &str) -> Result<ParsedResult, Io500Error> {
    let mut out = ParsedResult::new(path, SourceFormat::Summary);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut script = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if let Some(rest) = line.strip_prefix("IO500 version") {
            let v = rest.split(" (").next().unwrap_or("").trim();
            out.version = (!v.is_empty()).then(|| v.to_string());
            continue;
        }
        if line.starts_with("iolab ") && line.contains("IO500") {
            out.format = SourceFormat::Iolab;
            let words: Vec<&str> = line.split_whitespace().collect();
            out.version = Some(words[..2.min(words.len())].join(" "));
            // "iolab 0.1.0 IO500 (standard, stonewall 300s)"
            out.stonewall = words
                .iter()
                .position(|w| *w == "stonewall")
                .and_then(|i| words.get(i + 1))
                .and_then(|w| w.trim_end_matches([')', ',']).parse().ok());
            continue;
        }
        if line.contains("Not valid for IO-500 submission") {
            out.reported.push(line.to_string());
            continue;
        }
        let Some((tag, written, rest)) = bracket_tag(line) else {
            continue;
        };
        if tag.is_empty() || tag == "RESULT" || tag.eq_ignore_ascii_case("RESULT-invalid") {
            let (fig, places, old) = result_line(path, n, tag, rest)?;
            script |= old;
            if let Some(first) = seen.insert(fig.name.clone(), n) {
                return Err(Io500Error::malformed(
                    path,
                    n,
                    format!("{} appears twice (first on line {first})", fig.name),
                ));
            }
            out.decimals.insert(fig.name.clone(), places);
            out.phases.push(fig);
        } else if let Some(suffix) = tag.strip_prefix("SCORE") {
            let fs = score_line(path, n, written, suffix, rest)?;
            let extended = suffix.trim().eq_ignore_ascii_case("X");
            let slot = if extended {
                &mut out.extended_score
            } else {
                &mut out.score
            };
            if let Some(first) = slot {
                return Err(Io500Error::malformed(
                    path,
                    n,
                    format!(
                        "a second {written} line (the first is on line {})",
                        first.line
                    ),
                ));
            }
            *slot = Some(fs);
        }
    }
    if script {
        out.format = SourceFormat::Script;
    }
    if out.phases.is_empty() {
        return Err(Io500Error::NoFigures {
            path: path.to_path_buf(),
        });
    }
    Ok(out)
}

/// "[SCORE ] rest" -> ("SCORE", "[SCORE ]", "rest"): the tag trimmed ("[      ]" gives
/// ""), as written, and the rest of the line.
fn bracket_tag(line: &str) -> Option<(&str, &str, &str)> {
    let inner = line.strip_prefix('[')?;
    let close = inner.find(']')?;
    Some((
        inner[..close].trim(),
        &line[..close + 2],
        &inner[close + 1..],
    ))
}

/// One `[RESULT]` line: the figure, the decimals of its value, and whether it was in the
/// 2017-2019 script's form.
fn result_line(
    path: &Path,
    n: usize,
    tag: &str,
    rest: &str,
) -> Result<(PhaseFigure, u32, bool), Io500Error> {
    let bad = |reason: String| Io500Error::malformed(path, n, reason);
    let mut tokens: Vec<&str> = rest.split_whitespace().collect();
    let script = tokens.len() > 3
        && matches!(tokens[0], "BW" | "IOPS")
        && tokens[1].eq_ignore_ascii_case("phase");
    if script {
        tokens.drain(..3);
    }
    let [name, value, unit, ..] = tokens[..] else {
        return Err(bad(format!("[{tag}] line: {RESULT_SHAPE}")));
    };
    let name = name.replace('_', "-");
    let v = figure(value).map_err(|why| bad(format!("{name}: '{value}' {why}")))?;
    let unit_ok = ["GiB/s", "GB/s", "kIOPS", "kiops"]
        .iter()
        .any(|u| unit.trim_end_matches(':').eq_ignore_ascii_case(u));
    if !unit_ok {
        return Err(bad(format!(
            "{name}: unit '{unit}' is neither GiB/s nor kIOPS"
        )));
    }
    let time_at = tokens
        .iter()
        .position(|t| t.trim_end_matches(':').eq_ignore_ascii_case("time"))
        .ok_or_else(|| bad(format!("{name}: no 'time SECONDS' ({RESULT_SHAPE})")))?;
    let t_token = tokens
        .get(time_at + 1)
        .ok_or_else(|| bad(format!("{name}: no seconds after 'time'")))?;
    let t = figure(t_token).map_err(|why| bad(format!("{name}: time '{t_token}' {why}")))?;
    let mut fig = PhaseFigure::new(&name, v, t);
    let flagged = tokens[time_at + 2..]
        .iter()
        .any(|t| t.to_ascii_uppercase().contains("INVALID"));
    if flagged || tag.eq_ignore_ascii_case("RESULT-invalid") {
        fig.valid = false;
        fig.notes.push("marked invalid".into());
    }
    Ok((fig, decimals(value), script))
}

fn score_line(
    path: &Path,
    n: usize,
    written: &str,
    suffix: &str,
    rest: &str,
) -> Result<FileScore, Io500Error> {
    let bad = |reason: String| Io500Error::malformed(path, n, reason);
    let tokens: Vec<&str> = rest.split_whitespace().collect();
    let after = |key: &str| -> Result<(f64, u32), Io500Error> {
        let at = tokens
            .iter()
            .position(|t| t.eq_ignore_ascii_case(key))
            .ok_or_else(|| bad(format!("{written} line has no {key} ({SCORE_SHAPE})")))?;
        let token = tokens.get(at + 1).copied().unwrap_or("");
        let v = figure(token).map_err(|why| bad(format!("{written} {key}: '{token}' {why}")))?;
        Ok((v, decimals(token)))
    };
    let (bandwidth, db) = after("Bandwidth")?;
    let (metadata, dm) = after("IOPS")?;
    let (total, dt) = after("TOTAL")?;
    let invalid = suffix.trim().eq_ignore_ascii_case("-invalid")
        || tokens
            .iter()
            .any(|t| t.to_ascii_uppercase().contains("INVALID"));
    Ok(FileScore {
        bandwidth,
        metadata,
        total,
        invalid,
        line: n,
        decimals: [db, dm, dt],
    })
}
