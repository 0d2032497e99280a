//! NFS in user space through libnfs (loaded at run time, [`ffi`]): an export is mounted
//! at a path prefix ([`mount`]: `nfs://HOST/EXPORT?...` becomes the prefix
//! `nfs://HOST/EXPORT`), and every path under a prefix is reached through libnfs: data
//! files ([`crate::DataFile`]), the work directory's calls ([`crate::vfs`]), the NFS
//! backend's I/O (`nfs_backend`) and metadata calls (`meta`'s `NfsMeta`). This module is
//! the connection below them all: it uses none of them. Each thread has its own
//! connection per export ([`conn_for`]), as each fio job has its own libnfs context.

use std::cell::RefCell;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, RwLock};

mod conn;
pub mod ffi;

pub use conn::{Conn, Fh};

use crate::error::BackendError;

/// An export mounted at a path prefix.
#[derive(Debug)]
pub struct Mount {
    id: usize,
    /// The URL as given (with its options), what libnfs mounts.
    pub url: String,
    /// `nfs://HOST/EXPORT`: paths under it are on the export.
    pub prefix: PathBuf,
    /// Over NFSv4, where libnfs 4.0 cannot write.
    pub v4: bool,
}

static MOUNTS: RwLock<Vec<Arc<Mount>>> = RwLock::new(Vec::new());

thread_local! {
    static CONNS: RefCell<Vec<(usize, Arc<Conn>)>> = const { RefCell::new(Vec::new()) };
}

/// Mounts the export of `url` (`nfs://HOST/EXPORT[?version=3|4&nfsport=N&mountport=N]`)
/// and returns the path prefix its files are named by. Connects at once, so an
/// unreachable server or a missing export fails here, naming the URL. Mounting the same
/// URL again returns the same prefix.
pub fn mount(url: &str) -> Result<PathBuf, BackendError> {
    let prefix = prefix_of(url)?;
    if let Some(m) = read_mounts().iter().find(|m| m.url == url) {
        return Ok(m.prefix.clone());
    }
    let lib = ffi::lib().map_err(BackendError::NfsUnavailable)?;
    let conn = Conn::connect(lib, url).map_err(|reason| BackendError::NfsMount {
        url: url.to_string(),
        reason: with_hint(reason),
    })?;
    let mut mounts = MOUNTS.write().unwrap_or_else(|e| e.into_inner());
    if mounts.iter().any(|m| m.prefix == prefix && m.url != url) {
        return Err(BackendError::NfsUrl {
            url: url.to_string(),
            reason: "the same export is mounted with other options in this run".into(),
        });
    }
    let m = Arc::new(Mount {
        id: mounts.len(),
        url: url.to_string(),
        prefix: prefix.clone(),
        v4: is_v4(url),
    });
    mounts.push(m.clone());
    CONNS.with(|c| c.borrow_mut().push((m.id, Arc::new(conn))));
    Ok(prefix)
}

fn read_mounts() -> std::sync::RwLockReadGuard<'static, Vec<Arc<Mount>>> {
    MOUNTS.read().unwrap_or_else(|e| e.into_inner())
}

/// libnfs's reason for a failed mount, with what to check.
fn with_hint(reason: String) -> String {
    let hint = if reason.contains("MNT3ERR") {
        "the server exports no such path to this client (an NFSv3 URL names the export's path on the server, an NFSv4 URL its pseudo path)"
    } else if reason.contains("nfs_service failed") || reason.contains("connect") {
        "no NFS server answers there (check the host, nfsport= and mountport=, or rpcbind for NFSv3)"
    } else if reason.contains("timed out") {
        "the server did not answer in time"
    } else {
        return reason;
    };
    format!("{reason}: {hint}")
}

/// Whether `url` asks for NFSv4 (`version=4` among its options).
pub fn is_v4(url: &str) -> bool {
    url.split_once('?')
        .is_some_and(|(_, q)| q.split('&').any(|kv| kv == "version=4"))
}

/// Refuses a workload that writes over NFSv4: libnfs 4.0's NFSv4 WRITE fails (its
/// COMPOUND encoding; an empty file stays). Writes go over NFSv3.
pub fn check_writable(url: &str) -> Result<(), BackendError> {
    if is_v4(url) {
        return Err(BackendError::NfsUrl {
            url: url.to_string(),
            reason: "libnfs 4.0 cannot write over NFSv4 (its WRITE fails and leaves an empty file): write over NFSv3 (the URL without version=4), read over either".into(),
        });
    }
    Ok(())
}

/// `nfs://HOST/EXPORT` of a URL, checked: the scheme, a host, an export path.
fn prefix_of(url: &str) -> Result<PathBuf, BackendError> {
    let bad = |reason: &str| BackendError::NfsUrl {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let rest = url
        .strip_prefix("nfs://")
        .ok_or_else(|| bad("it does not start with nfs://"))?;
    let (hostpath, _query) = rest.split_once('?').unwrap_or((rest, ""));
    let (host, path) = hostpath
        .split_once('/')
        .ok_or_else(|| bad("it names no export (nfs://HOST/EXPORT)"))?;
    if host.is_empty() {
        return Err(bad("it names no server (nfs://HOST/EXPORT)"));
    }
    let path = path.trim_end_matches('/');
    if Path::new(path)
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Err(bad("its export path has . or .. in it"));
    }
    Ok(PathBuf::from(format!("nfs://{host}/{path}")))
}

