//! A study's sweep points and the phase each point resolves to: `--set` values merged
//! into the sweep they vary, the points of a sweep (lists zipped or crossed), the options
//! of defaults, sweep and phase merged per kind, and `--scale` applied to sizes, counts
//! and durations.

use serde_json::{Map, Value};

use super::keys::options_of;
use super::{Overrides, PhaseSpec, SweepMode, SweepSpec};
use crate::spec::{DataSpec, MetaSpec, S3Spec};
use crate::units::{ByteCount, Nanos, TimeSpan};

/// Options that hold sizes, counts and durations, which `--scale` multiplies.
const SIZES: [&str; 2] = ["size", "total_size"];
const COUNTS: [&str; 3] = ["total_files", "files_per_dir", "objects"];
const DURATIONS: [&str; 3] = ["runtime", "stonewall", "duration"];

/// `sweep` with the values `--set` gives for the keys it varies (`--set
/// rwmix_read=[100,90,70]`, or one value: one point), and the overrides left for its
/// phases: the others, less lists meant for other sweeps.
pub(super) fn with_set(sweep: &SweepSpec, overrides: &Overrides) -> (SweepSpec, Overrides) {
    let mut sweep = sweep.clone();
    let mut rest = overrides.clone();
    let mut rest_swept = Vec::new();
    rest.set.retain(|(key, value)| {
        if sweep.over.contains_key(key) {
            sweep.over.insert(key.clone(), value.clone());
            rest_swept.push(key.clone());
            false
        } else {
            !matches!(value, Value::Array(_))
        }
    });
    rest.user_swept = rest_swept;
    (sweep, rest)
}

/// The points of a sweep: maps option -> value.
pub(super) fn sweep_points(sweep: &SweepSpec) -> Result<Vec<Map<String, Value>>, String> {
    let lists: Vec<(String, Vec<Value>)> = sweep
        .over
        .iter()
        .map(|(k, v)| {
            let values = match v {
                Value::Array(a) => a.clone(),
                other => vec![other.clone()],
            };
            (k.clone(), values)
        })
        .collect();
    if let Some((k, _)) = lists.iter().find(|(_, v)| v.is_empty()) {
        return Err(format!("over.{k} is an empty list"));
    }
    let mut points = vec![Map::new()];
    match sweep.mode {
        SweepMode::Product => {
            for (k, values) in &lists {
                points = points
                    .iter()
                    .flat_map(|p| {
                        values.iter().map(move |v| {
                            let mut q = p.clone();
                            q.insert(k.clone(), v.clone());
                            q
                        })
                    })
                    .collect();
            }
        }
        SweepMode::Zip => {
            let n = lists.first().map_or(1, |(_, v)| v.len());
            if let Some((k, v)) = lists.iter().find(|(_, v)| v.len() != n) {
                return Err(format!(
                    "mode = \"zip\" needs lists of equal length, but over.{k} has {} values and the first has {n}",
                    v.len()
                ));
            }
            points = (0..n)
                .map(|i| {
                    lists
                        .iter()
                        .map(|(k, v)| (k.clone(), v[i].clone()))
                        .collect()
                })
                .collect();
        }
    }
    Ok(points)
}

/// One phase of a study at one point of its sweep: the study's defaults, the sweep's,
/// the point's values and the phase's own options, scaled by --scale, then --set; parsed
/// and checked as its kind's spec.
pub(super) fn resolve_phase(
    study_defaults: &Map<String, Value>,
    sweep_defaults: &Map<String, Value>,
    raw: &Map<String, Value>,
    point: &Map<String, Value>,
    overrides: &Overrides,
) -> Result<PhaseSpec, String> {
    let kind = raw.get("kind").and_then(Value::as_str).unwrap_or("data");
    if kind != "data" && kind != "meta" && kind != "s3" {
        return Err(format!(
            "kind = \"{kind}\" is not a phase kind (use \"data\", \"meta\" or \"s3\")"
        ));
    }
    // Defaults, sweep values and --set reach every phase they apply to: a data option
    // such as `direct` in [defaults] leaves a metadata phase alone. An option set on the
    // phase itself must be one of its kind.
    let own = options_of(kind);
    let mut map = study_defaults.clone();
    map.extend(sweep_defaults.clone());
    map.extend(point.clone());
    map.retain(|k, _| own.contains(k));
    for (k, v) in raw {
        if k == "name" || k == "kind" {
            continue;
        }
        if point.contains_key(k) {
            return Err(format!(
                "sets `{k}`, which the sweep varies; remove one of them"
            ));
        }
        if !own.contains(k) {
            return Err(format!("`{k}` is not an option of a {kind} phase"));
        }
        map.insert(k.clone(), v.clone());
    }
    // --scale shrinks the study's own values; what the user sets runs as set.
    if let Some(f) = overrides.scale {
        scale_phase(&mut map, f, point, overrides, &own)?;
    }
    apply_set(&mut map, kind, raw, overrides, &own);
    // `ops = "create,stat"` as on the command line, or a list.
    if let Some(Value::String(ops)) = map.get("ops") {
        let list: Vec<Value> = ops.split(',').map(|o| Value::from(o.trim())).collect();
        map.insert("ops".into(), Value::Array(list));
    }
    spec_of(kind, map)
}

