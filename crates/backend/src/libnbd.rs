//! libnbd, loaded at run time: [`libnbd`] opens `libnbd.so.0` with dlopen once and looks up
//! the few functions iolab calls ([`Lib`]), declared here by hand from libnbd.h (1.14's
//! stable ABI). iolab builds with Rust and a C compiler only and runs where libnbd is
//! missing; only `--backend nbd` needs it, and says so in one line when it is not there.
//! [`Export`] is a connection (`export.rs`). Below `files`, `device` and `nbd`, which all
//! use it, and using none of them.

mod export;

pub use export::{Export, is_uri};

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

/// libnbd's `struct nbd_handle`, only ever behind a pointer.
#[repr(C)]
pub(crate) struct Handle {
    _private: [u8; 0],
}

/// libnbd's `nbd_completion_callback`, passed by value to the asynchronous calls: called
/// once the command completes, with `*error` its errno (0: success); returning 1 retires
/// the command at once.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct CompletionCallback {
    pub callback: Option<unsafe extern "C" fn(*mut c_void, *mut c_int) -> c_int>,
    pub user_data: *mut c_void,
    pub free: Option<unsafe extern "C" fn(*mut c_void)>,
}

/// `nbd_aio_get_direction`'s bits.
pub(crate) const DIRECTION_READ: c_uint = 1;
pub(crate) const DIRECTION_WRITE: c_uint = 2;

/// The shared object's name: the runtime package's (Debian/Ubuntu libnbd0, Fedora libnbd).
pub const SONAME: &str = "libnbd.so.0";

/// The environment variable naming another shared object to load instead (a path, or a
/// name the dynamic linker looks up): a libnbd built elsewhere, or, in tests, one that is
/// not there.
pub const SONAME_VAR: &str = "IOLAB_LIBNBD";

/// The shared object to load: $IOLAB_LIBNBD, or [`SONAME`].
pub fn soname() -> String {
    std::env::var(SONAME_VAR)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| SONAME.to_string())
}

type CreateFn = unsafe extern "C" fn() -> *mut Handle;
type HandleFn = unsafe extern "C" fn(*mut Handle);
type ErrorFn = unsafe extern "C" fn() -> *const c_char;
type ErrnoFn = unsafe extern "C" fn() -> c_int;
type ConnectFn = unsafe extern "C" fn(*mut Handle, *const c_char) -> c_int;
type SizeFn = unsafe extern "C" fn(*mut Handle) -> i64;
type QueryFn = unsafe extern "C" fn(*mut Handle) -> c_int;
type DirectionFn = unsafe extern "C" fn(*mut Handle) -> c_uint;
type PreadFn = unsafe extern "C" fn(*mut Handle, *mut c_void, usize, u64, u32) -> c_int;
type PwriteFn = unsafe extern "C" fn(*mut Handle, *const c_void, usize, u64, u32) -> c_int;
type FlushFn = unsafe extern "C" fn(*mut Handle, u32) -> c_int;
type TrimFn = unsafe extern "C" fn(*mut Handle, u64, u64, u32) -> c_int;
type AioPreadFn =
    unsafe extern "C" fn(*mut Handle, *mut c_void, usize, u64, CompletionCallback, u32) -> i64;
type AioPwriteFn =
    unsafe extern "C" fn(*mut Handle, *const c_void, usize, u64, CompletionCallback, u32) -> i64;

/// The functions iolab uses, with libnbd.h's signatures.
pub(crate) struct Lib {
    pub create: CreateFn,
    pub close: HandleFn,
    pub get_error: ErrorFn,
    pub get_errno: ErrnoFn,
    pub connect_uri: ConnectFn,
    pub get_size: SizeFn,
    pub is_read_only: QueryFn,
    pub can_flush: QueryFn,
    pub can_trim: QueryFn,
    pub pread: PreadFn,
    pub pwrite: PwriteFn,
    pub flush: FlushFn,
    pub trim: TrimFn,
    pub aio_pread: AioPreadFn,
    pub aio_pwrite: AioPwriteFn,
    pub aio_get_fd: QueryFn,
    pub aio_get_direction: DirectionFn,
    pub aio_notify_read: QueryFn,
    pub aio_notify_write: QueryFn,
    pub aio_in_flight: QueryFn,
}

