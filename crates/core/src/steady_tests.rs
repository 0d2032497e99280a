use super::*;

fn rule(text: &str) -> SteadyRule {
    SteadyRule::parse("ss", text).unwrap()
}

/// A fresh drive settling: falling steeply for four rounds, then flat within 1 %.
const SETTLES_AT_8: [f64; 10] = [
    10_000.0, 8_000.0, 6_000.0, 4_000.0, 3_000.0, 3_000.0, 3_010.0, 2_990.0, 3_005.0, 2_995.0,
];

#[test]
fn pts_finds_the_round_a_settling_series_converges_at() {
    // Windows ending at rounds 4..7 hold part of the fall (range above 20 % of the
    // average); the one ending at round 8 is 3000, 3000, 3010, 2990, 3005.
    assert_eq!(pts_first_steady(&SETTLES_AT_8), Some(8));
    let v = pts_check(&SETTLES_AT_8[..9]).unwrap();
    assert!(v.steady);
    assert!((v.average - 3001.0).abs() < 1e-9, "{v:?}");
    assert!((v.range - 20.0).abs() < 1e-9, "{v:?}");
    let before = pts_check(&SETTLES_AT_8[..8]).unwrap();
    assert!(!before.steady && before.range == 1010.0, "{before:?}");
    assert_eq!(
        pts_check(&SETTLES_AT_8[..4]),
        None,
        "fewer than five rounds"
    );
}

#[test]
fn pts_never_converges_on_a_climb_or_a_swing() {
    // +100 per round: the range stays within 20 % of the average from round 8 on, but
    // the fitted line rises 400 over the window, above 10 % of any average before
    // round 25.
    let climb: Vec<f64> = (0..30).map(|k| 1000.0 + 100.0 * k as f64).collect();
    assert_eq!(pts_first_steady(&climb), None);
    let v = pts_check(&climb[..25]).unwrap();
    assert!(
        v.range <= 0.2 * v.average && v.excursion > 0.1 * v.average,
        "{v:?}"
    );
    assert!((v.slope - 100.0).abs() < 1e-9);
    // Flat on average, but swinging by 40 %: the range fails.
    let swing: Vec<f64> = (0..25)
        .map(|k| if k % 2 == 0 { 1000.0 } else { 1400.0 })
        .collect();
    assert_eq!(pts_first_steady(&swing), None);
    // Rounds past the 25th do not count.
    let mut late = climb[..25].to_vec();
    late.extend([5000.0; 10]);
    assert_eq!(pts_first_steady(&late), None);
}

#[test]
fn fio_deviation_and_slope_as_fio_computes_them() {
    // 100 +- 1: the largest deviation is 1 % of the mean.
    let flat = [99.0, 101.0, 100.0, 99.0, 101.0, 100.0];
    let v = check(&flat, 6, &rule("iops:2%")).unwrap();
    assert!(v.attained && (v.criterion - 1.0).abs() < 1e-9, "{v:?}");
    assert!(!check(&flat, 6, &rule("iops:0.5%")).unwrap().attained);
    // An absolute limit, in operations per second.
    assert!(check(&flat, 6, &rule("iops:1.5")).unwrap().attained);
    // A climb of 2 per interval: slope 2, 2 % of a mean of 100 at the window's middle.
    let climb = [95.0, 97.0, 99.0, 101.0, 103.0, 105.0];
    let s = check(&climb, 6, &rule("iops_slope:3%")).unwrap();
    assert!(s.attained && (s.slope - 2.0).abs() < 1e-9, "{s:?}");
    assert!((s.criterion - 2.0).abs() < 1e-9);
    assert!(!check(&climb, 6, &rule("iops_slope:1%")).unwrap().attained);
    assert_eq!(
        check(&climb[..5], 6, &rule("iops:5%")),
        None,
        "window not full"
    );
}

#[test]
fn the_first_steady_point_of_a_settling_series() {
    // Per second: ramping up, then steady within 1 %.
    let mut s = vec![10.0, 40.0, 70.0, 90.0];
    s.extend([100.0, 101.0, 99.0, 100.0, 100.5, 99.5, 100.0]);
    // The window of 4 first holds only settled values at index 7.
    assert_eq!(first_steady(&s, 4, &rule("iops:2%")), Some(7));
    assert_eq!(first_steady(&s, 4, &rule("iops:0.1%")), None);
}

#[test]
fn rules_parse_as_fio_writes_them() {
    let r = rule("bw_slope:0.1%");
    assert_eq!(
        (r.metric, r.test, r.percent),
        (SteadyMetric::Bw, SteadyTest::Slope, true)
    );
    assert_eq!(r.name(), "bw_slope");
    let r = rule("iops:200");
    assert_eq!((r.limit, r.percent), (200.0, false));
    for (bad, says) in [
        ("iops", "needs a limit"),
        ("lat:5%", "'lat' is not a criterion"),
        ("iops:x", "'x' is not a limit"),
        ("iops:150%", "more than 100%"),
    ] {
        let e = SteadyRule::parse("--steady-state", bad).unwrap_err();
        assert!(e.to_string().contains(says), "{bad}: {e}");
        assert!(e.to_string().contains("--steady-state"), "{e}");
    }
}

