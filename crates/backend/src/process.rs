//! The calling process and thread: CPU time used ([`cpu_times`]), CPUs it may run on
//! ([`allowed_cpus`]) and pinning a thread to one CPU ([`pin_current_thread`]).

use std::io;

use iolab_core::units::Nanos;

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

/// Gives the calling thread a private copy of the process's file descriptor table
/// (`unshare(CLONE_FILES)`). A metadata worker opens and closes a descriptor for every
/// file; in one shared table those opens and closes contend with every other thread's,
/// which processes (MPI ranks, mdtest) do not pay.
///
/// Descriptors open before the call stay valid on this thread. Use it only on a thread
/// whose own descriptors are opened and closed on that thread and never handed to another:
/// the thread's scoped function must own them all (the metadata workers do).
pub fn private_fd_table() -> io::Result<()> {
    // SAFETY: the contract above: the only callers are worker threads that open, use and
    // close their descriptors themselves and return no descriptor, so no thread ever sees a
    // descriptor number from a table it does not share.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FILES) }
        .map_err(io::Error::from)
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
