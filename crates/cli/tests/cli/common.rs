//! Running the iolab binary from tests.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub fn iolab() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    // Results of tests never land in the user's results database.
    c.env("IOLAB_DB", test_db());
    c.env_remove("RUST_BACKTRACE");
    c
}

thread_local! {
    /// This test's results database, in a directory of its own that goes with the test's
    /// thread: the harness runs every test on a thread of its own, whose thread-locals are
    /// dropped when it ends, passed or failed (a panic unwinds it too).
    static TEST_DB_DIR: tempfile::TempDir = tempfile::Builder::new()
        .prefix("iolab-test-db-")
        .tempdir()
        .expect("a temporary directory for the test's database");
}

/// The results database of the running test (removed with its directory when the test
/// ends): what `IOLAB_DB` is set to for every iolab the tests start.
pub fn test_db() -> PathBuf {
    TEST_DB_DIR.with(|d| d.path().join("results.db"))
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
            .env("IOLAB_DB", test_db())
            .env_remove("RUST_BACKTRACE")
            .output()
            .expect("unshare runs"),
    )
}

/// A mounted `iolab-faultfs` over a temporary backing directory; unmounted on drop.
pub struct FaultFs {
    child: Child,
    mount: PathBuf,
    _dirs: tempfile::TempDir,
}

impl FaultFs {
    /// Mounts with the given `--fault` specs, or None when this machine has no FUSE.
    pub fn mount(faults: &[&str]) -> Option<FaultFs> {
        if !Path::new("/dev/fuse").exists() {
            eprintln!("skipped: no /dev/fuse on this machine");
            return None;
        }
        let dirs = tempfile::tempdir().unwrap();
        let backing = dirs.path().join("backing");
        let mount = dirs.path().join("mnt");
        std::fs::create_dir(&backing).unwrap();
        std::fs::create_dir(&mount).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_iolab-faultfs"));
        cmd.arg(&backing).arg(&mount);
        for f in faults {
            cmd.args(["--fault", f]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("iolab-faultfs starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready", "iolab-faultfs did not mount");
        Some(FaultFs {
            child,
            mount,
            _dirs: dirs,
        })
    }

    pub fn dir(&self) -> &str {
        path(&self.mount)
    }
}

impl Drop for FaultFs {
    fn drop(&mut self) {
        // SIGTERM unmounts; the lazy unmount covers a child that died first.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        let _ = Command::new("fusermount3")
            .args(["-u", "-z"])
            .arg(&self.mount)
            .stderr(Stdio::null())
            .status();
    }
}

/// The DOM of the page at `url` (`http://...` or `file://...`) as a headless `chromium`
/// dumps it, with a profile of its own; `virtual_ms`: the page's scripts run for that
/// much virtual time first.
pub fn chromium_dom(chromium: &str, url: &str, virtual_ms: Option<u32>) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut c = Command::new(chromium);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--dump-dom",
    ]);
    if let Some(ms) = virtual_ms {
        c.arg(format!("--virtual-time-budget={ms}"));
    }
    let out = c
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .stderr(Stdio::null())
        .output()
        .expect("chromium runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether `tool` can be started (`arg` makes it print something short and exit).
pub fn on_path(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Whether the peer `tool` (answering `arg`) is on PATH for a test that compares with
/// it. Under scripts/test.sh (IOLAB_TEST_SUITE set), which installs every peer, a missing
/// one fails the test rather than letting it pass unchecked; elsewhere the test says it
/// skips.
pub fn peer_on_path(tool: &str, arg: &str) -> bool {
    if on_path(tool, arg) {
        return true;
    }
    assert!(
        std::env::var_os("IOLAB_TEST_SUITE").is_none(),
        "{tool} is not on PATH, though scripts/test.sh installs it"
    );
    eprintln!(
        "SKIPPED (the comparison with {tool}): it is not installed (scripts/test.sh installs it)"
    );
    false
}

/// fio itself when `tool` is "fio", else `iolab fio --no-store` with `iolab_args`: the
/// two sides of a comparison, each given the same job options next.
pub fn fio_or_iolab(tool: &str, iolab_args: &[&str]) -> Command {
    if tool == "fio" {
        return Command::new("fio");
    }
    let mut c = iolab();
    c.args(["fio", "--no-store"]).args(iolab_args);
    c
}

/// Runs `cmd` under `strace -f -ff` tracing `calls` (one file per thread, so no call is
/// split over "unfinished" and "resumed" lines) and returns each thread's trace.
pub fn strace_threads(cmd: &Command, work: &Path, calls: &str) -> Vec<String> {
    let out = work.join("trace");
    std::fs::create_dir_all(&out).unwrap();
    let status = Command::new("strace")
        .args(["-f", "-ff", "-qq", "-s", "0", "-e"])
        .arg(format!("trace={calls}"))
        .arg("-o")
        .arg(out.join("t"))
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{cmd:?} under strace");
    let traces = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    std::fs::remove_dir_all(&out).unwrap();
    traces
}

/// A loop device over an image, detached again when dropped.
pub struct Loop(pub String);

impl Loop {
    pub fn attach(img: &Path) -> Option<Loop> {
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(img)
            .output()
            .ok()?;
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !dev.is_empty()).then_some(Loop(dev))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
        let _ = Command::new("losetup").args(["-d", &self.0]).output();
    }
}

/// A `--json` (or any JSON) file's document.
pub fn json_of(file: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// An image `name` of `mib` MiB in `dir` holding an ext4 file system, or None (said
/// loudly: no mkfs.ext4 here).
pub fn ext4_image(dir: &Path, name: &str, mib: u64) -> Option<PathBuf> {
    let img = dir.join(name);
    std::fs::File::create(&img).ok()?.set_len(mib << 20).ok()?;
    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&img)
        .output();
    if !mkfs.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: mkfs.ext4 is not available");
        return None;
    }
    Some(img)
}

/// A sparse image `name` of `mib` MiB in `dir` behind a loop device, or None (said
/// loudly: no root or no /dev/loop-control here).
pub fn loop_image(dir: &Path, name: &str, mib: u64) -> Option<(PathBuf, Loop)> {
    let img = dir.join(name);
    std::fs::File::create(&img)
        .unwrap()
        .set_len(mib << 20)
        .unwrap();
    match Loop::attach(&img) {
        Some(dev) => Some((img, dev)),
        None => {
            eprintln!("SKIPPED: no loop device here (needs root and /dev/loop-control)");
            None
        }
    }
}

/// The length (s) of the pause `iolab` printed in `stdout` ("pause: no operation completed
/// for 3.00 s from ..."), and the rest of its line after "s from ".
pub fn pause_in(stdout: &str) -> (f64, &str) {
    let pause = stdout
        .lines()
        .find_map(|l| {
            l.trim_start()
                .strip_prefix("pause: no operation completed for ")
        })
        .unwrap_or_else(|| panic!("no pause line in\n{stdout}"));
    let (length, rest) = pause
        .split_once(" s from ")
        .unwrap_or_else(|| panic!("{pause}"));
    (length.parse().unwrap_or_else(|_| panic!("{pause}")), rest)
}