/// Feeds `tracker` observations every 100 ms while the work runs at `rates[k]`
/// operations (and 4 KiB each) per second during second k; returns when it attains or
/// the rates run out.
fn feed(tracker: &mut SteadyTracker, rates: &[u64]) -> Option<Nanos> {
    let (mut ops, mut t) = (0u64, 0u64);
    while t < rates.len() as u64 * 1000 {
        t += 100;
        ops += rates[((t - 1) / 1000) as usize] / 10;
        if tracker.observe(Nanos(t * 1_000_000), ops, ops * 4096) {
            return tracker.attained_at;
        }
    }
    None
}

fn spec(rule_text: &str, window_s: u64, ramp_s: Option<u64>) -> SteadySpec {
    SteadySpec {
        rule: rule(rule_text),
        window: TimeSpan::from_secs(window_s),
        interval: TimeSpan::from_secs(1),
        ramp: ramp_s.map(TimeSpan::from_secs),
    }
}

#[test]
fn the_tracker_takes_a_sample_a_second_and_stops_when_the_window_settles() {
    // 3-sample windows: [2000, 1500, 1000] and [1500, 1000, 1000] swing too far; the
    // window of seconds 2-4, [1000, 1000, 1010], is within 5 %: attained at 5 s.
    let rates = [2000, 1500, 1000, 1000, 1010, 990, 1000, 1000];
    let mut t = SteadyTracker::new(spec("iops:5%", 3, None));
    assert_eq!(feed(&mut t, &rates), Some(Nanos::from_secs(5)));
    assert_eq!(t.iops, [2000, 1500, 1000, 1000, 1010]);
    assert_eq!(t.bw[4], 1010 * 4096);
    let v = t.verdict.unwrap();
    assert!(v.attained && (v.mean - 1003.333).abs() < 1e-2, "{v:?}");
    // What is stored: the verdict, the means and the window's samples by position.
    let f: std::collections::BTreeMap<String, f64> = t.figures().into_iter().collect();
    assert_eq!(f["steady_attained"], 1.0);
    assert_eq!(f["steady_at_ns"], 5e9);
    assert_eq!(f["steady_window_points"], 3.0);
    assert_eq!(
        [f["steady_iops.0"], f["steady_iops.1"], f["steady_iops.2"]],
        [1000.0, 1000.0, 1010.0]
    );
    assert!(!f.contains_key("steady_iops.3"));
    assert!(is_window_sample("steady_bw.2") && !is_window_sample("steady_slope"));
    // Nothing more once attained.
    assert!(!t.observe(Nanos::from_secs(9), 1, 1));
}

#[test]
fn the_tracker_ignores_the_ramp_and_never_attains_on_a_swing() {
    // The first two seconds are not judged: the first sample kept is second 2's.
    let rates = [5000, 3000, 1000, 1000, 1000, 1000];
    let mut t = SteadyTracker::new(spec("iops:5%", 3, Some(2)));
    assert_eq!(feed(&mut t, &rates), Some(Nanos::from_secs(5)));
    assert_eq!(t.iops, [1000, 1000, 1000]);
    // 1000/1400 alternating: every window deviates by ~16 % from its mean.
    let swing: Vec<u64> = (0..20)
        .map(|k| if k % 2 == 0 { 1000 } else { 1400 })
        .collect();
    let mut t = SteadyTracker::new(spec("iops:10%", 4, None));
    assert_eq!(feed(&mut t, &swing), None);
    let v = t.verdict.unwrap();
    assert!(
        !v.attained && (v.criterion - 200.0 / 12.0).abs() < 0.01,
        "{v:?}"
    );
    let f: std::collections::BTreeMap<String, f64> = t.figures().into_iter().collect();
    assert_eq!(f["steady_attained"], 0.0);
    assert!(!f.contains_key("steady_at_ns"));
    // A slope rule on a steady climb of 100 per second (10 % of 1000).
    let climb: Vec<u64> = (0..10).map(|k| 1000 + 100 * k).collect();
    let mut t = SteadyTracker::new(spec("bw_slope:1%", 5, None));
    assert_eq!(feed(&mut t, &climb), None);
    assert!(t.verdict.unwrap().slope > 0.0);
}

#[test]
fn a_rule_reads_and_writes_as_fios_text() {
    let r: SteadyRule = "iops_slope:0.1%".parse().unwrap();
    assert_eq!(r.to_string(), "iops_slope:0.1%");
    assert_eq!(serde_json::to_string(&r).unwrap(), "\"iops_slope:0.1%\"");
    let back: SteadyRule = serde_json::from_str("\"bw:2000\"").unwrap();
    assert!(!back.percent && back.limit == 2000.0);
    assert!(
        "lat:5%"
            .parse::<SteadyRule>()
            .unwrap_err()
            .contains("not a criterion")
    );
}
