//! The conformance suite of metadata backends: create with and without content, stat
//! sizes and kinds, read back (intact, longer and shorter files), remove, mkdir/rmdir,
//! list a directory, and fail with one-line errors naming the path (exists, missing, not
//! empty). The null backend succeeds at everything and touches nothing.

use std::ffi::CStr;
use std::path::Path;

use iolab_backend::meta::{DirBuffer, EntryKind, MetaBackend, MetaDir, meta_backend, mtime_of};
use iolab_core::spec::{MetaBackendKind, MetaPaths};

/// Both POSIX backends: whole paths (mdtest's calls) and directory-relative calls.
fn posix_backends() -> Vec<(MetaPaths, Box<dyn MetaBackend>)> {
    [MetaPaths::Whole, MetaPaths::Relative]
        .into_iter()
        .map(|p| (p, meta_backend(MetaBackendKind::Posix, p)))
        .collect()
}

fn list(b: &dyn MetaBackend, dir: &MetaDir) -> Vec<(String, EntryKind)> {
    let mut out = Vec::new();
    let mut buf = DirBuffer::new();
    b.read_dir(dir, &mut buf, &mut |name: &CStr, kind| {
        out.push((name.to_string_lossy().into_owned(), kind))
    })
    .unwrap();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn creates_stats_reads_and_removes_files() {
    for (_, b) in posix_backends() {
        let b = b.as_ref();
        let tmp = tempfile::tempdir().unwrap();
        assert!(b.capabilities().touches_storage);
        let dir = b.open_dir(tmp.path()).unwrap();
        b.create(&dir, c"empty", b"").unwrap();
        b.create(&dir, c"full", b"hello world").unwrap();
        assert_eq!(
            std::fs::read(tmp.path().join("full")).unwrap(),
            b"hello world"
        );
        assert_eq!(
            std::fs::metadata(tmp.path().join("empty")).unwrap().len(),
            0
        );

        let st = b.stat(&dir, c"full").unwrap();
        assert_eq!((st.kind, st.size), (EntryKind::File, 11));
        assert!(st.mtime.secs > 0);
        assert_eq!(b.stat_size(&dir, c"full").unwrap(), 11);
        assert_eq!(b.stat_size(&dir, c"empty").unwrap(), 0);

        // One byte more than expected reveals a longer file; exact files read intact.
        let mut buf = [0u8; 12];
        assert_eq!(b.read(&dir, c"full", &mut buf, 11).unwrap(), 11);
        assert_eq!(&buf[..11], b"hello world");
        let mut short = [0u8; 6];
        assert_eq!(b.read(&dir, c"full", &mut short, 5).unwrap(), 6);
        assert_eq!(b.read(&dir, c"empty", &mut buf, 11).unwrap(), 0);
        assert_eq!(b.read(&dir, c"empty", &mut buf, 0).unwrap(), 0);

        b.remove(&dir, c"full").unwrap();
        b.remove(&dir, c"empty").unwrap();
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
}

#[test]
fn makes_lists_and_removes_directories() {
    for (paths, b) in posix_backends() {
        let b = b.as_ref();
        let tmp = tempfile::tempdir().unwrap();
        let dir = b.open_dir(tmp.path()).unwrap();
        b.mkdir(&dir, c"d0").unwrap();
        let sub = b.open_subdir(&dir, c"d0").unwrap();
        assert_eq!(sub.path(), tmp.path().join("d0"));
        b.create(&sub, c"f0", b"x").unwrap();
        b.create(&dir, c"top", b"").unwrap();
        std::os::unix::fs::symlink("top", tmp.path().join("link")).unwrap();
        assert_eq!(
            list(b, &dir),
            vec![
                ("d0".to_string(), EntryKind::Dir),
                ("link".to_string(), EntryKind::Symlink),
                ("top".to_string(), EntryKind::File),
            ]
        );
        // Listing again starts from the beginning.
        assert_eq!(list(b, &dir).len(), 3);
        // mdtest's stat(2) follows a link; fstatat(AT_SYMLINK_NOFOLLOW) does not.
        let link = match paths {
            MetaPaths::Whole => EntryKind::File,
            MetaPaths::Relative => EntryKind::Symlink,
        };
        assert_eq!(b.stat(&dir, c"link").unwrap().kind, link, "{paths:?}");
        assert_eq!(b.stat(&dir, c"d0").unwrap().kind, EntryKind::Dir);

        let err = b.rmdir(&dir, c"d0").unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "rmdir {} failed: Directory not empty; the directory holds entries iolab did not create",
                tmp.path().join("d0").display()
            )
        );
        b.remove(&sub, c"f0").unwrap();
        b.rmdir(&dir, c"d0").unwrap();
        assert!(!tmp.path().join("d0").exists());
    }
}