/// The export `path` lies on and its export-relative name (`/a/b`), if it is under a
/// mounted prefix.
pub fn route(path: &Path) -> Option<(Arc<Mount>, String)> {
    let mounts = read_mounts();
    mounts.iter().find_map(|m| {
        let rel = path.strip_prefix(&m.prefix).ok()?;
        let mut s = String::new();
        for c in rel.components() {
            s.push('/');
            s.push_str(&c.as_os_str().to_string_lossy());
        }
        if s.is_empty() {
            s.push('/');
        }
        Some((m.clone(), s))
    })
}

/// Whether `path` lies on a mounted NFS export.
pub fn is_nfs_path(path: &Path) -> bool {
    route(path).is_some()
}

/// This thread's connection to `m`, made on first use.
pub fn conn_for(m: &Mount) -> std::io::Result<Arc<Conn>> {
    if let Some(c) = CONNS.with(|c| {
        c.borrow()
            .iter()
            .find(|(id, _)| *id == m.id)
            .map(|(_, c)| c.clone())
    }) {
        return Ok(c);
    }
    let lib = ffi::lib().map_err(std::io::Error::other)?;
    let conn =
        Arc::new(Conn::connect(lib, &m.url).map_err(|reason| {
            std::io::Error::other(format!("cannot mount {}: {reason}", m.url))
        })?);
    CONNS.with(|c| c.borrow_mut().push((m.id, conn.clone())));
    Ok(conn)
}

/// An open file on an export: its connection and handle; closed when dropped.
pub struct NfsFile {
    pub conn: Arc<Conn>,
    pub fh: Fh,
}

impl std::fmt::Debug for NfsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NfsFile")
    }
}

impl NfsFile {
    /// Opens a data file: as [`NfsFile::open`], refusing to open one for writing over
    /// NFSv4, where libnfs 4.0's WRITE to a file it did not create in the same OPEN fails
    /// (NFS4ERR_OPENMODE).
    pub fn open_data(path: &Path, flags: i32, mode: i32) -> std::io::Result<NfsFile> {
        let v4 = route(path).is_some_and(|(m, _)| m.v4);
        if v4 && flags & libc::O_ACCMODE != libc::O_RDONLY {
            return Err(std::io::Error::other(
                "libnfs 4.0 cannot write over NFSv4: write over NFSv3 (a URL without version=4)",
            ));
        }
        NfsFile::open(path, flags, mode)
    }

    /// Opens `path` (under a mounted prefix) with open(2) flags.
    pub fn open(path: &Path, flags: i32, mode: i32) -> std::io::Result<NfsFile> {
        let (m, rel) = route(path).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, "not on a mounted NFS export")
        })?;
        let conn = conn_for(&m)?;
        let fh = conn.open(&rel, flags, mode)?;
        Ok(NfsFile { conn, fh })
    }
}

impl Drop for NfsFile {
    fn drop(&mut self) {
        self.conn.close(self.fh);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_gives_its_prefix_or_one_reason() {
        assert_eq!(
            prefix_of("nfs://127.0.0.1/srv/x/?version=3&nfsport=2049").unwrap(),
            PathBuf::from("nfs://127.0.0.1/srv/x")
        );
        for (url, why) in [
            ("http://h/x", "nfs://"),
            ("nfs://h", "no export"),
            ("nfs:///x", "no server"),
            ("nfs://h/a/../b", ".."),
        ] {
            let e = prefix_of(url).unwrap_err().to_string();
            assert!(e.contains(url) && e.contains(why), "{url}: {e}");
        }
        assert!(is_v4("nfs://h/e?nfsport=1&version=4"));
        assert!(!is_v4("nfs://h/e?version=3"));
        let e = check_writable("nfs://h/e?version=4")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--nfs-url nfs://h/e?version=4: libnfs 4.0 cannot write over NFSv4"),
            "{e}"
        );
    }

    #[test]
    fn a_path_under_a_prefix_is_routed_with_its_export_name() {
        MOUNTS.write().unwrap().push(Arc::new(Mount {
            id: 999,
            url: "nfs://10.9.9.9/e?x".into(),
            prefix: PathBuf::from("nfs://10.9.9.9/e"),
            v4: false,
        }));
        let (_, rel) = route(Path::new("nfs://10.9.9.9/e/iolab-work/data.shared")).unwrap();
        assert_eq!(rel, "/iolab-work/data.shared");
        assert_eq!(route(Path::new("nfs://10.9.9.9/e")).unwrap().1, "/");
        assert!(route(Path::new("nfs://10.9.9.9/ex/f")).is_none());
        assert!(route(Path::new("/tmp/e/f")).is_none());
    }
}
