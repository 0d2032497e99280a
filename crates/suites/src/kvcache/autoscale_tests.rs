//! The autoscaler's steps and stops for scripted figures (no I/O: the figures are what
//! a step would have measured).

use iolab_core::kvcache::{AutoscaleWhy, KvCacheFigures};
use iolab_core::spec::{AutoscaleMode, KvCacheSpec};
use iolab_core::units::Nanos;

use super::Autoscaler;

fn scaler(mode: AutoscaleMode, steps: u32) -> Autoscaler {
    let settings = KvCacheSpec {
        autoscale: Some(mode),
        autoscale_steps: steps,
        ..Default::default()
    }
    .resolve()
    .unwrap();
    Autoscaler::new(&settings)
}

/// A second's figures: `tokens` generated, the read device p95 in ms, a hit rate of
/// 0.5 (or 0.1: failing its criterion).
fn figures(tokens: u64, p95_ms: u64, hits_pass: bool) -> KvCacheFigures {
    let mut f = KvCacheFigures {
        duration: Nanos::from_secs(1),
        tokens_generated: tokens,
        hits: if hits_pass { 5 } else { 1 },
        misses: if hits_pass { 5 } else { 9 },
        ..Default::default()
    };
    f.storage.read_device.p95 = Nanos(p95_ms * 1_000_000);
    f
}

/// Steps the scaler through `runs` (tokens, p95 ms, hit rate passes) from `users`;
/// returns each step's (users, why, next).
fn walk(
    s: &mut Autoscaler,
    mut users: u32,
    runs: &[(u64, u64, bool)],
) -> Vec<(u32, AutoscaleWhy, Option<u32>)> {
    let mut out = Vec::new();
    for &(t, p, h) in runs {
        let step = s.step(users, &figures(t, p, h));
        out.push((step.users, step.why, step.next_users));
        match step.next_users {
            Some(n) => users = n,
            None => break,
        }
    }
    out
}

#[test]
fn qos_grows_users_by_a_fifth_until_the_steps_run_out() {
    let mut s = scaler(AutoscaleMode::Qos, 4);
    let got = walk(&mut s, 10, &[(100, 10, true); 6]);
    use AutoscaleWhy::*;
    assert_eq!(
        got,
        [
            (10, BelowTarget, Some(12)),
            (12, BelowTarget, Some(14)),
            (14, BelowTarget, Some(16)),
            (16, MostSteps, None),
        ]
    );
    assert_eq!(s.steps_left(), 0);
    let r = s.result();
    assert_eq!(r.users, Some(16));
    // 10 ms of 100 ms, and a first step is no plateau: 0.1 x 0.5.
    assert!((r.steps[0].saturation - 0.05).abs() < 1e-9);
}

#[test]
fn qos_stops_at_the_target_saturation() {
    let mut s = scaler(AutoscaleMode::Qos, 10);
    // Step 2: tokens flat and the read p95 up to 80 ms: 0.8 x 1 (a plateau), the target.
    let got = walk(&mut s, 1, &[(100, 10, true), (105, 80, true)]);
    use AutoscaleWhy::*;
    assert_eq!(got, [(1, BelowTarget, Some(2)), (2, AtTarget, None)]);
    let r = s.result();
    assert_eq!(r.users, Some(2));
    assert!((r.steps[1].saturation - 0.8).abs() < 1e-9);
    assert_eq!(r.wall_tokens_per_sec, 105.0);
}

#[test]
fn qos_needs_two_failing_steps_in_a_row_and_reports_the_largest_passing() {
    let mut s = scaler(AutoscaleMode::Qos, 10);
    let runs = [
        (100, 10, true),
        (120, 10, false), // fails once: the same 12 users again
        (120, 10, true),  // passes: grows on
        (130, 95, true),  // saturated (0.95 x 1 > 0.88): fails once
        (130, 10, false), // fails again: stop
    ];
    let got = walk(&mut s, 10, &runs);
    use AutoscaleWhy::*;
    assert_eq!(
        got,
        [
            (10, BelowTarget, Some(12)),
            (12, FailedOnce, Some(12)),
            (12, BelowTarget, Some(14)),
            (14, FailedOnce, Some(14)),
            (14, Failed, None),
        ]
    );
    assert_eq!(s.result().users, Some(12));
}

#[test]
fn qos_without_a_passing_step_has_no_answer() {
    let mut s = scaler(AutoscaleMode::Qos, 10);
    walk(&mut s, 10, &[(100, 10, false); 3]);
    let r = s.result();
    assert_eq!(r.steps.len(), 2);
    assert_eq!(r.users, None);
}

#[test]
fn capacity_steps_forty_then_twenty_percent_and_stops_after_the_peak() {
    let mut s = scaler(AutoscaleMode::Capacity, 10);
    let runs = [
        (100, 1, true),
        (200, 1, true),
        (201, 1, true),
        (150, 1, true),
    ];
    let got = walk(&mut s, 10, &runs);
    use AutoscaleWhy::*;
    // 10 + max(4, 5); 15 + max(3, 5); 201 is not 1 % over 200: the same users again;
    // then still not over it: stop.
    assert_eq!(
        got,
        [
            (10, Rising, Some(15)),
            (15, Rising, Some(20)),
            (20, FlatOnce, Some(20)),
            (20, Peaked, None),
        ]
    );
    let r = s.result();
    assert_eq!((r.users, r.wall_tokens_per_sec), (Some(15), 200.0));
}

#[test]
fn capacity_steps_are_at_most_a_hundred_users_and_stop_at_five_hundred() {
    let mut s = scaler(AutoscaleMode::Capacity, 10);
    let got = walk(
        &mut s,
        300,
        &[(100, 1, true), (200, 1, true), (300, 1, true)],
    );
    use AutoscaleWhy::*;
    assert_eq!(
        got,
        [
            (300, Rising, Some(400)),
            (400, Rising, Some(480)),
            (480, Rising, Some(500)),
        ]
    );
    let got = walk(&mut s, 500, &[(400, 1, true)]);
    assert_eq!(got, [(500, MostUsers, None)]);
}
