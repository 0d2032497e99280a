//! Tests of an epoch as a step phase: exact times on a FakeClock, and the step hook's
//! collective on two ranks.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use iolab_comm::{Comm, InProcess};
use iolab_core::result::OpKind;
use iolab_core::train::AcceleratorEpoch;
use iolab_core::units::Nanos;

use super::step_phase::{StepPhase, StepPhaseSpec, StepWork, run_steps};
use super::*;
use crate::clock::{Clock, FakeClock, MonotonicClock};
use crate::phase::{Env, StepHook};
use crate::recorder::Recorder;
use crate::worker::INTERVAL;

const MS: u64 = 1_000_000;

/// Ends the epoch after `steps` steps or a failure anywhere, in one allreduce per step.
struct Steps<'a> {
    comm: &'a dyn Comm,
    steps: u64,
    calls: AtomicU64,
}

impl StepHook for Steps<'_> {
    fn after_step(&self, step: u64, failed: bool) -> bool {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let (sums, maxes) = self.comm.reduce(&[1], &[u64::from(failed)], None, &|_| {});
        assert_eq!(sums[0], u64::from(self.comm.size()));
        step >= self.steps || maxes[0] > 0
    }
}

/// One accelerator's epoch: each batch a 4 KiB read of 10 ms recorded, then
/// `compute` of computation.
fn accelerator<C: Clock>(
    clock: &C,
    start: Nanos,
    meeting: &dyn StepMeeting,
    compute: Nanos,
    fail_at: Option<u64>,
) -> (AcceleratorSteps, StepWork) {
    let mut rec = Recorder::new(start, INTERVAL);
    let mut step = 0;
    let mut batch = || {
        step += 1;
        if fail_at == Some(step) {
            return Some(Err("a read failed".to_string()));
        }
        clock.sleep(Nanos(10 * MS));
        rec.record(OpKind::Read, Nanos(10 * MS), 4096, clock.now());
        Some(Ok(4))
    };
    let out = run_accelerator(
        clock,
        start,
        &mut batch,
        &mut || compute,
        meeting,
        &mut |_| {},
    );
    let work = StepWork {
        measure: rec.finish(),
        completed: out.samples,
    };
    (out, work)
}

fn spec(workers: usize) -> StepPhaseSpec {
    StepPhaseSpec {
        name: "train-epoch-1".into(),
        spec: serde_json::Value::Null,
        workers,
    }
}

/// One rank's epoch of 5 steps, each a 10 ms read and `compute` on `clock`: the phase,
/// the step hook's calls and the accelerator's steps.
fn one_epoch<C: Clock + Sync>(clock: &C, compute: Nanos) -> (StepPhase, u64, AcceleratorSteps) {
    let interrupt = AtomicBool::new(false);
    let runs = InProcess::run(
        1,
        |_| "h".into(),
        |comm| {
            let env = Env::new(comm, &interrupt);
            let hook = Steps {
                comm,
                steps: 5,
                calls: AtomicU64::new(0),
            };
            let epoch = std::sync::Mutex::new(None);
            let run = run_steps(&env, clock, &spec(1), &hook, |_, start, meeting| {
                let (out, work) = accelerator(clock, start, meeting, compute, None);
                *epoch.lock().unwrap() = Some(out);
                Ok(work)
            })
            .unwrap();
            (
                run,
                hook.calls.into_inner(),
                epoch.into_inner().unwrap().unwrap(),
            )
        },
    );
    runs.into_iter().next().expect("one rank")
}

