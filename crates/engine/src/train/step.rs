//! One simulated accelerator's epoch, as DLIO's main loop runs it: take a batch from
//! the loader, "compute" (sleep the step's computation time on the [`Clock`]), then
//! meet every other accelerator at the step barrier ([`StepMeeting`]). Every time is
//! read from the clock, so a [`FakeClock`](crate::clock::FakeClock) gives exact figures:
//! a step's load is from its start to its batch, its proc adds the compute (measured
//! from the batch to the sleep's end, as DLIO times it, beside the asked one), and the
//! wait at the meeting is kept apart (DLIO's next step starts after the barrier).

use iolab_core::train::StepTimes;
use iolab_core::units::Nanos;

use crate::clock::Clock;

pub use crate::phase::StepMeeting;

/// What an accelerator's loader hands it.
pub type BatchResult = Option<Result<u64, String>>;

/// One accelerator's epoch as measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AcceleratorSteps {
    pub steps: Vec<StepTimes>,
    /// Time spent at each step's meeting, waiting for the slowest accelerator.
    pub waits: Vec<Nanos>,
    /// From `started` to the end of the last meeting.
    pub elapsed: Nanos,
    pub samples: u64,
    pub error: Option<String>,
}

/// What one step's end tells the caller (the live view).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepDone {
    pub times: StepTimes,
    pub samples: u64,
    /// From `started` to the end of the step's compute.
    pub at: Nanos,
}

/// Runs one accelerator's steps until the meeting ends the epoch. `started` is the
/// epoch's start (before its loader started); `next_batch` waits for the next batch
/// (its samples); `compute` gives each step's computation time.
pub fn run_accelerator<C: Clock>(
    clock: &C,
    started: Nanos,
    next_batch: &mut dyn FnMut() -> BatchResult,
    compute: &mut dyn FnMut() -> Nanos,
    meeting: &dyn StepMeeting,
    on_step: &mut dyn FnMut(&StepDone),
) -> AcceleratorSteps {
    let mut out = AcceleratorSteps::default();
    let secs = |n: Nanos| n.0 as f64 / 1e9;
    let mut t0 = clock.now();
    for step in 1.. {
        if out.error.is_none() {
            match next_batch() {
                Some(Ok(samples)) => {
                    let got = clock.now();
                    let c = compute();
                    if c.0 > 0 {
                        clock.sleep(c);
                    }
                    let end = clock.now();
                    let times = StepTimes {
                        load: secs(got.saturating_sub(t0)),
                        proc: secs(end.saturating_sub(t0)),
                        compute: secs(c),
                        measured: secs(end.saturating_sub(got)),
                    };
                    out.steps.push(times);
                    out.samples += samples;
                    on_step(&StepDone {
                        times,
                        samples,
                        at: end.saturating_sub(started),
                    });
                }
                Some(Err(e)) => out.error = Some(e),
                None => {
                    out.error = Some(
                        "the readers ran out of samples before the epoch's last step (a file shorter than the dataset says?)".into(),
                    )
                }
            }
        }
        let arrived = clock.now();
        let stop = meeting.meet(step, out.error.is_some());
        t0 = clock.now();
        out.waits.push(t0.saturating_sub(arrived));
        if stop {
            break;
        }
    }
    out.elapsed = t0.saturating_sub(started);
    out
}
