//! Multi-rank behaviour with InProcess ranks: phases in step, wear-out after a
//! stonewall, ranks reading each other's data, one failing rank stopping all, and ranks
//! agreeing on a spec. (Reads shifted to another host and what a rank receives when a
//! phase ends are the plan's and the phase runner's unit tests.)

use std::sync::atomic::AtomicBool;

use iolab_comm::{Comm, InProcess};
use iolab_core::result::OpKind;
use iolab_core::spec::{BackendKind, DataSpec, RwKind, TargetSpec};
use iolab_core::units::{ByteCount, Nanos, TimeSpan};
use iolab_engine::{DataOptions, check_ranks_agree, run_data};
use iolab_engine::{EngineError, Env, FakeClock, MonotonicClock, prepare_target};

fn two_hosts(rank: u32) -> String {
    format!("node{}", rank / 2)
}

#[test]
fn wear_out_brings_every_rank_to_the_busiest_count() {
    let spec = DataSpec {
        backend: BackendKind::Null,
        size: Some(ByteCount::gib(1)),
        stonewall: Some(TimeSpan(Nanos::from_millis(1))),
        wear_out: true,
        ..DataSpec::default()
    };
    let results = InProcess::run(4, two_hosts, |comm: &dyn Comm| {
        // Rank r's clock runs r+1 times slower, so it gets fewer I/Os done by the stonewall.
        let clock = FakeClock::new(Nanos(1000 * (comm.rank() as u64 + 1)));
        let stop = AtomicBool::new(false);
        let env = Env::new(comm, &stop);
        let target = prepare_target(comm, &TargetSpec::default(), spec.backend, true).unwrap();
        run_data(&env, &clock, &spec, &target, &DataOptions::default()).unwrap()
    });
    for r in &results {
        // Rank 0 did 500 I/Os in 1 ms of 2 µs each; the others caught up with it.
        assert_eq!(r.completed, vec![500, 500, 500, 500]);
    }
    // Rank 0, which prints and stores, holds every rank's figures.
    for r in &results[..1] {
        let p = &r.phases[0];
        assert_eq!(p.op(OpKind::Read).unwrap().ops, 2000);
        assert_eq!(p.ranks, 4);
        assert_eq!(
            p.per_rank
                .iter()
                .map(|x| x.host.as_str())
                .collect::<Vec<_>>(),
            ["node0", "node0", "node1", "node1"]
        );
    }
}

#[test]
fn without_wear_out_a_stonewall_keeps_what_each_rank_did() {
    let spec = DataSpec {
        backend: BackendKind::Null,
        size: Some(ByteCount::gib(1)),
        stonewall: Some(TimeSpan(Nanos::from_millis(1))),
        ..DataSpec::default()
    };
    let results = InProcess::run(
        2,
        |r| format!("n{r}"),
        |comm: &dyn Comm| {
            let clock = FakeClock::new(Nanos(1000 * (comm.rank() as u64 + 1)));
            let stop = AtomicBool::new(false);
            let env = Env::new(comm, &stop);
            let target = prepare_target(comm, &TargetSpec::default(), spec.backend, true).unwrap();
            run_data(&env, &clock, &spec, &target, &DataOptions::default()).unwrap()
        },
    );
    assert_eq!(results[0].completed, vec![500, 250]);
}

