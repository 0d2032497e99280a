//! [`NfsMeta`]: the metadata workload's calls over NFS through libnfs: create (an
//! exclusive OPEN/CREATE and a WRITE), stat (GETATTR), read, remove, mkdir, rmdir and
//! listings, each on this thread's connection to the export the directory lies on. A
//! [`MetaDir`] here is its path alone (no descriptor).

use std::ffi::CStr;
use std::io;
use std::path::{Path, PathBuf};

use iolab_core::spec::MetaBackendKind;

use super::{
    DirBuffer, EntryKind, EntryStat, MTime, MetaBackend, MetaCapabilities, MetaDir, meta_error,
};
use crate::error::BackendError;
use crate::nfs::{NfsFile, conn_for, route};

#[derive(Clone, Copy, Debug, Default)]
pub struct NfsMeta;

/// The connection to the export `path` lies on and its export-relative name.
fn on_export(path: &Path) -> io::Result<(std::sync::Arc<crate::nfs::Conn>, String)> {
    let (m, rel) = route(path).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "not on a mounted NFS export (--nfs-url)",
        )
    })?;
    Ok((conn_for(&m)?, rel))
}

fn stat_of(st: &crate::nfs::ffi::Stat64) -> EntryStat {
    let kind = match st.mode as u32 & libc::S_IFMT {
        libc::S_IFREG => EntryKind::File,
        libc::S_IFDIR => EntryKind::Dir,
        libc::S_IFLNK => EntryKind::Symlink,
        _ => EntryKind::Other,
    };
    EntryStat {
        kind,
        size: st.size,
        mtime: MTime {
            secs: st.mtime as i64,
            nanos: st.mtime_nsec as u32,
        },
        ctime_secs: st.ctime as i64,
    }
}

impl NfsMeta {
    fn at(
        &self,
        op: &'static str,
        dir: &MetaDir,
        name: &CStr,
    ) -> Result<(PathBuf, std::sync::Arc<crate::nfs::Conn>, String), BackendError> {
        let path = dir.entry(name);
        match on_export(&path) {
            Ok((c, rel)) => Ok((path, c, rel)),
            Err(e) => Err(meta_error(op, path, e)),
        }
    }
}

impl MetaBackend for NfsMeta {
    fn kind(&self) -> MetaBackendKind {
        MetaBackendKind::Nfs
    }

    fn capabilities(&self) -> MetaCapabilities {
        MetaCapabilities {
            touches_storage: true,
        }
    }

    fn open_dir(&self, path: &Path) -> Result<MetaDir, BackendError> {
        let st = on_export(path)
            .and_then(|(c, rel)| c.lstat(&rel))
            .map_err(|e| meta_error("open", path.to_path_buf(), e))?;
        if stat_of(&st).kind != EntryKind::Dir {
            let e = io::Error::from_raw_os_error(libc::ENOTDIR);
            return Err(meta_error("open", path.to_path_buf(), e));
        }
        Ok(MetaDir::new(None, path.to_path_buf()))
    }

    fn open_subdir(&self, dir: &MetaDir, name: &CStr) -> Result<MetaDir, BackendError> {
        self.open_dir(&dir.entry(name))
    }

    fn create(&self, dir: &MetaDir, name: &CStr, content: &[u8]) -> Result<(), BackendError> {
        let path = dir.entry(name);
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL;
        let f = NfsFile::open(&path, flags, 0o644)
            .map_err(|e| meta_error("create", path.clone(), e))?;
        let mut done = 0;
        while done < content.len() {
            match f.conn.pwrite(f.fh, &content[done..], done as u64) {
                Ok(0) => return Err(meta_error("write", path, io::ErrorKind::WriteZero.into())),
                Ok(n) => done += n,
                Err(e) => return Err(meta_error("write", path, e)),
            }
        }
        Ok(())
    }

    fn stat(&self, dir: &MetaDir, name: &CStr) -> Result<EntryStat, BackendError> {
        let (path, c, rel) = self.at("stat", dir, name)?;
        c.lstat(&rel)
            .map(|st| stat_of(&st))
            .map_err(|e| meta_error("stat", path, e))
    }

    fn read(
        &self,
        dir: &MetaDir,
        name: &CStr,
        buf: &mut [u8],
        expect: usize,
    ) -> Result<usize, BackendError> {
        let path = dir.entry(name);
        let f = NfsFile::open(&path, libc::O_RDONLY, 0)
            .map_err(|e| meta_error("open", path.clone(), e))?;
        let mut got = 0;
        while got < expect.min(buf.len()) {
            match f.conn.pread(f.fh, &mut buf[got..], got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return Err(meta_error("read", path, e)),
            }
        }
        Ok(got)
    }

    fn remove(&self, dir: &MetaDir, name: &CStr) -> Result<(), BackendError> {
        let (path, c, rel) = self.at("remove", dir, name)?;
        c.unlink(&rel).map_err(|e| meta_error("remove", path, e))
    }

    fn mkdir(&self, dir: &MetaDir, name: &CStr) -> Result<(), BackendError> {
        let (path, c, rel) = self.at("mkdir", dir, name)?;
        c.mkdir(&rel).map_err(|e| meta_error("mkdir", path, e))
    }

    fn rmdir(&self, dir: &MetaDir, name: &CStr) -> Result<(), BackendError> {
        let (path, c, rel) = self.at("rmdir", dir, name)?;
        c.rmdir(&rel).map_err(|e| meta_error("rmdir", path, e))
    }

    /// Writes go to the server as they are made (libnfs keeps no cache): nothing to sync.
    fn sync(&self) {}

    fn read_dir(
        &self,
        dir: &MetaDir,
        _buf: &mut DirBuffer,
        each: &mut dyn FnMut(&CStr, EntryKind),
    ) -> Result<(), BackendError> {
        let path = dir.path();
        let entries = on_export(path)
            .and_then(|(c, rel)| c.list(&rel))
            .map_err(|e| meta_error("readdir", path.to_path_buf(), e))?;
        for (name, is_dir, is_file) in entries {
            let Ok(cname) = std::ffi::CString::new(name) else {
                continue;
            };
            let kind = if is_dir {
                EntryKind::Dir
            } else if is_file {
                EntryKind::File
            } else {
                EntryKind::Unknown
            };
            each(&cname, kind);
        }
        Ok(())
    }
}
