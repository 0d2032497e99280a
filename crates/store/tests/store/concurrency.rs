//! Two studies at once: separate `Store` handles on one database write runs phase by phase
//! from several threads while another reads; WAL and the busy timeout mean nobody sees
//! "database is locked".

use iolab_core::result::RunStatus;
use iolab_store::{RunFilter, Store};

use crate::fixtures::{data_phase, meta_phase, run_record, temp_store};

const WRITERS: usize = 3;
const RUNS: usize = 3;
const PHASES: usize = 8;

#[test]
fn concurrent_writers_and_a_reader_all_succeed() {
    let (_dir, path, store) = temp_store();
    drop(store);
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let path = &path;
            s.spawn(move || {
                let mut store = Store::open(path).unwrap();
                for r in 0..RUNS {
                    let label = format!("writer-{w}");
                    let id = store
                        .begin_run(&run_record(Some(&label), (w * 100 + r) as i64))
                        .unwrap();
                    for p in 0..PHASES {
                        let phase = if p % 2 == 0 {
                            data_phase(p as u32 + 1, p as i64)
                        } else {
                            meta_phase(p as i64)
                        };
                        store.add_phase(id, &phase).unwrap();
                    }
                    store.finish_run(id, RunStatus::Complete, 1, &[]).unwrap();
                }
            });
        }
        let path = &path;
        s.spawn(move || {
            let store = Store::open(path).unwrap();
            for _ in 0..50 {
                for row in store.list_runs(&RunFilter::default()).unwrap() {
                    // Every snapshot holds whole phases only.
                    let run = store.load_run(row.id).unwrap();
                    assert!(run.phases.len() <= PHASES);
                }
            }
        });
    });

    let store = Store::open(&path).unwrap();
    let rows = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(rows.len(), WRITERS * RUNS);
    for row in rows {
        assert_eq!(row.status, RunStatus::Complete);
        assert_eq!(row.phases as usize, PHASES);
        let run = store.load_run(row.id).unwrap();
        let seqs: Vec<_> = run.phases.iter().map(|p| p.started_at_ms).collect();
        assert_eq!(
            seqs,
            (0..PHASES as i64).collect::<Vec<_>>(),
            "phases in order"
        );
    }
}

#[test]
fn a_writer_waits_for_another_writers_transaction() {
    let (_dir, path, mut store) = temp_store();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (locked, release) = (
        std::time::Instant::now(),
        std::time::Duration::from_millis(300),
    );
    std::thread::scope(|s| {
        s.spawn(move || {
            std::thread::sleep(release);
            other.execute_batch("COMMIT").unwrap();
        });
        // Blocks until the other transaction commits, well within the busy timeout.
        let id = store.begin_run(&run_record(Some("patient"), 1)).unwrap();
        assert!(locked.elapsed() >= release);
        store.add_phase(id, &meta_phase(2)).unwrap();
    });
    assert_eq!(
        store
            .load_run(store.resolve("patient").unwrap())
            .unwrap()
            .phases
            .len(),
        1
    );
}

#[test]
fn a_store_can_move_to_another_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<Store>();
}
