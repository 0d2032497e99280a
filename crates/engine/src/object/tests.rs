//! The S3 workload on the null object backend: the requests each phase makes, counted;
//! the figures they give; warp's mixed shares; cleanup that leaves nothing (and --keep
//! that leaves everything); several ranks in one bucket.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use iolab_backend::object::{NullObjects, NullStore, ObjectBackend, ObjectError};
use iolab_comm::{Comm, InProcess, SingleProcess};
use iolab_core::result::OpKind;
use iolab_core::spec::{S3Op, S3Spec};
use iolab_core::units::{ByteCount, TimeSpan};

use super::*;
use crate::clock::MonotonicClock;
use crate::phase::Env;
use run::ObjectOutcome;

fn spec(ops: &[S3Op], objects: u64, concurrency: u32) -> S3Spec {
    S3Spec {
        bucket: "bkt".into(),
        ops: ops.to_vec(),
        objects,
        concurrency,
        object_size: ByteCount(1000),
        ..S3Spec::default()
    }
}

fn run(comm: &dyn Comm, s: &S3Spec, store: &Arc<NullStore>, keep: bool) -> ObjectOutcome {
    let stop = AtomicBool::new(false);
    let env = Env::new(comm, &stop).with_settle(Duration::ZERO);
    let factory = |_g: u32| -> Result<Box<dyn ObjectBackend>, ObjectError> {
        Ok(Box::new(NullObjects::new(store.clone())))
    };
    let opts = ObjectOptions::default();
    let (plan, made) = start_s3(comm, s, &factory, &opts).unwrap();
    let out = run_s3(&env, &MonotonicClock, &plan, made, &factory, &opts);
    let warnings = finish_s3(comm, &out, &factory, keep);
    if !keep {
        assert!(warnings.is_empty(), "{warnings:?}");
    }
    out
}

fn ops(p: &iolab_core::result::PhaseResult, op: OpKind) -> u64 {
    p.op(op).map_or(0, |o| o.ops)
}

#[test]
fn each_phase_makes_its_requests_once_and_cleanup_leaves_nothing() {
    let store = Arc::new(NullStore::default());
    let s = spec(
        &[S3Op::Put, S3Op::Get, S3Op::Stat, S3Op::List, S3Op::Delete],
        10,
        3,
    );
    let out = run(&SingleProcess::new(), &s, &store, false);
    let names: Vec<&str> = out.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "put-1000B",
            "get-1000B",
            "stat-1000B",
            "list-1000B",
            "delete-1000B"
        ]
    );
    let put = &out.phases[0];
    assert_eq!(
        (
            ops(put, OpKind::Put),
            put.op(OpKind::Put).unwrap().bytes.get()
        ),
        (10, 10_000)
    );
    assert_eq!(ops(&out.phases[1], OpKind::Get), 10);
    assert_eq!(out.phases[1].op(OpKind::Get).unwrap().bytes.get(), 10_000);
    assert_eq!(ops(&out.phases[2], OpKind::Stat), 10);
    // One page per worker; 10 keys listed in all.
    assert_eq!(ops(&out.phases[3], OpKind::List), 3);
    assert_eq!(out.phases[3].extra["keys_listed"], 10.0);
    assert_eq!(ops(&out.phases[4], OpKind::Delete), 10);
    // The marker: written before the load, removed after it; the bucket check lists once.
    assert_eq!(store.count("PUT"), 11);
    assert_eq!(store.count("GET"), 10);
    assert_eq!(store.count("HEAD"), 10);
    assert_eq!(store.count("LIST"), 4);
    assert_eq!(store.count("DELETE"), 11);
    assert!(store.keys().is_empty(), "{:?}", store.keys());
    // GETs have a time to first byte.
    assert_eq!(out.phases[1].extra["ttfb_count"], 10.0);
}

#[test]
fn a_phase_without_objects_is_prepared_untimed_and_keep_keeps_them() {
    let store = Arc::new(NullStore::default());
    let s = S3Spec {
        batch: 4,
        ..spec(&[S3Op::Get], 9, 2)
    };
    let out = run(&SingleProcess::new(), &s, &store, true);
    assert_eq!(out.phases.len(), 1, "prepare is not a phase of the run");
    assert_eq!(ops(&out.phases[0], OpKind::Get), 9);
    // 9 objects and the marker stay with --keep.
    assert_eq!(store.keys().len(), 10);
    assert!(store.keys().iter().all(|k| k.starts_with(&out.plan.root)));
}

