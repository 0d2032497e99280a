//! Tests of the training figures and rules.

use super::*;

fn step(load: f64, compute: f64) -> StepTimes {
    StepTimes {
        load,
        proc: load + compute,
        compute,
        measured: compute,
    }
}

#[test]
fn au_leaves_out_the_first_step_as_dlio() {
    // First step: 2 s waiting, 1 s compute; then 4 steps of 0.5 s wait, 1 s compute.
    let mut steps = vec![step(2.0, 1.0)];
    steps.extend((0..4).map(|_| step(0.5, 1.0)));
    let elapsed = 3.0 + 4.0 * 1.5 + 0.2; // 0.2 s outside any step (barriers)
    let a = AcceleratorEpoch::from_steps(&steps, elapsed, 7);
    // 4 s of compute over (9.2 - 3) s.
    assert!((a.au_percent() - 4.0 / 6.2 * 100.0).abs() < 1e-9);
    // Samples/s over the same window: 4 batches of 7 over 6.2 s.
    assert!((a.samples_per_sec() - 28.0 / 6.2).abs() < 1e-9);
}

#[test]
fn au_counts_the_measured_compute_and_nominal_au_the_asked() {
    // 1 s asked a step, each sleep overshooting by 0.25 s (its step 0.25 s longer).
    let over = |load: f64| StepTimes {
        load,
        proc: load + 1.25,
        compute: 1.0,
        measured: 1.25,
    };
    let mut steps = vec![over(2.0)];
    steps.extend((0..4).map(|_| over(0.5)));
    let a = AcceleratorEpoch::from_steps(&steps, 3.25 + 4.0 * 1.75, 7);
    // 4 steps of 1.75 s after the first: DLIO's AU 5 / 7, the asked 4 / 7.
    assert!((a.au_percent() - 5.0 / 7.0 * 100.0).abs() < 1e-9);
    assert!((a.au_nominal_percent() - 4.0 / 7.0 * 100.0).abs() < 1e-9);
    let e = EpochFigures::of(1, &[a], 1.0);
    assert!((e.compute_measured_mean - 1.25).abs() < 1e-12);
    assert!((e.compute_mean - 1.0).abs() < 1e-12);
    let r = RunFigures::of(1, vec![e], 1.0, 60.0);
    assert!((r.au_nominal_mean_percent - 400.0 / 7.0).abs() < 1e-9);
    assert!((r.au_mean_percent - 500.0 / 7.0).abs() < 1e-9);
    // DLIO's convention for no compute asked holds for both, whatever was measured.
    let idle = StepTimes {
        compute: 0.0,
        ..over(0.5)
    };
    let z = AcceleratorEpoch::from_steps(&[idle; 3], 4.0, 1);
    assert_eq!((z.au_percent(), z.au_nominal_percent()), (0.0, 0.0));
}

#[test]
fn no_compute_is_zero_au() {
    let steps = vec![step(0.1, 0.0); 3];
    assert_eq!(
        AcceleratorEpoch::from_steps(&steps, 0.3, 1).au_percent(),
        0.0
    );
}

#[test]
fn epoch_means_au_and_sums_throughput() {
    let a = AcceleratorEpoch {
        steps: 10,
        elapsed: 10.0,
        compute_after_first: 8.0,
        measured_after_first: 8.0,
        first_proc: 0.0,
        samples: 100,
        ..Default::default()
    };
    let b = AcceleratorEpoch {
        compute_after_first: 6.0,
        measured_after_first: 6.0,
        samples: 50,
        ..a
    };
    let e = EpochFigures::of(1, &[a, b], 1_048_576.0);
    assert!((e.au_percent - 70.0).abs() < 1e-9);
    // 9 of a's 10 batches of 10 and 9 of b's of 5, over 10 s each.
    assert!((e.samples_per_sec - 13.5).abs() < 1e-9);
    assert!((e.dlio_mib_per_sec - 13.5).abs() < 1e-9);
    assert!((e.au_min_percent - 60.0).abs() < 1e-9);
    let r = RunFigures::of(
        2,
        vec![
            e.clone(),
            EpochFigures {
                au_percent: 90.0,
                ..e
            },
        ],
        1.0,
        80.0,
    );
    assert!((r.au_mean_percent - 80.0).abs() < 1e-9);
    assert!((r.au_stdev_percent - 10.0).abs() < 1e-9);
    assert!(r.au_met);
}

#[test]
fn validity_flags_a_small_dataset() {
    let checks = validity(&ValidityInput {
        dataset_bytes: 1e9,
        hosts_memory: 1 << 30,
        caches_dropped: true,
        device_read_bytes: Some(0),
        bytes_read: 1 << 30,
        steps_per_epoch: 10,
    });
    assert!(!checks[0].ok && checks[0].detail.contains("page cache"));
    assert!(checks[1].ok);
    assert!(!checks[2].ok);
    assert!(!checks[3].ok);
    assert!(runs_agree(&[90.0, 91.0, 92.0]).ok);
    assert!(!runs_agree(&[80.0, 90.0]).ok);
}

fn outcome(run: &str, seed: u64, au: f64, sps: f64) -> RunOutcome {
    RunOutcome {
        run: run.into(),
        seed,
        au_percent: au,
        samples_per_sec: sps,
    }
}

#[test]
fn runs_rule_wants_a_warmup_and_five_seeded_runs_within_5_percent() {
    // A warm-up far off (it is not counted), then 5 runs whose spread is 4.8 %.
    let mut runs = vec![outcome("warmup", 1, 50.0, 10.0)];
    for (i, au) in [90.0, 91.0, 92.0, 93.0, 94.32].iter().enumerate() {
        runs.push(outcome(
            &(i + 1).to_string(),
            2 + i as u64,
            *au,
            100.0 + i as f64,
        ));
    }
    let checks = runs_rule(&runs);
    assert_eq!(checks.len(), 4);
    assert!(checks.iter().all(|c| c.ok), "{checks:?}");
    assert!(
        checks[2].detail.contains("spread 4.8 %"),
        "{}",
        checks[2].detail
    );
    assert!(Verdict::of(&checks).valid);
    // A sixth percent of spread, a repeated seed, no warm-up: each fails alone.
    let mut wide = runs.clone();
    wide[5].au_percent = 95.5;
    let v = Verdict::of(&runs_rule(&wide));
    assert_eq!(v.failed, vec!["runs' AU within 5 %".to_string()]);
    let mut same = runs.clone();
    same[5].seed = 2;
    let v = Verdict::of(&runs_rule(&same));
    assert_eq!(v.failed, vec!["5 counted runs, new seeds".to_string()]);
    let v = Verdict::of(&runs_rule(&runs[1..]));
    assert_eq!(v.failed, vec!["one warm-up run".to_string()]);
    // One plain run: no warm-up, one counted run, nothing to agree with.
    let v = Verdict::of(&runs_rule(&runs[1..2]));
    assert!(!v.valid && v.failed.len() == 4, "{v:?}");
    // No compute: AU is 0 by definition and only samples/s is compared.
    let flat: Vec<RunOutcome> = runs
        .iter()
        .map(|r| RunOutcome {
            au_percent: 0.0,
            ..r.clone()
        })
        .collect();
    let checks = runs_rule(&flat);
    assert_eq!(checks.len(), 3);
    assert_eq!(checks[2].rule, "runs' samples/s within 5 %");
    assert!(checks[2].ok);
}
