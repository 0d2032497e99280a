//! The page cache as fio leaves it for a job (`invalidate`, default 1): fio drops a file's
//! pages when it has laid the file out and again when the job opens it, direct or
//! buffered, reading or writing (filesetup.c after extend_file; td_io_open_file), with
//! `posix_fadvise(DONTNEED)` alone. `iolab fio` issues the same calls on the same files
//! (strace, against real fio 3.33 on PATH), so a job starts from the same cache state.

use crate::fio_more::both;

const CALLS: [&str; 3] = [
    "POSIX_FADV_DONTNEED",
    "POSIX_FADV_RANDOM",
    "POSIX_FADV_SEQUENTIAL",
];

#[test]
fn fio_jobs_drop_the_page_cache_where_fio_does() {
    let jobs: [&[&str]; 6] = [
        &["--rw=randread"],
        &["--rw=read", "--direct=1"],
        // No drop at open; the one after the layout stays.
        &["--rw=randread", "--invalidate=0"],
        &["--rw=randrw", "--numjobs=2"],
        &["--rw=read", "--nrfiles=3"],
        // pre_read clears invalidate: the file is read in, not dropped at open.
        &["--rw=read", "--pre_read=1"],
    ];
    for opts in jobs {
        let mut job = vec!["--name=c", "--bs=4k", "--size=256k"];
        job.extend_from_slice(opts);
        let Some([fio, ours]) = both(&job, &CALLS) else {
            return;
        };
        assert!(!fio.ios.is_empty(), "{opts:?}: fio advised nothing");
        assert_eq!(ours.ios, fio.ios, "{opts:?}: iolab, then fio");
    }
}

/// A writing job's new file is only created before the job (fio truncates it to size,
/// iolab makes it sparse): fio's drop after that layout finds no page and iolab makes no
/// such call; the drop at open, direct or not, is the same.
#[test]
fn fio_write_jobs_drop_the_page_cache_at_open_as_fio() {
    for opts in [&["--rw=randwrite"][..], &["--rw=write", "--direct=1"]] {
        let mut job = vec!["--name=w", "--bs=4k", "--size=256k"];
        job.extend_from_slice(opts);
        let Some([fio, ours]) = both(&job, &CALLS) else {
            return;
        };
        let mut want = fio.ios.clone();
        let first = want.iter().position(|(c, ..)| c == "POSIX_FADV_DONTNEED");
        want.remove(first.unwrap_or_else(|| panic!("{opts:?}: fio dropped nothing")));
        assert_eq!(
            ours.ios, want,
            "{opts:?}: iolab, then fio less its layout's drop"
        );
    }
}
