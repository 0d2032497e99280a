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
