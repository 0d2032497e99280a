//! `iolab kvcache`: small runs on a directory with a CPU tier, their stored figures
//! adding up, nothing left behind ([`runs`]); the closed options made small
//! ([`options`]); bad input refused in one line writing nothing, and a write failing
//! part way ([`failures`]); the live page ([`live`]), the HTML report in Chromium
//! ([`report`]) and the storage tier's system calls under strace ([`syscalls`]).

mod failures;
mod live;
mod options;
mod report;
mod runs;
mod syscalls;

use std::path::Path;

use super::json_of;
use crate::common::{Ran, path, run};

/// `iolab kvcache` with `args`, its work directory (`--dir`) a new temporary one that
/// holds its JSON record, not stored (`--no-store`): it must exit 0. What it printed,
/// its JSON record (`--json`: k.json in the work directory) and the work directory,
/// there until the caller drops it.
fn kvcache_run(args: &[&str]) -> (Ran, serde_json::Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("k.json");
    let mut all = vec!["kvcache"];
    all.extend_from_slice(args);
    all.extend([
        "--dir",
        path(dir.path()),
        "--json",
        path(&json),
        "--no-store",
    ]);
    let ran = run(&all).expect(0);
    let json = json_of(&json);
    (ran, json, dir)
}

/// The names in a run's work directory `dir` but its JSON record's.
fn left_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "k.json")
        .collect()
}