#[test]
fn ranks_write_then_read_each_others_data_with_verification() {
    let base = tempfile::tempdir().unwrap();
    let target = TargetSpec {
        dir: Some(base.path().to_path_buf()),
        ..TargetSpec::default()
    };
    let write = DataSpec {
        rw: RwKind::Write,
        size: Some(ByteCount::kib(256)),
        verify: true,
        threads: 2,
        ..DataSpec::default()
    };
    let read = DataSpec {
        rw: RwKind::Read,
        ..write.clone()
    };
    let results = InProcess::run(4, two_hosts, |comm: &dyn Comm| {
        let stop = AtomicBool::new(false);
        let env = Env::new(comm, &stop);
        let t = prepare_target(comm, &target, BackendKind::Psync, true).unwrap();
        let w = run_data(&env, &MonotonicClock, &write, &t, &DataOptions::default()).unwrap();
        let r = run_data(&env, &MonotonicClock, &read, &t, &DataOptions::default()).unwrap();
        (w, r)
    });
    let (w, r) = &results[0];
    assert_eq!(
        w.phases[0].op(OpKind::Write).unwrap().bytes,
        ByteCount::kib(256 * 8)
    );
    assert_eq!(w.phases[1].verify_failures, 0);
    assert_eq!(
        r.phases[0].op(OpKind::Read).unwrap().bytes,
        ByteCount::kib(256 * 8)
    );
    assert_eq!(
        r.phases[0].verify_failures, 0,
        "each rank read another host's blocks and checked them"
    );
    assert_eq!(r.phases[0].per_rank.len(), 4);
}

#[test]
fn one_failing_rank_stops_every_rank_with_its_name() {
    let base = tempfile::tempdir().unwrap();
    for r in [0, 1, 3] {
        std::fs::create_dir(base.path().join(format!("r{r}"))).unwrap();
    }
    // iolab creates a missing r{rank}; a file where the directory belongs fails.
    std::fs::write(base.path().join("r2"), b"not a directory").unwrap();
    let target = TargetSpec {
        dir: Some(base.path().join("r{rank}")),
        ..TargetSpec::default()
    };
    let errors = InProcess::run(4, two_hosts, |comm: &dyn Comm| {
        prepare_target(comm, &target, BackendKind::Psync, true)
            .err()
            .map(|e| e.to_string())
    });
    // Every rank, the failing one included, names it: rank 0 prints that, the others'
    // copies stay unsaid.
    let missing = base.path().join("r2");
    let expect = format!(
        "rank 2 on node1 failed: --dir {} is not a directory",
        missing.display()
    );
    for (r, e) in errors.iter().enumerate() {
        assert_eq!(e.as_deref(), Some(expect.as_str()), "rank {r}");
    }
    // Rank 0's own failure is named like any other rank's.
    std::fs::remove_dir(base.path().join("r0")).unwrap();
    std::fs::write(base.path().join("r0"), b"not a directory").unwrap();
    std::fs::remove_file(base.path().join("r2")).unwrap();
    let errors = InProcess::run(4, two_hosts, |comm: &dyn Comm| {
        prepare_target(comm, &target, BackendKind::Psync, true)
            .err()
            .map(|e| e.to_string())
    });
    assert!(
        errors[0]
            .as_deref()
            .is_some_and(|e| e.starts_with("rank 0 on node0 failed: --dir ")),
        "{errors:?}"
    );
    let _ = EngineError::Interrupted;
}

/// Ranks agree on the spec by a hash: when all agree, a rank receives the same few bytes
/// at 2 ranks and at 16; when one differs, the error names it, its host and the first
/// setting that differs.
#[test]
fn ranks_agree_on_a_hash_and_name_the_first_difference() {
    let agree = |n: u32| {
        let (ok, bytes) = InProcess::run_counted(n, two_hosts, |comm: &dyn Comm| {
            check_ranks_agree(comm, "the workload", &DataSpec::default()).is_ok()
        });
        assert!(ok.iter().all(|&ok| ok));
        bytes
    };
    let (small, large) = (agree(2), agree(16));
    assert_eq!(small[1], large[1], "{small:?} {large:?}");
    assert!(large[1] <= 64, "{large:?}");
    let errors = InProcess::run(4, two_hosts, |comm: &dyn Comm| {
        let spec = DataSpec {
            threads: if comm.rank() == 2 { 4 } else { 1 },
            ..DataSpec::default()
        };
        check_ranks_agree(comm, "the workload", &spec)
            .unwrap_err()
            .to_string()
    });
    for e in &errors {
        assert!(
            e.starts_with("ranks disagree on the workload: rank 0 has threads = 1, rank 2 on node1 has threads = 4"),
            "{e}"
        );
    }
}
