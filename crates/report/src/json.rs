//! JSON output: the runs themselves (the `iolab.run/1` document the store exports) and
//! the [`Comparison`] as a document of its own.

use iolab_core::result::RunRecord;

use crate::aggregate::aggregate;
use crate::compare::Comparison;

/// One run as its JSON document; several runs as an array of them. Each document also
/// carries `statistics`: per phase group, swept value and operation, the figure of merit
/// over the repetitions (`n`, `mean`, `stddev`, `cv`, `ci95` half-width, `min`, `max`,
/// `noisy`), which readers of the run ignore.
pub fn render_json(runs: &[RunRecord]) -> String {
    let docs: Vec<serde_json::Value> = runs.iter().map(run_document).collect();
    let text = match docs.as_slice() {
        [one] => serde_json::to_string_pretty(one),
        _ => serde_json::to_string_pretty(&docs),
    };
    // Serializing plain data with string keys cannot fail.
    text.expect("results serialize to JSON") + "\n"
}

fn run_document(run: &RunRecord) -> serde_json::Value {
    let mut doc = serde_json::to_value(run).expect("a run serializes to JSON");
    let statistics =
        serde_json::to_value(aggregate(run).spread_rows()).expect("statistics serialize to JSON");
    if let Some(map) = doc.as_object_mut() {
        map.insert("statistics".into(), statistics);
    }
    doc
}

/// The comparison: sides, and per metric the peaks, change and noise.
pub fn render_comparison_json(c: &Comparison) -> String {
    serde_json::to_string_pretty(c).expect("a comparison serializes to JSON") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{data_phase, run_with};
    use iolab_core::result::OpKind;

    #[test]
    fn one_run_is_an_object_and_round_trips() {
        let run = run_with("v1", vec![data_phase("w", "1", 0, OpKind::Write, 10.0)]);
        let text = render_json(std::slice::from_ref(&run));
        let back: RunRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, run);
        let two = render_json(&[run.clone(), run]);
        assert!(two.starts_with('['));
    }

    #[test]
    fn comparison_has_rows_with_peaks() {
        let a = run_with("a", vec![data_phase("w", "1", 0, OpKind::Write, 10.0)]);
        let b = run_with("b", vec![data_phase("w", "1", 0, OpKind::Write, 5.0)]);
        let v: serde_json::Value =
            serde_json::from_str(&render_comparison_json(&crate::compare(&a, &b))).unwrap();
        assert_eq!(v["rows"][0]["metric"], "w write bandwidth");
        assert_eq!(v["rows"][0]["change_percent"], -50.0);
        // Ten operations in a second: too short to compare.
        assert_eq!(v["rows"][0]["noise"], "too-short");
        assert_eq!(v["candidate"]["name"], "b");
    }
}
