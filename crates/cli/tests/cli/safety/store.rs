//! The results database: a run that could not be stored says so and ends non-zero; a
//! database on a read-only mount can still be listed and shown.

use crate::common::{Ran, can_mount, iolab, path, run_in_namespace};

#[test]
fn a_run_that_could_not_be_stored_ends_non_zero() {
    let r = Ran::from(
        iolab()
            .env("IOLAB_DB", "/proc/no-such-dir/r.db")
            .args(["run", "--backend", "null", "--size", "1MiB", "-Q"])
            .output()
            .unwrap(),
    )
    .expect(1);
    assert!(
        r.stderr
            .contains("iolab: error: the run was not stored (opening the results database")
            && r.stderr.ends_with("its figures are only in this output\n"),
        "{}",
        r.stderr
    );
    // Asked not to store: nothing lost, exit 0.
    Ran::from(
        iolab()
            .env("IOLAB_DB", "/proc/no-such-dir/r.db")
            .args([
                "run",
                "--backend",
                "null",
                "--size",
                "1MiB",
                "-Q",
                "--no-store",
            ])
            .output()
            .unwrap(),
    )
    .expect(0);
}

#[test]
fn a_database_on_a_read_only_mount_is_listed_and_shown() {
    if !can_mount() {
        eprintln!("SKIPPED: cannot make mount namespaces here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    Ran::from(
        iolab()
            .env("IOLAB_DB", &db)
            .args([
                "run",
                "--backend",
                "null",
                "--size",
                "1MiB",
                "-Q",
                "--label",
                "ro",
            ])
            .output()
            .unwrap(),
    )
    .expect(0);
    let d = path(dir.path());
    let ro = format!("mount --bind '{d}' '{d}' && mount -o remount,ro,bind '{d}'");
    let db_arg = path(&db);
    let r = run_in_namespace(&ro, &["results", "list", "--db", db_arg]).expect(0);
    assert!(r.stdout.contains("r1     ro "), "{}", r.stdout);
    let r = run_in_namespace(&ro, &["results", "show", "ro", "--db", db_arg]).expect(0);
    assert!(r.stdout.contains("read-4KiB"), "{}", r.stdout);
    // Nothing was written beside it (no -wal or -shm files on the read-only mount).
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with("-shm")), "{names:?}");
}
