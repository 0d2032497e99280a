//! [`Export`]: one connection to an NBD export through libnbd, with the synchronous calls
//! the untimed steps make (size, read, write, flush, trim); [`is_uri`] tells an NBD URI
//! from a path. A data file opened on a URI holds one ([`crate::DataFile`]), and the
//! `nbd` backend queues its timed I/O on that connection.

use std::ffi::CString;
use std::io;
use std::path::Path;
use std::ptr::NonNull;

use super::{Handle, Lib, libnbd, soname};
use crate::error::BackendError;

/// The URI schemes libnbd connects to (nbd_connect_uri): TCP, TLS, Unix socket, vsock.
const SCHEMES: [&str; 6] = [
    "nbd://",
    "nbds://",
    "nbd+unix://",
    "nbds+unix://",
    "nbd+vsock://",
    "nbds+vsock://",
];

/// Whether `path` is an NBD URI (nbd://HOST[:PORT][/EXPORT], nbd+unix:///?socket=SOCKET),
/// not a file or device path.
pub fn is_uri(path: &Path) -> bool {
    path.to_str()
        .is_some_and(|s| SCHEMES.iter().any(|scheme| s.starts_with(scheme)))
}

/// An open connection to an NBD export.
pub struct Export {
    lib: &'static Lib,
    handle: NonNull<Handle>,
    uri: String,
    size: u64,
    read_only: bool,
    can_flush: bool,
    can_trim: bool,
}

// SAFETY: libnbd handles are thread-safe: every call on a handle takes the handle's lock
// (libnbd(3), "Multithreading"). The handle is owned by this value alone.
unsafe impl Send for Export {}
// SAFETY: as above; shared references only make calls libnbd serialises itself.
unsafe impl Sync for Export {}

impl std::fmt::Debug for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Export")
            .field("uri", &self.uri)
            .field("size", &self.size)
            .finish()
    }
}

/// libnbd when it loads; the one-line refusal naming the library when it does not.
pub(crate) fn library() -> Result<&'static Lib, BackendError> {
    libnbd().map_err(|why| BackendError::NbdUnavailable {
        soname: soname(),
        why,
    })
}

impl Export {
    /// Connects to `uri` (libnbd's nbd_connect_uri) and reads what the server offers.
    pub fn connect(uri: &str) -> Result<Export, BackendError> {
        let lib = library()?;
        let failed = |why: String| BackendError::NbdConnect {
            uri: uri.to_string(),
            why,
        };
        let c_uri = CString::new(uri).map_err(|_| failed("the URI holds a NUL byte".into()))?;
        // SAFETY: nbd_create takes no arguments and returns a new handle or NULL.
        let raw = unsafe { (lib.create)() };
        let handle = NonNull::new(raw).ok_or_else(|| failed(lib.last_error().0))?;
        // From here on the handle is closed by Export's Drop, on every path.
        let mut export = Export {
            lib,
            handle,
            uri: uri.to_string(),
            size: 0,
            read_only: true,
            can_flush: false,
            can_trim: false,
        };
        let h = export.handle.as_ptr();
        // SAFETY: a live handle and a NUL-terminated URI; the call blocks until the
        // handshake is done or failed.
        if unsafe { (lib.connect_uri)(h, c_uri.as_ptr()) } == -1 {
            return Err(failed(lib.last_error().0));
        }
        // SAFETY: a live, connected handle; these only read what the server negotiated.
        let (size, read_only, can_flush, can_trim) = unsafe {
            (
                (lib.get_size)(h),
                (lib.is_read_only)(h),
                (lib.can_flush)(h),
                (lib.can_trim)(h),
            )
        };
        export.size = u64::try_from(size).map_err(|_| failed(lib.last_error().0))?;
        export.read_only = read_only == 1;
        export.can_flush = can_flush == 1;
        export.can_trim = can_trim == 1;
        Ok(export)
    }

    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The export's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    pub(crate) fn lib(&self) -> &'static Lib {
        self.lib
    }

    pub(crate) fn handle(&self) -> *mut Handle {
        self.handle.as_ptr()
    }

    /// The errno of the call that just failed, as an io::Error (EIO when libnbd gives none).
    pub(crate) fn last_io_error(&self) -> io::Error {
        let (_, errno) = self.lib.last_error();
        io::Error::from_raw_os_error(if errno > 0 { errno } else { libc::EIO })
    }

    fn io_err(&self, op: &'static str, offset: u64, len: u64) -> BackendError {
        BackendError::Io {
            op,
            path: self.uri.clone().into(),
            offset,
            len,
            source: self.last_io_error(),
        }
    }

    /// Reads exactly `buf.len()` bytes at `offset`.
    pub fn pread(&self, buf: &mut [u8], offset: u64) -> Result<(), BackendError> {
        // SAFETY: a live handle and a writable buffer of buf.len() bytes, which libnbd
        // fills before the synchronous call returns.
        let rc = unsafe {
            (self.lib.pread)(self.handle(), buf.as_mut_ptr().cast(), buf.len(), offset, 0)
        };
        if rc == -1 {
            return Err(self.io_err("read", offset, buf.len() as u64));
        }
        Ok(())
    }

    /// Writes all of `buf` at `offset`.
    pub fn pwrite(&self, buf: &[u8], offset: u64) -> Result<(), BackendError> {
        // SAFETY: a live handle and a readable buffer of buf.len() bytes, which libnbd
        // has sent before the synchronous call returns.
        let rc =
            unsafe { (self.lib.pwrite)(self.handle(), buf.as_ptr().cast(), buf.len(), offset, 0) };
        if rc == -1 {
            return Err(self.io_err("write", offset, buf.len() as u64));
        }
        Ok(())
    }

    /// Asks the server to make written data durable (NBD_CMD_FLUSH); a server that
    /// offers no flush writes through, and nothing is asked.
    pub fn flush(&self) -> Result<(), BackendError> {
        if !self.can_flush {
            return Ok(());
        }
        // SAFETY: a live handle.
        if unsafe { (self.lib.flush)(self.handle(), 0) } == -1 {
            return Err(BackendError::File {
                op: "flush",
                path: self.uri.clone().into(),
                source: self.last_io_error(),
            });
        }
        Ok(())
    }

    /// Discards `len` bytes at `offset` (NBD_CMD_TRIM); EOPNOTSUPP when the server
    /// offers no trim.
    pub fn trim(&self, offset: u64, len: u64) -> Result<(), io::Error> {
        if !self.can_trim {
            return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        }
        // libnbd takes at most 4 GiB - 1 per command (the protocol's 32-bit length).
        let step = 1u64 << 30;
        let mut at = offset;
        while at < offset + len {
            let n = step.min(offset + len - at);
            // SAFETY: a live handle.
            if unsafe { (self.lib.trim)(self.handle(), n, at, 0) } == -1 {
                return Err(self.last_io_error());
            }
            at += n;
        }
        Ok(())
    }
}

impl Drop for Export {
    fn drop(&mut self) {
        // SAFETY: the handle came from nbd_create and is closed once, here; nbd_close
        // also ends the connection. The nbd backend has drained every asynchronous
        // command it queued on it before this (its own Drop), so no callback runs later.
        unsafe { (self.lib.close)(self.handle.as_ptr()) }
    }
}
