use std::time::Instant;

use iolab_comm::InProcess;
use iolab_core::result::OpKind;

use super::*;
use crate::assemble::{PhaseMeta, assemble};
use crate::recorder::Recorder;

const MS: u64 = 1_000_000;
const MIB: u64 = 1 << 20;

/// A clock that never moves: the phase starts at 0 and workers stamp their own times.
struct Still;
impl Clock for Still {
    fn now(&self) -> Nanos {
        Nanos::ZERO
    }
}

/// Waits (boundedly) until this rank has heard that some worker is done.
fn await_first_done(control: &PhaseControl) {
    let t = Instant::now();
    while !control.first_done.load(Ordering::Relaxed) && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(control.first_done.load(Ordering::Relaxed));
}

/// Two ranks with wear-out: rank 0 writes its 4 MiB share by 4 ms and then waits at
/// the rendezvous until rank 1, slow, reaches its stonewall at 1 s with 10 MiB.
#[test]
fn wear_out_first_done_is_when_the_fast_worker_finished_its_share() {
    let interrupt = AtomicBool::new(false);
    let results = InProcess::run(
        2,
        |r| format!("h{r}"),
        |comm| {
            let env = Env::new(comm, &interrupt);
            let fast = comm.rank() == 0;
            let run = run_phase(&env, &Still, "write", 1, true, |i, control| {
                let start = control.ready_and_wait(true).unwrap();
                let mut rec = Recorder::new(start, Nanos::SECOND);
                let done = if fast {
                    for t in 1..=4 {
                        rec.record(OpKind::Write, Nanos(MS), MIB, Nanos(t * MS));
                    }
                    4
                } else {
                    // Hears of rank 0's finish at 10 ms, one write done by then.
                    await_first_done(control);
                    rec.record(OpKind::Write, Nanos(MS), MIB, Nanos(10 * MS));
                    rec.mark_first_done();
                    for t in 2..=10 {
                        rec.record(OpKind::Write, Nanos(MS), MIB, Nanos(t * 100 * MS));
                    }
                    10
                };
                // Rank 0 has nothing left to do when told the target: it finishes
                // as the rendezvous lets it go, at 1 s, like rank 1.
                assert_eq!(control.wear_out_wait(i, done), 10);
                control.finished(i);
                Ok(WorkerReport {
                    measure: rec.finish(),
                    completed: done,
                    finished_at: Nanos(1000 * MS),
                })
            })
            .unwrap();
            assemble(PhaseMeta::default(), &run)
        },
    );
    // Rank 0 holds both ranks' outcomes; rank 1 its own.
    assert_eq!(results[1].per_rank.len(), 1);
    for p in &results[..1] {
        let w = p.op(OpKind::Write).unwrap();
        assert_eq!((w.ops, w.bytes.0), (14, 14 * MIB));
        assert_eq!(p.elapsed, Nanos(1000 * MS));
        assert_eq!(p.first_done, Nanos(4 * MS));
        assert_eq!(p.per_rank[0].first_done, Nanos(4 * MS));
        assert_eq!(p.per_rank[1].first_done, Nanos(10 * MS));
        // By 4 ms: rank 0's 4 writes, and 0.4 of rank 1's (1 by 10 ms).
        assert_eq!(w.first_done_ops, 4);
        assert_eq!(w.first_done_bytes.0, (4.4 * MIB as f64).round() as u64);
    }
}

/// First-done counts are capped at what was done in all, whatever the rates say.
#[test]
fn first_done_counts_never_exceed_the_totals() {
    let mut a = Recorder::new(Nanos::ZERO, Nanos::SECOND);
    a.record(OpKind::Write, Nanos(1), 10, Nanos(MS));
    let run = PhaseRun::from_outcomes(
        vec![RankOutcome {
            host: "h".into(),
            threads: 1,
            elapsed: Nanos(1000 * MS),
            // Later than the worker froze its figures (as a worker's finish after a
            // wait was before the fix): the rate would extrapolate to 1000 writes.
            first_done: Nanos(1000 * MS),
            measure: a.finish(),
            completed: vec![1],
            ..RankOutcome::default()
        }],
        false,
        0,
        None,
    );
    let p = assemble(PhaseMeta::default(), &run);
    let w = p.op(OpKind::Write).unwrap();
    assert_eq!((w.first_done_ops, w.first_done_bytes.0), (1, 10));
}

