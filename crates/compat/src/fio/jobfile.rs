//! fio's job-file dialect read into [`Section`]s: `[global]` and job sections of
//! `key=value` (or bare `key`) lines, full-line comments (`;` or `#`), `include FILE`,
//! `${VAR}` from the environment and fio's own `$ncpus`, `$pagesize` and `$mb_memory`.
//! A later `[global]` changes the options of the jobs after it, as in fio. Reading files
//! is the caller's: includes come through [`Sources`], so the parser stays pure.

use super::error::FioError;

/// One `key[=value]` as written, with where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawOption {
    pub key: String,
    /// None for a bare `key` (a flag such as `thread` or `time_based`).
    pub value: Option<String>,
    /// "jobs.fio:12" or "command line".
    pub at: String,
}

/// A job as fio would build it: its name and its options in order, the globals in force
/// when it was declared first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub options: Vec<RawOption>,
    /// How many of `options`, at their start, are the globals in force (fio's JSON
    /// shows them as "global options", not as the job's).
    pub globals: usize,
    pub at: String,
}

impl Section {
    /// The order fio 3.33 applies a section's options in: a job file's `[global]` options,
    /// then the job's own, each part sorted by the options' priority (options.c
    /// `fio_options_parse` sorts them with `sort_options`; `kb_base` and `unit_base` have
    /// priority 1, so a section's sizes are read with its `kb_base` wherever it is written,
    /// and `filename` -1, so it is added after the section's `directory`); a command
    /// line's in the order given (fio parses each as it comes). Indices into `options`.
    pub fn fio_order(&self) -> Vec<usize> {
        let split = self.globals.min(self.options.len());
        let mut order = Vec::with_capacity(self.options.len());
        for part in [0..split, split..self.options.len()] {
            let mut ids: Vec<usize> = part.collect();
            let from_file = ids
                .iter()
                .all(|&i| !self.options[i].at.starts_with("command line"));
            if from_file {
                // A stable sort: options of one priority keep their order.
                ids.sort_by_key(|&i| std::cmp::Reverse(fio_priority(&self.options[i].key)));
            }
            order.extend(ids);
        }
        order
    }
}

/// An option's priority in fio 3.33's options.c (`prio`): higher ones are applied first
/// within a job file's section; 0 for all the others iolab reads.
fn fio_priority(key: &str) -> i8 {
    match key {
        "kb_base" | "unit_base" => 1,
        "filename" => -1,
        _ => 0,
    }
}

/// What the parser needs from outside: environment variables, fio's host values and
/// the text of included files.
pub trait Sources {
    fn env(&self, name: &str) -> Option<String>;
    /// `$ncpus`, `$pagesize`, `$mb_memory`.
    fn host_value(&self, name: &str) -> Option<u64>;
    fn include(&mut self, from: &str, path: &str) -> Result<String, FioError>;
}

/// Includes nest at most this deep (fio has no limit; a loop would never end).
const MAX_INCLUDE_DEPTH: usize = 8;

/// Parses the job file `name` with `text` into its job sections.
pub fn parse_job_file(
    name: &str,
    text: &str,
    sources: &mut dyn Sources,
) -> Result<Vec<Section>, FioError> {
    let mut state = State::default();
    read_lines(name, text, sources, &mut state, 0)?;
    state.finish()
}

#[derive(Default)]
struct State {
    global: Vec<RawOption>,
    jobs: Vec<Section>,
    /// The section lines go to: None before the first header.
    current: Option<Current>,
}

enum Current {
    Global,
    Job(usize),
}

impl State {
    fn finish(self) -> Result<Vec<Section>, FioError> {
        Ok(self.jobs)
    }
}

fn read_lines(
    name: &str,
    text: &str,
    sources: &mut dyn Sources,
    state: &mut State,
    depth: usize,
) -> Result<(), FioError> {
    for (i, raw) in text.lines().enumerate() {
        let at = format!("{name}:{}", i + 1);
        // fio's strip_blank_end: a line ends at its first ';' or '#' (a comment after
        // an option, as in fio's surface-scan.fio).
        let line = raw.split([';', '#']).next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let Some(section) = rest.strip_suffix(']') else {
                return Err(FioError::at(
                    &at,
                    format!("section header '{line}' has no closing ']'"),
                ));
            };
            let section = section.trim();
            if section.is_empty() {
                return Err(FioError::at(
                    &at,
                    "a section header needs a name: [global] or [jobname]",
                ));
            }
            if section == "global" {
                state.current = Some(Current::Global);
            } else {
                state.jobs.push(Section {
                    name: section.to_string(),
                    globals: state.global.len(),
                    options: state.global.clone(),
                    at: at.clone(),
                });
                state.current = Some(Current::Job(state.jobs.len() - 1));
            }
            continue;
        }
        if let Some(path) = line.strip_prefix("include ") {
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(FioError::at(
                    &at,
                    format!(
                        "includes nest deeper than {MAX_INCLUDE_DEPTH} (does a file include itself?)"
                    ),
                ));
            }
            let path = substitute(path.trim(), &at, sources)?;
            let included = sources.include(&at, &path)?;
            read_lines(&path, &included, sources, state, depth + 1)?;
            continue;
        }
        let option = parse_option(line, &at, sources)?;
        match state.current {
            None => {
                return Err(FioError::at(
                    &at,
                    format!(
                        "'{line}' comes before any [section]; put it under [global] or a [job]"
                    ),
                ));
            }
            Some(Current::Global) => state.global.push(option),
            Some(Current::Job(j)) => state.jobs[j].options.push(option),
        }
    }
    Ok(())
}

/// `key=value`, `key = value` or a bare `key`, with variables substituted in the value.
pub fn parse_option(text: &str, at: &str, sources: &dyn Sources) -> Result<RawOption, FioError> {
    let (key, value) = match text.split_once('=') {
        Some((k, v)) => (k.trim(), Some(substitute(v.trim(), at, sources)?)),
        None => (text.trim(), None),
    };
    if key.is_empty() {
        return Err(FioError::at(
            at,
            format!("'{text}' has no option name before '='"),
        ));
    }
    if key.contains(char::is_whitespace) {
        return Err(FioError::at(
            at,
            format!("'{text}' is not an option: use key=value"),
        ));
    }
    Ok(RawOption {
        key: key.to_string(),
        value,
        at: at.to_string(),
    })
}

/// Replaces `${VAR}` with the environment's value and `$ncpus`, `$pagesize`,
/// `$mb_memory` with the host's, as fio does; an unset `${VAR}` is an error (fio
/// leaves it in place and then fails on the value, less clearly).
fn substitute(value: &str, at: &str, sources: &dyn Sources) -> Result<String, FioError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                return Err(FioError::at(
                    at,
                    format!("'{value}': '${{' without a closing '}}'"),
                ));
            };
            let var = &body[..end];
            match sources.env(var) {
                Some(v) => out.push_str(&v),
                None => {
                    return Err(FioError::at(
                        at,
                        format!("'{value}': the environment variable {var} is not set"),
                    ));
                }
            }
            rest = &body[end + 1..];
            continue;
        }
        let word_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let word = &after[..word_len];
        match sources.host_value(word) {
            Some(v) => out.push_str(&v.to_string()),
            None => out.push('$'),
        }
        rest = if sources.host_value(word).is_some() {
            &after[word_len..]
        } else {
            after
        };
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
#[path = "jobfile_tests.rs"]
mod tests;
