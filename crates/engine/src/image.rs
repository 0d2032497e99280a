//! Image files a job names that do not exist yet, made as fio makes them:
//! [`create_image`] creates the file (never over an existing path), preallocates it and,
//! for jobs that read, lays it out in full with pseudo-random data; then marks it as
//! iolab's own image, so later jobs may write it without `--allow-destroy`. The
//! lowest rank on each host with the same path makes it; every rank agrees on the
//! outcome.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use iolab_backend::device::mark_as_image;
use iolab_comm::{Comm, CommExt};

use crate::error::EngineError;
use crate::target::agree;

/// Bytes per write while laying an image out.
const CHUNK: usize = 1 << 20;

/// What to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewImage {
    /// Its size in bytes.
    pub size: u64,
    /// Write it in full (a job reads it); otherwise it is only preallocated.
    pub lay_out: bool,
    /// Preallocate with fallocate (fio's default fallocate=native).
    pub preallocate: bool,
}

/// Whether `path` names nothing at all (not even a dangling link).
pub fn is_missing(path: &Path) -> bool {
    matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// Makes `path` on every host where it is missing. Returns whether this rank made it.
/// Collective.
pub fn create_image(
    comm: &dyn Comm,
    path: &Path,
    image: NewImage,
    stop: &AtomicBool,
) -> Result<bool, EngineError> {
    let hosts: Vec<String> = comm
        .all_gather(&comm.host().to_string())
        .unwrap_or_default();
    let me = comm.rank() as usize;
    let leader = hosts.iter().position(|h| h == comm.host()) == Some(me);
    let made = if leader && is_missing(path) {
        make(path, image, stop).map(|()| true)
    } else {
        Ok(false)
    };
    let made = agree(comm, made)?;
    comm.barrier();
    Ok(made)
}

/// Creates `path` exclusively and fills it; removes it again if that fails.
fn make(path: &Path, image: NewImage, stop: &AtomicBool) -> Result<(), EngineError> {
    let io = |op: &'static str| move |e| EngineError::workdir(op, path, e);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(path)
        .map_err(io("cannot create"))?;
    let filled = (|| -> Result<(), EngineError> {
        if image.preallocate && image.size > 0 {
            // A file system that cannot preallocate is written without, as fio's native.
            let _ =
                rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, image.size);
        }
        file.set_len(image.size).map_err(io("cannot size"))?;
        if image.lay_out {
            let base =
                iolab_core::data_gen::DataBase::new(iolab_core::rng::mix(&[image.size, 0xF10]));
            let mut buf = vec![0u8; CHUNK];
            let mut left = image.size;
            let mut at = 0u64;
            while left > 0 {
                if stop.load(Ordering::Relaxed) {
                    return Err(EngineError::Interrupted);
                }
                let n = left.min(CHUNK as u64) as usize;
                iolab_core::data_gen::fill_unique(&mut buf[..n], &base, at / 512);
                file.write_all(&buf[..n]).map_err(io("laying out"))?;
                left -= n as u64;
                at += n as u64;
            }
            file.sync_data().map_err(io("laying out"))?;
        }
        Ok(())
    })();
    drop(file);
    match filled {
        Ok(()) => {
            mark_as_image(path);
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_file(path);
            Err(e)
        }
    }
}

/// Removes an image iolab made in this run, if no one has written it since iolab last
/// did (its mark still holds). Returns whether it was removed.
pub fn remove_image(path: &Path) -> bool {
    iolab_backend::device::is_marked_image(path) && std::fs::remove_file(path).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_comm::SingleProcess;

    #[test]
    fn a_missing_image_is_made_laid_out_and_marked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("img");
        let stop = AtomicBool::new(false);
        let comm = SingleProcess::new();
        let image = NewImage {
            size: 3 << 20,
            lay_out: true,
            preallocate: true,
        };
        assert!(create_image(&comm, &path, image, &stop).unwrap());
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 3 << 20);
        // Laid out: no block of 4 KiB is all zeros.
        assert!(data.chunks(4096).all(|c| c.iter().any(|b| *b != 0)));
        // Already there: left as it is.
        assert!(!create_image(&comm, &path, image, &stop).unwrap());
        let check = iolab_backend::device::inspect_device(&path).unwrap();
        // Its own data does not count as a user's (where the file system keeps user
        // extended attributes).
        if iolab_backend::device::is_marked_image(&path) {
            assert_eq!(check.data_at, None);
            assert!(remove_image(&path));
        }
    }

    #[test]
    fn a_write_jobs_image_is_only_preallocated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w");
        let stop = AtomicBool::new(false);
        let image = NewImage {
            size: 1 << 20,
            lay_out: false,
            preallocate: true,
        };
        assert!(create_image(&SingleProcess::new(), &path, image, &stop).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), vec![0u8; 1 << 20]);
    }

    #[test]
    fn a_missing_parent_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/img");
        let image = NewImage {
            size: 4096,
            lay_out: true,
            preallocate: false,
        };
        let err = create_image(&SingleProcess::new(), &path, image, &AtomicBool::new(false))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("cannot create {}", path.display())),
            "{err}"
        );
        assert!(!path.exists());
    }
}
