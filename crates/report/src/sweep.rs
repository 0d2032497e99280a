//! The sweep structure of a study, read from the phases themselves: phases of one workload
//! share a `name`, repetitions share name and params, and the swept parameter of a group is
//! the one whose value varies. [`plan_groups`] returns a [`GroupPlan`] per (name, split)
//! group; [`value_order`] orders parameter values numerically ("4KiB" < "128KiB").

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use iolab_core::result::{PhaseKind, PhaseResult};
use iolab_core::units::{ByteCount, TimeSpan};

/// Parameters preferred as the x axis when several vary, in this order; any other varying
/// parameter comes after them, the one with most distinct values first.
const SWEEP_PRIORITY: [&str; 4] = ["threads", "queue_depth", "block_size", "ranks"];

/// Parameters whose values are quantities along an axis (a line between 16 and 32 threads
/// means something); any other is a set of categories (block sizes, read shares).
const NUMERIC_AXES: [&str; 5] = ["threads", "queue_depth", "ranks", "nodes", "rate_iops"];

/// True when a chart along `key` may join its points with lines.
pub fn is_numeric_axis(key: &str) -> bool {
    NUMERIC_AXES.contains(&key)
}

/// Params, as phases carry them.
pub type Params = BTreeMap<String, String>;

/// One group of phases: a workload (name), optionally split by a second varying parameter
/// (a matrix), with the parameter it sweeps and the values that parameter takes.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupPlan {
    pub name: String,
    pub kind: PhaseKind,
    /// Values of the other varying parameters that define this group (a matrix cell row),
    /// empty for a plain sweep.
    pub split: Params,
    /// The swept parameter, None when the group is a single point.
    pub swept: Option<String>,
    /// The swept values seen on any side, in [`value_order`].
    pub values: Vec<String>,
    /// Parameters that do not vary inside the group, on any side.
    pub fixed: Params,
    /// The parameters that place a phase in the group (split keys + swept key + the
    /// parameters that vary in lockstep with the swept one).
    relevant: BTreeSet<String>,
}

impl GroupPlan {
    /// True when `phase` belongs to this group.
    pub fn contains(&self, phase: &PhaseResult) -> bool {
        phase.name == self.name
            && self
                .split
                .iter()
                .all(|(k, v)| phase.params.get(k).map(String::as_str).unwrap_or("") == v)
    }

    /// The swept value of a phase of this group (None for a single-point group).
    pub fn value_of(&self, phase: &PhaseResult) -> Option<String> {
        self.swept
            .as_ref()
            .map(|k| phase.params.get(k).cloned().unwrap_or_default())
    }

    /// The parameters that tell the points of this group apart.
    pub fn point_key(&self, phase: &PhaseResult) -> Params {
        self.relevant
            .iter()
            .map(|k| (k.clone(), param(phase, k).to_string()))
            .collect()
    }
}

fn param<'a>(phase: &'a PhaseResult, key: &str) -> &'a str {
    phase.params.get(key).map(String::as_str).unwrap_or("")
}