impl Lib {
    /// The error of the last libnbd call that failed on this thread, and its errno.
    pub(crate) fn last_error(&self) -> (String, i32) {
        // SAFETY: nbd_get_error returns NULL or a NUL-terminated string libnbd keeps in
        // thread-local storage until the next failing call on this thread; it is copied
        // at once. nbd_get_errno only reads the same thread-local state.
        unsafe {
            let text = (self.get_error)();
            let text = if text.is_null() {
                "unknown libnbd error".to_string()
            } else {
                CStr::from_ptr(text).to_string_lossy().into_owned()
            };
            (text, (self.get_errno)())
        }
    }
}

/// libnbd, loaded on first use; the reason it cannot be when it is not installed.
pub(crate) fn libnbd() -> Result<&'static Lib, String> {
    static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// dlerror's text, if any.
fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next dl*
    // call on this thread; it is copied at once.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown dlopen error".to_string()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

fn load() -> Result<Lib, String> {
    let soname = soname();
    let name = std::ffi::CString::new(soname.as_str())
        .map_err(|_| format!("${SONAME_VAR} holds a NUL byte"))?;
    // SAFETY: dlopen with a NUL-terminated name. The library is never closed: the
    // function pointers below stay valid for the life of the process.
    let lib = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if lib.is_null() {
        return Err(dl_error());
    }
    let sym = |name: &CStr| -> Result<*mut c_void, String> {
        let soname = &soname;
        // SAFETY: `lib` is a live handle from dlopen and `name` is NUL-terminated.
        let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
        if p.is_null() {
            Err(format!(
                "{soname} has no {} (libnbd 1.14 or later is needed)",
                name.to_string_lossy()
            ))
        } else {
            Ok(p)
        }
    };
    macro_rules! f {
        ($name:literal, $ty:ty) => {
            // SAFETY: the symbol is libnbd's function of that name, whose C signature
            // (libnbd.h, stable since 1.0) is `$ty`.
            unsafe { std::mem::transmute::<*mut c_void, $ty>(sym($name)?) }
        };
    }
    Ok(Lib {
        create: f!(c"nbd_create", CreateFn),
        close: f!(c"nbd_close", HandleFn),
        get_error: f!(c"nbd_get_error", ErrorFn),
        get_errno: f!(c"nbd_get_errno", ErrnoFn),
        connect_uri: f!(c"nbd_connect_uri", ConnectFn),
        get_size: f!(c"nbd_get_size", SizeFn),
        is_read_only: f!(c"nbd_is_read_only", QueryFn),
        can_flush: f!(c"nbd_can_flush", QueryFn),
        can_trim: f!(c"nbd_can_trim", QueryFn),
        pread: f!(c"nbd_pread", PreadFn),
        pwrite: f!(c"nbd_pwrite", PwriteFn),
        flush: f!(c"nbd_flush", FlushFn),
        trim: f!(c"nbd_trim", TrimFn),
        aio_pread: f!(c"nbd_aio_pread", AioPreadFn),
        aio_pwrite: f!(c"nbd_aio_pwrite", AioPwriteFn),
        aio_get_fd: f!(c"nbd_aio_get_fd", QueryFn),
        aio_get_direction: f!(c"nbd_aio_get_direction", DirectionFn),
        aio_notify_read: f!(c"nbd_aio_notify_read", QueryFn),
        aio_notify_write: f!(c"nbd_aio_notify_write", QueryFn),
        aio_in_flight: f!(c"nbd_aio_in_flight", QueryFn),
    })
}
