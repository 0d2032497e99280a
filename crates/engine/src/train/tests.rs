//! FakeClock tests of the accelerator's steps and the reader's reads.

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use iolab_core::result::OpKind;
use iolab_core::spec::BackendKind;
use iolab_core::train::AcceleratorEpoch;
use iolab_core::units::Nanos;

use super::*;
use crate::clock::{Clock, FakeClock};

const MS: u64 = 1_000_000;

/// Ends the epoch after `steps` steps; accelerators meet at a barrier, and the test
/// can see how many arrivals there have been.
struct Meeting {
    barrier: Barrier,
    arrived: AtomicU64,
    steps: u64,
}

impl Meeting {
    fn new(accelerators: usize, steps: u64) -> Meeting {
        Meeting {
            barrier: Barrier::new(accelerators),
            arrived: AtomicU64::new(0),
            steps,
        }
    }
}

impl StepMeeting for Meeting {
    fn meet(&self, step: u64, failed: bool) -> bool {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        self.barrier.wait();
        failed || step >= self.steps
    }
}

#[test]
fn au_of_a_known_schedule_is_exact() {
    // Each step loads for 10 ms and computes 40 ms: 5 steps take 250 ms, and AU leaves
    // the first step out: 4 x 40 ms over 200 ms = 80 %.
    let clock = FakeClock::new(Nanos::ZERO);
    let meeting = Meeting::new(1, 5);
    let mut batch = || {
        clock.sleep(Nanos(10 * MS));
        Some(Ok(4))
    };
    let mut compute = || Nanos(40 * MS);
    let mut seen = Vec::new();
    let out = run_accelerator(
        &clock,
        clock.now(),
        &mut batch,
        &mut compute,
        &meeting,
        &mut |d| seen.push(d.at),
    );
    assert_eq!(out.error, None);
    assert_eq!(out.elapsed, Nanos(250 * MS));
    assert_eq!(out.samples, 20);
    assert_eq!(
        seen,
        (1..=5).map(|k| Nanos(k * 50 * MS)).collect::<Vec<_>>()
    );
    assert!(out.waits.iter().all(|w| *w == Nanos::ZERO));
    let steps = out.steps;
    assert_eq!(
        (steps[0].load, steps[0].proc, steps[0].compute),
        (0.01, 0.05, 0.04)
    );
    let epoch = AcceleratorEpoch::from_steps(&steps, out.elapsed.0 as f64 / 1e9, 4);
    assert!(
        (epoch.au_percent() - 80.0).abs() < 1e-9,
        "{}",
        epoch.au_percent()
    );
    assert!((epoch.samples_per_sec() - 80.0).abs() < 1e-9);
}

