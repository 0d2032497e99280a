//! Crash safety: a writer that stops without `finish_run`, whether it drops its store or
//! is killed with SIGKILL, leaves a readable `incomplete` run with every phase it had
//! committed. The killed writer is this test binary run again as a child process.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use iolab_core::result::RunStatus;
use iolab_store::{RunFilter, RunId, Store};

use crate::fixtures::{data_phase, meta_phase, run_record, temp_store};

/// Set for the child process: the database it writes to.
const CHILD_DB: &str = "IOLAB_STORE_TEST_CRASH_DB";
/// What the child prints once its phases are committed.
const READY: &str = "iolab-store-test: phases committed";

#[test]
fn a_run_never_finished_stays_incomplete_with_its_phases() {
    let (_dir, path, mut store) = temp_store();
    let record = run_record(Some("crashy"), 10);
    let id = store.begin_run(&record).unwrap();
    store.add_phase(id, &data_phase(1, 11)).unwrap();
    store.add_phase(id, &meta_phase(12)).unwrap();
    drop(store);

    let store = Store::open(&path).unwrap();
    let loaded = store.load_run(store.resolve("crashy").unwrap()).unwrap();
    assert_eq!(loaded.status, RunStatus::Incomplete);
    assert_eq!(loaded.finished_at_ms, None);
    assert_eq!(loaded.phases, vec![data_phase(1, 11), meta_phase(12)]);
    let rows = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(
        (rows[0].id, rows[0].status, rows[0].phases),
        (id, RunStatus::Incomplete, 2)
    );
}

/// The child half of the next test: does nothing unless started by it.
#[test]
fn crash_child_writes_phases_then_waits_to_be_killed() {
    let Some(db) = std::env::var_os(CHILD_DB) else {
        return;
    };
    let mut store = Store::open(db).unwrap();
    let id = store.begin_run(&run_record(Some("killed"), 100)).unwrap();
    store.add_phase(id, &data_phase(4, 101)).unwrap();
    store.add_phase(id, &meta_phase(102)).unwrap();
    println!("{READY}");
    // Keep writing until killed, as a study would, so the kill can land mid-phase.
    for i in 0.. {
        store.add_phase(id, &data_phase(8, 103 + i)).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_killed_writer_leaves_a_readable_incomplete_run() {
    let (_dir, path, store) = temp_store();
    drop(store);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "crash::crash_child_writes_phases_then_waits_to_be_killed",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DB, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();

    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains(READY) {
                let _ = tx.send(());
            }
        }
    });
    let ready = rx.recv_timeout(Duration::from_secs(120));
    // Let it write a few more phases so the kill may land inside a transaction.
    std::thread::sleep(Duration::from_millis(100));
    child.kill().unwrap(); // SIGKILL: no destructor, no finish_run
    let status = child.wait().unwrap();
    assert!(
        ready.is_ok(),
        "the child never reported its phases committed ({status})"
    );
    assert!(!status.success());

    let store = Store::open(&path).unwrap();
    let id = store.resolve("killed").unwrap();
    assert_eq!(id, RunId(1));
    let run = store.load_run(id).unwrap();
    assert_eq!(run.status, RunStatus::Incomplete);
    assert!(run.phases.len() >= 2, "{} phases", run.phases.len());
    assert_eq!(run.phases[0], data_phase(4, 101));
    assert_eq!(run.phases[1], meta_phase(102));
    for (i, phase) in run.phases.iter().enumerate().skip(2) {
        assert_eq!(
            *phase,
            data_phase(8, 103 + i as i64 - 2),
            "phase {i} is whole"
        );
    }
}