#[test]
fn errors_name_the_path_and_what_to_do() {
    for (paths, b) in posix_backends() {
        let b = b.as_ref();
        let tmp = tempfile::tempdir().unwrap();
        let dir = b.open_dir(tmp.path()).unwrap();
        b.create(&dir, c"f", b"").unwrap();
        let exists = b.create(&dir, c"f", b"").unwrap_err();
        assert_eq!(exists.errno(), Some(libc::EEXIST));
        let text = exists.to_string();
        assert!(
            text.starts_with(&format!(
                "create {} failed: File exists; it already exists",
                tmp.path().join("f").display()
            )),
            "{text}"
        );
        assert!(!text.contains('\n'));
        let missing = b.stat(&dir, c"nope").unwrap_err().to_string();
        assert!(
            missing.starts_with(&format!(
                "stat {} failed: No such file or directory; it does not exist",
                tmp.path().join("nope").display()
            )),
            "{missing}"
        );
        // The size alone fails the same way.
        assert_eq!(b.stat_size(&dir, c"nope").unwrap_err().to_string(), missing);
        // Whole paths open no directory: the first operation in it fails instead.
        let absent = b.open_dir(&tmp.path().join("absent"));
        match paths {
            MetaPaths::Relative => {
                let gone = absent.unwrap_err().to_string();
                assert!(gone.starts_with("open directory "), "{gone}");
            }
            MetaPaths::Whole => {
                let e = b.create(&absent.unwrap(), c"f", b"").unwrap_err();
                assert_eq!(e.errno(), Some(libc::ENOENT));
            }
        }
        assert!(b.remove(&dir, c"nope").is_err());
        assert!(b.read(&dir, c"nope", &mut [0u8; 4], 3).is_err());
    }
}

#[test]
fn modification_times_order_like_find_newer() {
    for (_, b) in posix_backends() {
        let b = b.as_ref();
        let tmp = tempfile::tempdir().unwrap();
        let old = tmp.path().join("old");
        std::fs::write(&old, b"").unwrap();
        let t_old = mtime_of(&old).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let dir = b.open_dir(tmp.path()).unwrap();
        b.create(&dir, c"new", b"").unwrap();
        assert!(b.stat(&dir, c"new").unwrap().mtime > t_old);
        assert!(mtime_of(Path::new("/nonexistent/ref")).is_err());
    }
}

#[test]
fn the_null_backend_touches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let b = meta_backend(MetaBackendKind::Null, MetaPaths::Whole);
    assert!(!b.capabilities().touches_storage);
    let dir = b.open_dir(tmp.path()).unwrap();
    b.mkdir(&dir, c"d").unwrap();
    let sub = b.open_subdir(&dir, c"d").unwrap();
    b.create(&sub, c"f", b"data").unwrap();
    b.stat(&sub, c"f").unwrap();
    assert_eq!(b.read(&sub, c"f", &mut [0u8; 5], 4).unwrap(), 4);
    b.remove(&sub, c"f").unwrap();
    b.rmdir(&dir, c"d").unwrap();
    assert!(list(b.as_ref(), &dir).is_empty());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}
