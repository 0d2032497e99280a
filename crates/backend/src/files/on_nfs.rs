//! [`DataFile`] on an NFS export: opened, sized, read and written through libnfs
//! ([`crate::nfs::NfsFile`]). There is no client cache to go past (libnfs keeps none),
//! so --direct changes nothing; --sync asks for stable writes (O_SYNC).

use std::io;
use std::path::Path;

use super::{DataFile, OpenSpec, Storage};
use crate::error::BackendError;
use crate::nfs::NfsFile;

impl DataFile {
    pub(super) fn open_nfs(path: &Path, spec: OpenSpec) -> Result<Self, BackendError> {
        let mut flags = if spec.write {
            libc::O_RDWR
        } else {
            libc::O_RDONLY
        };
        if spec.create {
            flags |= libc::O_CREAT;
        }
        if spec.truncate {
            flags |= libc::O_TRUNC;
        }
        if spec.sync {
            flags |= libc::O_SYNC;
        }
        let file = NfsFile::open_data(path, flags, 0o644).map_err(|source| BackendError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(DataFile {
            storage: Storage::Nfs(file),
            path: path.to_path_buf(),
            direct: spec.direct,
            block_device: false,
        })
    }

    /// The file on an NFS export this is, if it is one.
    pub fn nfs(&self) -> Option<&NfsFile> {
        match &self.storage {
            Storage::Nfs(f) => Some(f),
            _ => None,
        }
    }

    pub(super) fn nfs_len(&self, f: &NfsFile) -> Result<u64, BackendError> {
        f.conn
            .fstat(f.fh)
            .map(|st| st.size)
            .map_err(|e| self.file_err("stat", e))
    }

    /// Reads all of `buf` at `offset` (a READ may return less than asked).
    pub(super) fn nfs_read_exact(
        &self,
        f: &NfsFile,
        buf: &mut [u8],
        offset: u64,
    ) -> Result<(), BackendError> {
        let mut done = 0;
        while done < buf.len() {
            let at = offset + done as u64;
            let n = match f.conn.pread(f.fh, &mut buf[done..], at) {
                Ok(0) => Err(io::ErrorKind::UnexpectedEof.into()),
                other => other,
            }
            .map_err(|source| self.nfs_io("read", offset, buf.len(), source))?;
            done += n;
        }
        Ok(())
    }

    /// Writes all of `buf` at `offset` (a WRITE may take less than given).
    pub(super) fn nfs_write_all(
        &self,
        f: &NfsFile,
        buf: &[u8],
        offset: u64,
    ) -> Result<(), BackendError> {
        let mut done = 0;
        while done < buf.len() {
            let at = offset + done as u64;
            let n = match f.conn.pwrite(f.fh, &buf[done..], at) {
                Ok(0) => Err(io::ErrorKind::WriteZero.into()),
                other => other,
            }
            .map_err(|source| self.nfs_io("write", offset, buf.len(), source))?;
            done += n;
        }
        Ok(())
    }

    fn nfs_io(&self, op: &'static str, offset: u64, len: usize, source: io::Error) -> BackendError {
        BackendError::Io {
            op,
            path: self.path.clone(),
            offset,
            len: len as u64,
            source,
        }
    }
}
