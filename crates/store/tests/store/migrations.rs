//! Opening databases: an empty one migrates to the latest schema (snapshot below), a newer
//! one is refused naming both versions, files that are not iolab databases are refused,
//! and concurrent first opens migrate once.

use iolab_store::{APPLICATION_ID, SCHEMA_VERSION, Store, StoreError};
use rusqlite::Connection;

use crate::fixtures::{meta_phase, run_record, temp_store};

fn pragma(path: &std::path::Path, name: &str) -> i64 {
    Connection::open(path)
        .unwrap()
        .pragma_query_value(None, name, |r| r.get(0))
        .unwrap()
}

#[test]
fn an_empty_database_is_migrated_to_the_latest_schema() {
    let (_dir, path, store) = temp_store();
    assert!(path.exists(), "parent directories and file are created");
    assert_eq!(store.path(), path);
    assert!(store.is_wal());
    drop(store);
    assert_eq!(pragma(&path, "user_version"), i64::from(SCHEMA_VERSION));
    assert_eq!(pragma(&path, "application_id"), i64::from(APPLICATION_ID));

    let conn = Connection::open(&path).unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let mut stmt = conn
        .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name")
        .unwrap();
    let schema: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // A change here changes what users' queries see: it needs a new migration and an
    // update of docs/store-schema.md.
    insta::assert_snapshot!("schema", schema.join(";\n\n"));
}

#[test]
fn an_existing_empty_file_is_a_new_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    std::fs::write(&path, b"").unwrap();
    Store::open(&path).unwrap();
    assert_eq!(pragma(&path, "user_version"), i64::from(SCHEMA_VERSION));
}

#[test]
fn reopening_keeps_the_runs() {
    let (_dir, path, mut store) = temp_store();
    let id = store.begin_run(&run_record(Some("keep"), 1)).unwrap();
    store.add_phase(id, &meta_phase(2)).unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.load_run(id).unwrap().phases.len(), 1);
}

#[test]
fn a_database_from_a_newer_iolab_is_refused_naming_the_versions() {
    let (_dir, path, store) = temp_store();
    drop(store);
    let newer = SCHEMA_VERSION + 3;
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", newer)
        .unwrap();

    let err = Store::open(&path).unwrap_err();
    match &err {
        StoreError::SchemaTooNew {
            found, supported, ..
        } => {
            assert_eq!(*found, i64::from(newer));
            assert_eq!(*supported, SCHEMA_VERSION);
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!(
            "the results database {} has schema version {newer}, but this iolab ({}) knows \
             versions up to {SCHEMA_VERSION}; use a newer iolab, or another --db",
            path.display(),
            env!("CARGO_PKG_VERSION"),
        )
    );
    // Refusing did not touch it.
    assert_eq!(pragma(&path, "user_version"), i64::from(newer));
}

#[test]
fn another_programs_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE runs (x);")
        .unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NotIolab { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "{} is a SQLite database but not an iolab results database; pass another --db",
            path.display()
        )
    );

    let mode: String = Connection::open(&path)
        .unwrap()
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "a refused file is left as it was");

    let path = dir.path().join("versioned.db");
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "application_id", 7)
        .unwrap();
    assert!(matches!(
        Store::open(&path),
        Err(StoreError::NotIolab { .. })
    ));
}

#[test]
fn a_file_that_is_not_a_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(
        &path,
        "these are my notes, not a database, and they are long enough\n".repeat(20),
    )
    .unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "cannot open the results database {}: ",
            path.display()
        )),
        "{msg}"
    );
    assert!(msg.contains("not a database"), "{msg}");
}

#[test]
fn a_parent_that_cannot_be_created_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let err = Store::open(blocker.join("sub").join("results.db")).unwrap_err();
    assert!(matches!(err, StoreError::CreateDir { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with(&format!(
            "cannot create the directory {} for the results database: ",
            blocker.join("sub").display()
        )),
        "{err}"
    );
}

#[test]
fn processes_opening_a_new_database_at_once_migrate_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || Store::open(&path).map(|_| ()).map_err(|e| format!("{e:?}")))
        })
        .collect();
    for h in handles {
        h.join().unwrap().unwrap();
    }
    assert_eq!(pragma(&path, "user_version"), i64::from(SCHEMA_VERSION));
}
