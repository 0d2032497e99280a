//! [`Conn`]: one libnfs context mounted on an export, and the synchronous calls iolab
//! makes through it (open, read, write, stat, unlink, mkdir, rmdir, list). A context is
//! not thread-safe: every call takes the connection's mutex (uncontended: each thread has
//! a connection of its own, see [`super::conn_for`]). Errors are `io::Error`s from the
//! errno libnfs returns, so callers tell "not found" and "exists" apart as with std::fs.

use std::ffi::{CStr, CString, c_int, c_void};
use std::io;
use std::sync::{Mutex, MutexGuard};

use super::ffi::{Context, FileHandle, Lib, Stat64};

/// How long one NFS call may take before libnfs gives up on it (a server that is gone).
const CALL_TIMEOUT_MS: c_int = 20_000;

pub struct Raw {
    pub(crate) ctx: *mut Context,
}

// SAFETY: a libnfs context may be used from any thread, one thread at a time; the mutex
// in `Conn` makes every use exclusive.
unsafe impl Send for Raw {}

/// A mounted export.
pub struct Conn {
    pub(crate) lib: &'static Lib,
    raw: Mutex<Raw>,
}

/// An open file on a [`Conn`]; closed by [`Conn::close`].
#[derive(Clone, Copy, Debug)]
pub struct Fh(pub(crate) *mut FileHandle);

// SAFETY: a file handle is only used through its connection, under the connection's
// mutex.
unsafe impl Send for Fh {}
// SAFETY: as above: `&Fh` gives nothing but the pointer, used under the mutex.
unsafe impl Sync for Fh {}

fn cpath(path: &str) -> io::Result<CString> {
    CString::new(path).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))
}

/// libnfs's -errno as an io::Error of that kind.
fn errno(rc: c_int) -> io::Error {
    io::Error::from_raw_os_error(if rc < 0 { -rc } else { libc::EIO })
}

