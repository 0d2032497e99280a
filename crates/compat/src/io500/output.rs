//! iolab's IO500 output in IO500's own format, so `iolab io500 score` reads it and users
//! can diff it against IO500's: [`result_line`] (`[RESULT] name value unit : time T
//! seconds`), [`phase_line`] (with the score's `[INVALID]` mark), [`score_line`]
//! (`[SCORE ] Bandwidth X GiB/s : IOPS Y kiops : TOTAL Z`), [`render`]; and the result
//! directory ([`ResultDir`], [`write_result_dir`], [`read_result_dir`]): result.txt,
//! config.json, phases.json and hash.txt (sha256sum format) over the three.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::Io500Error;
use super::parse::{Integrity, ParsedResult, SourceFormat, read_file};
use super::phases::phase;
use super::score::{PhaseFigure, Score, marked_invalid, score};
use super::sha256::hex_digest;
use iolab_core::spec::io500::Io500Config;

pub const RESULT_FILE: &str = "result.txt";
pub const CONFIG_FILE: &str = "config.json";
pub const PHASES_FILE: &str = "phases.json";
pub const HASH_FILE: &str = "hash.txt";
/// The files hash.txt covers, in the order it lists them.
const HASHED: [&str; 3] = [CONFIG_FILE, PHASES_FILE, RESULT_FILE];

/// One phase as IO500 prints it: `[RESULT]` for scored phases, `[      ]` for the others,
/// the unit by IO500's rule (a name starting with 'i' is GiB/s), ` [INVALID]` at the end
/// of a phase that is.
pub fn result_line(fig: &PhaseFigure, invalid: bool) -> String {
    let scored = phase(&fig.name).is_some_and(|d| d.scored());
    let tag = if scored { "[RESULT]" } else { "[      ]" };
    let unit = if fig.name.starts_with('i') {
        "GiB/s"
    } else {
        "kIOPS"
    };
    let flag = if invalid || !fig.valid {
        " [INVALID]"
    } else {
        ""
    };
    format!(
        "{tag} {:>20} {:>15} {unit} : time {:.3} seconds{flag}",
        fig.name,
        format!("{:.6}", fig.value),
        fig.time
    )
}

/// The score as IO500 prints it.
pub fn score_line(s: &Score) -> String {
    format!(
        "[SCORE ] Bandwidth {:.6} GiB/s : IOPS {:.6} kiops : TOTAL {:.6}{}",
        s.bandwidth,
        s.metadata,
        s.total,
        if s.valid() { "" } else { " [INVALID]" }
    )
}

/// A phase's line as result.txt holds it, marked `[INVALID]` when the score has a reason
/// against the phase: the figure alone decides, so the line printed as a phase ends is
/// the line its result file will hold.
pub fn phase_line(fig: &PhaseFigure) -> String {
    result_line(fig, marked_invalid(fig))
}

/// A header line, the phases in the order given ([`phase_line`]), then the score.
pub fn render(header: &str, phases: &[PhaseFigure], s: &Score) -> String {
    let mut out = String::new();
    out.push_str(header);
    out.push('\n');
    for fig in phases {
        out.push_str(&phase_line(fig));
        out.push('\n');
    }
    out.push_str(&score_line(s));
    out.push('\n');
    out
}

/// The header of iolab's result.txt ("iolab 0.1.0 IO500 (standard, stonewall 300s)").
pub fn header(config: &Io500Config) -> String {
    format!(
        "{} IO500 (standard, stonewall {})",
        config.tool, config.spec.stonewall
    )
}

#[derive(Serialize)]
struct PhasesOut<'a> {
    phases: &'a [PhaseFigure],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PhasesIn {
    phases: Vec<PhaseFigure>,
}

/// The directory one run's result goes in, made before the suite runs: a run learns at
/// once, not after the suite, that it cannot keep its result, and never writes over
/// another run's. Dropped while still empty (the run ended without a result), a
/// directory the run made is removed again.
#[derive(Debug)]
pub struct ResultDir {
    pub path: PathBuf,
    /// This run made it (rather than being given an empty one).
    made: bool,
    /// The directories above it this run made (io500-results/), deepest first.
    made_parents: Vec<PathBuf>,
}

impl ResultDir {
    /// The default result directory of a run started at `now_ms`:
    /// io500-results/YYYY.MM.DD-HH.MM.SS, as IO500 names them ([`ResultDir::create`]
    /// numbers it when another run took it).
    pub fn default_path(now_ms: i64) -> PathBuf {
        let t = iolab_core::civil::UtcTime::from_ms(now_ms);
        PathBuf::from(format!(
            "io500-results/{:04}.{:02}.{:02}-{:02}.{:02}.{:02}",
            t.year, t.month, t.day, t.hour, t.minute, t.second
        ))
    }

