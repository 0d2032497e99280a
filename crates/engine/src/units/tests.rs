//! A unit phase on InProcess ranks: each unit's figures are its own members', a link's
//! untimed members add their errors to it, the summary keeps no operations, and a worker
//! that cannot set up stops every rank with its message.

use std::sync::atomic::AtomicBool;

use iolab_comm::{Comm, InProcess};
use iolab_core::result::{ErrorRecord, OpKind};
use iolab_core::units::{ByteCount, Nanos};

use super::*;

/// A clock that never moves: the phase starts at 0 and workers stamp their own times.
struct Still;
impl Clock for Still {
    fn now(&self) -> Nanos {
        Nanos::ZERO
    }
}

fn member(unit: u32, timed: bool) -> UnitMember {
    UnitMember { unit, timed }
}

fn named(unit: u32) -> PhaseMeta {
    PhaseMeta {
        name: format!("unit {unit}"),
        ..PhaseMeta::default()
    }
}

fn error(rank: u32) -> ErrorRecord {
    ErrorRecord {
        rank,
        host: format!("h{rank}"),
        op: OpKind::Transfer,
        path: "link".into(),
        offset: None,
        errno: None,
        message: "broken".into(),
    }
}

/// Rank 0 runs unit 0 (two timed workers of 3 and 5 blocks) and one untimed member of
/// unit 1, which fails once; rank 1 runs unit 1 (one timed worker of 2 blocks).
#[test]
fn each_unit_holds_its_members_and_the_summary_none() {
    let results = InProcess::run(
        2,
        |r| format!("h{r}"),
        |comm: &dyn Comm| {
            let stop = AtomicBool::new(false);
            let env = Env::new(comm, &stop).with_settle(std::time::Duration::ZERO);
            let members = match comm.rank() {
                0 => vec![member(0, true), member(0, true), member(1, false)],
                _ => vec![member(1, true)],
            };
            let spec = UnitPhaseSpec {
                meta: PhaseMeta {
                    name: "all".into(),
                    ..PhaseMeta::default()
                },
                unit_meta: &named,
                members: &members,
            };
            let blocks = |i: usize| match (comm.rank(), i) {
                (0, 0) => 3,
                (0, 1) => 5,
                (0, _) => 0,
                _ => 2,
            };
            run_unit_phase(&env, &Still, &spec, |w| {
                let Some(start) = w.wait_for_start(true) else {
                    return Ok(0);
                };
                let n = blocks(w.index());
                if members[w.index()].timed {
                    for b in 0..n {
                        w.record(OpKind::Transfer, Nanos(10), 4096, start + Nanos(b + 1));
                    }
                    w.show(n, n * 4096);
                } else {
                    w.error(error(comm.rank()));
                }
                Ok(n)
            })
            .unwrap()
        },
    );
    let p = &results[0];
    let units: Vec<u32> = p.units.iter().map(|u| u.unit).collect();
    assert_eq!(units, vec![0, 1]);
    let (zero, one) = (&p.units[0].result, &p.units[1].result);
    assert_eq!(zero.name, "unit 0");
    assert_eq!(zero.op(OpKind::Transfer).unwrap().ops, 8);
    assert_eq!(zero.op(OpKind::Transfer).unwrap().bytes, ByteCount::kib(32));
    assert_eq!((zero.workers, zero.error_count), (2, 0));
    // Unit 1 is rank 1's worker, with the error of its untimed member on rank 0.
    assert_eq!(one.per_rank[0].rank, 1);
    assert_eq!(one.workers, 1);
    assert_eq!(one.op(OpKind::Transfer).unwrap().ops, 2);
    assert_eq!(one.error_count, 1);
    assert_eq!(one.errors[0].host, "h0");
    // The summary: both ranks' rows, no operations of its own.
    assert_eq!(p.summary.name, "all");
    assert!(p.summary.ops.is_empty());
    assert_eq!(p.summary.error_count, 0);
    assert_eq!(p.summary.per_rank.len(), 2);
    assert_eq!(p.summary.workers, 4);
    // Rank 1 keeps its own unit, without what only rank 0 heard.
    let mine = &results[1];
    assert_eq!(mine.units.len(), 1);
    assert_eq!(mine.units[0].unit, 1);
    assert_eq!(mine.units[0].result.error_count, 0);
}

#[test]
fn a_worker_that_cannot_set_up_stops_every_rank_with_its_message() {
    let errors = InProcess::run(
        2,
        |r| format!("h{r}"),
        |comm: &dyn Comm| {
            let stop = AtomicBool::new(false);
            let env = Env::new(comm, &stop).with_settle(std::time::Duration::ZERO);
            let members = [member(comm.rank(), true)];
            let spec = UnitPhaseSpec {
                meta: PhaseMeta::default(),
                unit_meta: &named,
                members: &members,
            };
            let started = AtomicBool::new(false);
            let r = run_unit_phase(&env, &Still, &spec, |w| {
                if comm.rank() == 1 {
                    // Returns without waiting for the start: taken as a failed setup.
                    return Err("no connection".to_string());
                }
                let start = w.wait_for_start(true);
                started.store(start.is_some(), Ordering::Relaxed);
                Ok(0)
            });
            (
                r.err().map(|e| e.to_string()),
                started.load(Ordering::Relaxed),
            )
        },
    );
    for (e, started) in &errors {
        assert_eq!(e.as_deref(), Some("rank 1 on h1 failed: no connection"));
        assert!(!started, "no worker started");
    }
}
