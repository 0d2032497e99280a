use super::*;
use std::fs;

fn owner(host: &str, run: &str) -> LockOwner {
    LockOwner {
        run: run.into(),
        host: host.into(),
    }
}

#[test]
fn creates_marks_and_cleans_up_only_its_own() {
    let base = tempfile::tempdir().unwrap();
    let wd = WorkDir::create_or_adopt(base.path(), Some(&owner("h", "r1"))).unwrap();
    assert!(wd.path().join(MARKER).exists());
    let f = wd.join("data.0.0");
    fs::write(&f, b"x").unwrap();
    wd.set_file_info(
        &f,
        &FileInfo {
            size: 1,
            verify: None,
        },
    )
    .unwrap();
    assert_eq!(
        wd.file_info(&f),
        Some(FileInfo {
            size: 1,
            verify: None
        })
    );
    // A stray file of the user's stops the directory from being removed.
    fs::write(wd.join("users-notes.txt"), b"mine").unwrap();
    wd.remove_files(&[f.clone(), base.path().join("outside")])
        .unwrap();
    assert!(!f.exists());
    assert!(!wd.remove_if_empty());
    assert!(
        base.path()
            .join(WORKDIR_NAME)
            .join("users-notes.txt")
            .exists()
    );
}

#[test]
fn an_empty_workdir_is_removed() {
    let base = tempfile::tempdir().unwrap();
    let wd = WorkDir::create_or_adopt(base.path(), Some(&owner("h", "r1"))).unwrap();
    assert!(wd.remove_if_empty());
    assert!(!base.path().join(WORKDIR_NAME).exists());
}

#[test]
fn refuses_a_directory_it_did_not_create() {
    let base = tempfile::tempdir().unwrap();
    fs::create_dir(base.path().join(WORKDIR_NAME)).unwrap();
    let err = WorkDir::open(base.path()).unwrap_err().to_string();
    assert!(err.contains("was not created by iolab"), "{err}");
}

#[test]
fn a_second_run_is_refused_and_the_same_run_joins() {
    let base = tempfile::tempdir().unwrap();
    let first = WorkDir::create_or_adopt(base.path(), Some(&owner("h", "r1"))).unwrap();
    // Another run, from this host or another one sharing the directory.
    for host in ["h", "other"] {
        let err = WorkDir::create_or_adopt(base.path(), Some(&owner(host, "r2")))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("is in use by pid {} on h", std::process::id())),
            "{err}"
        );
    }
    // A rank of the same run on another host shares it, without the lock.
    let joined = WorkDir::create_or_adopt(base.path(), Some(&owner("other", "r1"))).unwrap();
    assert!(!joined.remove_if_empty(), "only the holder removes");
    assert!(first.remove_if_empty());
    assert!(!base.path().join(WORKDIR_NAME).exists());
}

#[test]
fn the_lock_of_a_run_that_is_gone_is_taken_over() {
    let base = tempfile::tempdir().unwrap();
    let wd = WorkDir::create_or_adopt(base.path(), None).unwrap();
    // A run that died left its lock file (the kernel released its flock).
    fs::write(wd.join(LOCK), "pid 999999999 on h run old\n").unwrap();
    let again = WorkDir::create_or_adopt(base.path(), Some(&owner("h", "r1"))).unwrap();
    assert_eq!(
        fs::read_to_string(again.join(LOCK)).unwrap(),
        format!("pid {} on h run r1\n", std::process::id())
    );
}

#[test]
fn a_link_where_the_work_directory_belongs_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    // A link to a directory carrying iolab's marker is still not followed...
    let wd = WorkDir::create_or_adopt(elsewhere.path(), None).unwrap();
    std::os::unix::fs::symlink(wd.path(), base.path().join(WORKDIR_NAME)).unwrap();
    for err in [
        WorkDir::create_or_adopt(base.path(), Some(&owner("h", "r1"))).unwrap_err(),
        WorkDir::open(base.path()).unwrap_err(),
    ] {
        assert!(
            err.to_string().ends_with(
                "iolab-work is a symbolic link; iolab never follows a link where its work directory belongs: remove the link or choose another --dir"
            ),
            "{err}"
        );
    }
    // ...and neither is a dangling one.
    fs::remove_file(base.path().join(WORKDIR_NAME)).unwrap();
    std::os::unix::fs::symlink("/nonexistent", base.path().join(WORKDIR_NAME)).unwrap();
    let err = WorkDir::create_or_adopt(base.path(), None).unwrap_err();
    assert!(err.to_string().contains("is a symbolic link"), "{err}");
    assert_eq!(
        fs::read_dir(elsewhere.path().join(WORKDIR_NAME))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn stale_data_files_are_found_by_name() {
    assert!(is_data_file_name("data.shared"));
    assert!(is_data_file_name("data.r12.t3"));
    assert!(!is_data_file_name("data.r1.t"));
    assert!(!is_data_file_name("data.r1.t2.bak"));
    assert!(!is_data_file_name("users-notes.txt"));
    let base = tempfile::tempdir().unwrap();
    let wd = WorkDir::create_or_adopt(base.path(), Some(&owner("h", "r1"))).unwrap();
    for n in ["data.r0.t0", "data.r0.t3", "data.shared", "mine.txt"] {
        fs::write(wd.join(n), b"x").unwrap();
    }
    fs::write(wd.join(".data.r0.t3.iolab"), b"{}").unwrap();
    assert_eq!(
        wd.remove_stale(&["data.r0.t0".to_string()]),
        vec!["data.r0.t3".to_string(), "data.shared".to_string()]
    );
    assert!(wd.join("data.r0.t0").exists() && wd.join("mine.txt").exists());
    assert!(!wd.join(".data.r0.t3.iolab").exists());
}

#[test]
fn missing_base_is_named() {
    let err = WorkDir::create_or_adopt(Path::new("/nonexistent/x"), None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "--dir /nonexistent/x does not exist; create it first or choose another directory"
    );
}

#[test]
fn a_named_work_directory_is_one_component_marked_and_locked_alike() {
    let base = tempfile::tempdir().unwrap();
    let wd = WorkDir::create_or_adopt_named(base.path(), "test-dir.0-0", Some(&owner("h", "r1")))
        .unwrap();
    assert_eq!(wd.path(), base.path().join("test-dir.0-0"));
    assert!(wd.path().join(MARKER).exists());
    let err = WorkDir::create_or_adopt_named(base.path(), "test-dir.0-0", Some(&owner("h", "r2")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("is in use by pid"), "{err}");
    let joined = WorkDir::open_named(base.path(), "test-dir.0-0").unwrap();
    assert_eq!(joined.path(), wd.path());
    assert!(wd.remove_if_empty());
    for bad in ["", ".", "..", "a/b", "../test-dir.0-0"] {
        let err = WorkDir::create_or_adopt_named(base.path(), bad, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not a work directory name"), "{bad}: {err}");
    }
    assert_eq!(fs::read_dir(base.path()).unwrap().count(), 0);
}
