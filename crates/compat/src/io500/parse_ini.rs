//! IO500's ini-style result.txt (isc20 on): `[run]` with procs, version and config-hash;
//! a `[phase]` section per phase with `score = X`, `t_delta = T` (verbosity >= 1), find's
//! `found` and `total-files`, the `exe` command line, and `; ERROR INVALID ...` comments;
//! then `[SCORE]` with `MD`, `BW`, `SCORE = Z [INVALID]` and `hash`, rebuilt here the
//! way IO500's verifier does ([`ScoreHash`]).

use std::path::Path;

use iolab_core::units::TimeSpan;

use super::error::Io500Error;
use super::parse::{FileScore, Integrity, ParsedResult, SourceFormat, decimals, figure};
use super::phases::{EXTENDED_PHASES, phase};
use super::score::PhaseFigure;
use super::score_hash::ScoreHash;

/// A result.txt opens with `[run]` or has a `score = ...` line.
pub(crate) fn looks_like_ini(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim();
        section_name(l).is_some_and(|s| s.eq_ignore_ascii_case("run"))
            || l.split_once('=').is_some_and(|(k, _)| k.trim() == "score")
    })
}

/// "[ name ]" -> "name" for a whole-line section header.
fn section_name(line: &str) -> Option<&str> {
    let inner = line.strip_prefix('[')?.strip_suffix(']')?.trim();
    let ok = !inner.is_empty()
        && inner
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    ok.then_some(inner)
}

/// The section being read.
enum Section {
    None,
    Run,
    Score { extended: bool, at: usize },
    Phase { name: String },
}

/// Whether IO500's verifier hashes a phase's score (`u_should_hash_phase`): scored
/// phases of the standard mode, and names it does not know.
fn hashed(name: &str) -> bool {
    match phase(name) {
        Some(def) => def.scored(),
        None => !EXTENDED_PHASES.contains(&name),
    }
}

/// A `[SCORE]` section being read.
#[derive(Default)]
struct ScoreParts {
    md: Option<(f64, u32)>,
    bw: Option<(f64, u32)>,
    total: Option<(f64, u32)>,
    invalid: bool,
}

pub(crate) fn parse_ini(path: &Path, text: &str) -> Result<ParsedResult, Io500Error> {
    let mut out = ParsedResult::new(path, SourceFormat::Ini);
    let mut section = Section::None;
    let mut hash = ScoreHash::default();
    let mut stated_hash: Option<String> = None;
    let mut parts = ScoreParts::default();
    let mut scores: Vec<(bool, usize, ScoreParts)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix([';', '#']) {
            if let Some(why) = comment.trim().strip_prefix("ERROR INVALID") {
                invalid_comment(&mut out, &section, why.trim());
            }
            continue;
        }
        if line.starts_with('[') {
            let name = section_name(line).ok_or_else(|| {
                Io500Error::malformed(path, n, format!("'{line}' is not a [section] header"))
            })?;
            if let Section::Score { extended, at } = section {
                scores.push((extended, at, std::mem::take(&mut parts)));
            }
            section = open_section(path, n, name, &out)?;
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(Io500Error::malformed(
                path,
                n,
                format!("'{line}' is neither a [section], a key = value line nor a ; comment"),
            ));
        };
        let key = key.trim();
        // IO500's ini values end at a comment character.
        let value = value.split(['#', ';']).next().unwrap_or("").trim();
        if key == "version" {
            hash.add(key, value);
        }
        match &section {
            Section::None => {}
            Section::Run => run_key(path, n, key, value, &mut out)?,
            Section::Score { extended, .. } => {
                if key == "hash" {
                    if !extended {
                        stated_hash = Some(value.to_string());
                    }
                    continue;
                }
                if !extended {
                    let first = if key == "SCORE" {
                        value.split_whitespace().next().unwrap_or("")
                    } else {
                        value
                    };
                    hash.add(key, first);
                }
                score_key(path, n, key, value, &mut parts)?;
            }
            Section::Phase { name } => {
                if key == "score" && hashed(name) {
                    hash.add(name, value);
                }
                phase_key(path, n, key, value, name, &mut out)?;
            }
        }
    }
    if let Section::Score { extended, at } = section {
        scores.push((extended, at, parts));
    }
    for (extended, at, p) in scores {
        let fs = file_score(path, at, p)?;
        if extended {
            out.extended_score = Some(fs);
        } else {
            out.score = Some(fs);
        }
    }
    // Sections without a score line (timestamp, phases that did not run) hold no figure.
    let scored = std::mem::take(&mut out.decimals);
    out.phases.retain(|p| scored.contains_key(&p.name));
    out.decimals = scored;
    if out.phases.is_empty() {
        return Err(Io500Error::NoFigures {
            path: path.to_path_buf(),
        });
    }
    if let Some(expected) = stated_hash {
        let computed = hash.text();
        let mut as_invalid = hash;
        as_invalid.add("valid", "NO");
        let (computed, as_invalid) = if computed != expected && as_invalid.text() == expected {
            (as_invalid.text(), true)
        } else {
            (computed, false)
        };
        out.integrity = Some(Integrity::Io500Hash {
            expected,
            computed,
            as_invalid,
        });
    }
    Ok(out)
}

fn open_section(
    path: &Path,
    n: usize,
    name: &str,
    out: &ParsedResult,
) -> Result<Section, Io500Error> {
    Ok(match name {
        "run" => Section::Run,
        "SCORE" => Section::Score {
            extended: false,
            at: n,
        },
        "SCOREX" => Section::Score {
            extended: true,
            at: n,
        },
        _ => {
            if out.phase(name).is_some() {
                return Err(Io500Error::malformed(
                    path,
                    n,
                    format!("section [{name}] appears twice"),
                ));
            }
            Section::Phase {
                name: name.to_string(),
            }
        }
    })
}

