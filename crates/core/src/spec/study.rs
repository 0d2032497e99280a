//! Studies: [`StudySpec`] is a study file (TOML) — sweeps over any workload option, each
//! running its phases in order for every point; [`StudySpec::expand`] turns it into the
//! exact list of [`PlannedPhase`]s, with the same spec types the command-line flags use
//! (one definition per setting). [`Overrides`] scale a study to a laptop (`--scale`) or
//! set any option in every phase (`--set key=value`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::SpecError;
use crate::spec::{DataSpec, MetaSpec, S3Spec};

/// A study file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudySpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Every point's phases run this many times.
    #[serde(default = "one")]
    pub repeat: u32,
    /// Options for every phase of every sweep.
    #[serde(default)]
    pub defaults: Map<String, Value>,
    #[serde(default)]
    pub sweep: Vec<SweepSpec>,
}

fn one() -> u32 {
    1
}

/// How the lists of a sweep combine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SweepMode {
    /// Every combination (a matrix).
    #[default]
    Product,
    /// The i-th values of every list together (lists of equal length).
    Zip,
}

/// For every point of `over`, run `phase` in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    pub name: String,
    /// Option -> list of values (a single value is a list of one).
    #[serde(default)]
    pub over: Map<String, Value>,
    #[serde(default)]
    pub mode: SweepMode,
    /// Options for every phase of this sweep.
    #[serde(default)]
    pub defaults: Map<String, Value>,
    /// The phases: `name`, `kind` ("data", default, or "meta") and workload options.
    pub phase: Vec<Map<String, Value>>,
}

/// What a phase runs: a data workload (`iolab run`) or a metadata workload (`iolab meta`,
/// whose operations become one result each).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum PhaseSpec {
    Data(Box<DataSpec>),
    Meta(Box<MetaSpec>),
    /// An object storage workload (`iolab s3`): its operations become one result each.
    S3(Box<S3Spec>),
}

impl PhaseSpec {
    pub fn kind(&self) -> &'static str {
        match self {
            PhaseSpec::Data(_) => "data",
            PhaseSpec::Meta(_) => "meta",
            PhaseSpec::S3(_) => "s3",
        }
    }

    /// How many results the phase prints and stores: one for a data phase, one per
    /// operation for a metadata or S3 phase (create, stat and remove are three).
    pub fn results(&self) -> usize {
        match self {
            PhaseSpec::Data(_) => 1,
            PhaseSpec::Meta(m) => m.ops.len().max(1),
            PhaseSpec::S3(s) => s.ops.len().max(1),
        }
    }
}

/// One phase of a study, fully resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedPhase {
    pub sweep: String,
    /// Index of the sweep point (phases of one point share it).
    pub point: usize,
    /// The swept options and their values at this point ("threads" -> "4").
    pub coordinates: BTreeMap<String, String>,
    pub repetition: u32,
    pub name: String,
    pub spec: PhaseSpec,
}

/// Changes applied to every phase after the study file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    /// Multiplies every size, file count and duration (0.001 turns 2 TB into 2 GB).
    pub scale: Option<f64>,
    /// `key=value` pairs, as in the study file (values parsed as TOML, else strings).
    pub set: Vec<(String, Value)>,
    /// Replaces the study's repeat count.
    pub repeat: Option<u32>,
    /// Swept keys whose values `--set` gave: the points carry the user's values, which
    /// --scale leaves alone.
    pub user_swept: Vec<String>,
}

