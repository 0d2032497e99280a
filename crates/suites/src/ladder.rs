//! The latency ladder (S3) run on data phases: [`climb_axis`] steps a data spec's queue
//! depth, threads or offered rate, each step run by the caller (`iolab ladder` runs real
//! phases), [`step_figures`] reads a step's IOPS and latency off its phase, and [`mark`]
//! records the verdicts in the steps' phases. [`run_ladder`] climbs on the engine's data
//! phases and [`ladder_steps`] marks its phases and takes each step's latencies. The
//! ladder's types and maths ([`climb`], [`knee`]) are `iolab_core::ladder`'s, re-exported
//! here.

use std::sync::atomic::Ordering;

use iolab_comm::CommExt;
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::DataSpec;
use iolab_core::units::Nanos;
use iolab_engine::{Clock, DataOptions, EngineError, Env, PreparedTarget, run_data};

pub use iolab_core::ladder::*;

/// Runs one step's phase of a spec: its IOPS and the latency the objective is about
/// (None when it completed no operation).
pub type StepFn<'a, E> = dyn FnMut(&DataSpec) -> Result<(f64, Option<Nanos>), E> + 'a;

/// The ladder along `axis` from `base`, up to `max` (the deepest queue or the most
/// threads): each step is `base` at that load, run by `step`. A rate ladder first runs
/// `base` unthrottled to find the ceiling (a phase that is no step), then offers 10% ...
/// 100% of it.
pub fn climb_axis<E>(
    base: &DataSpec,
    axis: LoadAxis,
    max: u64,
    slo: &Slo,
    step: &mut StepFn<'_, E>,
) -> Result<Ladder, E> {
    match axis {
        LoadAxis::QueueDepth => climb(&doubling(max), slo, |qd| {
            step(&DataSpec {
                queue_depth: qd as u32,
                ..base.clone()
            })
        }),
        LoadAxis::Threads => climb(&doubling(max), slo, |t| {
            step(&DataSpec {
                threads: t as u32,
                ..base.clone()
            })
        }),
        LoadAxis::Rate => {
            let (max_iops, _) = step(&DataSpec {
                rate_iops: None,
                ..base.clone()
            })?;
            let rates: Vec<u64> = (1..=10)
                .map(|i| ((max_iops * i as f64 / 10.0) as u64).max(1))
                .collect();
            climb(&rates, slo, |r| {
                step(&DataSpec {
                    rate_iops: Some(r),
                    ..base.clone()
                })
            })
        }
    }
}

/// Records the ladder's verdicts in step `step_index`'s phase (so stored runs keep them).
pub fn mark(p: &mut PhaseResult, l: &Ladder, step_index: usize) {
    if let Some(step) = l.steps.get(step_index) {
        p.extra.insert("ladder_load".into(), step.load as f64);
        p.extra
            .insert("meets_objective".into(), step.meets as u8 as f64);
        if let Some(latency) = step.latency {
            p.extra
                .insert("objective_latency_ns".into(), latency.0 as f64);
        }
        if l.knee == Some(step_index) {
            p.extra.insert("knee".into(), 1.0);
        }
    }
}

/// The objective's figure of each operation of a step (fsync aside): "read p99 210 µs,
/// write p99 6.1 ms" in a mixed workload.
pub fn op_latencies(p: &PhaseResult, slo: &Slo) -> Vec<(OpKind, Nanos)> {
    p.ops
        .iter()
        .filter(|o| !o.op.is_auxiliary() && o.latency.count > 0)
        .map(|o| (o.op, slo.latency_of(&o.latency)))
        .collect()
}

/// A step's figures: the IOPS of its operations (fsync aside) and the objective's
/// latency of its slowest operation (in a mixed workload, often the writes), none when
/// the step completed no operation.
pub fn step_figures(p: &PhaseResult, slo: &Slo) -> (f64, Option<Nanos>) {
    let iops: f64 = p
        .ops
        .iter()
        .filter(|o| o.op != OpKind::Fsync)
        .map(|o| o.iops.get())
        .sum();
    let latency = op_latencies(p, slo).into_iter().map(|(_, l)| l).max();
    (iops, latency)
}

/// A ladder to climb on `target`: `spec` stepped along `axis` up to `max`, judged by `slo`.
pub struct LadderPlan<'a> {
    pub spec: &'a DataSpec,
    pub axis: LoadAxis,
    pub max: u64,
    pub slo: &'a Slo,
    pub target: &'a PreparedTarget,
}