#[test]
fn an_epoch_on_the_step_phase_has_exact_times_and_au() {
    // 5 steps of 10 ms load and 40 ms compute: 250 ms, AU 80 % (the first step out).
    let clock = FakeClock::new(Nanos::ZERO);
    let (run, calls, out) = &one_epoch(&clock, Nanos(40 * MS));
    assert_eq!(*calls, 5);
    assert_eq!(out.elapsed, Nanos(250 * MS));
    assert_eq!(run.result.elapsed, Nanos(250 * MS));
    let epoch = AcceleratorEpoch::from_steps(&out.steps, out.elapsed.0 as f64 / 1e9, 4);
    assert!(
        (epoch.au_percent() - 80.0).abs() < 1e-9,
        "{}",
        epoch.au_percent()
    );
    let reads = run
        .result
        .ops
        .iter()
        .find(|o| o.op == OpKind::Read)
        .unwrap();
    assert_eq!((reads.ops, reads.bytes.0), (5, 5 * 4096));
    assert_eq!(
        run.result.timeline.series(OpKind::Read).unwrap().ops,
        vec![5]
    );
    assert_eq!((run.errors, run.interrupted), (0, false));
}

/// A fake clock whose every sleep overshoots by `over`, as a loaded machine's timer does.
struct Overshooting {
    clock: FakeClock,
    over: Nanos,
}

impl Clock for Overshooting {
    fn now(&self) -> Nanos {
        self.clock.now()
    }

    fn sleep(&self, span: Nanos) {
        self.clock.sleep(span + self.over)
    }
}

#[test]
fn a_sleep_that_overshoots_counts_in_au_and_not_in_nominal_au() {
    // 5 steps of a 10 ms read and 40 ms asked compute, every sleep 5 ms long: steps of
    // 15 ms load and 45 ms compute, 300 ms. AU (DLIO's) 4 x 45 / 240 = 75 %, over the
    // asked compute 4 x 40 / 240 = 66.7 %.
    let clock = Overshooting {
        clock: FakeClock::new(Nanos::ZERO),
        over: Nanos(5 * MS),
    };
    let (_, _, out) = &one_epoch(&clock, Nanos(40 * MS));
    assert_eq!(out.elapsed, Nanos(300 * MS));
    let s = out.steps[1];
    assert_eq!(
        (s.load, s.compute, s.measured, s.proc),
        (0.015, 0.04, 0.045, 0.06)
    );
    let epoch = AcceleratorEpoch::from_steps(&out.steps, out.elapsed.0 as f64 / 1e9, 4);
    assert!((epoch.au_percent() - 75.0).abs() < 1e-9, "{epoch:?}");
    assert!(
        (epoch.au_nominal_percent() - 200.0 / 3.0).abs() < 1e-9,
        "{epoch:?}"
    );
}

#[test]
fn two_ranks_meet_after_every_step_and_a_failure_ends_the_epoch_everywhere() {
    let interrupt = AtomicBool::new(false);
    for fail_at in [None, Some(3)] {
        let runs = InProcess::run(
            2,
            |r| format!("h{r}"),
            |comm| {
                let env = Env::new(comm, &interrupt);
                let hook = Steps {
                    comm,
                    steps: 6,
                    calls: AtomicU64::new(0),
                };
                // Rank 1's second accelerator fails in its third step, if asked.
                let fails = |i: usize| (comm.rank() == 1 && i == 1).then_some(fail_at).flatten();
                let run = run_steps(&env, &MonotonicClock, &spec(2), &hook, |i, start, m| {
                    let (out, work) = accelerator(&MonotonicClock, start, m, Nanos(MS), fails(i));
                    assert_eq!(out.error.is_some(), fails(i).is_some());
                    Ok(work)
                })
                .unwrap();
                (run, hook.calls.into_inner())
            },
        );
        let steps = fail_at.unwrap_or(6);
        for (_, calls) in &runs {
            assert_eq!(*calls, steps, "{fail_at:?}");
        }
        // Rank 0 holds both ranks' reads: every accelerator read a batch per step but
        // the failed one in its failed step.
        let reads = runs[0].0.result.ops.iter().find(|o| o.op == OpKind::Read);
        let expected = 4 * steps - u64::from(fail_at.is_some());
        assert_eq!(reads.unwrap().ops, expected, "{fail_at:?}");
        assert_eq!(runs[0].0.result.ranks, 2);
    }
}