/// Orders parameter values: numbers (plain, sizes such as "4KiB", durations such as "30s")
/// by value before any text, text alphabetically.
pub fn value_order(a: &str, b: &str) -> Ordering {
    match (numeric(a), numeric(b)) {
        (Some(x), Some(y)) => x.total_cmp(&y).then_with(|| a.cmp(b)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// The numeric value of a parameter, when it has one.
pub fn numeric(v: &str) -> Option<f64> {
    let v = v.trim();
    if let Ok(x) = v.parse::<f64>() {
        return x.is_finite().then_some(x);
    }
    if let Ok(b) = v.parse::<ByteCount>() {
        return Some(b.get() as f64);
    }
    v.parse::<TimeSpan>().ok().map(|t| t.nanos().0 as f64)
}

/// Plans the groups of the phases of all sides (each side a list of phases: one run, or
/// several runs taken together). Parameters that differ only between sides (another
/// backend, another rank count) do not split groups, so the sides stay comparable.
pub fn plan_groups(sides: &[Vec<&PhaseResult>]) -> Vec<GroupPlan> {
    let mut names: Vec<(&str, PhaseKind)> = Vec::new();
    for phase in sides.iter().flatten() {
        if !names.iter().any(|(n, _)| *n == phase.name) {
            names.push((&phase.name, phase.kind));
        }
    }
    let mut plans = Vec::new();
    for (name, kind) in names {
        let per_side: Vec<Vec<&PhaseResult>> = sides
            .iter()
            .map(|s| s.iter().copied().filter(|p| p.name == name).collect())
            .collect();
        plans.extend(plan_name(name, kind, &per_side));
    }
    plans
}

/// Plans the groups of one workload name.
fn plan_name(name: &str, kind: PhaseKind, per_side: &[Vec<&PhaseResult>]) -> Vec<GroupPlan> {
    let all: Vec<&PhaseResult> = per_side.iter().flatten().copied().collect();
    let mut varying: BTreeSet<String> = BTreeSet::new();
    for side in per_side {
        varying.extend(varying_keys(side));
    }
    let swept = primary_key(&varying, &all);
    let split_keys: Vec<String> = match &swept {
        None => Vec::new(),
        Some(p) => varying
            .iter()
            .filter(|k| *k != p && !determined_by(&all, p, k))
            .cloned()
            .collect(),
    };
    let mut splits: Vec<Params> = Vec::new();
    for phase in &all {
        let s: Params = split_keys
            .iter()
            .map(|k| (k.clone(), param(phase, k).to_string()))
            .collect();
        if !splits.contains(&s) {
            splits.push(s);
        }
    }
    splits.sort_by(params_order);
    splits
        .into_iter()
        .map(|split| {
            let members: Vec<&PhaseResult> = all
                .iter()
                .copied()
                .filter(|p| split.iter().all(|(k, v)| param(p, k) == v))
                .collect();
            let mut values: Vec<String> = Vec::new();
            if let Some(key) = &swept {
                for p in &members {
                    let v = param(p, key).to_string();
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
                values.sort_by(|a, b| value_order(a, b));
            }
            GroupPlan {
                name: name.to_string(),
                kind,
                fixed: fixed_params(&members),
                split,
                swept: swept.clone(),
                values,
                relevant: varying.clone(),
            }
        })
        .collect()
}

fn params_order(a: &Params, b: &Params) -> Ordering {
    for ((_, x), (_, y)) in a.iter().zip(b.iter()) {
        let o = value_order(x, y);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Keys whose value differs between phases of one side (a missing key counts as "").
fn varying_keys(phases: &[&PhaseResult]) -> BTreeSet<String> {
    let keys: BTreeSet<&String> = phases.iter().flat_map(|p| p.params.keys()).collect();
    keys.into_iter()
        .filter(|k| {
            let mut seen = phases.iter().map(|p| param(p, k));
            let first = seen.next();
            seen.any(|v| Some(v) != first)
        })
        .cloned()
        .collect()
}

/// The x axis among the varying keys: a preferred one, else the one with most values.
fn primary_key(varying: &BTreeSet<String>, phases: &[&PhaseResult]) -> Option<String> {
    if let Some(k) = SWEEP_PRIORITY.iter().find(|k| varying.contains(**k)) {
        return Some(k.to_string());
    }
    varying
        .iter()
        .max_by_key(|k| {
            let distinct: BTreeSet<&str> = phases.iter().map(|p| param(p, k)).collect();
            (distinct.len(), std::cmp::Reverse((*k).clone()))
        })
        .cloned()
}

/// True when every value of `key` is fixed by the value of `primary` (they move in
/// lockstep, as ranks with threads in a scaling study).
fn determined_by(phases: &[&PhaseResult], primary: &str, key: &str) -> bool {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    phases.iter().all(|p| {
        let v = param(p, key);
        *seen.entry(param(p, primary)).or_insert(v) == v
    })
}

/// Parameters with one value over all `phases`.
fn fixed_params(phases: &[&PhaseResult]) -> Params {
    let Some(first) = phases.first() else {
        return Params::new();
    };
    first
        .params
        .iter()
        .filter(|(k, v)| phases.iter().all(|p| p.params.get(*k) == Some(*v)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::phase;

    #[test]
    fn values_order_numerically() {
        let mut v = vec!["128KiB", "4KiB", "1MiB", "16", "2", "write", "read"];
        v.sort_by(|a, b| value_order(a, b));
        assert_eq!(v, ["2", "16", "4KiB", "128KiB", "1MiB", "read", "write"]);
        assert_eq!(numeric("30s"), Some(30e9));
        assert_eq!(numeric("nan"), None);
    }

    #[test]
    fn swept_key_is_the_varying_one() {
        let a: Vec<PhaseResult> = ["4", "1", "2"]
            .iter()
            .map(|t| phase("seq-write", &[("threads", t), ("block_size", "1MiB")]))
            .collect();
        let side: Vec<&PhaseResult> = a.iter().collect();
        let plans = plan_groups(&[side]);
        assert_eq!(plans.len(), 1);
        assert_eq!(plans[0].swept.as_deref(), Some("threads"));
        assert_eq!(plans[0].values, ["1", "2", "4"]);
        assert_eq!(plans[0].fixed.get("block_size").unwrap(), "1MiB");
    }

    #[test]
    fn a_matrix_splits_and_lockstep_parameters_do_not() {
        let mut a = Vec::new();
        for bs in ["4KiB", "128KiB"] {
            for (t, r) in [("1", "1"), ("64", "2")] {
                a.push(phase(
                    "w",
                    &[("threads", t), ("block_size", bs), ("ranks", r)],
                ));
            }
        }
        let side: Vec<&PhaseResult> = a.iter().collect();
        let plans = plan_groups(&[side]);
        assert_eq!(plans.len(), 2);
        assert_eq!(plans[0].split.get("block_size").unwrap(), "4KiB");
        assert_eq!(plans[1].split.get("block_size").unwrap(), "128KiB");
        assert_eq!(plans[0].values, ["1", "64"]);
    }

    #[test]
    fn parameters_that_differ_only_between_sides_do_not_split() {
        let a = [phase("w", &[("threads", "1"), ("backend", "psync")])];
        let b = [
            phase("w", &[("threads", "1"), ("backend", "io_uring")]),
            phase("w", &[("threads", "2"), ("backend", "io_uring")]),
        ];
        let plans = plan_groups(&[a.iter().collect(), b.iter().collect()]);
        assert_eq!(plans.len(), 1);
        assert_eq!(plans[0].values, ["1", "2"]);
        assert!(plans[0].contains(&a[0]) && plans[0].contains(&b[1]));
        assert_eq!(plans[0].point_key(&a[0]), plans[0].point_key(&b[0]));
    }
}
