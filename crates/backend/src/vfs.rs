//! The file-system calls iolab makes on its work directory and target (create, write and
//! read small files, list, stat, remove), shaped as std::fs's, and routed: a path under a
//! mounted NFS export ([`crate::nfs::mount`]) goes through libnfs, any other to the
//! kernel. The engine's work directory, layout and cleanup use these, so a workload on an
//! NFS export creates and removes its files over NFS like any other.

use std::io;
use std::path::{Path, PathBuf};

use crate::nfs;

/// What [`metadata`] tells of a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub len: u64,
    pub is_dir: bool,
    pub is_file: bool,
    pub is_symlink: bool,
}

/// One entry of a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub path: PathBuf,
    pub is_file: bool,
    pub is_dir: bool,
}

/// This thread's connection to the export `path` is on, and its export-relative name.
fn nfs_call(path: &Path) -> io::Result<(std::sync::Arc<nfs::Conn>, String)> {
    let (m, rel) = nfs::route(path).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
    Ok((nfs::conn_for(&m)?, rel))
}

fn meta_of(st: &nfs::ffi::Stat64) -> Meta {
    let kind = st.mode as u32 & libc::S_IFMT;
    Meta {
        len: st.size,
        is_dir: kind == libc::S_IFDIR,
        is_file: kind == libc::S_IFREG,
        is_symlink: kind == libc::S_IFLNK,
    }
}

fn meta_local(m: std::fs::Metadata) -> Meta {
    Meta {
        len: m.len(),
        is_dir: m.is_dir(),
        is_file: m.is_file(),
        is_symlink: m.file_type().is_symlink(),
    }
}

/// stat(2): follows a last link (NFS: the link itself; iolab never makes one).
pub fn metadata(path: &Path) -> io::Result<Meta> {
    if nfs::is_nfs_path(path) {
        return symlink_metadata(path);
    }
    std::fs::metadata(path).map(meta_local)
}

/// lstat(2).
pub fn symlink_metadata(path: &Path) -> io::Result<Meta> {
    if nfs::is_nfs_path(path) {
        let (c, rel) = nfs_call(path)?;
        return c.lstat(&rel).map(|st| meta_of(&st));
    }
    std::fs::symlink_metadata(path).map(meta_local)
}

pub fn exists(path: &Path) -> bool {
    metadata(path).is_ok()
}

pub fn create_dir(path: &Path) -> io::Result<()> {
    if nfs::is_nfs_path(path) {
        let (c, rel) = nfs_call(path)?;
        return c.mkdir(&rel);
    }
    std::fs::create_dir(path)
}

/// mkdir -p.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    if !nfs::is_nfs_path(path) {
        return std::fs::create_dir_all(path);
    }
    match metadata(path) {
        Ok(m) if m.is_dir => return Ok(()),
        Ok(_) => return Err(io::ErrorKind::AlreadyExists.into()),
        Err(_) => {}
    }
    if let Some(parent) = path.parent().filter(|p| nfs::is_nfs_path(p)) {
        create_dir_all(parent)?;
    }
    match create_dir(path) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// Creates (or truncates) `path` and writes `bytes` in it.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if nfs::is_nfs_path(path) {
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC;
        let f = nfs::NfsFile::open(path, flags, 0o644)?;
        return write_nfs(&f, bytes);
    }
    std::fs::write(path, bytes)
}

/// Creates `path`, which must not exist (O_EXCL), and writes `bytes` in it: a lock
/// where no flock reaches (an NFS export through libnfs).
pub fn create_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if nfs::is_nfs_path(path) {
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL;
        let f = nfs::NfsFile::open(path, flags, 0o644)?;
        return write_nfs(&f, bytes);
    }
    use std::io::Write;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?
        .write_all(bytes)
}

fn write_nfs(f: &nfs::NfsFile, mut bytes: &[u8]) -> io::Result<()> {
    let mut offset = 0;
    while !bytes.is_empty() {
        let n = f.conn.pwrite(f.fh, bytes, offset)?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        bytes = &bytes[n..];
        offset += n as u64;
    }
    Ok(())
}

/// Reads a small file whole (at most 1 MiB: sidecars, locks, markers).
pub fn read_to_string(path: &Path) -> io::Result<String> {
    if !nfs::is_nfs_path(path) {
        return std::fs::read_to_string(path);
    }
    let f = nfs::NfsFile::open(path, libc::O_RDONLY, 0)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0;
    while len < buf.len() {
        match f.conn.pread(f.fh, &mut buf[len..], len as u64)? {
            0 => break,
            n => len += n,
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

pub fn remove_file(path: &Path) -> io::Result<()> {
    if nfs::is_nfs_path(path) {
        let (c, rel) = nfs_call(path)?;
        return c.unlink(&rel);
    }
    std::fs::remove_file(path)
}

pub fn remove_dir(path: &Path) -> io::Result<()> {
    if nfs::is_nfs_path(path) {
        let (c, rel) = nfs_call(path)?;
        return c.rmdir(&rel);
    }
    std::fs::remove_dir(path)
}

/// The entries of a directory, but `.` and `..`.
pub fn read_dir(path: &Path) -> io::Result<Vec<Entry>> {
    if nfs::is_nfs_path(path) {
        let (c, rel) = nfs_call(path)?;
        return Ok(c
            .list(&rel)?
            .into_iter()
            .map(|(name, is_dir, is_file)| Entry {
                path: path.join(&name),
                name,
                is_file,
                is_dir,
            })
            .collect());
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir(path)?.flatten() {
        let t = e.file_type().ok();
        out.push(Entry {
            name: e.file_name().to_string_lossy().into_owned(),
            path: e.path(),
            is_file: t.is_some_and(|t| t.is_file()),
            is_dir: t.is_some_and(|t| t.is_dir()),
        });
    }
    Ok(out)
}

/// rm -r of a directory tree (never following links: on NFS a link is removed as a file).
pub fn remove_dir_all(path: &Path) -> io::Result<()> {
    if !nfs::is_nfs_path(path) {
        return std::fs::remove_dir_all(path);
    }
    for e in read_dir(path)? {
        if e.is_dir {
            remove_dir_all(&e.path)?;
        } else {
            remove_file(&e.path)?;
        }
    }
    remove_dir(path)
}
