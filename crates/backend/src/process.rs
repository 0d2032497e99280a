//! The calling process and thread: CPU time used ([`cpu_times`]), CPUs it may run on
//! ([`allowed_cpus`]), pinning a thread to one CPU ([`pin_current_thread`]), and the
//! memory the host and the process's cgroup can still give ([`mem_available`],
//! [`cgroup_room`], [`memory_room`]).

use std::io;
use std::path::{Path, PathBuf};

use iolab_core::units::Nanos;

/// MemAvailable of `<root>/proc/meminfo` in bytes (`root` is "/" but in tests).
pub fn mem_available(root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(root.join("proc/meminfo")).ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The memory this process can still take: MemAvailable, or the room its cgroup leaves
/// when that is less (ramfs and tmpfs pages count against the writer's cgroup).
pub fn memory_room(root: &Path) -> Option<u64> {
    match (mem_available(root), cgroup_room(root)) {
        (Some(m), Some((c, _))) => Some(m.min(c)),
        (m, c) => m.or(c.map(|(c, _)| c)),
    }
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The room left under the memory limits of the cgroup this process runs in and its
/// parents, and the cgroup that sets it (None: no limit). cgroup v2: the process's cgroup and each parent up to the root, memory.max minus
/// memory.current, the smallest ("max" is no limit). cgroup v1: the memory
/// controller's limit_in_bytes minus usage_in_bytes.
pub fn cgroup_room(root: &Path) -> Option<(u64, String)> {
    let text = std::fs::read_to_string(root.join("proc/self/cgroup")).ok()?;
    let mut best: Option<(u64, String)> = None;
    let mut consider = |room: u64, name: String| {
        if best.as_ref().is_none_or(|(b, _)| room < *b) {
            best = Some((room, name));
        }
    };
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        // (mount, limit file, usage file) of the cgroup version this line is about.
        let files = if id == "0" && controllers.is_empty() {
            ("sys/fs/cgroup", "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            (
                "sys/fs/cgroup/memory",
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        } else {
            continue;
        };
        // Each level from the process's cgroup up to the mount's root; in a container
        // the levels above its own are not there, and its own is the mount's root.
        let top = root.join(files.0);
        let mut dir: PathBuf = top.join(rel);
        loop {
            // "max" (v2) or a huge page-aligned number (v1) is no limit.
            if let Some(limit) = read_u64(&dir.join(files.1)).filter(|l| *l < 1 << 60) {
                let used = read_u64(&dir.join(files.2)).unwrap_or(0);
                let name = dir.strip_prefix(&top).unwrap_or(&dir).display().to_string();
                consider(limit.saturating_sub(used), format!("/{name}"));
            }
            if dir == top || !dir.pop() || !dir.starts_with(&top) {
                break;
            }
        }
    }
    best
}

/// User and system CPU time this process has used so far.
pub fn cpu_times() -> (Nanos, Nanos) {
    rusage(libc::RUSAGE_SELF)
}

/// User and system CPU time the calling thread has used so far.
pub fn thread_cpu_times() -> (Nanos, Nanos) {
    rusage(libc::RUSAGE_THREAD)
}

/// Context switches of the calling thread so far, voluntary and involuntary (what fio
/// reports as ctx).
pub fn thread_context_switches() -> u64 {
    let usage = getrusage(libc::RUSAGE_THREAD);
    usage.ru_nvcsw.max(0) as u64 + usage.ru_nivcsw.max(0) as u64
}

fn rusage(who: libc::c_int) -> (Nanos, Nanos) {
    let usage = getrusage(who);
    let tv = |t: libc::timeval| Nanos(t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000);
    (tv(usage.ru_utime), tv(usage.ru_stime))
}

fn getrusage(who: libc::c_int) -> libc::rusage {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a complete rusage into the pointer we own; RUSAGE_SELF and
    // RUSAGE_THREAD are valid on Linux, and on failure the zeroed value stays (all fields
    // zero), which is a valid rusage.
    unsafe {
        libc::getrusage(who, usage.as_mut_ptr());
        usage.assume_init()
    }
}

/// Restores the default action for SIGPIPE, so `iolab ... | head` ends quietly when the
/// reader goes away instead of failing on a write error (Rust ignores SIGPIPE by default).
pub fn default_sigpipe() {
    // SAFETY: signal() with SIG_DFL installs no handler code; it only resets the
    // disposition of SIGPIPE for this process, before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Sets an environment variable unless the user already did. Only for the start of
/// `main`, before any other thread exists.
pub fn set_env_default(key: &str, value: &str) {
    if std::env::var_os(key).is_none() {
        // SAFETY: called at the start of main, before any thread is spawned, so nothing
        // reads the environment concurrently (the requirement of set_var).
        unsafe { std::env::set_var(key, value) };
    }
}

std::thread_local! {
    /// Whether the calling thread gave itself a private descriptor table.
    static PRIVATE_FD_TABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Gives the calling thread a private copy of the process's file descriptor table
/// (`unshare(CLONE_FILES)`). In a table shared between threads, every system call on a
/// descriptor takes and drops a reference to its open file (`fdget`), and every open and
/// close contends with every other thread's; a private table spares both, as processes
/// (MPI ranks, mdtest, fio's jobs) are spared them.
///
/// Descriptors open before the call stay valid on this thread: the copy holds a reference
/// to each of the process's open files, and so keeps them open (and their `flock`s held)
/// until the thread ends, which the kernel finishes only after `join` has returned. The
/// thread must therefore call [`close_private_fd_table`] as its last act, once its own
/// descriptors are closed. Use it only on a thread whose own descriptors are opened and
/// closed on that thread and never handed to another.
///
/// The descriptors held by an [`UnsharedFile`] (the work directory's lock) are closed in
/// the new table at once, so no worker, of this run or of another one running in the same
/// process, keeps a lock alive after its owner dropped it.
pub fn private_fd_table() -> io::Result<()> {
    // Held across the unshare, so the copy and the list of descriptors it must not keep
    // agree: an UnsharedFile opens and closes its descriptor under the same lock.
    let unshared = unshared_fds();
    // SAFETY: the contract above: the only callers are worker threads that open, use and
    // close their descriptors themselves and return no descriptor, so no thread ever sees a
    // descriptor number from a table it does not share.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FILES) }
        .map_err(io::Error::from)?;
    PRIVATE_FD_TABLE.set(true);
    for &fd in unshared.iter() {
        // SAFETY: closes this thread's private copy of a descriptor an UnsharedFile owns in
        // the shared table; nothing on this thread uses it (only its owner does, there).
        unsafe { libc::close(fd) };
    }
    Ok(())
}

/// The descriptors of live [`UnsharedFile`]s.
fn unshared_fds() -> std::sync::MutexGuard<'static, Vec<std::os::fd::RawFd>> {
    static FDS: std::sync::Mutex<Vec<std::os::fd::RawFd>> = std::sync::Mutex::new(Vec::new());
    FDS.lock().unwrap_or_else(|e| e.into_inner())
}

/// An open file whose descriptor no thread's private table ([`private_fd_table`]) keeps a
/// copy of: what holds a `flock` (released only when the last copy of the open file
/// closes) must be one, so that dropping it releases the lock at once.
#[derive(Debug)]
pub struct UnsharedFile(Option<std::fs::File>);

impl UnsharedFile {
    /// Opens the file with `open`, on the calling thread's (shared) table.
    pub fn open(open: impl FnOnce() -> io::Result<std::fs::File>) -> io::Result<UnsharedFile> {
        let mut fds = unshared_fds();
        let file = open()?;
        fds.push(std::os::fd::AsRawFd::as_raw_fd(&file));
        Ok(UnsharedFile(Some(file)))
    }
}

impl std::ops::Deref for UnsharedFile {
    type Target = std::fs::File;
    fn deref(&self) -> &std::fs::File {
        self.0.as_ref().expect("open until dropped")
    }
}

impl Drop for UnsharedFile {
    fn drop(&mut self) {
        let mut fds = unshared_fds();
        if let Some(file) = self.0.take() {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
            fds.retain(|&f| f != fd);
            // Closed under the lock: a table copied now neither has it nor will close
            // the number after another file reused it.
            drop(file);
        }
    }
}

/// Closes the descriptors left in the calling thread's private table (from
/// [`private_fd_table`]): the copies of the process's descriptors the thread inherited
/// (such as the work directory's lock), so none outlives the thread's work. Standard
/// input, output and error stay. Does nothing on a thread that shares the process's table.
/// Call it after the thread has closed its own descriptors and before it reports that
/// it is done; the thread must not use a descriptor afterwards.
pub fn close_private_fd_table() {
    if !PRIVATE_FD_TABLE.replace(false) {
        return;
    }
    // SAFETY: the table is this thread's alone (unshare above), so closing its entries
    // closes no other thread's descriptors; the caller's own descriptors are already
    // closed, so nothing on this thread closes or uses one of these numbers again.
    let closed = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    if closed != 0 {
        // Kernels before 5.9: close what /proc lists for this thread's table.
        let fds: Vec<i32> = std::fs::read_dir("/proc/thread-self/fd")
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .filter(|&fd| fd > 2)
                    .collect()
            })
            .unwrap_or_default();
        for fd in fds {
            // SAFETY: as above; the directory's own descriptor is among them and already
            // closed by then, which close reports as EBADF and harms nothing.
            unsafe { libc::close(fd) };
        }
    }
}

/// The CPUs this process may run on (its affinity mask).
pub fn allowed_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&c| set.is_set(c))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= rustix::thread::CpuSet::MAX_CPU {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is out of range"),
        ));
    }
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ramfs's room (fs_free) is what memory_room gives: the cgroup's room when it is
    /// the less, MemAvailable otherwise.
    #[test]
    fn memory_room_is_the_less_of_memavailable_and_the_cgroups_room() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        assert_eq!(memory_room(root), None);
        write(
            "proc/meminfo",
            "MemTotal: 25165824 kB\nMemAvailable: 20971520 kB\n",
        );
        assert_eq!(memory_room(root), Some(20 << 30));
        write("proc/self/cgroup", "0::/user.slice/job\n");
        write("sys/fs/cgroup/user.slice/job/memory.max", "2147483648\n");
        write("sys/fs/cgroup/user.slice/job/memory.current", "536870912\n");
        assert_eq!(memory_room(root), Some(3 << 29));
        write("sys/fs/cgroup/user.slice/job/memory.max", "max\n");
        assert_eq!(memory_room(root), Some(20 << 30));
    }

    #[test]
    fn a_private_fd_table_keeps_the_other_threads_descriptors_open() {
        let kept = std::fs::File::open("/proc/self/status").unwrap();
        let raw = std::os::fd::AsRawFd::as_raw_fd(&kept);
        std::thread::spawn(move || {
            private_fd_table().unwrap();
            // SAFETY: closes this thread's private copy of `raw` only; nothing on this
            // thread uses it afterwards.
            assert_eq!(unsafe { libc::close(raw) }, 0);
        })
        .join()
        .unwrap();
        // Had the table been shared, the close above would have closed `kept` too.
        let mut text = String::new();
        std::io::Read::read_to_string(&mut &kept, &mut text).unwrap();
        assert!(text.starts_with("Name:"), "{text}");
    }

    #[test]
    fn closing_a_private_fd_table_releases_the_flocks_the_thread_inherited() {
        use std::sync::mpsc;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let lock = std::fs::File::create(&path).unwrap();
        lock.try_lock().unwrap();
        let (closed, wait_closed) = mpsc::channel();
        let (end, wait_end) = mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            private_fd_table().unwrap();
            close_private_fd_table();
            closed.send(()).unwrap();
            // Still alive while the main thread takes the lock again: its table's copy
            // alone would keep the lock held.
            let _ = wait_end.recv();
        });
        wait_closed.recv().unwrap();
        drop(lock);
        let again = std::fs::File::open(&path).unwrap();
        let taken = again.try_lock();
        end.send(()).unwrap();
        t.join().unwrap();
        taken.expect("the lock is free once its only holder closed it");
        // A thread sharing the table keeps its descriptors: the call does nothing there.
        close_private_fd_table();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut &again, &mut text).unwrap();
    }

    #[test]
    fn a_private_fd_table_never_keeps_an_unshared_files_lock() {
        use std::sync::mpsc;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let lock = UnsharedFile::open(|| std::fs::File::create(&path)).unwrap();
        lock.try_lock().unwrap();
        let (made, wait_made) = mpsc::channel();
        let (end, wait_end) = mpsc::channel::<()>();
        // A worker, say of another run in this process, that is still working when the
        // lock's owner drops it.
        let t = std::thread::spawn(move || {
            private_fd_table().unwrap();
            made.send(()).unwrap();
            let _ = wait_end.recv();
            close_private_fd_table();
        });
        wait_made.recv().unwrap();
        drop(lock);
        let taken = std::fs::File::open(&path).unwrap().try_lock();
        end.send(()).unwrap();
        t.join().unwrap();
        taken.expect("the lock is free once its owner dropped it");
    }

    #[test]
    fn cpu_time_advances_with_work() {
        let (u0, s0) = cpu_times();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let (u1, s1) = cpu_times();
        assert!(u1.0 + s1.0 > u0.0 + s0.0);
    }

    #[test]
    fn a_thread_that_sleeps_switches_context() {
        let before = thread_context_switches();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(thread_context_switches() > before);
    }

    #[test]
    fn this_process_may_run_somewhere() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        assert!(pin_current_thread(usize::MAX).is_err());
    }
}