impl Overrides {
    /// Parses one `--set key=value`.
    pub fn parse_set(text: &str) -> Result<(String, Value), SpecError> {
        let (k, v) = text
            .split_once('=')
            .ok_or_else(|| SpecError::new("--set", format!("'{text}' is not key=value")))?;
        let k = k.trim().replace('-', "_");
        let v = v.trim();
        // A list, for a key a sweep varies: [100, 90, 70] or [4KiB, 2MiB].
        if let Some(inner) = v.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            let items: Vec<Value> = inner
                .split(',')
                .map(str::trim)
                .filter(|i| !i.is_empty())
                .map(Self::scalar)
                .collect();
            if items.is_empty() {
                return Err(SpecError::new(
                    "--set",
                    format!("{k}: the list {v} is empty"),
                ));
            }
            return Ok((k, Value::Array(items)));
        }
        Ok((k, Self::scalar(v)))
    }

    /// One `--set` value: a number (whole, or with a decimal point: a ratio), true or
    /// false, else text (sizes, durations).
    fn scalar(v: &str) -> Value {
        if let Ok(n) = v.parse::<i64>() {
            return Value::from(n);
        }
        match v
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite() && v.contains('.'))
        {
            Some(f) => Value::from(f),
            None => match v {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => Value::String(v.trim_matches('"').to_string()),
            },
        }
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl StudySpec {
    /// Parses a study file; `origin` names it in errors ("nfs.toml:12: ...").
    pub fn from_toml(text: &str, origin: &str) -> Result<StudySpec, SpecError> {
        let study: StudySpec = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(0);
            SpecError::new(
                format!("{origin}:{line}"),
                e.message().trim().replace('\n', " "),
            )
        })?;
        study.check_keys(text, origin)?;
        Ok(study)
    }

    /// Every option named anywhere must be one a workload knows: a typo is reported with
    /// its line rather than silently ignored.
    fn check_keys(&self, text: &str, origin: &str) -> Result<(), SpecError> {
        let known = known_options();
        let mut maps: Vec<&Map<String, Value>> = vec![&self.defaults];
        for s in &self.sweep {
            maps.push(&s.defaults);
            maps.push(&s.over);
            maps.extend(s.phase.iter());
        }
        for map in maps {
            for key in map.keys() {
                if key != "name" && key != "kind" && !known.contains(key) {
                    let line = find_key_line(text, key).unwrap_or(0);
                    return Err(SpecError::new(
                        format!("{origin}:{line}"),
                        format!(
                            "unknown option `{key}` (the options are those of `iolab run` and `iolab meta`, in snake_case: block_size, queue_depth, ...)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every phase the study runs, in order.
    pub fn expand(
        &self,
        origin: &str,
        overrides: &Overrides,
    ) -> Result<Vec<PlannedPhase>, SpecError> {
        let repeat = overrides.repeat.unwrap_or(self.repeat);
        let where_repeat = || match overrides.repeat {
            Some(_) => "--repeat".to_string(),
            None => format!("{origin}: repeat"),
        };
        if repeat == 0 {
            return Err(SpecError::new(where_repeat(), "must be at least 1"));
        }
        if repeat > MAX_REPEAT {
            return Err(SpecError::new(
                where_repeat(),
                format!("{repeat} is more than the {MAX_REPEAT} repetitions iolab runs of a phase"),
            ));
        }
        if self.sweep.is_empty() {
            return Err(SpecError::new(origin, "has no [[sweep]]: nothing to run"));
        }
        check_set(self, overrides)?;
        let mut out = Vec::new();
        // Points already planned by earlier sweeps (phases of one point share a number).
        let mut points_before = 0;
        for sweep in &self.sweep {
            let (sweep, overrides) = &with_set(sweep, overrides);
            let at = |what: &str| format!("{origin}: sweep '{}'{what}", sweep.name);
            let points = sweep_points(sweep).map_err(|e| SpecError::new(at(""), e))?;
            if sweep.phase.is_empty() {
                return Err(SpecError::new(at(""), "has no [[sweep.phase]]"));
            }
            let phases = points.len() as u64 * u64::from(repeat) * sweep.phase.len() as u64;
            if out.len() as u64 + phases > MAX_PHASES {
                return Err(SpecError::new(
                    origin,
                    format!(
                        "expands to more than {MAX_PHASES} phases (sweep '{}': {} points x {repeat} repetitions x {} phases); lower --repeat or the sweep's values",
                        sweep.name,
                        points.len(),
                        sweep.phase.len()
                    ),
                ));
            }
            for (point_index, point) in points.iter().enumerate() {
                for repetition in 0..repeat {
                    for (i, raw) in sweep.phase.iter().enumerate() {
                        let name = raw
                            .get("name")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("phase{}", i + 1));
                        let where_ = at(&format!(", phase '{name}'"));
                        let spec =
                            resolve_phase(&self.defaults, &sweep.defaults, raw, point, overrides)
                                .map_err(|e| SpecError::new(where_.clone(), e))?;
                        out.push(PlannedPhase {
                            sweep: sweep.name.clone(),
                            point: points_before + point_index,
                            coordinates: point
                                .iter()
                                .map(|(k, v)| (k.clone(), value_text(v)))
                                .collect(),
                            repetition,
                            name,
                            spec,
                        });
                    }
                }
            }
            points_before += points.len();
        }
        Ok(out)
    }
}

/// The most repetitions of a phase a study runs.
pub const MAX_REPEAT: u32 = 1000;
/// The most phases one study expands to.
pub const MAX_PHASES: u64 = 100_000;

/// Every `--set` key must be a workload option of some phase; on a key a sweep varies it
/// replaces the sweep's values (so points are labelled with what runs), and a list is
/// accepted only there.
fn check_set(study: &StudySpec, overrides: &Overrides) -> Result<(), SpecError> {
    let known = known_options();
    for (key, value) in &overrides.set {
        if !known.contains(key) {
            let hint = closest(key, &known)
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            return Err(SpecError::new(
                "--set",
                format!(
                    "unknown option `{key}`{hint}; the options are those of `iolab run` and `iolab meta`, in snake_case"
                ),
            ));
        }
        let kinds: Vec<&str> = study
            .sweep
            .iter()
            .flat_map(|s| s.phase.iter())
            .map(|raw| raw.get("kind").and_then(Value::as_str).unwrap_or("data"))
            .collect();
        if !kinds.iter().any(|k| options_of(k).contains(key)) {
            return Err(SpecError::new(
                "--set",
                format!(
                    "`{key}` is an option of no phase of this study (its phases are {})",
                    {
                        let mut k = kinds.clone();
                        k.sort();
                        k.dedup();
                        k.join(" and ")
                    }
                ),
            ));
        }
        // A list replaces the values a sweep varies; it means nothing where none does.
        let swept = study.sweep.iter().any(|s| s.over.contains_key(key));
        if !swept && matches!(value, Value::Array(_)) {
            return Err(SpecError::new(
                "--set",
                format!(
                    "`{key}` is given a list, which replaces the values a sweep varies, but no sweep of this study varies `{key}`; give one value"
                ),
            ));
        }
    }
    Ok(())
}

#[path = "study_keys.rs"]
mod keys;
use keys::{closest, find_key_line, known_options, line_of, options_of};

#[path = "study_points.rs"]
mod points;
use points::{resolve_phase, sweep_points, with_set};

#[cfg(test)]
#[path = "study_tests.rs"]
mod tests;
