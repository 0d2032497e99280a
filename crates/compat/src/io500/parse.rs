//! Reading IO500 results: [`read`] takes a result file or directory (IO500's
//! result_summary.txt / stdout, its ini-style result.txt, the 2017-2019 script's output,
//! or iolab's own result directory) into a [`ParsedResult`] of phase figures, and
//! [`ParsedResult::check`] recomputes the score and compares it with the file's own
//! `[SCORE ]` line and hash ([`Check`]). The line formats live in `parse_summary` and
//! `parse_ini`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use iolab_core::units::TimeSpan;
use serde::{Deserialize, Serialize};

use super::error::Io500Error;
use super::phases::PHASES;
use super::score::{Invalid, PhaseFigure, Score, counts, group_mean, score};

/// Where a result came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceFormat {
    /// IO500's `[RESULT]` lines: result_summary.txt or its standard output (isc20 on).
    Summary,
    /// IO500's ini-style result.txt: a `[phase]` section per phase with `score = ...`.
    Ini,
    /// The IO500 shell script of 2017-2019 (`[RESULT] BW phase 1 ior_easy_write ...`).
    Script,
    /// iolab's own result (its result.txt, or its result directory).
    Iolab,
}

impl SourceFormat {
    pub fn describe(self) -> &'static str {
        match self {
            SourceFormat::Summary => "IO500 summary ([RESULT] lines)",
            SourceFormat::Ini => "IO500 result.txt",
            SourceFormat::Script => "IO500 script output (2017-2019)",
            SourceFormat::Iolab => "iolab IO500 result",
        }
    }
}

/// A score line as a file states it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileScore {
    pub bandwidth: f64,
    pub metadata: f64,
    pub total: f64,
    /// The file marks the score `[INVALID]` (or `-invalid`).
    pub invalid: bool,
    /// Where it was stated (1-based).
    pub line: usize,
    /// Decimals printed for bandwidth, metadata and total.
    pub decimals: [u32; 3],
}

/// Whether a result was changed after it was written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Integrity {
    /// IO500's own score hash (result.txt `hash = ...`), rebuilt from the file's values.
    Io500Hash {
        expected: String,
        computed: String,
        /// The hash matches once the run is taken as invalid (IO500 adds valid=NO).
        as_invalid: bool,
    },
    /// iolab's hash.txt: SHA-256 of each file of the result directory.
    Sha256 {
        checked: Vec<String>,
        /// Files whose digest differs from hash.txt, or that are missing.
        changed: Vec<String>,
    },
}

impl Integrity {
    pub fn intact(&self) -> bool {
        match self {
            Integrity::Io500Hash {
                expected, computed, ..
            } => expected == computed,
            Integrity::Sha256 { changed, .. } => changed.is_empty(),
        }
    }
}

/// An IO500 result as read from a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParsedResult {
    pub path: PathBuf,
    pub format: SourceFormat,
    /// "io500-isc24_v3", "iolab 0.1.0".
    pub version: Option<String>,
    /// MPI processes of the run, when the file says.
    pub procs: Option<u32>,
    /// The stonewall the run was configured with, when the file says.
    pub stonewall: Option<TimeSpan>,
    pub phases: Vec<PhaseFigure>,
    /// Decimals each phase's figure was printed with (none: exact).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub decimals: BTreeMap<String, u32>,
    pub score: Option<FileScore>,
    /// IO500's extended-mode score (`[SCOREX]`), reported but not checked.
    pub extended_score: Option<FileScore>,
    /// Statements that the run is invalid not tied to one phase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reported: Vec<String>,
    pub integrity: Option<Integrity>,
}

impl ParsedResult {
    pub(crate) fn new(path: &Path, format: SourceFormat) -> Self {
        ParsedResult {
            path: path.to_path_buf(),
            format,
            version: None,
            procs: None,
            stonewall: None,
            phases: Vec::new(),
            decimals: BTreeMap::new(),
            score: None,
            extended_score: None,
            reported: Vec::new(),
            integrity: None,
        }
    }

    pub fn phase(&self, name: &str) -> Option<&PhaseFigure> {
        self.phases.iter().find(|p| p.name == name)
    }

    /// Recomputes the score and checks it against the file's own score line and hash.
    pub fn check(&self) -> Check {
        let mut s = score(&self.phases, self.stonewall);
        for why in &self.reported {
            s.reasons.push(Invalid::Reported {
                phase: None,
                why: why.clone(),
            });
        }
        if let Some(fs) = &self.score
            && fs.invalid
            && s.reasons.is_empty()
        {
            s.reasons.push(Invalid::Reported {
                phase: None,
                why: format!(
                    "line {} marks the run [INVALID] (for a reason in the run's configuration or log that the figures do not show)",
                    fs.line
                ),
            });
        }
        let mut problems = Vec::new();
        let agrees = self.score.as_ref().map(|fs| self.agrees(fs));
        if agrees == Some(false)
            && let Some(fs) = &self.score
        {
            let mut text = format!(
                "line {} says Bandwidth {:.6} GiB/s : IOPS {:.6} kiops : TOTAL {:.6}, but its phase figures give Bandwidth {:.6} GiB/s : IOPS {:.6} kiops : TOTAL {:.6}",
                fs.line, fs.bandwidth, fs.metadata, fs.total, s.bandwidth, s.metadata, s.total
            );
            if PHASES
                .iter()
                .filter(|d| d.scored())
                .any(|d| self.phase(d.name).is_some_and(|f| !counts(f.value)))
            {
                text.push_str(
                    " (IO500 before isc21 multiplied a phase of 0 into its score; it leaves it out today, as iolab does)",
                );
            }
            problems.push(text);
        }
        if let Some(i) = &self.integrity
            && !i.intact()
        {
            problems.push(match i {
                Integrity::Io500Hash {
                    expected, computed, ..
                } => format!(
                    "IO500's score hash in the file is {expected}, but its values hash to {computed}: a figure or the score was changed, or the file comes from an IO500 version whose hash iolab does not rebuild"
                ),
                Integrity::Sha256 { changed, .. } => format!(
                    "hash.txt does not match {}: changed after the run",
                    changed.join(", ")
                ),
            });
        }
        Check {
            score: s,
            file_score_agrees: agrees,
            problems,
        }
    }

