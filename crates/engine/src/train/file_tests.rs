//! Tests of the file phase: bytes through each backend, two ranks, a failure.

use std::sync::atomic::AtomicBool;

use iolab_backend::files::OpenSpec;
use iolab_comm::InProcess;
use iolab_core::result::OpKind;
use iolab_core::spec::BackendKind;

use super::file_phase::{FilePhaseSpec, run_file_phase};
use crate::clock::MonotonicClock;
use crate::phase::Env;

fn spec(backend: BackendKind, workers: usize) -> FilePhaseSpec {
    FilePhaseSpec {
        name: "write".into(),
        spec: serde_json::Value::Null,
        backend,
        buffer: 8192,
        workers,
    }
}

const CREATE: OpenSpec = OpenSpec {
    write: true,
    create: true,
    truncate: true,
    direct: false,
    sync: false,
};

#[test]
fn two_ranks_write_and_read_back_their_files_through_each_backend() {
    let mut kinds = vec![BackendKind::Psync];
    if iolab_backend::uring_available().is_ok() {
        kinds.push(BackendKind::Uring);
    }
    for kind in kinds {
        let dir = tempfile::tempdir().unwrap();
        let interrupt = AtomicBool::new(false);
        let runs = InProcess::run(
            2,
            |r| format!("h{r}"),
            |comm| {
                let env = Env::new(comm, &interrupt);
                let rank = comm.rank() as usize;
                let path = |i: usize| dir.path().join(format!("f{rank}.{i}"));
                // Each worker writes 10,000 bytes of its own byte: a full buffer, then
                // the rest; fsynced.
                let write = run_file_phase(
                    &env,
                    &MonotonicClock,
                    &spec(kind, 2),
                    |i, io| io.fill_buffer(|b| b.fill(b'a' + (rank * 2 + i) as u8)),
                    |i, io| {
                        io.with_file(&path(i), CREATE, |f| {
                            f.write(8192, 0)?;
                            f.write(10_000 - 8192, 8192)?;
                            f.fsync()
                        })?;
                        Ok(1)
                    },
                )
                .unwrap();
                let read = run_file_phase(
                    &env,
                    &MonotonicClock,
                    &spec(kind, 2),
                    |_, _| Ok(()),
                    |i, io| {
                        let got = io.with_file(&path(i), OpenSpec::default(), |f| {
                            Ok(f.read(8192, 0)? + f.read(8192, 8192)? + f.read(8192, 10_000)?)
                        })?;
                        Ok(got)
                    },
                )
                .unwrap();
                (write, read)
            },
        );
        for (rank, (write, read)) in runs.iter().enumerate() {
            assert_eq!(write.completed, vec![1, 1], "{kind:?}");
            assert_eq!(read.completed, vec![10_000, 10_000], "{kind:?}");
            for i in 0..2 {
                let bytes = std::fs::read(dir.path().join(format!("f{rank}.{i}"))).unwrap();
                assert_eq!(bytes, vec![b'a' + (rank * 2 + i) as u8; 10_000]);
            }
        }
        // Rank 0's phase holds both ranks: 2 writes by each of 4 workers, then 3 reads
        // (the last at the end of the file, 0 bytes).
        let w = &runs[0].0.result.ops;
        let write = w.iter().find(|o| o.op == OpKind::Write).unwrap();
        assert_eq!((write.ops, write.bytes.0), (8, 40_000), "{kind:?}");
        let r = &runs[0].1.result.ops;
        let read = r.iter().find(|o| o.op == OpKind::Read).unwrap();
        assert_eq!((read.ops, read.bytes.0), (12, 40_000), "{kind:?}");
        assert_eq!(runs[0].0.result.ranks, 2);
    }
}

#[test]
fn a_file_that_cannot_be_opened_is_the_phase_s_error_on_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let interrupt = AtomicBool::new(false);
    let runs = InProcess::run(
        2,
        |r| format!("h{r}"),
        |comm| {
            let env = Env::new(comm, &interrupt);
            let rank = comm.rank();
            run_file_phase(
                &env,
                &MonotonicClock,
                &spec(BackendKind::Psync, 1),
                |_, _| Ok(()),
                |_, io| {
                    // Rank 1's folder is not there.
                    let sub = if rank == 1 { "missing" } else { "" };
                    let path = dir.path().join(sub).join("f");
                    io.with_file(&path, CREATE, |f| f.write(10, 0))?;
                    Ok(1)
                },
            )
            .unwrap()
        },
    );
    assert_eq!(runs[0].errors, 1);
    assert_eq!(runs[1].errors, 1);
    assert_eq!(runs[1].completed, vec![0]);
    let message = &runs[0].result.errors[0].message;
    assert!(message.contains("missing"), "{message}");
    assert!(!dir.path().join("missing").exists());
}