#[test]
fn batched_deletes_name_up_to_batch_keys() {
    let store = Arc::new(NullStore::default());
    let s = S3Spec {
        batch: 4,
        ..spec(&[S3Op::Put, S3Op::Delete], 10, 1)
    };
    let out = run(&SingleProcess::new(), &s, &store, false);
    // 10 objects in requests of 4, 4, 2.
    assert_eq!(ops(&out.phases[1], OpKind::Delete), 3);
    assert_eq!(out.phases[1].extra["objects_deleted"], 10.0);
    assert_eq!(store.count("DELETE (multi-object)"), 3);
}

#[test]
fn mixed_keeps_warps_shares() {
    // Short phases (each seed its own shuffled table) until 4000 operations have run:
    // the shares are checked over a count, however slow the machine is.
    let store = Arc::new(NullStore::default());
    let mut counts = [0u64; 4];
    let mut seed = 1;
    while counts.iter().sum::<u64>() < 4000 {
        assert!(seed <= 200, "{counts:?} after {seed} phases");
        let s = S3Spec {
            duration: Some(TimeSpan(iolab_core::units::Nanos(300_000_000))),
            seed,
            ..spec(&[S3Op::Mixed], 50, 4)
        };
        let out = run(&SingleProcess::new(), &s, &store, false);
        let p = &out.phases[0];
        let g = ops(p, OpKind::Get);
        for (c, op) in
            counts
                .iter_mut()
                .zip([OpKind::Get, OpKind::Stat, OpKind::Put, OpKind::Delete])
        {
            *c += ops(p, op);
        }
        assert!(store.keys().is_empty());
        // warp's window: inside the phase, and its GETs a little fewer than the phase's.
        // On a loaded machine a worker can be kept off the CPU until the others have
        // started their last request: the window is then empty (warp's too), not wrong.
        let (ws, we) = (p.extra["window_start_ns"], p.extra["window_end_ns"]);
        assert!(ws > 0.0 && we <= p.elapsed.0 as f64, "{ws} {we}");
        let in_window = p.extra["window_get_ops"];
        assert!(in_window <= g as f64, "{in_window} of {g}");
        if we > ws + 0.5 * p.elapsed.0 as f64 {
            assert!(
                in_window > 0.5 * g as f64,
                "{in_window} of {g} in {ws}..{we}"
            );
        }
        seed += 1;
    }
    let total = counts.iter().sum::<u64>() as f64;
    for (n, share) in counts.into_iter().zip([0.45, 0.30, 0.15, 0.10]) {
        let got = n as f64 / total;
        assert!(
            (got - share).abs() < 0.01,
            "{n} of {total}: {got} against {share}"
        );
    }
}

#[test]
fn ranks_work_on_their_own_objects_in_one_bucket() {
    let store = Arc::new(NullStore::default());
    let s = spec(&[S3Op::Put, S3Op::Get, S3Op::Delete], 12, 2);
    let roots = InProcess::run(
        3,
        |_| "h".to_string(),
        |comm| {
            let out = run(comm, &s, &store, false);
            assert_eq!(out.phases.len(), 3);
            if comm.rank() == 0 {
                assert_eq!(ops(&out.phases[0], OpKind::Put), 12);
                assert_eq!(ops(&out.phases[1], OpKind::Get), 12);
                assert_eq!(out.phases[0].ranks, 3);
            }
            out.plan.root.clone()
        },
    );
    // One token for the whole run.
    assert!(roots.iter().all(|r| *r == roots[0]));
    assert_eq!(store.count("PUT"), 13);
    assert!(store.keys().is_empty());
}

/// A missing bucket's line says what to try once, S3's NoSuchBucket (whose error carries
/// the backend's hint) or a bare 404 alike.
#[test]
fn a_missing_bucket_says_its_hint_once() {
    for code in ["NoSuchBucket", "Not Found"] {
        let e = ObjectError::Status {
            op: "LIST",
            target: "bkt".into(),
            endpoint: "http://127.0.0.1:8333".into(),
            status: 404,
            code: code.into(),
            message: String::new(),
        };
        let line = super::run::missing_bucket("bkt", &e);
        assert!(
            line.starts_with("bucket 'bkt' does not exist: LIST bkt"),
            "{line}"
        );
        assert_eq!(line.matches("--create-bucket").count(), 1, "{line}");
        assert_eq!(line.matches("--bucket").count(), 1, "{line}");
        assert!(
            line.ends_with("to have iolab make it (and remove it at the end)"),
            "{line}"
        );
    }
}
