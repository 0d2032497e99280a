//! Tests of the metadata workload on several ranks (InProcess): private trees with the
//! cache-avoidance shift to the next node, per-host directories (no shift), and one
//! directory shared by every thread of every rank.

use iolab_comm::InProcess;
use iolab_core::result::OpKind;
use iolab_core::spec::{MetaOp, MetaSpec, TargetSpec};
use iolab_core::units::ByteCount;

use super::tests::{files_under, ops, root, run_on, spec, target};
use super::*;
use crate::clock::MonotonicClock;
use crate::target::prepare_target;

fn two_hosts(rank: u32) -> String {
    format!("node-{}", rank / 2)
}

#[test]
fn ranks_with_private_trees_shift_to_the_next_node() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().to_path_buf();
    let results = InProcess::run(4, two_hosts, |comm| {
        let t = target(comm, Some(&dir));
        let s = spec(&[MetaOp::Create, MetaOp::Stat, MetaOp::Read], 2, 3, 2);
        let made = run_on(comm, &MonotonicClock, &s, &t, &MetaOptions::default()).unwrap();
        let on_disk = if comm.rank() == 0 {
            files_under(&root(&dir)).len()
        } else {
            0
        };
        // Rank 1's workers (2, 3) lose their files: shifted by one node (2 ranks), rank 3
        // stats them and finds none, rank 1 stats rank 3's.
        let mut created = made.created.clone();
        created[2] = 0;
        created[3] = 0;
        let stat = spec(&[MetaOp::Stat], 2, 3, 2);
        let opts = MetaOptions {
            created: Some(created),
            ..MetaOptions::default()
        };
        let shifted = run_on(comm, &MonotonicClock, &stat, &t, &opts).unwrap();
        finish_meta(comm, &s, &t, &MetaOptions::default(), &made, false).unwrap();
        (made, shifted, on_disk)
    });
    let (made, shifted, on_disk) = &results[0];
    assert_eq!(*on_disk, 8 * 6);
    assert_eq!(ops(&made.phases[0], OpKind::Create), 48);
    assert_eq!(made.phases[1].params["shift"], "2");
    assert_eq!(made.phases[0].ranks, 4);
    assert_eq!(made.phases[0].workers, 8);
    let per_rank: Vec<u64> = shifted.phases[0]
        .per_rank
        .iter()
        .map(|r| r.ops.get(&OpKind::Stat).map(|c| c.ops).unwrap_or(0))
        .collect();
    assert_eq!(per_rank, vec![12, 12, 12, 0]);
    assert!(!root(&dir).exists());
}

#[test]
fn ranks_share_one_directory() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().to_path_buf();
    let results = InProcess::run(
        2,
        |_| "node-a".to_string(),
        |comm| {
            let t = target(comm, Some(&dir));
            let s = MetaSpec {
                shared_dir: true,
                file_size: ByteCount(3901),
                ..spec(&[MetaOp::Mkdir, MetaOp::Create, MetaOp::Read], 2, 5, 1)
            };
            let out = run_on(comm, &MonotonicClock, &s, &t, &MetaOptions::default()).unwrap();
            comm.barrier();
            let files = if comm.rank() == 0 {
                files_under(&root(&dir))
            } else {
                Vec::new()
            };
            comm.barrier();
            finish_meta(comm, &s, &t, &MetaOptions::default(), &out, false).unwrap();
            (out, files)
        },
    );
    let (out, files) = &results[0];
    assert_eq!(files.len(), 20);
    assert!(
        files
            .iter()
            .all(|f| f.starts_with("test-dir.0-0/mdtest_tree.0/file.mdtest.")),
        "{files:?}"
    );
    assert!(files.contains(&"test-dir.0-0/mdtest_tree.0/file.mdtest.3.4".to_string()));
    assert_eq!(ops(&out.phases[0], OpKind::Mkdir), 1, "one shared leaf");
    assert_eq!(ops(&out.phases[2], OpKind::Read), 20);
    assert_eq!(out.phases[2].verify_failures, 0);
    assert!(!root(&dir).exists());
}