#[test]
fn a_stall_in_one_accelerator_s_reads_shows_in_the_timeline_and_the_step_waits() {
    // Two accelerators, no compute, reads on the null backend (no time). In step 2 the
    // second accelerator's read stalls 3 s once the first has reached the meeting: the
    // first waits those 3 s there, and the second's reads leave seconds 1 and 2 empty.
    let clock = FakeClock::new(Nanos::ZERO);
    let meeting = Meeting::new(2, 3);
    let stop = AtomicBool::new(false);
    let setup = ReaderSetup {
        backend: BackendKind::Null,
        queue_depth: 1,
        transfer: 4096,
        direct: false,
    };
    let outs: Vec<(AcceleratorSteps, WorkerMeasure)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|a| {
                let (clock, meeting, stop) = (&clock, &meeting, &stop);
                s.spawn(move || {
                    let mut reader = SampleReader::new(setup, Nanos::ZERO);
                    let mut step = 0;
                    let mut batch = || {
                        step += 1;
                        if a == 1 && step == 2 {
                            while meeting.arrived.load(Ordering::SeqCst) < 3 {
                                std::thread::yield_now();
                            }
                            clock.sleep(Nanos(3_000 * MS));
                        }
                        let path = std::path::Path::new("sample");
                        let r = reader.read_file(clock, path, &[(0, 4096)], stop, |_| {});
                        Some(r.map(|_| 1).map_err(|e| e.to_string()))
                    };
                    let steps = run_accelerator(
                        clock,
                        Nanos::ZERO,
                        &mut batch,
                        &mut || Nanos::ZERO,
                        meeting,
                        &mut |_| {},
                    );
                    (steps, reader.finish())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        outs[0].0.waits,
        vec![Nanos::ZERO, Nanos(3_000 * MS), Nanos::ZERO]
    );
    assert_eq!(outs[1].0.waits, vec![Nanos::ZERO; 3]);
    assert_eq!(outs[1].0.steps[1].load, 3.0);
    assert_eq!(outs[0].0.elapsed, Nanos(3_000 * MS));
    let timeline = |a: usize| outs[a].1.timeline.series(OpKind::Read).unwrap().ops.clone();
    assert_eq!(timeline(1), vec![1, 0, 0, 2]);
    assert_eq!(timeline(0), vec![2, 0, 0, 1]);
}

#[test]
fn a_file_is_read_through_the_backend_in_its_plan_s_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("img_0_of_1.npz");
    let len = (600u64 << 10) + 7;
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let plan = [
        (0, 256 << 10),
        (256 << 10, 256 << 10),
        (512 << 10, (88 << 10) + 7),
    ];
    let mut kinds = vec![(BackendKind::Psync, 1), (BackendKind::Null, 1)];
    if iolab_backend::uring_available().is_ok() {
        kinds.push((BackendKind::Uring, 4));
    }
    for (backend, queue_depth) in kinds {
        let clock = FakeClock::new(Nanos(1_000));
        let setup = ReaderSetup {
            backend,
            queue_depth,
            transfer: 256 << 10,
            direct: false,
        };
        let mut reader = SampleReader::new(setup, Nanos::ZERO);
        let mut progress = Vec::new();
        let got = reader
            .read_file(&clock, &path, &plan, &AtomicBool::new(false), |b| {
                progress.push(b)
            })
            .unwrap();
        assert_eq!(got, len, "{backend:?}");
        assert_eq!(progress.last(), Some(&len), "{backend:?}");
        let count = reader.count();
        assert_eq!((count.ops, count.bytes), (3, len), "{backend:?}");
        let m = reader.finish();
        assert_eq!(m.ops[&OpKind::Read].histogram.count(), 3, "{backend:?}");
    }
    // A file that is not there: the open's error, naming it.
    let setup = ReaderSetup {
        backend: BackendKind::Psync,
        queue_depth: 1,
        transfer: 4096,
        direct: false,
    };
    let mut reader = SampleReader::new(setup, Nanos::ZERO);
    let missing = dir.path().join("gone.npz");
    let e = reader
        .read_file(
            &FakeClock::new(Nanos(1)),
            &missing,
            &[(0, 4096)],
            &AtomicBool::new(false),
            |_| {},
        )
        .unwrap_err();
    assert!(e.to_string().contains("gone.npz"), "{e}");
}

#[test]
fn each_epoch_s_reader_thread_reads_on_the_backend_the_last_one_left() {
    // Three epochs, each read by a thread of its own: the backend (an io_uring ring, a
    // movable one) the first reader set up serves the later threads, which read the
    // file's bytes exactly, and the pool keeps that one backend at the end.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("img_0_of_1.npz");
    let data: Vec<u8> = (0..(300u32 << 10)).map(|i| (i % 253) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let mut kinds = vec![(BackendKind::Psync, 1)];
    if iolab_backend::uring_available().is_ok() {
        kinds.push((BackendKind::Uring, 4));
    }
    for (backend, queue_depth) in kinds {
        let pool = ReaderPool::default();
        let setup = ReaderSetup {
            backend,
            queue_depth,
            transfer: 128 << 10,
            direct: false,
        };
        for epoch in 0..3 {
            let (pool, path, data) = (&pool, &path, &data);
            std::thread::scope(|s| {
                s.spawn(move || {
                    let mut reader = SampleReader::with_pool(setup, Nanos::ZERO, pool);
                    let clock = FakeClock::new(Nanos(1));
                    let stop = AtomicBool::new(false);
                    let len = data.len() as u64;
                    let got = reader.read_bytes(&clock, path, (0, len), &stop).unwrap();
                    assert!(got == *data, "{backend:?} epoch {epoch}");
                    let m = reader.finish_to(pool);
                    assert_eq!(m.ops[&OpKind::Read].histogram.count(), 1);
                });
            });
            assert_eq!(pool.kept(), 1, "{backend:?} epoch {epoch}");
        }
    }
}

#[test]
fn a_direct_read_of_a_file_s_unaligned_end_asks_for_whole_blocks() {
    // O_DIRECT refuses a read of 7 bytes (EINVAL); the reader asks for the last whole
    // block and counts the 7 bytes the kernel returns.
    let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let path = dir.path().join("img_0_of_1.npz");
    let len = (256u64 << 10) + 7;
    std::fs::write(&path, vec![5u8; len as usize]).unwrap();
    let plan = [(0, 256 << 10), (256 << 10, 7)];
    let mut kinds = vec![(BackendKind::Psync, 1)];
    if iolab_backend::uring_available().is_ok() {
        kinds.push((BackendKind::Uring, 2));
    }
    for (backend, queue_depth) in kinds {
        let setup = ReaderSetup {
            backend,
            queue_depth,
            transfer: 256 << 10,
            direct: true,
        };
        let mut reader = SampleReader::new(setup, Nanos::ZERO);
        let stop = AtomicBool::new(false);
        let got = match reader.read_file(&FakeClock::new(Nanos(1)), &path, &plan, &stop, |_| {}) {
            Err(e) if e.to_string().contains("O_DIRECT") => {
                eprintln!("skipped: {e}");
                return;
            }
            r => r.unwrap(),
        };
        assert_eq!(got, len, "{backend:?}");
        let count = reader.count();
        assert_eq!((count.ops, count.bytes), (2, len), "{backend:?}");
    }
}
