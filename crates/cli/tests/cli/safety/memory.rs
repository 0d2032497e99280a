//! Memory pre-flight: buffers beyond what the host (or the cgroup the job runs in) can
//! give are refused before any allocation, with the figures and the options that drive
//! them, and nothing is stored.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use crate::common::{Ran, error_line, iolab, path};

#[test]
fn buffers_beyond_memory_are_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    // 16 threads x QD 4096 x 1 MiB = 64 GiB: more than this machine (or CI's) has.
    let r = Ran::from(
        iolab()
            .env("IOLAB_DB", &db)
            .args(["run", "--dir", path(dir.path()), "--backend", "uring"])
            .args(["-q", "4096", "-t", "16", "-b", "1MiB", "--size", "64MiB"])
            .output()
            .unwrap(),
    )
    .expect(2);
    let line = error_line(&r);
    assert!(
        line.starts_with(
            "iolab: error: --block-size: --threads 16 x --queue-depth 4096 x --block-size 1MiB needs 64.0 GiB of I/O buffers on "
        ) && line.contains("(MemAvailable ")
            && line.ends_with("): lower one of them"),
        "{line}"
    );
    // Refused before the run started: nothing stored, nothing laid out.
    let list = Ran::from(
        iolab()
            .env("IOLAB_DB", &db)
            .args(["results", "list"])
            .output()
            .unwrap(),
    );
    assert!(!list.stdout.contains(" run "), "{}", list.stdout);
    assert!(!dir.path().join("iolab-work").exists());
}

/// A memory cgroup of its own (v1 or v2, whichever this machine has), removed on drop.
struct Cgroup {
    dir: PathBuf,
    v2: bool,
}

impl Cgroup {
    fn make(limit: u64) -> Option<Cgroup> {
        let name = format!("iolab-test-{}", std::process::id());
        for (base, v2) in [("/sys/fs/cgroup/memory", false), ("/sys/fs/cgroup", true)] {
            let base = PathBuf::from(base);
            let file = if v2 {
                "memory.max"
            } else {
                "memory.limit_in_bytes"
            };
            if !base
                .join(if v2 { "cgroup.controllers" } else { file })
                .exists()
            {
                continue;
            }
            if v2 {
                let _ = fs::write(base.join("cgroup.subtree_control"), "+memory");
            }
            let dir = base.join(&name);
            if fs::create_dir(&dir).is_err() {
                continue;
            }
            let cg = Cgroup { dir, v2 };
            if fs::write(cg.dir.join(file), limit.to_string()).is_ok() {
                return Some(cg);
            }
        }
        None
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.dir);
        let _ = self.v2;
    }
}

#[test]
fn the_memory_limit_of_the_jobs_cgroup_is_honoured() {
    let Some(cg) = Cgroup::make(1 << 30) else {
        eprintln!("SKIPPED: cannot make a memory cgroup here");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // 4 x 256 x 1 MiB = 1 GiB of buffers: fine for the host, not under a 1 GiB limit.
    let script = format!(
        "echo $$ > '{}/cgroup.procs' && exec '{}' run --dir '{}' --backend uring -q 256 -t 4 -b 1MiB --size 8MiB --no-store",
        cg.dir.display(),
        env!("CARGO_BIN_EXE_iolab"),
        path(dir.path())
    );
    let r = Ran::from(Command::new("sh").arg("-c").arg(&script).output().unwrap()).expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("needs 1.00 GiB of I/O buffers")
            && line.contains(" left under cgroup /iolab-test-"),
        "{line}"
    );
}