/// What a ladder run did: the climb's outcome and every phase it ran, in order (a rate
/// ladder's first is its unthrottled probe).
pub struct LadderRun {
    pub result: Result<Ladder, EngineError>,
    pub phases: Vec<PhaseResult>,
}

/// Climbs the ladder, each step a data phase named "ladder"; `on_step` sees each phase as
/// it ends. Rank 0's figures decide every step on every rank, so that all ranks climb
/// alike. Collective; Ctrl-C ends it before the next step.
pub fn run_ladder<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    plan: &LadderPlan<'_>,
    on_step: &mut dyn FnMut(&PhaseResult),
) -> LadderRun {
    let mut phases: Vec<PhaseResult> = Vec::new();
    let mut step = |spec: &DataSpec| -> Result<(f64, Option<Nanos>), EngineError> {
        if env.interrupt.load(Ordering::SeqCst) {
            return Err(EngineError::Interrupted);
        }
        let opts = DataOptions {
            name: Some("ladder".into()),
            ..DataOptions::default()
        };
        let out = run_data(env, clock, spec, plan.target, &opts)?;
        let phase = out
            .phases
            .into_iter()
            .next()
            .expect("a data run has its phase");
        let (iops, latency) = step_figures(&phase, plan.slo);
        let latency = latency.map(|l| l.0);
        // Only rank 0 holds every rank's figures: its verdict decides the next step.
        let (iops, latency) = env
            .comm
            .broadcast(0, &(iops, latency))
            .map_err(|e| EngineError::Setup(e.to_string()))?;
        on_step(&phase);
        phases.push(phase);
        Ok((iops, latency.map(Nanos)))
    };
    let result = climb_axis(plan.spec, plan.axis, plan.max, plan.slo, &mut step);
    LadderRun { result, phases }
}

/// A ladder run's phases with its verdicts marked in its steps, each step's latencies
/// by operation, and the climb's outcome.
pub struct LadderSteps {
    pub phases: Vec<PhaseResult>,
    pub latencies: Vec<Vec<(OpKind, Nanos)>>,
    pub result: Result<Ladder, EngineError>,
}

/// Marks the verdicts in a ladder run's steps and takes each step's latencies by
/// operation (a rate ladder's probe is no step).
pub fn ladder_steps(run: LadderRun, axis: LoadAxis, slo: &Slo) -> LadderSteps {
    let first_step = usize::from(axis == LoadAxis::Rate);
    let latencies = run
        .phases
        .iter()
        .skip(first_step)
        .map(|p| op_latencies(p, slo))
        .collect();
    let mut phases = run.phases;
    for (i, p) in phases.iter_mut().enumerate() {
        if let (Ok(l), Some(step)) = (&run.result, i.checked_sub(first_step)) {
            mark(p, l, step);
        }
    }
    LadderSteps {
        phases,
        latencies,
        result: run.result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each axis steps its own setting of the spec; a rate ladder first finds the
    /// ceiling unthrottled, then offers tenths of it.
    #[test]
    fn climb_axis_steps_the_axis_setting_of_the_spec() {
        let slo: Slo = "p99<=1ms".parse().unwrap();
        let base = DataSpec {
            queue_depth: 3,
            threads: 5,
            rate_iops: Some(7),
            ..DataSpec::default()
        };
        let run = |axis, max| {
            let mut seen = Vec::new();
            let mut step = |s: &DataSpec| -> Result<(f64, Option<Nanos>), ()> {
                seen.push((s.queue_depth, s.threads, s.rate_iops));
                Ok((1000.0, Some(Nanos::from_micros(100))))
            };
            let l = climb_axis(&base, axis, max, &slo, &mut step).unwrap();
            (l, seen)
        };
        let (l, seen) = run(LoadAxis::QueueDepth, 4);
        assert_eq!(l.steps.len(), 3);
        assert_eq!(seen, [(1, 5, Some(7)), (2, 5, Some(7)), (4, 5, Some(7))]);
        let (_, seen) = run(LoadAxis::Threads, 2);
        assert_eq!(seen, [(3, 1, Some(7)), (3, 2, Some(7))]);
        let (l, seen) = run(LoadAxis::Rate, 0);
        assert_eq!(seen[0], (3, 5, None), "the unthrottled probe");
        let rates: Vec<Option<u64>> = seen[1..].iter().map(|s| s.2).collect();
        assert_eq!(rates, (1..=10).map(|i| Some(i * 100)).collect::<Vec<_>>());
        assert_eq!(l.steps.len(), 10);
    }
}