    /// Makes `dir` (and its parents as needed) for one run. The directory itself is made
    /// exclusively: when it exists, a `default` name is numbered (`dir-2`, `dir-3`, ...),
    /// and a name the user gave is taken only if it is an empty directory iolab can write
    /// in.
    pub fn create(dir: &Path, default: bool) -> Result<ResultDir, Io500Error> {
        let failed = |path: &Path, op, source| Io500Error::ResultDir {
            path: path.to_path_buf(),
            op,
            source,
        };
        let mut made_parents = Vec::new();
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            made_parents = parent
                .ancestors()
                .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
                .map(Path::to_path_buf)
                .collect();
            std::fs::create_dir_all(parent).map_err(|e| failed(dir, "cannot create it", e))?;
        }
        let mut path = dir.to_path_buf();
        for n in 2.. {
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    return Ok(ResultDir {
                        path,
                        made: true,
                        made_parents,
                    });
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists && default => {
                    let mut numbered = dir.as_os_str().to_owned();
                    numbered.push(format!("-{n}"));
                    path = numbered.into();
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists && path.is_dir() => break,
                Err(e) => return Err(failed(&path, "cannot create it", e)),
            }
        }
        // The user's own directory: only when empty, and only when iolab can write in it.
        let mut entries =
            std::fs::read_dir(&path).map_err(|e| failed(&path, "cannot read it", e))?;
        if entries.next().is_some() {
            return Err(Io500Error::ResultDirInUse { path });
        }
        let probe = path.join(".iolab-write-check");
        std::fs::File::create_new(&probe).map_err(|e| failed(&path, "cannot write in it", e))?;
        let _ = std::fs::remove_file(&probe);
        Ok(ResultDir {
            path,
            made: false,
            made_parents,
        })
    }
}

impl Drop for ResultDir {
    fn drop(&mut self) {
        if self.made && std::fs::remove_dir(&self.path).is_ok() {
            // Nothing was written (a run refused before it began): the directories made
            // for it go too, up to the first that holds something. Removing fails, as it
            // should, once a result is in it.
            for parent in &self.made_parents {
                if std::fs::remove_dir(parent).is_err() {
                    break;
                }
            }
        }
    }
}

/// Writes the result files into `dir` (a [`ResultDir`]) and returns the score they hold.
pub fn write_result_dir(
    dir: &Path,
    config: &Io500Config,
    phases: &[PhaseFigure],
) -> Result<Score, Io500Error> {
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| Io500Error::Write { path, source })
    };
    let s = score(phases, Some(config.spec.stonewall));
    // phases.json says what result.txt says: a phase marked [INVALID] there is not valid.
    let judged: Vec<PhaseFigure> = phases
        .iter()
        .map(|f| PhaseFigure {
            valid: f.valid && !marked_invalid(f),
            ..f.clone()
        })
        .collect();
    let texts = [
        (CONFIG_FILE, pretty(dir, CONFIG_FILE, config)?),
        (
            PHASES_FILE,
            pretty(
                dir,
                PHASES_FILE,
                &PhasesOut {
                    phases: judged.as_slice(),
                },
            )?,
        ),
        (RESULT_FILE, render(&header(config), phases, &s)),
    ];
    let mut sums = String::new();
    for (name, text) in &texts {
        write(name, text)?;
        sums.push_str(&format!("{}  {name}\n", hex_digest(text.as_bytes())));
    }
    write(HASH_FILE, &sums)?;
    Ok(s)
}

/// Pretty JSON with a final newline.
fn pretty<T: Serialize>(dir: &Path, name: &str, v: &T) -> Result<String, Io500Error> {
    serde_json::to_string_pretty(v)
        .map(|s| s + "\n")
        .map_err(|source| Io500Error::Json {
            path: dir.join(name),
            source,
        })
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, Io500Error> {
    let text = iolab_core::input::read_text(path)?;
    serde_json::from_str(&text).map_err(|source| Io500Error::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads iolab's result directory: the exact figures of phases.json, the configuration,
/// the score line of result.txt, and whether hash.txt still matches the files.
pub fn read_result_dir(dir: &Path) -> Result<ParsedResult, Io500Error> {
    let config: Io500Config = read_json(&dir.join(CONFIG_FILE))?;
    let phases: PhasesIn = read_json(&dir.join(PHASES_FILE))?;
    let mut out = ParsedResult::new(dir, SourceFormat::Iolab);
    out.version = Some(config.tool.clone());
    out.procs = Some(config.ranks);
    out.stonewall = Some(config.spec.stonewall);
    out.phases = phases.phases;
    let result = dir.join(RESULT_FILE);
    if result.is_file() {
        out.score = read_file(&result)?.score;
    }
    out.integrity = Some(check_hashes(dir)?);
    Ok(out)
}

/// Compares hash.txt with the files it covers.
pub fn check_hashes(dir: &Path) -> Result<Integrity, Io500Error> {
    let path = dir.join(HASH_FILE);
    let Ok(text) = iolab_core::input::read_text(&path) else {
        return Ok(Integrity::Sha256 {
            checked: Vec::new(),
            changed: vec![format!("{HASH_FILE} (missing)")],
        });
    };
    let mut listed = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (digest, name) = line
            .split_once(char::is_whitespace)
            .map(|(d, n)| (d, n.trim().trim_start_matches('*')))
            .filter(|(d, n)| d.len() == 64 && !n.is_empty())
            .ok_or_else(|| {
                Io500Error::malformed(
                    &path,
                    i + 1,
                    "expected a SHA-256 in hex, two spaces and a file name",
                )
            })?;
        listed.push((digest.to_ascii_lowercase(), name.to_string()));
    }
    let mut checked = Vec::new();
    let mut changed = Vec::new();
    for name in HASHED {
        let Some((digest, _)) = listed.iter().find(|(_, n)| n == name) else {
            changed.push(format!("{name} (not in {HASH_FILE})"));
            continue;
        };
        match iolab_core::input::read_bytes(&dir.join(name), iolab_core::input::MAX_INPUT) {
            Ok(bytes) if hex_digest(&bytes) == *digest => checked.push(name.to_string()),
            Ok(_) => changed.push(name.to_string()),
            Err(_) => changed.push(format!("{name} (missing)")),
        }
    }
    Ok(Integrity::Sha256 { checked, changed })
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
