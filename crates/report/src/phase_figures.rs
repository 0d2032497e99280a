//! A phase's typed figures ([`PhaseFigures`]) as the rows its report lists beside the
//! named ones in `extra`: each field under the name docs/figures.md gives it, in the
//! unit [`crate::extra::value`] formats that name in (seconds for `_s`). Nothing is
//! computed here but unit changes.

use std::collections::BTreeMap;

use iolab_core::result::{CheckpointFigures, PhaseFigures, PhaseResult, TrainEpochFigures};

/// Every figure a phase lists: its listed `extra` and its typed figures, by name.
pub fn listed(p: &PhaseResult) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = p
        .extra
        .iter()
        .filter(|(k, _)| crate::extra::listed(k))
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    if let Some(f) = &p.figures {
        out.extend(named(f).into_iter().map(|(k, v)| (k.to_string(), v)));
    }
    out
}

fn named(f: &PhaseFigures) -> Vec<(&'static str, f64)> {
    match f {
        PhaseFigures::TrainEpoch(t) => train_epoch(t),
        PhaseFigures::Checkpoint(c) => checkpoint(c),
        // The scored figures, under the names the trial's phase keeps them by.
        PhaseFigures::KvCache(k) => k.scored().to_vec(),
    }
}

fn train_epoch(t: &TrainEpochFigures) -> Vec<(&'static str, f64)> {
    vec![
        ("au_percent", t.au_percent),
        ("au_nominal_percent", t.au_nominal_percent),
        ("au_min_percent", t.au_min_percent),
        ("au_threshold_percent", t.au_threshold_percent),
        ("samples_per_sec", t.samples_per_sec),
        ("dlio_mib_per_sec", t.dlio_mib_per_sec),
        ("accelerators", t.accelerators as f64),
        ("steps", t.steps as f64),
        ("samples", t.samples as f64),
        ("load_mean_s", t.load_mean.as_secs_f64()),
        ("compute_mean_s", t.compute_mean.as_secs_f64()),
        (
            "compute_measured_mean_s",
            t.compute_measured_mean.as_secs_f64(),
        ),
        ("first_step_mean_s", t.first_step_mean.as_secs_f64()),
        ("load_p50_s", t.load_p50.as_secs_f64()),
        ("load_p99_s", t.load_p99.as_secs_f64()),
        ("step_wait_mean_s", t.step_wait_mean.as_secs_f64()),
        ("cpu_ns_per_sample", t.cpu_per_sample.0 as f64),
    ]
}

fn checkpoint(c: &CheckpointFigures) -> Vec<(&'static str, f64)> {
    const GIB: f64 = 1073741824.0;
    vec![
        ("checkpoints", c.checkpoints as f64),
        ("checkpoint_gib", c.checkpoint_bytes.0 as f64 / GIB),
        ("duration_mean_s", c.duration_mean.as_secs_f64()),
        ("gib_per_sec_mean", c.throughput_mean.0 / GIB),
        ("slowest_rank_mean_s", c.slowest_rank_mean.as_secs_f64()),
        ("simulated_ranks", c.simulated_ranks as f64),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::units::Nanos;

    #[test]
    fn typed_figures_are_listed_under_their_documented_names() {
        let mut p = crate::test_support::phase("train-epoch-1", &[]);
        p.extra.insert("kept".into(), 2.0);
        p.figures = Some(PhaseFigures::TrainEpoch(TrainEpochFigures {
            au_percent: 81.5,
            load_p99: Nanos(1_500_000_000),
            step_wait_mean: Nanos(250_000_000),
            ..TrainEpochFigures::default()
        }));
        let l = listed(&p);
        assert_eq!(l["au_percent"], 81.5);
        assert_eq!(l["load_p99_s"], 1.5);
        assert_eq!(l["step_wait_mean_s"], 0.25);
        assert_eq!(l["kept"], 2.0);
        assert_eq!(crate::extra::value("au_percent", l["au_percent"]), "81.5%");
    }
}
