//! libnfs, loaded at run time: [`Lib`] holds the few functions iolab calls, looked up
//! with dlopen/dlsym in `libnfs.so.13` (libnfs 4.x, whose signatures are declared here by
//! hand). iolab builds and runs without libnfs; only `--backend nfs` needs it.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

/// The library file and the package that has it (Debian's libnfs 4.0.0).
pub const SONAME: &str = "libnfs.so.13";
pub const PACKAGE: &str = "libnfs13";

#[repr(C)]
pub struct Context {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct FileHandle {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct Dir {
    _opaque: [u8; 0],
}

/// `struct nfs_url` (libnfs.h).
#[repr(C)]
pub struct Url {
    pub server: *mut c_char,
    pub path: *mut c_char,
    pub file: *mut c_char,
}

/// `struct nfs_stat_64` (libnfs.h).
#[repr(C)]
#[derive(Default)]
pub struct Stat64 {
    pub dev: u64,
    pub ino: u64,
    pub mode: u64,
    pub nlink: u64,
    pub uid: u64,
    pub gid: u64,
    pub rdev: u64,
    pub size: u64,
    pub blksize: u64,
    pub blocks: u64,
    pub atime: u64,
    pub mtime: u64,
    pub ctime: u64,
    pub atime_nsec: u64,
    pub mtime_nsec: u64,
    pub ctime_nsec: u64,
    pub used: u64,
}

/// The head of `struct nfsdirent` (libnfs.h): only these fields are read.
#[repr(C)]
pub struct DirEntry {
    pub next: *mut DirEntry,
    pub name: *mut c_char,
    pub inode: u64,
    /// NF3REG (1), NF3DIR (2), NF3LNK (5), ...
    pub kind: u32,
}

/// `nfs_cb`: (status or -errno, context, data, private data).
pub type Callback = extern "C" fn(c_int, *mut Context, *mut c_void, *mut c_void);

/// The functions iolab calls, as libnfs 4.x declares them.
pub struct Lib {
    pub init_context: unsafe extern "C" fn() -> *mut Context,
    pub destroy_context: unsafe extern "C" fn(*mut Context),
    pub parse_url_dir: unsafe extern "C" fn(*mut Context, *const c_char) -> *mut Url,
    pub destroy_url: unsafe extern "C" fn(*mut Url),
    pub mount: unsafe extern "C" fn(*mut Context, *const c_char, *const c_char) -> c_int,
    pub set_timeout: unsafe extern "C" fn(*mut Context, c_int),
    pub set_client_name: unsafe extern "C" fn(*mut Context, *const c_char),
    pub get_error: unsafe extern "C" fn(*mut Context) -> *mut c_char,
    pub open2: unsafe extern "C" fn(
        *mut Context,
        *const c_char,
        c_int,
        c_int,
        *mut *mut FileHandle,
    ) -> c_int,
    pub close: unsafe extern "C" fn(*mut Context, *mut FileHandle) -> c_int,
    pub pread: unsafe extern "C" fn(*mut Context, *mut FileHandle, u64, u64, *mut c_void) -> c_int,
    pub pwrite:
        unsafe extern "C" fn(*mut Context, *mut FileHandle, u64, u64, *const c_void) -> c_int,
    pub pread_async: unsafe extern "C" fn(
        *mut Context,
        *mut FileHandle,
        u64,
        u64,
        Callback,
        *mut c_void,
    ) -> c_int,
    pub pwrite_async: unsafe extern "C" fn(
        *mut Context,
        *mut FileHandle,
        u64,
        u64,
        *const c_void,
        Callback,
        *mut c_void,
    ) -> c_int,
    pub get_fd: unsafe extern "C" fn(*mut Context) -> c_int,
    pub which_events: unsafe extern "C" fn(*mut Context) -> c_int,
    pub service: unsafe extern "C" fn(*mut Context, c_int) -> c_int,
    pub fsync: unsafe extern "C" fn(*mut Context, *mut FileHandle) -> c_int,
    pub ftruncate: unsafe extern "C" fn(*mut Context, *mut FileHandle, u64) -> c_int,
    pub fstat64: unsafe extern "C" fn(*mut Context, *mut FileHandle, *mut Stat64) -> c_int,
    pub lstat64: unsafe extern "C" fn(*mut Context, *const c_char, *mut Stat64) -> c_int,
    pub unlink: unsafe extern "C" fn(*mut Context, *const c_char) -> c_int,
    pub mkdir: unsafe extern "C" fn(*mut Context, *const c_char) -> c_int,
    pub rmdir: unsafe extern "C" fn(*mut Context, *const c_char) -> c_int,
    pub opendir: unsafe extern "C" fn(*mut Context, *const c_char, *mut *mut Dir) -> c_int,
    pub readdir: unsafe extern "C" fn(*mut Context, *mut Dir) -> *mut DirEntry,
    pub closedir: unsafe extern "C" fn(*mut Context, *mut Dir),
}

/// libnfs, loaded once per process; Err: why it cannot be (one line for the user).
pub fn lib() -> Result<&'static Lib, String> {
    static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(Clone::clone)
}

// The transmutes' target types are the fields' own (Lib's declarations), inferred.
#[allow(clippy::missing_transmute_annotations)]
/// The library to load: `IOLAB_LIBNFS` when set (another build of libnfs 4.x, or a name
/// that is not there, to see the refusal), else [`SONAME`].
fn load() -> Result<Lib, String> {
    let soname = std::env::var("IOLAB_LIBNFS").unwrap_or_else(|_| SONAME.to_string());
    let name =
        std::ffi::CString::new(soname.clone()).map_err(|_| "IOLAB_LIBNFS has a NUL".to_string())?;
    // SAFETY: dlopen with a NUL-terminated name; the handle is never closed, so the
    // symbols looked up below stay valid for the life of the process.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(format!(
            "{soname} not found: apt-get install {PACKAGE} (libnfs 4.x, the NFS client --backend nfs uses)"
        ));
    }
    let sym = |n: &CStr| -> Result<*mut c_void, String> {
        // SAFETY: a live handle from dlopen and a NUL-terminated symbol name.
        let p = unsafe { libc::dlsym(handle, n.as_ptr()) };
        if p.is_null() {
            Err(format!(
                "{soname} has no {} (not libnfs 4.x?): apt-get install {PACKAGE}",
                n.to_string_lossy()
            ))
        } else {
            Ok(p)
        }
    };
    macro_rules! f {
        ($n:literal) => {
            // SAFETY: the symbol is libnfs 4.x's function of that name, whose C
            // signature the field's type declares (libnfs.h of 4.0.0); a function
            // pointer and a data pointer have the same size on the platforms iolab
            // builds for.
            unsafe { std::mem::transmute::<*mut c_void, _>(sym($n)?) }
        };
    }
    Ok(Lib {
        init_context: f!(c"nfs_init_context"),
        destroy_context: f!(c"nfs_destroy_context"),
        parse_url_dir: f!(c"nfs_parse_url_dir"),
        destroy_url: f!(c"nfs_destroy_url"),
        mount: f!(c"nfs_mount"),
        set_timeout: f!(c"nfs_set_timeout"),
        set_client_name: f!(c"nfs4_set_client_name"),
        get_error: f!(c"nfs_get_error"),
        open2: f!(c"nfs_open2"),
        close: f!(c"nfs_close"),
        pread: f!(c"nfs_pread"),
        pwrite: f!(c"nfs_pwrite"),
        pread_async: f!(c"nfs_pread_async"),
        pwrite_async: f!(c"nfs_pwrite_async"),
        get_fd: f!(c"nfs_get_fd"),
        which_events: f!(c"nfs_which_events"),
        service: f!(c"nfs_service"),
        fsync: f!(c"nfs_fsync"),
        ftruncate: f!(c"nfs_ftruncate"),
        fstat64: f!(c"nfs_fstat64"),
        lstat64: f!(c"nfs_lstat64"),
        unlink: f!(c"nfs_unlink"),
        mkdir: f!(c"nfs_mkdir"),
        rmdir: f!(c"nfs_rmdir"),
        opendir: f!(c"nfs_opendir"),
        readdir: f!(c"nfs_readdir"),
        closedir: f!(c"nfs_closedir"),
    })
}
