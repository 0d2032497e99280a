//! [`DirStream`]: a directory read as glibc's `opendir`/`readdir` read it, one entry at a
//! time, so that a walker can stop after some entries and resume later (pfind reads at
//! most 1000 entries of a directory before it looks at its messages). The calls are
//! glibc's: `openat(AT_FDCWD, path, O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY)`, an
//! `fstat` of the descriptor, `getdents64` into a 32 KiB buffer (glibc's size for a
//! directory whose block size is smaller), `close`. [`lstat_path`] is pfind's look at an
//! entry by its whole path.

use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

use rustix::fs::{AtFlags, Mode, OFlags, RawDir};
use rustix::io::Errno;

use super::{EntryKind, EntryStat, meta_error};
use crate::error::BackendError;

/// glibc's readdir buffer: max(st_blksize, 32 KiB), capped at 1 MiB.
const MIN_BUFFER: usize = 32 * 1024;
const MAX_BUFFER: usize = 1 << 20;

/// An open directory being read entry by entry.
pub struct DirStream {
    fd: OwnedFd,
    path: PathBuf,
    /// The getdents64 buffer.
    raw: Vec<u8>,
    /// The names of the entries of the last getdents64 call, each ending in NUL, and where
    /// each starts with its kind.
    names: Vec<u8>,
    entries: Vec<(usize, EntryKind)>,
    next: usize,
    ended: bool,
}

impl DirStream {
    /// Opens `path` as glibc's opendir does.
    pub fn open(path: &CStr) -> Result<DirStream, BackendError> {
        let display = || PathBuf::from(path.to_string_lossy().into_owned());
        let fail = |e: Errno| meta_error("open directory", display(), e.into());
        let fd = rustix::fs::openat(
            rustix::fs::CWD,
            path,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .map_err(fail)?;
        let st = rustix::fs::fstat(&fd).map_err(fail)?;
        let size = (st.st_blksize as usize).clamp(MIN_BUFFER, MAX_BUFFER);
        Ok(DirStream {
            fd,
            path: display(),
            raw: Vec::with_capacity(size),
            names: Vec::new(),
            entries: Vec::new(),
            next: 0,
            ended: false,
        })
    }

    /// The next entry but "." and "..", reading the directory when the entries of the
    /// last read are used up; None at its end.
    pub fn next_entry(&mut self) -> Option<Result<(&CStr, EntryKind), BackendError>> {
        if self.next == self.entries.len() {
            if self.ended {
                return None;
            }
            if let Err(e) = self.read_more() {
                self.ended = true;
                return Some(Err(e));
            }
            if self.entries.is_empty() {
                return None;
            }
        }
        let (start, kind) = self.entries[self.next];
        self.next += 1;
        let name = CStr::from_bytes_until_nul(&self.names[start..]).expect("each name ends in NUL");
        Some(Ok((name, kind)))
    }

    /// One getdents64 call: keeps the names it returned.
    fn read_more(&mut self) -> Result<(), BackendError> {
        self.names.clear();
        self.entries.clear();
        self.next = 0;
        let path = &self.path;
        let fail = |e: Errno| meta_error("list", path.clone(), e.into());
        let mut raw = RawDir::new(self.fd.as_fd(), self.raw.spare_capacity_mut());
        loop {
            match raw.next() {
                None => {
                    self.ended = true;
                    break;
                }
                Some(Err(e)) => return Err(fail(e)),
                Some(Ok(entry)) => {
                    let name = entry.file_name();
                    if name != c"." && name != c".." {
                        self.entries
                            .push((self.names.len(), EntryKind::of(entry.file_type())));
                        self.names.extend_from_slice(name.to_bytes_with_nul());
                    }
                }
            }
            // Stop where the next entry would need another getdents64 call.
            if raw.is_buffer_empty() {
                break;
            }
        }
        Ok(())
    }

    /// stat of entry `name`, following a symbolic link (`fstatat(fd, name, 0)`): what
    /// pfind does for an entry whose type the directory does not give.
    pub fn stat(&self, name: &CStr) -> Result<EntryStat, BackendError> {
        rustix::fs::statat(&self.fd, name, AtFlags::empty())
            .map(|st| EntryStat::of(&st))
            .map_err(|e| {
                meta_error(
                    "stat",
                    self.path.join(name.to_string_lossy().as_ref()),
                    e.into(),
                )
            })
    }
}

/// lstat(2) by whole path: `newfstatat(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW)`.
pub fn lstat_path(path: &CStr) -> Result<EntryStat, BackendError> {
    rustix::fs::lstat(path)
        .map(|st| EntryStat::of(&st))
        .map_err(|e| {
            meta_error(
                "stat",
                PathBuf::from(path.to_string_lossy().into_owned()),
                e.into(),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    #[test]
    fn reads_every_entry_once_across_many_reads_and_resumes() {
        let dir = tempfile::tempdir().unwrap();
        // Long names: 32 KiB of getdents64 holds a few hundred of them.
        let names: Vec<String> = (0..3000).map(|i| format!("{:0>60}", i)).collect();
        for n in &names {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let path = CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
        let mut stream = DirStream::open(&path).unwrap();
        let mut seen = Vec::new();
        let mut reads = 0;
        // Stop and resume every 7 entries, as a walker taking turns would.
        'outer: loop {
            for _ in 0..7 {
                match stream.next_entry() {
                    None => break 'outer,
                    Some(e) => {
                        let (name, kind) = e.unwrap();
                        seen.push((name.to_string_lossy().into_owned(), kind));
                        if stream.next == 1 {
                            reads += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(seen.len(), 3001);
        assert!(seen.contains(&("sub".to_string(), EntryKind::Dir)));
        let mut files: Vec<&String> = seen
            .iter()
            .filter(|(_, k)| *k == EntryKind::File)
            .map(|(n, _)| n)
            .collect();
        files.sort();
        assert_eq!(files, names.iter().collect::<Vec<_>>());
        assert!(reads > 3, "{reads} getdents64 calls for 3000 long names");
        assert!(stream.next_entry().is_none());
        let st = stream.stat(c"sub").unwrap();
        assert_eq!(st.kind, EntryKind::Dir);
    }

    #[test]
    fn lstat_path_names_what_is_missing() {
        let e = lstat_path(c"/nonexistent-iolab/x").unwrap_err();
        assert!(e.to_string().contains("/nonexistent-iolab/x"), "{e}");
        assert_eq!(lstat_path(c"/").unwrap().kind, EntryKind::Dir);
    }
}
