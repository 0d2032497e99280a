//! `iolab train` and `iolab checkpoint` at a small scale: the files checked by readers
//! that are not iolab's (numpy's np.load, a TFRecord walk with its own CRC-32C in
//! Python), AU on a run whose wait is known (a FUSE file system that stalls every read),
//! the accelerator search on a throttled target, the checkpoint's bytes per rank, and
//! bad input refused in one line with exit 2.

mod au;
mod backends;
mod checkpoint;
mod files;
mod input;
mod kvcache;
mod runs;
mod threads;
mod v3;

use std::path::Path;
use std::process::Command;

use crate::common::{FaultFs, run};

/// The Python with numpy that scripts/test.sh installs (IOLAB_TEST_NUMPY); in CI its
/// absence fails the test, elsewhere it skips saying so.
pub fn numpy_python() -> Option<String> {
    if let Ok(p) = std::env::var("IOLAB_TEST_NUMPY") {
        return Some(p);
    }
    assert!(
        std::env::var("CI").is_err(),
        "IOLAB_TEST_NUMPY is not set: scripts/test.sh installs numpy in a venv and sets it"
    );
    eprintln!("skipped: IOLAB_TEST_NUMPY not set (scripts/test.sh sets it)");
    None
}

pub fn python(py: &str, script: &str, args: &[&str]) -> String {
    let o = Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python runs");
    assert!(
        o.status.success(),
        "python failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `files` DLIO samples of 4 KiB made by `iolab train datagen` on an iolab-faultfs mount
/// with `faults`, and the arguments that name that dataset; None (the test skips, saying
/// why) where FUSE is missing. The mount lives as long as the returned `FaultFs`.
pub fn stalled_dataset(faults: &[&str], files: &str) -> Option<(FaultFs, Vec<String>)> {
    let fs = FaultFs::mount(faults)?;
    let data = format!("{}/data", fs.dir());
    let common: Vec<String> = [
        "--data-dir",
        &data,
        "--files",
        files,
        "--record-length",
        "4096",
    ]
    .map(String::from)
    .to_vec();
    let mut args = vec!["train", "datagen", "--no-store"];
    args.extend(common.iter().map(String::as_str));
    run(&args).expect(0);
    Some((fs, common))
}

pub fn json_of(file: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}
