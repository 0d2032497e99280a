//! The plain loops (reads only, or writes only of iolab's own data, with none of the
//! options that act per I/O) are built without the checks of what is off: a plain
//! write loop must write the very bytes, at the very places, that the full loop writes.

use std::sync::atomic::AtomicBool;

use iolab_comm::SingleProcess;
use iolab_core::result::OpKind;
use iolab_core::spec::{BackendKind, DataSpec, RwKind};
use iolab_core::units::ByteCount;
use iolab_engine::{DataOptions, run_data};
use iolab_engine::{Env, MonotonicClock, prepare_target};

use super::dir_target;

/// The file one worker wrote (`rw`, 4 KiB, 2 MiB, queue depth `qd` on `backend`) and its
/// write count; `full`: with an I/O limit it never reaches, which takes the full loop.
fn written(backend: BackendKind, rw: RwKind, qd: u32, full: bool) -> (Vec<u8>, u64) {
    let dir = tempfile::tempdir().unwrap();
    let spec = DataSpec {
        backend,
        rw,
        queue_depth: qd,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::mib(2)),
        fsync_at_end: true,
        ..DataSpec::default()
    };
    let opts = DataOptions {
        fio: iolab_core::spec::FioSettings {
            io_limit: full.then_some(u64::MAX),
            ..Default::default()
        },
        ..DataOptions::default()
    };
    let comm = SingleProcess::new();
    let target = prepare_target(&comm, &dir_target(dir.path(), true), backend, true).unwrap();
    let stop = AtomicBool::new(false);
    let env = Env::new(&comm, &stop);
    let out = run_data(&env, &MonotonicClock, &spec, &target, &opts).unwrap();
    let ops = out.phases[0].op(OpKind::Write).unwrap().ops;
    let data = std::fs::read(dir.path().join("iolab-work/data.r0.t0")).unwrap();
    (data, ops)
}

#[test]
fn a_plain_write_loop_writes_the_bytes_of_the_full_loop() {
    let mut cases = vec![
        (BackendKind::Psync, RwKind::Randwrite, 1),
        (BackendKind::Psync, RwKind::Write, 1),
        (BackendKind::Sync, RwKind::Randwrite, 1),
    ];
    if iolab_backend::uring_available().is_ok() {
        // One slot: deeper queues complete out of order (tmpfs hands buffered writes to
        // io_uring's workers), so which slot's data a write takes varies from run to run.
        cases.push((BackendKind::Uring, RwKind::Randwrite, 1));
    }
    for (backend, rw, qd) in cases {
        let (plain, plain_ops) = written(backend, rw, qd, false);
        let (full, full_ops) = written(backend, rw, qd, true);
        assert_eq!(plain_ops, 512, "{backend:?} {rw:?}");
        assert_eq!(full_ops, plain_ops, "{backend:?} {rw:?}");
        // Something was written: distinct 4 KiB units of iolab's data, not zeros.
        let mut units: Vec<&[u8]> = plain
            .chunks(4096)
            .filter(|u| u.iter().any(|&b| b != 0))
            .collect();
        units.sort();
        units.dedup();
        assert!(
            units.len() >= 256,
            "{backend:?} {rw:?}: {} units",
            units.len()
        );
        assert!(
            plain == full,
            "{backend:?} {rw:?}: the plain loop wrote other bytes"
        );
    }
}
