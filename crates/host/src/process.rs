//! Is the process that stores a run still alive? [`this_process`] describes the current
//! process (host, pid, start time, boot) for the run's provenance; [`liveness`] tells a
//! reader whether an incomplete run's process still runs. Only a reader on the same host
//! can know; elsewhere the answer is [`Liveness::Unknown`].

use iolab_core::result::RunProcess;

use crate::root::{SysRoot, read_text, read_trimmed};

/// What a reader can say of an incomplete run's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// The same process is still running on this host.
    Alive,
    /// It ran on this host and is gone: no such pid, a different process with that pid,
    /// or the host rebooted since.
    Gone,
    /// Another host's process (or not recorded, or /proc unreadable).
    Unknown,
}

/// The current process, as the provenance of a run records it; None where /proc does
/// not say (then a reader answers [`Liveness::Unknown`]).
pub fn this_process(root: &SysRoot, host: &str) -> Option<RunProcess> {
    let pid = std::process::id();
    Some(RunProcess {
        host: host.to_string(),
        pid,
        start_ticks: start_ticks(root, pid)?,
        boot_id: boot_id(root)?,
    })
}

/// Whether `p`, recorded on host `p.host`, is still running, as seen from `here`.
pub fn liveness(root: &SysRoot, here: &str, p: &RunProcess) -> Liveness {
    if p.host != here {
        return Liveness::Unknown;
    }
    let Some(boot) = boot_id(root) else {
        return Liveness::Unknown;
    };
    if boot != p.boot_id {
        return Liveness::Gone;
    }
    match start_ticks(root, p.pid) {
        Some(t) if t == p.start_ticks => Liveness::Alive,
        Some(_) => Liveness::Gone,
        // No such process, unless /proc itself is missing.
        None if root.proc.join("self").exists() || !root.is_live() => Liveness::Gone,
        None => Liveness::Unknown,
    }
}

fn boot_id(root: &SysRoot) -> Option<String> {
    read_trimmed(&root.proc_path("sys/kernel/random/boot_id")).ok()
}

/// Field 22 of /proc/PID/stat. The command name (field 2) may hold spaces and
/// parentheses, so fields are counted after its last ')'.
fn start_ticks(root: &SysRoot, pid: u32) -> Option<u64> {
    let text = read_text(&root.proc_path(&format!("{pid}/stat"))).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    // rest starts at field 3 (state); field 22 is the 20th from there.
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(pid: u32, comm: &str, ticks: u64, boot: &str) -> (tempfile::TempDir, SysRoot) {
        let tmp = tempfile::tempdir().unwrap();
        let root = SysRoot::under(tmp.path());
        let dir = root.proc_path(&pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let after: Vec<String> = (3..=52)
            .map(|f| {
                if f == 22 {
                    ticks.to_string()
                } else {
                    f.to_string()
                }
            })
            .collect();
        std::fs::write(
            dir.join("stat"),
            format!("{pid} ({comm}) {}\n", after.join(" ")),
        )
        .unwrap();
        std::fs::create_dir_all(root.proc_path("sys/kernel/random")).unwrap();
        std::fs::write(
            root.proc_path("sys/kernel/random/boot_id"),
            format!("{boot}\n"),
        )
        .unwrap();
        (tmp, root)
    }

    fn run(pid: u32, ticks: u64, boot: &str) -> RunProcess {
        RunProcess {
            host: "node1".into(),
            pid,
            start_ticks: ticks,
            boot_id: boot.into(),
        }
    }

    #[test]
    fn start_ticks_are_counted_after_the_command_name() {
        let (_t, root) = fixture(42, "io lab) (x", 987_654, "b1");
        assert_eq!(start_ticks(&root, 42), Some(987_654));
        assert_eq!(start_ticks(&root, 43), None);
    }

    #[test]
    fn same_pid_same_start_same_boot_is_alive_and_anything_else_gone() {
        let (_t, root) = fixture(42, "iolab", 5000, "b1");
        let cases = [
            ("node1", 42, 5000, "b1", Liveness::Alive),
            // The pid was reused by a later process.
            ("node1", 42, 4000, "b1", Liveness::Gone),
            // No such process.
            ("node1", 7, 5000, "b1", Liveness::Gone),
            // The host rebooted since.
            ("node1", 42, 5000, "b0", Liveness::Gone),
            // Another host's run: nobody here can tell.
            ("node2", 42, 5000, "b1", Liveness::Unknown),
        ];
        for (here, pid, ticks, boot, expect) in cases {
            let got = liveness(&root, here, &run(pid, ticks, boot));
            assert_eq!(got, expect, "{here} pid {pid} ticks {ticks} boot {boot}");
        }
    }

    #[test]
    fn this_process_is_alive_on_the_live_system() {
        let root = SysRoot::live();
        let me = this_process(&root, "here").expect("/proc describes this process");
        assert_eq!(me.pid, std::process::id());
        assert_eq!(liveness(&root, "here", &me), Liveness::Alive);
        assert_eq!(
            liveness(
                &root,
                "here",
                &RunProcess {
                    start_ticks: me.start_ticks + 1,
                    ..me.clone()
                }
            ),
            Liveness::Gone
        );
    }
}