/// --scale `f` on a phase's options, in whole blocks of the size it will run with; the
/// values the user swept (`--sweep`) run as given.
fn scale_phase(
    map: &mut Map<String, Value>,
    f: f64,
    point: &Map<String, Value>,
    overrides: &Overrides,
    own: &[String],
) -> Result<(), String> {
    let block = overrides
        .set
        .iter()
        .find(|(k, _)| k == "block_size")
        .map(|(_, v)| v)
        .or_else(|| map.get("block_size"))
        .and_then(|v| serde_json::from_value::<ByteCount>(v.clone()).ok());
    scale(map, f, block)?;
    for k in &overrides.user_swept {
        if let Some(v) = point.get(k).filter(|_| own.contains(k)) {
            map.insert(k.clone(), v.clone());
        }
    }
    Ok(())
}

/// --set's values of the phase's kind. The data-reduction options from [defaults], a
/// sweep or --set reach the phases that write (`--set compress_ratio=2` on a study with
/// read phases); set on a read phase itself they are refused as on the command line.
fn apply_set(
    map: &mut Map<String, Value>,
    kind: &str,
    raw: &Map<String, Value>,
    overrides: &Overrides,
    own: &[String],
) {
    let writes = kind == "data"
        && map
            .get("rw")
            .and_then(|v| serde_json::from_value::<crate::spec::RwKind>(v.clone()).ok())
            .is_some_and(crate::spec::RwKind::writes);
    let reduction = |k: &str| matches!(k, "compress_ratio" | "compress_chunk" | "dedupe_ratio");
    if !writes {
        map.retain(|k, _| !reduction(k) || raw.contains_key(k));
    }
    for (k, v) in &overrides.set {
        if own.contains(k) && (writes || !reduction(k)) {
            map.insert(k.clone(), v.clone());
        }
    }
}

/// The phase's options as its kind's spec, checked.
fn spec_of(kind: &str, map: Map<String, Value>) -> Result<PhaseSpec, String> {
    let map = Value::Object(map);
    match kind {
        "data" => {
            let spec: DataSpec = serde_json::from_value(map).map_err(|e| e.to_string())?;
            spec.validate().map_err(|e| e.to_string())?;
            Ok(PhaseSpec::Data(Box::new(spec)))
        }
        "s3" => {
            let spec: S3Spec = serde_json::from_value(map).map_err(|e| e.to_string())?;
            spec.validate().map_err(|e| e.to_string())?;
            Ok(PhaseSpec::S3(Box::new(spec)))
        }
        _ => {
            let spec: MetaSpec = serde_json::from_value(map).map_err(|e| e.to_string())?;
            spec.validate().map_err(|e| e.to_string())?;
            Ok(PhaseSpec::Meta(Box::new(spec)))
        }
    }
}

/// Multiplies sizes, counts and durations in place; sizes stay whole `block`s.
fn scale(map: &mut Map<String, Value>, f: f64, block: Option<ByteCount>) -> Result<(), String> {
    if !(f > 0.0 && f.is_finite()) {
        return Err(format!("--scale {f} must be a positive number"));
    }
    // Whole blocks (of at least 4 KiB), so a scaled phase does not trip iolab's own
    // "not a whole number of blocks" check.
    let unit = block.map_or(4096, |b| b.get().max(4096));
    for key in SIZES {
        if let Some(v) = map.get(key) {
            let b: ByteCount =
                serde_json::from_value(v.clone()).map_err(|e| format!("{key}: {e}"))?;
            let scaled = ((b.get() as f64 * f) as u64).max(unit) / unit * unit;
            map.insert(key.into(), Value::from(scaled));
        }
    }
    for key in COUNTS {
        if let Some(n) = map.get(key).and_then(Value::as_u64) {
            map.insert(
                key.into(),
                Value::from(((n as f64 * f).round() as u64).max(1)),
            );
        }
    }
    for key in DURATIONS {
        if let Some(v) = map.get(key) {
            let t: TimeSpan =
                serde_json::from_value(v.clone()).map_err(|e| format!("{key}: {e}"))?;
            let scaled = ((t.nanos().0 as f64 * f) as u64).max(1_000_000_000);
            map.insert(key.into(), Value::from(TimeSpan(Nanos(scaled)).to_string()));
        }
    }
    Ok(())
}
