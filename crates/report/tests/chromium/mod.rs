//! Headless Chromium for the browser tests: [`chromium`] finds it on PATH,
//! [`run_chromium`] runs it on a page in a fresh profile and returns its standard output
//! (the DOM with `--dump-dom`), [`skip_without_chromium`] says loudly that a test did not
//! run.
#![allow(dead_code)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(120);

pub fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// Runs Chromium headless on `page` with `extra` flags, in a fresh profile; its stdout.
pub fn run_chromium(chromium: &Path, page: &Path, extra: &[String]) -> String {
    let profile = tempfile::tempdir().expect("a temporary profile directory");
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(extra)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stderr(Stdio::null());
    let out_path = profile.path().join("stdout.txt");
    cmd.stdout(std::fs::File::create(&out_path).expect("a stdout file"));
    let mut child = cmd.spawn().expect("chromium starts");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waiting for chromium") {
            assert!(status.success(), "chromium failed: {status}");
            break;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            panic!("chromium did not finish in {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::read_to_string(out_path).expect("chromium's output")
}

/// Says on stderr, past the harness's capture, that Chromium is missing.
pub fn skip_without_chromium() {
    let _ = writeln!(
        std::io::stderr(),
        "\n!!!!!!!! SKIPPED: chromium not found (install Debian's chromium) !!!!!!!!\n"
    );
}
