//! Running the iolab binary from tests.

use std::path::Path;
use std::process::{Command, Output};

pub fn iolab() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    // Results of tests never land in the user's results database.
    c.env(
        "IOLAB_DB",
        std::env::temp_dir().join(format!("iolab-test-{}.db", std::process::id())),
    );
    c.env_remove("RUST_BACKTRACE");
    c
}

pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn from(o: Output) -> Ran {
        Ran {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    /// The one line iolab prints on stderr for bad input.
    pub fn error_line(&self) -> String {
        error_line(self)
    }

    /// Panics with both streams when the exit code is not `code`.
    pub fn expect(self, code: i32) -> Ran {
        assert_eq!(
            self.code, code,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

pub fn run(args: &[&str]) -> Ran {
    Ran::from(iolab().args(args).output().expect("iolab runs"))
}

pub fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// The one error line iolab prints for bad input.
pub fn error_line(r: &Ran) -> String {
    let lines: Vec<&str> = r.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        lines.len(),
        1,
        "expected exactly one line on stderr, got:\n{}",
        r.stderr
    );
    lines[0].to_string()
}

/// Whether this test process may create mount namespaces and mount file systems.
pub fn can_mount() -> bool {
    Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs `iolab args` inside a private mount namespace after `setup` (shell) ran there.
pub fn run_in_namespace(setup: &str, args: &[&str]) -> Ran {
    let bin = env!("CARGO_BIN_EXE_iolab");
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let script = format!("{setup} && exec {bin} {}", quoted.join(" "));
    Ran::from(
        Command::new("unshare")
            .args(["-m", "sh", "-c", &script])
            .env(
                "IOLAB_DB",
                std::env::temp_dir().join(format!("iolab-test-{}.db", std::process::id())),
            )
            .env_remove("RUST_BACKTRACE")
            .output()
            .expect("unshare runs"),
    )
}