    /// Whether the file's score line can come from its figures: the recomputation with
    /// every figure anywhere within its printed rounding must meet the stated score within
    /// its own rounding.
    fn agrees(&self, fs: &FileScore) -> bool {
        let half = |d: Option<u32>| d.map_or(0.0, |d| 0.5 * 10f64.powi(-(d as i32)));
        let mut lo = (Vec::new(), Vec::new());
        let mut hi = (Vec::new(), Vec::new());
        for def in PHASES.iter().filter(|d| d.scored()) {
            let Some(f) = self.phase(def.name) else {
                continue;
            };
            if !counts(f.value) {
                continue;
            }
            let h = half(self.decimals.get(def.name).copied());
            let (l, u) = ((f.value - h).max(f64::MIN_POSITIVE), f.value + h);
            if def.unit() == super::phases::FigureUnit::GibPerSec {
                lo.0.push(l);
                hi.0.push(u);
            } else {
                lo.1.push(l);
                hi.1.push(u);
            }
        }
        let (bw_lo, md_lo) = (group_mean(&lo.0).0, group_mean(&lo.1).0);
        let (bw_hi, md_hi) = (group_mean(&hi.0).0, group_mean(&hi.1).0);
        let within = |stated: f64, decimals: u32, low: f64, high: f64| {
            let h = half(Some(decimals));
            let eps = 1e-9 * stated.abs().max(1.0);
            stated + h + eps >= low && stated - h - eps <= high
        };
        within(fs.bandwidth, fs.decimals[0], bw_lo, bw_hi)
            && within(fs.metadata, fs.decimals[1], md_lo, md_hi)
            && within(
                fs.total,
                fs.decimals[2],
                (bw_lo * md_lo).sqrt(),
                (bw_hi * md_hi).sqrt(),
            )
    }
}

/// The recomputed score of a result and what is wrong with the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub score: Score,
    /// Whether the file's own score line agrees with its figures (None: it has none).
    pub file_score_agrees: Option<bool>,
    /// Disagreements between the file and its figures, or signs of editing.
    pub problems: Vec<String>,
}

impl Check {
    /// Valid for submission and consistent with itself.
    pub fn ok(&self) -> bool {
        self.score.valid() && self.problems.is_empty()
    }
}

/// Parses one result text, telling the ini-style result.txt from `[RESULT]` lines.
pub fn parse_text(path: &Path, text: &str) -> Result<ParsedResult, Io500Error> {
    if super::parse_ini::looks_like_ini(text) {
        super::parse_ini::parse_ini(path, text)
    } else {
        super::parse_summary::parse_summary(path, text)
    }
}

/// Reads a result file, or a directory holding one: iolab's result directory
/// (phases.json), else IO500's result.txt (with times from result_summary.txt when
/// result.txt lacks them), else result_summary.txt.
pub fn read(path: &Path) -> Result<ParsedResult, Io500Error> {
    if !path.is_dir() {
        return read_file(path);
    }
    if path.join(super::output::PHASES_FILE).is_file() {
        return super::output::read_result_dir(path);
    }
    let ini = path.join("result.txt");
    let summary = path.join("result_summary.txt");
    match (ini.is_file(), summary.is_file()) {
        (true, has_summary) => {
            let mut r = read_file(&ini)?;
            if has_summary && r.phases.iter().any(|p| p.time.is_nan()) {
                let s = read_file(&summary)?;
                for p in r.phases.iter_mut().filter(|p| p.time.is_nan()) {
                    if let Some(t) = s.phase(&p.name) {
                        p.time = t.time;
                    }
                }
            }
            Ok(r)
        }
        (false, true) => read_file(&summary),
        (false, false) => Err(Io500Error::NoResultIn {
            dir: path.to_path_buf(),
        }),
    }
}

pub(crate) fn read_file(path: &Path) -> Result<ParsedResult, Io500Error> {
    let text = iolab_core::input::read_text(path)?;
    parse_text(path, &text)
}

/// Digits after the decimal point of a number as printed.
pub(crate) fn decimals(token: &str) -> u32 {
    token.split_once('.').map_or(0, |(_, f)| {
        f.chars().take_while(char::is_ascii_digit).count() as u32
    })
}

/// A figure, time or score as IO500 prints it (C's "%f"): a finite number of 0 or more,
/// or nan, which IO500 prints for a phase that measured nothing (0 / 0): that is kept
/// as NaN, so the phase counts as not measured and invalidates the run. inf and negative
/// values are no measurement IO500 makes, so a file holding one is malformed. `Err` ends
/// the message that follows the quoted token.
pub(crate) fn figure(token: &str) -> Result<f64, &'static str> {
    match token.parse::<f64>() {
        Ok(v) if v.is_nan() => Ok(f64::NAN),
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(_) => Err("is not a finite number of 0 or more"),
        Err(_) => Err("is not a number"),
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
