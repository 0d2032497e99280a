use super::*;

/// A device that completes 10k IOPS per outstanding I/O up to 100k IOPS; beyond that
/// requests queue (Little's law: latency = outstanding / IOPS).
fn device(qd: u64) -> Result<(f64, Option<Nanos>), ()> {
    let iops = (10_000.0 * qd as f64).min(100_000.0);
    Ok((iops, Some(Nanos((qd as f64 / iops * 1e9) as u64))))
}

#[test]
fn climbs_until_the_objective_breaks_and_finds_the_knee() {
    let slo: Slo = "p99<=1ms".parse().unwrap();
    let l = climb(&doubling(256), &slo, device).unwrap();
    let loads: Vec<u64> = l.steps.iter().map(|s| s.load).collect();
    assert_eq!(
        loads,
        vec![1, 2, 4, 8, 16, 32, 64, 128],
        "stops at the first broken step"
    );
    assert!(!l.steps.last().unwrap().meets);
    // QD 64 is the highest load within 1 ms (640 us); its 100k IOPS were already
    // reached at QD 16 (160 us).
    assert_eq!(l.steps[l.highest_load.unwrap()].load, 64);
    assert_eq!(l.steps[l.peak.unwrap()].load, 16);
    // The curve bends where the device saturates.
    assert_eq!(l.steps[l.knee.unwrap()].load, 16);
}

#[test]
fn a_tight_objective_can_fail_at_once() {
    let slo: Slo = "p99<=50us".parse().unwrap();
    let l = climb(&doubling(256), &slo, device).unwrap();
    assert_eq!(l.steps.len(), 1);
    assert_eq!(l.highest_load, None);
    assert_eq!(l.peak, None);
}

/// A step with no completed operation has no latency: it does not meet the objective
/// (it was judged by a latency of 0 and met any), and the climb stops there.
#[test]
fn a_step_that_completes_no_operation_does_not_meet_the_objective() {
    let slo: Slo = "p99<=1ms".parse().unwrap();
    let l = climb(&doubling(256), &slo, |qd| {
        if qd < 32 { device(qd) } else { Ok((0.0, None)) }
    })
    .unwrap();
    let loads: Vec<u64> = l.steps.iter().map(|s| s.load).collect();
    assert_eq!(loads, vec![1, 2, 4, 8, 16, 32]);
    let last = l.steps.last().unwrap();
    assert_eq!((last.iops, last.latency, last.meets), (0.0, None, false));
    assert_eq!(l.steps[l.highest_load.unwrap()].load, 16);
    assert_eq!(l.steps[l.peak.unwrap()].load, 16);
    // The knee is found among the measured steps: QD 8 (80k IOPS at 100 us; QD 16
    // adds 25% IOPS at 60% more latency).
    assert_eq!(l.steps[l.knee.unwrap()].load, 8);
    // At the first step: nothing met it.
    let l = climb(&doubling(4), &slo, |_| Ok::<_, ()>((0.0, None))).unwrap();
    assert_eq!(l.steps.len(), 1);
    assert!(!l.steps[0].meets);
    assert_eq!((l.highest_load, l.peak, l.knee), (None, None, None));
}

#[test]
fn objectives_parse_and_print() {
    let s: Slo = "p99.9 <= 500us".parse().unwrap();
    assert_eq!(
        s,
        Slo {
            percentile: Some(99.9),
            limit: Nanos::from_micros(500)
        }
    );
    assert_eq!(s.to_string(), "p99.9 <= 500 µs");
    assert_eq!("mean<=2ms".parse::<Slo>().unwrap().percentile, None);
    for bad in ["p99<1ms", "q99<=1ms", "p100<=1ms", "p99<=soon"] {
        assert!(bad.parse::<Slo>().unwrap_err().contains(bad), "{bad}");
    }
}

#[test]
fn only_measured_percentiles_are_objectives() {
    for (good, p) in [
        ("p50<=1ms", 50.0),
        ("p90<=1ms", 90.0),
        ("P99<=1ms", 99.0),
        ("p99.9<=1ms", 99.9),
        ("p99.99<=1ms", 99.99),
    ] {
        assert_eq!(good.parse::<Slo>().unwrap().percentile, Some(p), "{good}");
    }
    for bad in ["p42<=1ms", "p95<=1ms", "p99.5<=1ms", "p0<=1ms", "p-1<=1ms"] {
        let lhs = bad.split_once("<=").unwrap().0;
        assert_eq!(
            bad.parse::<Slo>().unwrap_err(),
            format!(
                "invalid objective '{bad}': {lhs} is not a measured percentile; use p50, p90, p99, p99.9, p99.99 or mean"
            )
        );
    }
}

#[test]
fn doubling_loads() {
    assert_eq!(doubling(16), vec![1, 2, 4, 8, 16]);
    assert_eq!(doubling(0), vec![1]);
}