fn invalid_comment(out: &mut ParsedResult, section: &Section, why: &str) {
    match section {
        Section::Phase { name, .. } => {
            let fig = phase_entry(out, name);
            fig.valid = false;
            fig.notes.push(why.to_string());
        }
        _ => out.reported.push(why.to_string()),
    }
}

/// The figure of phase `name`, created (with no score yet) on first use.
fn phase_entry<'a>(out: &'a mut ParsedResult, name: &str) -> &'a mut PhaseFigure {
    let at = match out.phases.iter().position(|p| p.name == name) {
        Some(i) => i,
        None => {
            out.phases.push(PhaseFigure::new(name, f64::NAN, f64::NAN));
            out.phases.len() - 1
        }
    };
    &mut out.phases[at]
}

fn run_key(
    path: &Path,
    n: usize,
    key: &str,
    value: &str,
    out: &mut ParsedResult,
) -> Result<(), Io500Error> {
    match key {
        "procs" => {
            let p = value.parse().map_err(|_| {
                Io500Error::malformed(path, n, format!("procs '{value}' is not a whole number"))
            })?;
            out.procs = Some(p);
        }
        "version" => out.version = Some(value.to_string()),
        _ => {}
    }
    Ok(())
}

fn parse_number(path: &Path, n: usize, key: &str, value: &str) -> Result<(f64, u32), Io500Error> {
    let token = value.split_whitespace().next().unwrap_or("");
    let v = figure(token)
        .map_err(|why| Io500Error::malformed(path, n, format!("{key} '{value}' {why}")))?;
    Ok((v, decimals(token)))
}

fn score_key(
    path: &Path,
    n: usize,
    key: &str,
    value: &str,
    parts: &mut ScoreParts,
) -> Result<(), Io500Error> {
    match key {
        "MD" => parts.md = Some(parse_number(path, n, key, value)?),
        "BW" => parts.bw = Some(parse_number(path, n, key, value)?),
        "SCORE" => {
            parts.total = Some(parse_number(path, n, key, value)?);
            parts.invalid = value.to_ascii_uppercase().contains("INVALID");
        }
        _ => {}
    }
    Ok(())
}

fn file_score(path: &Path, at: usize, p: ScoreParts) -> Result<FileScore, Io500Error> {
    let missing = |what: &str| {
        Io500Error::malformed(
            path,
            at,
            format!("the score section has no {what} = ... line"),
        )
    };
    let (metadata, dm) = p.md.ok_or_else(|| missing("MD"))?;
    let (bandwidth, db) = p.bw.ok_or_else(|| missing("BW"))?;
    let (total, dt) = p.total.ok_or_else(|| missing("SCORE"))?;
    Ok(FileScore {
        bandwidth,
        metadata,
        total,
        invalid: p.invalid,
        line: at,
        decimals: [db, dm, dt],
    })
}

fn phase_key(
    path: &Path,
    n: usize,
    key: &str,
    value: &str,
    name: &str,
    out: &mut ParsedResult,
) -> Result<(), Io500Error> {
    match key {
        "score" => {
            let (v, places) = parse_number(path, n, key, value)?;
            phase_entry(out, name).value = v;
            out.decimals.insert(name.to_string(), places);
        }
        "t_delta" => phase_entry(out, name).time = parse_number(path, n, key, value)?.0,
        "found" | "total-files" => {
            let count: u64 = value.parse().map_err(|_| {
                Io500Error::malformed(path, n, format!("{key} '{value}' is not a whole number"))
            })?;
            let fig = phase_entry(out, name);
            if key == "found" {
                fig.found = Some(count);
            } else {
                fig.items = Some(count);
            }
        }
        "exe" => {
            if let Some(s) = stonewall_of(value)
                && phase(name).is_some_and(|d| d.is_write())
            {
                out.stonewall = Some(s);
            }
        }
        _ => {}
    }
    Ok(())
}

/// The stonewall of a write phase's command line: IOR's `-D N`, mdtest's `-W N`.
fn stonewall_of(exe: &str) -> Option<TimeSpan> {
    let tokens: Vec<&str> = exe.split_whitespace().collect();
    tokens.iter().enumerate().find_map(|(i, t)| {
        let secs = match *t {
            "-D" | "-W" => tokens.get(i + 1).copied()?,
            _ => t.strip_prefix("-D=").or_else(|| t.strip_prefix("-W="))?,
        };
        secs.parse::<u64>().ok().map(TimeSpan::from_secs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stonewalls_come_from_the_command_line() {
        assert_eq!(
            stonewall_of("./ior -C -t 2m -b 9920000m -F -w -D 300 -O stoneWallingWearOut=1"),
            Some(TimeSpan::from_secs(300))
        );
        assert_eq!(
            stonewall_of("./mdtest -n 1000000 -C -Y -W 60 --save"),
            Some(TimeSpan::from_secs(60))
        );
        assert_eq!(stonewall_of("./ior -D=5 -w"), Some(TimeSpan::from_secs(5)));
        assert_eq!(stonewall_of("./ior -r -R"), None);
    }

    #[test]
    fn sections_and_comments() {
        assert_eq!(section_name("[ior-easy-write]"), Some("ior-easy-write"));
        assert_eq!(section_name("[ SCORE ]"), Some("SCORE"));
        assert_eq!(section_name("[SCORE ] Bandwidth 1 GiB/s"), None);
        assert!(looks_like_ini("[run]\nprocs = 4\n"));
        assert!(!looks_like_ini(
            "[RESULT] ior-easy-write 1.0 GiB/s : time 300 seconds\n"
        ));
    }
}
