//! The targets phase on its own: every rank's targets in one phase, each target's
//! results by its place in the shared list, one phase per target when asked, and a
//! directory's files planned, noted for cleanup and recorded complete after a write.

use std::sync::atomic::AtomicBool;

use iolab_comm::{Comm, InProcess, SingleProcess};
use iolab_core::result::OpKind;
use iolab_core::spec::{BackendKind, RwKind};
use iolab_core::units::ByteCount;

use super::*;
use crate::clock::MonotonicClock;

fn data(backend: BackendKind) -> DataSpec {
    DataSpec {
        backend,
        rw: RwKind::Write,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::kib(64)),
        ..DataSpec::default()
    }
}

/// Targets a, b and c: rank 0 runs a and c, rank 1 runs b.
fn on_two_ranks(one_at_a_time: bool) -> Vec<TargetsOutcome> {
    let ids: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    let data = data(BackendKind::Null);
    InProcess::run(
        2,
        |r| format!("h{r}"),
        |comm: &dyn Comm| {
            let stop = AtomicBool::new(false);
            let env = Env::new(comm, &stop).with_settle(std::time::Duration::ZERO);
            let units: &[u32] = if comm.rank() == 0 { &[0, 2] } else { &[1] };
            let local: Vec<TargetOnRank<'_>> = units
                .iter()
                .map(|&unit| TargetOnRank {
                    unit,
                    path: Path::new("/nowhere"),
                    prepared: &PreparedTarget::Null,
                    alignment: 4096,
                })
                .collect();
            let warnings = ["the caller's".to_string()];
            let opts = TargetsOptions {
                data: &data,
                ids: &ids,
                local: &local,
                one_at_a_time,
                warnings: &warnings,
            };
            run_targets(&env, &MonotonicClock, &opts).unwrap()
        },
    )
}

#[test]
fn every_ranks_targets_run_together_and_rank_0_holds_each_by_its_place() {
    let results = on_two_ranks(false);
    let p = &results[0];
    let names: Vec<&str> = p.targets.iter().map(|t| t.result.name.as_str()).collect();
    assert_eq!(names, ["target a", "target b", "target c"]);
    for (u, t) in p.targets.iter().enumerate() {
        assert_eq!(t.unit, u as u32);
        let w = t.result.op(OpKind::Write).unwrap();
        assert_eq!(w.bytes, ByteCount::kib(64));
        assert_eq!(t.result.params["mode"], "all-at-once");
        assert_eq!(t.result.params["id"], ["a", "b", "c"][u]);
        assert!(!t.result.params.contains_key("ranks"));
        assert_eq!(t.result.per_rank[0].rank, [0, 1, 0][u]);
    }
    assert!(p.summary.ops.is_empty());
    assert_eq!(p.summary.params["targets"], "3");
    assert_eq!(p.summary.params["ranks"], "2");
    assert_eq!(p.summary.per_rank.len(), 2);
    assert_eq!(p.summary.warnings[0], "the caller's");
    // Rank 1 keeps its own target's phase.
    let units: Vec<u32> = results[1].targets.iter().map(|t| t.unit).collect();
    assert_eq!(units, [1]);
}

#[test]
fn one_at_a_time_runs_a_phase_per_target_in_the_shared_order() {
    let results = on_two_ranks(true);
    let p = &results[0];
    assert_eq!(p.targets.len(), 3);
    assert!(
        p.targets
            .iter()
            .all(|t| t.result.params["mode"] == "one-at-a-time")
    );
    // Times add up: the summary's is the sum of the three phases'.
    let sum = p
        .targets
        .iter()
        .fold(iolab_core::units::Nanos::ZERO, |s, t| s + t.result.elapsed);
    assert!(
        p.summary.elapsed >= sum,
        "{:?} < {sum:?}",
        p.summary.elapsed
    );
    assert_eq!(p.summary.workers, 3);
}

#[test]
fn a_directorys_files_are_noted_and_recorded_complete_after_a_write() {
    let dir = tempfile::tempdir().unwrap();
    let comm = SingleProcess::new();
    let stop = AtomicBool::new(false);
    let env = Env::new(&comm, &stop).with_settle(std::time::Duration::ZERO);
    let prepared = PreparedTarget::own_dir(dir.path(), "run", comm.host()).unwrap();
    let ids = vec!["t".to_string()];
    let local = [TargetOnRank {
        unit: 0,
        path: dir.path(),
        prepared: &prepared,
        alignment: 4096,
    }];
    let data = data(BackendKind::Psync);
    let opts = TargetsOptions {
        data: &data,
        ids: &ids,
        local: &local,
        one_at_a_time: false,
        warnings: &[],
    };
    let outcome = run_targets(&env, &MonotonicClock, &opts).unwrap();
    let work = dir.path().join("iolab-work");
    assert_eq!(outcome.files, vec![vec![work.join("data.r0.t0")]]);
    let workdir = prepared.workdir().unwrap();
    assert_eq!(workdir.used(), outcome.files[0]);
    let info = workdir.file_info(&outcome.files[0][0]).unwrap();
    assert_eq!(info.size, 64 * 1024);
    assert_eq!(
        std::fs::metadata(&outcome.files[0][0]).unwrap().len(),
        64 * 1024
    );
    workdir.remove_files(&outcome.files[0]).unwrap();
}