/// Rank 0's worker is done at once and sits at the wear-out rendezvous while rank 1's
/// two workers keep two CPUs busy: rank 0's CPU use is its worker's, over its own
/// wall time, so it cannot exceed one CPU (it showed rank 1's two).
#[test]
fn a_rank_waiting_at_the_rendezvous_is_not_charged_for_the_others() {
    let interrupt = AtomicBool::new(false);
    let results = InProcess::run(
        2,
        |_| "h".to_string(),
        |comm| {
            let env = Env::new(comm, &interrupt);
            let clock = crate::clock::MonotonicClock;
            let fast = comm.rank() == 0;
            let workers = if fast { 1 } else { 2 };
            let run = run_phase(&env, &clock, "write", workers, true, |i, control| {
                let start = control.ready_and_wait(true).unwrap();
                let mut rec = Recorder::new(start, Nanos::SECOND);
                let done = if fast {
                    rec.record(OpKind::Write, Nanos(1), 1, clock.now());
                    1
                } else {
                    let t = Instant::now();
                    let mut x = 0u64;
                    while t.elapsed() < Duration::from_millis(300) {
                        x = std::hint::black_box(x.wrapping_add(1));
                    }
                    rec.record(OpKind::Write, Nanos(1), 1, clock.now());
                    1
                };
                control.wear_out_wait(i, done);
                let finished_at = clock.now().saturating_sub(start);
                control.finished(i);
                Ok(WorkerReport {
                    measure: rec.finish(),
                    completed: done,
                    finished_at,
                })
            })
            .unwrap();
            assemble(PhaseMeta::default(), &run)
        },
    );
    let rank0 = &results[0].per_rank[0];
    assert_eq!(rank0.threads, 1);
    assert!(
        rank0.cpu.percent_of_one_cpu() <= 100.0,
        "rank 0 kept {:.0}% of a CPU busy",
        rank0.cpu.percent_of_one_cpu()
    );
    // Both ranks on one host: its CPUs count once.
    let cpus = iolab_backend::process::allowed_cpus().len() as u32;
    assert_eq!(results[0].cpu.cpus, cpus);
}

/// The timed part starts once every worker thread is at least `settle` old, however
/// fast its setup (a new thread's scheduler load has not yet decayed: WORKER_SETTLE).
#[test]
fn the_timed_part_waits_until_the_workers_have_settled() {
    let interrupt = AtomicBool::new(false);
    let settle = Duration::from_millis(150);
    let ages = std::sync::Mutex::new(Vec::new());
    InProcess::run(
        2,
        |r| format!("h{r}"),
        |comm| {
            let env = Env::new(comm, &interrupt).with_settle(settle);
            // Taken before the workers are spawned: a time taken inside a worker thread
            // starts after its birth, and under load falls a few ms short of the settle.
            let before = Instant::now();
            run_phase(&env, &Still, "write", 2, false, |i, control| {
                control.ready_and_wait(true).unwrap();
                ages.lock().unwrap().push(before.elapsed());
                control.finished(i);
                Ok(WorkerReport {
                    measure: Recorder::new(Nanos::ZERO, Nanos::SECOND).finish(),
                    completed: 0,
                    finished_at: Nanos::ZERO,
                })
            })
            .unwrap();
        },
    );
    let ages = ages.into_inner().unwrap();
    assert_eq!(ages.len(), 4, "two workers on each of two ranks");
    assert!(ages.iter().all(|a| *a >= settle), "{ages:?}");
}

fn two_hosts(rank: u32) -> String {
    format!("node{}", rank / 2)
}

/// What a rank other than 0 receives when a phase ends does not grow with the job: eight
/// bytes per worker (each worker's completed count, which later phases start from) and
/// constant-size reductions, while rank 0 receives every rank's outcome (histograms,
/// timelines), as it alone prints and stores them. Counted by the InProcess meeting as
/// MPI delivers (an all-gather to every rank, a gather to its root, a reduction one
/// record), so no timing is involved.
#[test]
fn only_rank_0_receives_the_outcomes_of_a_phase() {
    let received = |n: u32| {
        let (_, bytes) = InProcess::run_counted(n, two_hosts, |comm: &dyn iolab_comm::Comm| {
            let stop = AtomicBool::new(false);
            let env = Env::new(comm, &stop);
            run_phase(
                &env,
                &crate::clock::MonotonicClock,
                "idle",
                1,
                false,
                |i, control| {
                    control.ready_and_wait(true);
                    control.finished(i);
                    Ok(WorkerReport::idle())
                },
            )
            .unwrap();
        });
        bytes
    };
    let others = |b: &[u64]| *b[1..].iter().max().unwrap();
    let base = received(16);
    // Ticks are reductions of one record each; a few more may fall in one run than in the
    // other (at most a handful in a phase this short), hence the allowance.
    let ticks = 4 * 1352;
    for n in [64u32, 256] {
        let got = received(n);
        // Beyond the 8-byte completed count of each added worker, nothing grows.
        let grown = others(&got).saturating_sub(8 * u64::from(n - 16));
        assert!(
            grown <= others(&base) + ticks,
            "a rank other than 0 received {} bytes at {n} ranks against {} at 16",
            others(&got),
            others(&base)
        );
        // Rank 0 receives each of the n outcomes.
        assert!(got[0] > u64::from(n) * 100, "{n}: {}", got[0]);
    }
    assert!(base[0] > 16 * 100, "{base:?}");
}