impl Conn {
    /// Mounts the export of `url` (libnfs's URL: `nfs://server/path?version=4&nfsport=N`).
    /// Err: libnfs's own words on why not.
    pub fn connect(lib: &'static Lib, url: &str) -> Result<Conn, String> {
        let curl = CString::new(url).map_err(|_| "a NUL in the URL".to_string())?;
        // SAFETY: a fresh context or null.
        let ctx = unsafe { (lib.init_context)() };
        if ctx.is_null() {
            return Err("libnfs could not make a context".into());
        }
        let conn = Conn {
            lib,
            raw: Mutex::new(Raw { ctx }),
        };
        // Each connection is its own NFSv4 client: libnfs's default name ("Libnfs pid:P
        // T", T in seconds) is the same for the contexts a process makes within a second,
        // and a second connection's SETCLIENTID then takes the first one's state away.
        static CONNECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name =
            CString::new(format!("iolab-{}-{n}", std::process::id())).expect("no NUL in a number");
        // SAFETY: a live context; the URL string and the client name outlive the calls
        // (libnfs copies the name); the parsed URL is read while alive and destroyed once.
        unsafe {
            (lib.set_client_name)(ctx, name.as_ptr());
            (lib.set_timeout)(ctx, CALL_TIMEOUT_MS);
            let parsed = (lib.parse_url_dir)(ctx, curl.as_ptr());
            if parsed.is_null() {
                return Err(conn.error_text());
            }
            let rc = (lib.mount)(ctx, (*parsed).server, (*parsed).path);
            (lib.destroy_url)(parsed);
            if rc != 0 {
                return Err(conn.error_text());
            }
        }
        Ok(conn)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Raw> {
        self.raw.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// libnfs's message for the last failure on this context.
    pub fn error_text(&self) -> String {
        let raw = self.lock();
        // SAFETY: a live context; the message is copied before the lock is released.
        let p = unsafe { (self.lib.get_error)(raw.ctx) };
        if p.is_null() {
            return "unknown libnfs error".into();
        }
        // SAFETY: libnfs returns a NUL-terminated string it owns.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// Opens `path` (export-relative, starting with `/`) with open(2) flags.
    pub fn open(&self, path: &str, flags: c_int, mode: c_int) -> io::Result<Fh> {
        let p = cpath(path)?;
        let mut fh = std::ptr::null_mut();
        let raw = self.lock();
        // SAFETY: a live context, a NUL-terminated path, an out pointer to fill.
        let rc = unsafe { (self.lib.open2)(raw.ctx, p.as_ptr(), flags, mode, &mut fh) };
        if rc < 0 || fh.is_null() {
            return Err(errno(rc));
        }
        Ok(Fh(fh))
    }

    pub fn close(&self, fh: Fh) {
        let raw = self.lock();
        // SAFETY: a handle opened on this context, closed once (its owner drops it).
        unsafe { (self.lib.close)(raw.ctx, fh.0) };
    }

    /// One READ: up to `buf.len()` bytes at `offset` (fewer at the end of the file).
    pub fn pread(&self, fh: Fh, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let raw = self.lock();
        // SAFETY: `buf` is valid for `buf.len()` bytes of writes during the call.
        let rc = unsafe {
            (self.lib.pread)(
                raw.ctx,
                fh.0,
                offset,
                buf.len() as u64,
                buf.as_mut_ptr().cast::<c_void>(),
            )
        };
        if rc < 0 {
            Err(errno(rc))
        } else {
            Ok(rc as usize)
        }
    }

    /// One WRITE of `buf` at `offset`; returns the bytes written.
    pub fn pwrite(&self, fh: Fh, buf: &[u8], offset: u64) -> io::Result<usize> {
        let raw = self.lock();
        // SAFETY: `buf` is valid for `buf.len()` bytes of reads during the call.
        let rc = unsafe {
            (self.lib.pwrite)(
                raw.ctx,
                fh.0,
                offset,
                buf.len() as u64,
                buf.as_ptr().cast::<c_void>(),
            )
        };
        if rc < 0 {
            Err(errno(rc))
        } else {
            Ok(rc as usize)
        }
    }

    pub fn fsync(&self, fh: Fh) -> io::Result<()> {
        let raw = self.lock();
        // SAFETY: a live context and a handle opened on it.
        let rc = unsafe { (self.lib.fsync)(raw.ctx, fh.0) };
        if rc < 0 { Err(errno(rc)) } else { Ok(()) }
    }

    pub fn ftruncate(&self, fh: Fh, len: u64) -> io::Result<()> {
        let raw = self.lock();
        // SAFETY: a live context and a handle opened on it.
        let rc = unsafe { (self.lib.ftruncate)(raw.ctx, fh.0, len) };
        if rc < 0 { Err(errno(rc)) } else { Ok(()) }
    }

    pub fn fstat(&self, fh: Fh) -> io::Result<Stat64> {
        let mut st = Stat64::default();
        let raw = self.lock();
        // SAFETY: a live context, a handle opened on it, a stat struct to fill.
        let rc = unsafe { (self.lib.fstat64)(raw.ctx, fh.0, &mut st) };
        if rc < 0 { Err(errno(rc)) } else { Ok(st) }
    }

    /// stat without following a last symbolic link.
    pub fn lstat(&self, path: &str) -> io::Result<Stat64> {
        let p = cpath(path)?;
        let mut st = Stat64::default();
        let raw = self.lock();
        // SAFETY: a live context, a NUL-terminated path, a stat struct to fill.
        let rc = unsafe { (self.lib.lstat64)(raw.ctx, p.as_ptr(), &mut st) };
        if rc < 0 { Err(errno(rc)) } else { Ok(st) }
    }

    fn path_call(
        &self,
        path: &str,
        f: unsafe extern "C" fn(*mut Context, *const std::ffi::c_char) -> c_int,
    ) -> io::Result<()> {
        let p = cpath(path)?;
        let raw = self.lock();
        // SAFETY: a live context and a NUL-terminated path (unlink, mkdir, rmdir).
        let rc = unsafe { f(raw.ctx, p.as_ptr()) };
        if rc < 0 { Err(errno(rc)) } else { Ok(()) }
    }

    pub fn unlink(&self, path: &str) -> io::Result<()> {
        self.path_call(path, self.lib.unlink)
    }

    pub fn mkdir(&self, path: &str) -> io::Result<()> {
        self.path_call(path, self.lib.mkdir)
    }

    pub fn rmdir(&self, path: &str) -> io::Result<()> {
        self.path_call(path, self.lib.rmdir)
    }

    /// The entries of directory `path` but `.` and `..`: (name, is a directory, is a
    /// regular file).
    pub fn list(&self, path: &str) -> io::Result<Vec<(String, bool, bool)>> {
        let p = cpath(path)?;
        let mut dir = std::ptr::null_mut();
        let raw = self.lock();
        // SAFETY: a live context, a NUL-terminated path, an out pointer to fill.
        let rc = unsafe { (self.lib.opendir)(raw.ctx, p.as_ptr(), &mut dir) };
        if rc < 0 || dir.is_null() {
            return Err(errno(rc));
        }
        let mut out = Vec::new();
        loop {
            // SAFETY: an open directory of this context; the entry it returns stays
            // valid until closedir, and its name is NUL-terminated.
            let e = unsafe { (self.lib.readdir)(raw.ctx, dir) };
            if e.is_null() {
                break;
            }
            // SAFETY: as above.
            let (name, kind) = unsafe { (CStr::from_ptr((*e).name), (*e).kind) };
            let name = name.to_string_lossy().into_owned();
            if name != "." && name != ".." {
                out.push((name, kind == 2, kind == 1));
            }
        }
        // SAFETY: the directory opened above, closed once.
        unsafe { (self.lib.closedir)(raw.ctx, dir) };
        Ok(out)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let raw = self.lock();
        // SAFETY: the context this connection made, destroyed once, at its end.
        unsafe { (self.lib.destroy_context)(raw.ctx) };
    }
}
