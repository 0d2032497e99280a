//! A KV cache run's figures as tables, from its trials' stored [`KvCacheFigures`]:
//! [`trials_table`] (the scored figures, one row a trial, with its verdict),
//! [`criteria_table`] (kv-cache.py's pass/fail criteria with each value and limit) and
//! [`spread_rows`] (each scored figure's median and spread over the trials, which the
//! text report prints too). Every value comes from the figures' own methods
//! (`scored`, `criteria`, `passed`): nothing is computed here but the spread.

use iolab_core::kvcache::{Criterion, KvCacheFigures};
use iolab_core::result::RunRecord;
use iolab_core::stats::{Spread, median};

use crate::table::Table;

const GIB: f64 = 1073741824.0;

/// A run's trials, each with its phase's name, in the order they ran.
pub fn trials_of(run: &RunRecord) -> Vec<(String, KvCacheFigures)> {
    run.phases
        .iter()
        .filter_map(|p| Some((p.name.clone(), p.figures.as_ref()?.kvcache()?.clone())))
        .collect()
}

/// "PASS" or "FAIL".
pub fn verdict(passed: bool) -> &'static str {
    if passed { "PASS" } else { "FAIL" }
}

/// A scored figure's value as the text report prints it: tokens/s to 0.1, the others
/// to 0.001; "n/a" for one the stored figures cannot give (NaN: the decode bytes of a
/// run stored before 2026-12-08 whose CPU tier demoted entries).
pub fn scored_value(name: &str, v: f64) -> String {
    if v.is_nan() {
        "n/a".to_string()
    } else if name.ends_with("tokens/s") {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// One row a trial: its requests, its scored figures, the decode steps' GiB (beside
/// the decode GiB, not scored) and whether it passed every criterion.
pub fn trials_table(trials: &[(String, KvCacheFigures)]) -> Table {
    let names = KvCacheFigures::default()
        .scored()
        .map(|(n, _)| format!(">{n}"));
    let mut headers = vec!["Trial", ">requests"];
    headers.extend(names.iter().map(String::as_str));
    headers.extend([">decode steps GiB", "criteria"]);
    let mut t = Table::new(&headers);
    for (name, f) in trials {
        let mut row = vec![name.clone(), f.requests.to_string()];
        row.extend(f.scored().iter().map(|(n, v)| scored_value(n, *v)));
        row.push(format!("{:.3}", f.decode_step_bytes().0 as f64 / GIB));
        row.push(verdict(f.passed()).to_string());
        t.push(row);
    }
    t
}

/// A criterion's limit as the text report prints it ("< 500", "> 0.3").
fn limit_text(c: &Criterion) -> String {
    format!("{} {}", if c.below { "<" } else { ">" }, c.limit)
}

/// Every trial's criteria, one row each, and each row's class ("pass" or "fail").
pub fn criteria_table(trials: &[(String, KvCacheFigures)]) -> (Table, Vec<&'static str>) {
    let mut t = Table::new(&["Trial", "criterion", ">value", ">limit", "verdict"]);
    let mut classes = Vec::new();
    for (name, f) in trials {
        for c in f.criteria() {
            t.push(vec![
                name.clone(),
                c.name.to_string(),
                format!("{:.3}", c.value),
                limit_text(&c),
                verdict(c.passed()).to_string(),
            ]);
            classes.push(if c.passed() { "pass" } else { "fail" });
        }
    }
    (t, classes)
}

/// A scored figure over the trials.
#[derive(Clone, Debug, PartialEq)]
pub struct SpreadRow {
    pub name: &'static str,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Coefficient of variation (0.1: 10 %).
    pub cv: f64,
}

/// Each scored figure's median, lowest, highest and coefficient of variation over the
/// trials (none without a trial).
pub fn spread_rows<'a>(trials: impl IntoIterator<Item = &'a KvCacheFigures>) -> Vec<SpreadRow> {
    let rows: Vec<[(&str, f64); 8]> = trials.into_iter().map(|f| f.scored()).collect();
    let Some(first) = rows.first() else {
        return Vec::new();
    };
    (0..first.len())
        .map(|k| {
            // A figure a stored trial cannot give (NaN) is left out of its spread.
            let v: Vec<f64> = rows
                .iter()
                .map(|r| r[k].1)
                .filter(|v| !v.is_nan())
                .collect();
            let (min, max, cv) = Spread::of(&v)
                .map(|s| (s.min, s.max, s.cv))
                .unwrap_or_default();
            SpreadRow {
                name: first[k].0,
                median: median(&v).unwrap_or(f64::NAN),
                min,
                max,
                cv,
            }
        })
        .collect()
}

/// [`spread_rows`] as a table.
pub fn spread_table(rows: &[SpreadRow]) -> Table {
    let mut t = Table::new(&["figure", ">median", ">min", ">max", ">CV"]);
    for r in rows {
        t.push(vec![
            r.name.to_string(),
            if r.median.is_nan() {
                "n/a".to_string()
            } else {
                format!("{:.3}", r.median)
            },
            format!("{:.3}", r.min),
            format!("{:.3}", r.max),
            format!("{:.1}%", 100.0 * r.cv),
        ]);
    }
    t
}