#[test]
fn per_host_directories_are_not_shifted() {
    let base = tempfile::tempdir().unwrap();
    for h in ["node-0", "node-1"] {
        std::fs::create_dir(base.path().join(h)).unwrap();
    }
    let dir = base.path().join("{host}");
    let results = InProcess::run(4, two_hosts, |comm| {
        let t = TargetSpec {
            dir: Some(dir.clone()),
            ..TargetSpec::default()
        };
        let t = prepare_target(comm, &t, iolab_core::spec::BackendKind::Psync, true).unwrap();
        let s = spec(&[MetaOp::Create, MetaOp::Stat, MetaOp::Remove], 1, 4, 1);
        let out = run_on(comm, &MonotonicClock, &s, &t, &MetaOptions::default()).unwrap();
        finish_meta(comm, &s, &t, &MetaOptions::default(), &out, false).unwrap();
        out
    });
    let out = &results[0];
    assert_eq!(out.phases[1].params["shift"], "0");
    assert_eq!(ops(&out.phases[1], OpKind::Stat), 16);
    assert_eq!(out.phases[1].error_count, 0, "{:?}", out.phases[1].errors);
    assert_eq!(ops(&out.phases[2], OpKind::Remove), 16);
    for h in ["node-0", "node-1"] {
        assert!(!root(&base.path().join(h)).exists());
    }
}

/// The tree mdtest leaves: `mpirun -np 2 mdtest -n 3 -u -L -F -N 1 -C -d D` (mdtest
/// 4.1.0+dev, IOR 5fcf0ba as IO500 builds it) creates rank r's files in the tree of rank
/// r+1; its stat phase then finds rank r+1's files in the tree of rank r+2, and so on.
#[test]
fn two_ranks_lay_out_files_as_mdtest_does() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().to_path_buf();
    let results = InProcess::run(
        2,
        |_| "node".to_string(),
        |comm| {
            let t = target(comm, Some(&dir));
            let s = MetaSpec {
                shift: Some(1),
                ..spec(&[MetaOp::Create], 1, 3, 1)
            };
            let made = run_on(comm, &MonotonicClock, &s, &t, &MetaOptions::default()).unwrap();
            comm.barrier();
            let listing = files_under(&root(&dir));
            comm.barrier();
            let rest = MetaSpec {
                ops: vec![MetaOp::Stat, MetaOp::Read, MetaOp::Remove],
                ..s.clone()
            };
            let opts = MetaOptions {
                created: Some(made.created.clone()),
                ..MetaOptions::default()
            };
            let after = run_on(comm, &MonotonicClock, &rest, &t, &opts).unwrap();
            finish_meta(comm, &rest, &t, &MetaOptions::default(), &after, false).unwrap();
            (listing, after)
        },
    );
    let (listing, after) = &results[0];
    let mdtest = [
        "test-dir.0-0/mdtest_tree.0.0/file.mdtest.1.0",
        "test-dir.0-0/mdtest_tree.0.0/file.mdtest.1.1",
        "test-dir.0-0/mdtest_tree.0.0/file.mdtest.1.2",
        "test-dir.0-0/mdtest_tree.1.0/file.mdtest.0.0",
        "test-dir.0-0/mdtest_tree.1.0/file.mdtest.0.1",
        "test-dir.0-0/mdtest_tree.1.0/file.mdtest.0.2",
    ];
    assert_eq!(listing, &mdtest);
    for (p, op) in after
        .phases
        .iter()
        .zip([OpKind::Stat, OpKind::Read, OpKind::Remove])
    {
        assert_eq!((ops(p, op), p.error_count), (6, 0), "{}", p.name);
        assert_eq!(p.params["paths"], "whole");
    }
    assert!(!root(&dir).exists());
}
